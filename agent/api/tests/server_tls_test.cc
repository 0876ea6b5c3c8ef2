// The TCP admin listener with mutual TLS, against certificates generated
// with openssl for this run: who gets in, who is refused, and with what.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <thread>

#include "agent/api/log.h"
#include "agent/api/server.h"
#include "agent/api/tests/recording_engine.h"
#include "agent/api/tests/test_util.h"
#include "tests/lib/test_pki.h"
#include "ballast/v1/api.grpc.pb.h"

namespace ballast::api {
namespace {

using testing::RecordingEngine;
using testing::TempDir;
using testpki::TestPki;

v1::VipKey Key() {
  v1::VipKey k;
  k.set_address("198.18.0.10");
  k.set_port(80);
  k.set_protocol(v1::TCP);
  return k;
}

v1::AdminAccess TlsAccess(const TempDir& dir, const TestPki& pki) {
  v1::AdminAccess a;
  a.set_socket_path(dir.Join("lbagent.sock"));
  a.set_tcp_listen("127.0.0.1:0");
  a.set_tls_cert(pki.server_crt);
  a.set_tls_key(pki.server_key);
  a.set_tls_client_ca(pki.ca_crt);
  a.add_identities()->set_name("ops-admin");
  a.add_identities()->set_name("spiffe://ballast/admin-bot");
  v1::Identity* ro = a.add_identities();
  ro->set_name("reader.example");
  ro->set_read_only(true);
  return a;
}

struct Fixture {
  Fixture() : pki(testpki::GeneratePki(dir.path())) {
    AdminServerOptions opts;
    opts.log = [this](absl::string_view level, absl::string_view msg) {
      log.push_back(std::string(level) + ": " + std::string(msg));
    };
    opts.shutdown_grace = std::chrono::milliseconds(500);
    auto s = StartAdminServer(engine, TlsAccess(dir, pki), opts);
    if (!s.ok()) FAIL("server did not start: " << s.status());
    server = std::move(*s);
    REQUIRE(server->tcp_port() > 0);
  }

  // A channel to the TCP listener presenting `cert`/`key` ("" = none).
  std::shared_ptr<grpc::Channel> Channel(const std::string& cert, const std::string& key) {
    return testing::TlsChannel(server->tcp_port(), pki.ca_crt, cert, key);
  }

  grpc::Status ListVips(const std::shared_ptr<grpc::Channel>& ch) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ListVipsResponse resp;
    return v1::Vips::NewStub(ch)->ListVips(&ctx, {}, &resp);
  }

  grpc::Status SetWeight(const std::shared_ptr<grpc::Channel>& ch) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::SetWeightRequest req;
    *req.mutable_vip() = Key();
    req.set_address("198.18.1.1");
    req.set_weight(10);
    v1::Empty resp;
    return v1::Backends::NewStub(ch)->SetWeight(&ctx, req, &resp);
  }

  grpc::Status AddVip(const std::shared_ptr<grpc::Channel>& ch) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::AddVipRequest req;
    *req.mutable_vip()->mutable_key() = Key();
    req.mutable_vip()->add_backends()->set_address("198.18.1.1");
    v1::Empty resp;
    return v1::Vips::NewStub(ch)->AddVip(&ctx, req, &resp);
  }

  TempDir dir;
  TestPki pki;
  RecordingEngine engine;
  std::vector<std::string> log;
  std::unique_ptr<AdminServer> server;
};

TEST_CASE_METHOD(Fixture, "TLS: the admin identity (certificate CN) may write", "[server][tls]") {
  auto ch = Channel(pki.admin_crt, pki.admin_key);
  grpc::Status s = AddVip(ch);
  REQUIRE(s.ok());
  CHECK(SetWeight(ch).ok());
  auto calls = engine.calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].actor == "operator:tls:ops-admin");
  CHECK(calls[1].detail == "198.18.0.10:80/tcp 198.18.1.1 weight=10");
}

TEST_CASE_METHOD(Fixture, "TLS: an identity given as a URI SAN may write", "[server][tls]") {
  auto ch = Channel(pki.uri_crt, pki.uri_key);
  REQUIRE(AddVip(ch).ok());
  CHECK(engine.calls().at(0).actor == "operator:tls:spiffe://ballast/admin-bot");
}

TEST_CASE_METHOD(Fixture, "TLS: a read-only identity reads but may not write", "[server][tls]") {
  REQUIRE(AddVip(Channel(pki.admin_crt, pki.admin_key)).ok());
  auto ch = Channel(pki.reader_crt, pki.reader_key);
  CHECK(ListVips(ch).ok());
  {
    grpc::ClientContext ctx;
    v1::StatusResponse resp;
    CHECK(v1::Status::NewStub(ch)->GetStatus(&ctx, {}, &resp).ok());
    CHECK(resp.vips_size() == 1);
  }
  {
    grpc::ClientContext ctx;
    v1::QueryAuditResponse resp;
    CHECK(v1::Audit::NewStub(ch)->QueryAudit(&ctx, {}, &resp).ok());
  }
  grpc::Status s = SetWeight(ch);
  CHECK(s.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK_THAT(s.error_message(), Catch::Contains("identity 'reader.example' is read-only"));
  CHECK_THAT(s.error_message(), Catch::Contains("Backends/SetWeight"));
  {  // a dry run is a read; a real apply is not
    v1::ApplyConfigRequest req;
    req.mutable_config();
    req.set_dry_run(true);
    v1::ApplyConfigResponse resp;
    grpc::ClientContext c1;
    CHECK(v1::ConfigService::NewStub(ch)->ApplyConfig(&c1, req, &resp).ok());
    req.set_dry_run(false);
    grpc::ClientContext c2;
    CHECK(v1::ConfigService::NewStub(ch)->ApplyConfig(&c2, req, &resp).error_code() ==
          grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    grpc::ClientContext ctx;
    v1::TeardownRequest req;
    req.set_confirm(true);
    v1::Empty resp;
    CHECK(v1::Admin::NewStub(ch)->Teardown(&ctx, req, &resp).error_code() ==
          grpc::StatusCode::PERMISSION_DENIED);
    CHECK_FALSE(engine.ShutdownRequested());
  }
  for (const auto& call : engine.calls()) {
    CHECK(call.method != "SetWeight");
    CHECK(call.method != "Teardown");
  }
  bool logged = false;
  for (const auto& line : log)
    logged |= line.find("refused /ballast.v1.Backends/SetWeight") != std::string::npos;
  CHECK(logged);
}

TEST_CASE_METHOD(Fixture, "TLS: a client without a certificate is rejected", "[server][tls]") {
  grpc::Status s = ListVips(Channel("", ""));
  CHECK_FALSE(s.ok());
  CHECK(s.error_code() == grpc::StatusCode::UNAVAILABLE);  // handshake refused
  CHECK(engine.calls().empty());
}

TEST_CASE_METHOD(Fixture,
                 "TLS: a certificate from another CA is rejected, even with an allowed name",
                 "[server][tls]") {
  grpc::Status s = AddVip(Channel(pki.rogue_crt, pki.rogue_key));
  CHECK_FALSE(s.ok());
  CHECK(s.error_code() == grpc::StatusCode::UNAVAILABLE);  // handshake refused
  CHECK(engine.calls().empty());
}

TEST_CASE_METHOD(Fixture, "TLS: a valid certificate whose name is not allowed is rejected",
                 "[server][tls]") {
  auto ch = Channel(pki.stranger_crt, pki.stranger_key);
  grpc::Status s = ListVips(ch);
  CHECK(s.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK_THAT(s.error_message(), Catch::Contains("names [stranger.example] match no entry"));
  CHECK(AddVip(ch).error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(engine.calls().empty());
}

TEST_CASE_METHOD(Fixture, "TLS: an allowed CN does not count when the certificate has a SAN",
                 "[server][tls]") {
  // CN=ops-admin, SAN DNS:someone-else: identified as someone-else only.
  grpc::Status s = AddVip(Channel(pki.mixed_crt, pki.mixed_key));
  CHECK(s.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK_THAT(s.error_message(), Catch::Contains("names [someone-else] match no entry"));
  CHECK_THAT(s.error_message(), Catch::Contains("its CN 'ops-admin' does not count"));
  // CN=ops-admin, SAN IP:192.0.2.1: an IP SAN is a SAN too, and not a name.
  s = AddVip(Channel(pki.ip_only_crt, pki.ip_only_key));
  CHECK(s.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK_THAT(s.error_message(), Catch::Contains("no name to match admin.identities"));
  CHECK(engine.calls().empty());
  // CN=ops-admin without any SAN: the admin.
  REQUIRE(AddVip(Channel(pki.admin_crt, pki.admin_key)).ok());
  CHECK(engine.calls().at(0).actor == "operator:tls:ops-admin");
}

TEST_CASE("TLS: with admin.tls_crl a revoked certificate is refused, others get in",
          "[server][tls][crl]") {
  TempDir dir;
  const TestPki pki = testpki::GeneratePki(dir.path());
  RecordingEngine engine;
  AdminServerOptions quiet;
  quiet.log = [](absl::string_view, absl::string_view) {};
  v1::AdminAccess a = TlsAccess(dir, pki);
  a.set_tls_crl(pki.ca_crl);
  auto server = StartAdminServer(engine, a, quiet);
  REQUIRE(server.ok());
  const int port = (*server)->tcp_port();
  auto call = [&](const std::string& cert, const std::string& key) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ListVipsResponse resp;
    return v1::Vips::NewStub(testing::TlsChannel(port, pki.ca_crt, cert, key))
        ->ListVips(&ctx, {}, &resp);
  };
  // Same CN as the admin, same CA, but revoked.
  grpc::Status revoked = call(pki.revoked_crt, pki.revoked_key);
  CHECK(revoked.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK_THAT(revoked.error_message(), Catch::Contains("client certificate 'CN=ops-admin'"));
  CHECK_THAT(revoked.error_message(), Catch::Contains("is revoked by admin.tls_crl"));
  CHECK(call(pki.admin_crt, pki.admin_key).ok());
  CHECK(call(pki.reader_crt, pki.reader_key).ok());
}

TEST_CASE_METHOD(Fixture, "TLS: the unix socket keeps working next to the TCP listener",
                 "[server][tls]") {
  auto ch = testing::UnixChannel(dir.Join("lbagent.sock"));
  CHECK(AddVip(ch).ok());
  CHECK(engine.calls().at(0).actor.rfind("operator:unix", 0) == 0);
}

TEST_CASE_METHOD(Fixture, "TLS: refused handshakes reach the agent's log through RouteGrpcLogs",
                 "[server][tls]") {
  // Process-wide and never released (see log.h): a static sink.
  static std::mutex mu;
  static std::vector<std::string>* lines = new std::vector<std::string>();
  RouteGrpcLogs([](absl::string_view level, absl::string_view msg) {
    std::lock_guard<std::mutex> lock(mu);
    lines->push_back(std::string(level) + ": " + std::string(msg));
  });
  CHECK_FALSE(ListVips(Channel(pki.rogue_crt, pki.rogue_key)).ok());
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const std::string& l : *lines) {
        seen |= l.rfind("error: grpc: ", 0) == 0 && l.find("Handshake failed") != std::string::npos;
      }
    }
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(seen);
  RouteGrpcLogs(StderrJsonLog);
}

TEST_CASE("TLS: the TCP listener refuses to start without what mutual TLS needs", "[server][tls]") {
  TempDir dir;
  const TestPki pki = testpki::GeneratePki(dir.path());
  RecordingEngine engine;
  AdminServerOptions quiet;
  quiet.log = [](absl::string_view, absl::string_view) {};
  struct Case {
    const char* what;
    std::function<void(v1::AdminAccess&)> edit;
    std::string message;
  };
  const Case cases[] = {
      {"no cert", [](v1::AdminAccess& a) { a.clear_tls_cert(); }, "admin.tls_cert is empty"},
      {"no key", [](v1::AdminAccess& a) { a.clear_tls_key(); }, "admin.tls_key is empty"},
      {"no client CA", [](v1::AdminAccess& a) { a.clear_tls_client_ca(); },
       "admin.tls_client_ca is empty"},
      {"no identities", [](v1::AdminAccess& a) { a.clear_identities(); },
       "admin.identities is empty"},
      {"missing file", [&](v1::AdminAccess& a) { a.set_tls_cert(dir.Join("nope.crt")); },
       "admin.tls_cert: cannot read"},
      {"key of another cert", [&](v1::AdminAccess& a) { a.set_tls_key(pki.admin_key); },
       "does not match the certificate"},
      {"not PEM", [&](v1::AdminAccess& a) { a.set_tls_client_ca(dir.Join("gen.sh")); },
       "admin.tls_client_ca"},
      {"bad address", [](v1::AdminAccess& a) { a.set_tcp_listen("localhost"); },
       "admin.tcp_listen"},
      {"v6 without brackets", [](v1::AdminAccess& a) { a.set_tcp_listen("::1:7443"); },
       "without brackets"},
      {"missing CRL", [&](v1::AdminAccess& a) { a.set_tls_crl(dir.Join("nope.crl")); },
       "admin.tls_crl: cannot read"},
      {"CRL of another CA", [&](v1::AdminAccess& a) { a.set_tls_crl(pki.other_ca_crl); },
       "which is not a CA in admin.tls_client_ca"},
      {"expired CRL", [&](v1::AdminAccess& a) { a.set_tls_crl(pki.expired_crl); },
       "admin.tls_crl: " + pki.expired_crl + " has a CRL of 'CN=ballast test CA' that expired"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    v1::AdminAccess a = TlsAccess(dir, pki);
    c.edit(a);
    auto server = StartAdminServer(engine, a, quiet);
    REQUIRE_FALSE(server.ok());
    CHECK(server.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(server.status().message()), Catch::Contains(c.message));
    CHECK(access(dir.Join("lbagent.sock").c_str(), F_OK) != 0);  // nothing left behind
  }
}

TEST_CASE("TLS: a port in use is a clear error and leaves nothing behind", "[server][tls]") {
  TempDir dir;
  const TestPki pki = testpki::GeneratePki(dir.path());
  RecordingEngine engine;
  AdminServerOptions quiet;
  quiet.log = [](absl::string_view, absl::string_view) {};
  auto first = StartAdminServer(engine, TlsAccess(dir, pki), quiet);
  REQUIRE(first.ok());
  v1::AdminAccess a = TlsAccess(dir, pki);
  a.set_socket_path(dir.Join("second.sock"));
  a.set_tcp_listen("127.0.0.1:" + std::to_string((*first)->tcp_port()));
  auto second = StartAdminServer(engine, a, quiet);
  REQUIRE_FALSE(second.ok());
  CHECK_THAT(std::string(second.status().message()), Catch::Contains("cannot listen on"));
  CHECK(access(dir.Join("second.sock").c_str(), F_OK) != 0);
}

}  // namespace
}  // namespace ballast::api
