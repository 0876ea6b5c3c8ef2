// AdminServer::Reload (what the agent does on SIGHUP): new files at the
// configured paths and a new allow-list take effect without a restart; an
// invalid reload changes nothing.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <functional>

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

// The server reads its TLS files from fixed paths in `live/`; a test puts
// other material there (Install) and reloads.
struct Fixture {
  Fixture() : pki(testpki::GeneratePki(dir.path())) {
    std::filesystem::create_directory(dir.Join("live"));
    Install(pki.server_crt, pki.server_key, pki.ca_crt);
    access.set_socket_path(dir.Join("lbagent.sock"));
    access.set_tcp_listen("127.0.0.1:0");
    access.set_tls_cert(Live("server.crt"));
    access.set_tls_key(Live("server.key"));
    access.set_tls_client_ca(Live("clients-ca.crt"));
    access.add_identities()->set_name("ops-admin");
    AdminServerOptions opts;
    opts.log = [this](absl::string_view level, absl::string_view msg) {
      log.push_back(std::string(level) + ": " + std::string(msg));
    };
    opts.shutdown_grace = std::chrono::milliseconds(500);
    auto s = StartAdminServer(engine, access, opts);
    if (!s.ok()) FAIL("server did not start: " << s.status());
    server = std::move(*s);
  }

  std::string Live(const std::string& name) const { return dir.Join("live/" + name); }

  void Copy(const std::string& from, const std::string& live_name) {
    std::filesystem::copy_file(from, Live(live_name),
                               std::filesystem::copy_options::overwrite_existing);
  }

  void Install(const std::string& cert, const std::string& key, const std::string& client_ca) {
    Copy(cert, "server.crt");
    Copy(key, "server.key");
    Copy(client_ca, "clients-ca.crt");
  }

  // A new connection trusting `server_ca`, presenting `cert`.
  std::shared_ptr<grpc::Channel> Channel(const std::string& server_ca, const std::string& cert,
                                         const std::string& key) {
    return testing::TlsChannel(server->tcp_port(), server_ca, cert, key);
  }

  grpc::Status ListVips(const std::shared_ptr<grpc::Channel>& ch) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ListVipsResponse resp;
    return v1::Vips::NewStub(ch)->ListVips(&ctx, {}, &resp);
  }

  bool Logged(const std::string& text) const {
    for (const std::string& line : log) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  TempDir dir;
  TestPki pki;
  RecordingEngine engine;
  std::vector<std::string> log;
  v1::AdminAccess access;
  std::unique_ptr<AdminServer> server;
};

TEST_CASE_METHOD(Fixture, "reload: a new allow-list applies to new and open connections",
                 "[server][tls][reload]") {
  auto admin = Channel(pki.ca_crt, pki.admin_crt, pki.admin_key);
  REQUIRE(ListVips(admin).ok());
  REQUIRE(ListVips(Channel(pki.ca_crt, pki.stranger_crt, pki.stranger_key)).error_code() ==
          grpc::StatusCode::PERMISSION_DENIED);

  access.clear_identities();
  access.add_identities()->set_name("stranger.example");
  REQUIRE(server->Reload(access).ok());
  CHECK(Logged("info: admin API reloaded: 1 identities, TLS material, no CRL"));

  CHECK(ListVips(admin).error_code() == grpc::StatusCode::PERMISSION_DENIED);  // open
  CHECK(ListVips(Channel(pki.ca_crt, pki.admin_crt, pki.admin_key)).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);  // new
  CHECK(ListVips(Channel(pki.ca_crt, pki.stranger_crt, pki.stranger_key)).ok());
}

TEST_CASE_METHOD(Fixture, "reload: new server certificate, key and client CA at the same paths",
                 "[server][tls][reload]") {
  auto admin = Channel(pki.ca_crt, pki.admin_crt, pki.admin_key);
  REQUIRE(ListVips(admin).ok());
  // The other CA's client (same name) is refused in the handshake.
  REQUIRE(ListVips(Channel(pki.ca_crt, pki.rogue_crt, pki.rogue_key)).error_code() ==
          grpc::StatusCode::UNAVAILABLE);

  Install(pki.server2_crt, pki.server2_key, pki.other_ca_crt);
  REQUIRE(server->Reload(access).ok());

  // New connections: the server presents the other CA's certificate and
  // takes that CA's clients; the first CA's client no longer gets in.
  CHECK(ListVips(Channel(pki.other_ca_crt, pki.rogue_crt, pki.rogue_key)).ok());
  CHECK(ListVips(Channel(pki.ca_crt, pki.rogue_crt, pki.rogue_key)).error_code() ==
        grpc::StatusCode::UNAVAILABLE);  // server certificate not trusted any more
  CHECK(ListVips(Channel(pki.other_ca_crt, pki.admin_crt, pki.admin_key)).error_code() ==
        grpc::StatusCode::UNAVAILABLE);  // client CA no longer trusted
  // The connection opened before the reload is checked against the new CA.
  grpc::Status open = ListVips(admin);
  CHECK(open.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK_THAT(open.error_message(), Catch::Contains("does not verify against admin.tls_client_ca"));
}

TEST_CASE_METHOD(Fixture, "reload: a CRL added by a reload refuses the revoked certificate",
                 "[server][tls][reload][crl]") {
  auto revoked = Channel(pki.ca_crt, pki.revoked_crt, pki.revoked_key);
  REQUIRE(ListVips(revoked).ok());  // not revoked yet: no CRL configured

  Copy(pki.ca_crl, "clients.crl");
  access.set_tls_crl(Live("clients.crl"));
  REQUIRE(server->Reload(access).ok());
  CHECK(Logged("1 CRL(s) from " + Live("clients.crl") + " revoking 1 certificate(s)"));

  grpc::Status open = ListVips(revoked);
  CHECK(open.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK_THAT(open.error_message(), Catch::Contains("is revoked by admin.tls_crl"));
  CHECK(ListVips(Channel(pki.ca_crt, pki.revoked_crt, pki.revoked_key)).error_code() ==
        grpc::StatusCode::UNAUTHENTICATED);
  CHECK(ListVips(Channel(pki.ca_crt, pki.admin_crt, pki.admin_key)).ok());
}

TEST_CASE_METHOD(Fixture, "reload: invalid material is refused, names the field, changes nothing",
                 "[server][tls][reload]") {
  auto admin = Channel(pki.ca_crt, pki.admin_crt, pki.admin_key);
  REQUIRE(ListVips(admin).ok());
  struct Case {
    const char* what;
    std::function<void(v1::AdminAccess&)> edit;
    std::string message;
  };
  const Case cases[] = {
      {"key of another certificate", [&](v1::AdminAccess&) { Copy(pki.admin_key, "server.key"); },
       "admin.tls_key: " + Live("server.key") + " does not match the certificate"},
      {"unreadable certificate",
       [&](v1::AdminAccess&) { std::filesystem::remove(Live("server.crt")); },
       "admin.tls_cert: cannot read " + Live("server.crt")},
      {"client CA is not PEM", [&](v1::AdminAccess&) { Copy(pki.admin_key, "clients-ca.crt"); },
       "admin.tls_client_ca: " + Live("clients-ca.crt") + " contains no PEM certificate"},
      {"CRL of another CA",
       [&](v1::AdminAccess& a) {
         Copy(pki.other_ca_crl, "clients.crl");
         a.set_tls_crl(Live("clients.crl"));
       },
       "admin.tls_crl: " + Live("clients.crl") + " has a CRL issued by 'CN=some other CA'"},
      {"expired CRL",
       [&](v1::AdminAccess& a) {
         Copy(pki.expired_crl, "clients.crl");
         a.set_tls_crl(Live("clients.crl"));
       },
       "that expired at"},
      {"identity twice",
       [](v1::AdminAccess& a) { a.add_identities()->set_name("stranger.example"); },
       "admin.identities[1].name: 'stranger.example' is listed twice"},
      {"new listen address", [](v1::AdminAccess& a) { a.set_tcp_listen("127.0.0.1:7443"); },
       "admin.tcp_listen: changed from '127.0.0.1:0' to '127.0.0.1:7443', which takes a restart"},
      {"new socket path", [&](v1::AdminAccess& a) { a.set_socket_path(dir.Join("other.sock")); },
       "admin.socket_path: changed from"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    v1::AdminAccess next = access;
    next.clear_identities();
    next.add_identities()->set_name("stranger.example");  // would let the stranger in
    c.edit(next);
    absl::Status s = server->Reload(next);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()), Catch::Contains(c.message));
    // Still the old material and allow-list, on open and new connections,
    // while the bad files are in place.
    CHECK(ListVips(admin).ok());
    CHECK(ListVips(Channel(pki.ca_crt, pki.admin_crt, pki.admin_key)).ok());
    CHECK(ListVips(Channel(pki.ca_crt, pki.stranger_crt, pki.stranger_key)).error_code() ==
          grpc::StatusCode::PERMISSION_DENIED);
    Install(pki.server_crt, pki.server_key, pki.ca_crt);
  }
  CHECK_FALSE(Logged("admin API reloaded"));
}

}  // namespace
}  // namespace ballast::api
