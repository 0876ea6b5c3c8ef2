// The admin API and lbctl over the agent's real engine (core's
// RouterEngine over a real, unpinned XDP data plane; needs root):
// every class of bad input gets its code and a clear message and changes
// nothing; the dry-run diff is exactly what the apply then does; events
// and the mutual-TLS read-only rule hold with the real state behind them.
#include <catch2/catch.hpp>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/api/server.h"
#include "agent/api/tests/test_util.h"
#include "tests/lib/test_pki.h"
#include "agent/core/clock.h"
#include "agent/core/router_engine.h"
#include "agent/dataplane/dataplane.h"
#include "ballast/v1/api.grpc.pb.h"
#include "tools/lbctl/exit_codes.h"

namespace ballast::api {
namespace {

using testing::LbctlResult;
using testing::TempDir;

v1::VipKey Key(const std::string& addr, uint32_t port, v1::Protocol proto = v1::TCP) {
  v1::VipKey k;
  k.set_address(addr);
  k.set_port(port);
  k.set_protocol(proto);
  return k;
}

v1::Config Initial() {
  v1::Config c;
  c.mutable_global()->set_source_v4("198.18.0.1");
  c.mutable_global()->set_source_v6("2001:db8::1");
  v1::Vip* a = c.add_vips();
  *a->mutable_key() = Key("198.18.0.10", 80);
  a->set_table_size(251);
  a->set_name("web");
  for (int i = 1; i <= 3; ++i) {
    v1::Backend* b = a->add_backends();
    b->set_address(absl::StrCat("198.18.1.", i));
    b->set_weight(100);
  }
  v1::Vip* b = c.add_vips();
  *b->mutable_key() = Key("2001:db8:10::10", 443);
  b->set_table_size(251);
  v1::Backend* bb = b->add_backends();
  bb->set_address("2001:db8:1::1");
  bb->set_weight(100);
  return c;
}

// A real engine over a real data plane, served on a unix socket (and on a
// mutual-TLS TCP listener when `access` asks for one).
struct RealAgent {
  explicit RealAgent(v1::AdminAccess access = {}) {
    if (geteuid() != 0) {
      FAIL("these tests run the real engine over a real XDP data plane and need root");
    }
    dataplane::Options o;
    o.pin_dir = "";  // nothing pinned: nothing to clean up outside this process
    o.flow_capacity = 4096;
    auto dp = dataplane::Dataplane::Open(o);
    if (!dp.ok()) FAIL("opening the data plane: " << dp.status());
    core::EngineOptions eo;
    eo.state_file = dir.Join("state.pb");
    eo.audit_log = dir.Join("audit.jsonl");
    auto e = core::RouterEngine::Start(std::move(*dp), eo, &clock, Initial());
    if (!e.ok()) FAIL("starting the engine: " << e.status());
    engine = std::move(*e);
    access.set_socket_path(dir.Join("lbagent.sock"));
    AdminServerOptions opts;
    opts.log = [](absl::string_view, absl::string_view) {};
    opts.shutdown_grace = std::chrono::milliseconds(500);
    auto s = StartAdminServer(*engine, access, opts);
    if (!s.ok()) FAIL("starting the admin server: " << s.status());
    server = std::move(*s);
    channel = testing::UnixChannel(dir.Join("lbagent.sock"));
  }
  ~RealAgent() {
    if (server) server->Shutdown();
  }

  v1::StatusResponse Status() {
    grpc::ClientContext ctx;
    v1::StatusResponse resp;
    grpc::Status s = v1::Status::NewStub(channel)->GetStatus(&ctx, {}, &resp);
    REQUIRE(s.ok());
    return resp;
  }
  v1::Config Config() {
    grpc::ClientContext ctx;
    v1::Config resp;
    REQUIRE(v1::ConfigService::NewStub(channel)->GetConfig(&ctx, {}, &resp).ok());
    return resp;
  }
  LbctlResult Lbctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--socket", dir.Join("lbagent.sock")});
    LbctlResult r = testing::RunLbctlCaptured(args);
    UNSCOPED_INFO("lbctl exit " << r.exit_code << "\nstdout:\n" << r.out << "stderr:\n" << r.err);
    return r;
  }

  TempDir dir;
  core::SystemClock clock;
  std::unique_ptr<core::RouterEngine> engine;
  std::unique_ptr<AdminServer> server;
  std::shared_ptr<grpc::Channel> channel;
};

bool Same(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

TEST_CASE("real engine: every bad-input class is rejected with its code and changes nothing",
          "[real]") {
  RealAgent agent;
  auto vips = v1::Vips::NewStub(agent.channel);
  auto backends = v1::Backends::NewStub(agent.channel);
  auto config = v1::ConfigService::NewStub(agent.channel);

  auto add_vip = [&](std::function<void(v1::Vip&)> edit) {
    v1::AddVipRequest req;
    *req.mutable_vip()->mutable_key() = Key("198.18.0.20", 80);
    req.mutable_vip()->set_table_size(251);
    edit(*req.mutable_vip());
    grpc::ClientContext ctx;
    v1::Empty resp;
    return vips->AddVip(&ctx, req, &resp);
  };
  auto set_weight = [&](v1::VipKey key, std::string addr, uint32_t w) {
    v1::SetWeightRequest req;
    *req.mutable_vip() = key;
    req.set_address(addr);
    req.set_weight(w);
    grpc::ClientContext ctx;
    v1::Empty resp;
    return backends->SetWeight(&ctx, req, &resp);
  };
  auto add_backend = [&](v1::VipKey key, std::string addr) {
    v1::AddBackendRequest req;
    *req.mutable_vip() = key;
    req.mutable_backend()->set_address(addr);
    req.mutable_backend()->set_weight(10);
    grpc::ClientContext ctx;
    v1::Empty resp;
    return backends->AddBackend(&ctx, req, &resp);
  };
  const v1::VipKey web = Key("198.18.0.10", 80);
  const v1::VipKey v6 = Key("2001:db8:10::10", 443);

  struct Case {
    const char* what;
    std::function<grpc::Status()> call;
    grpc::StatusCode code;
    const char* message;  // a fragment the message must contain
  };
  const Case cases[] = {
      {"VIP address not an address",
       [&] { return add_vip([](v1::Vip& v) { v.mutable_key()->set_address("198.18.0.300"); }); },
       grpc::StatusCode::INVALID_ARGUMENT, "198.18.0.300"},
      {"VIP port out of range",
       [&] { return add_vip([](v1::Vip& v) { v.mutable_key()->set_port(70000); }); },
       grpc::StatusCode::INVALID_ARGUMENT, "70000 is out of range 0..65535"},
      {"VIP protocol missing",
       [&] { return add_vip([](v1::Vip& v) { v.mutable_key()->clear_protocol(); }); },
       grpc::StatusCode::INVALID_ARGUMENT, "protocol"},
      {"VIP protocol unknown",
       [&] { return add_vip([](v1::Vip& v) { v.mutable_key()->set_protocol(v1::Protocol(9)); }); },
       grpc::StatusCode::INVALID_ARGUMENT, "protocol"},
      {"table size not prime", [&] { return add_vip([](v1::Vip& v) { v.set_table_size(100); }); },
       grpc::StatusCode::INVALID_ARGUMENT, "not a prime"},
      {"table size above the limit",
       [&] { return add_vip([](v1::Vip& v) { v.set_table_size(1048583); }); },
       grpc::StatusCode::INVALID_ARGUMENT, "out of range 7..1048573"},
      {"backend weight out of range",
       [&] {
         return add_vip([](v1::Vip& v) {
           v1::Backend* b = v.add_backends();
           b->set_address("198.18.1.9");
           b->set_weight(1001);
         });
       },
       grpc::StatusCode::INVALID_ARGUMENT, "out of range 0..1000"},
      {"IPv4 backend behind an IPv6 VIP", [&] { return add_backend(v6, "198.18.1.9"); },
       grpc::StatusCode::INVALID_ARGUMENT, "IPv6 in IPv4"},
      {"duplicate backend in one request",
       [&] {
         return add_vip([](v1::Vip& v) {
           v.add_backends()->set_address("198.18.1.9");
           v.add_backends()->set_address("198.18.1.9");
         });
       },
       grpc::StatusCode::INVALID_ARGUMENT, "duplicate"},
      {"too many backends on one VIP",
       [&] {
         return add_vip([](v1::Vip& v) {
           for (int i = 0; i < 1001; ++i) {
             v1::Backend* b = v.add_backends();
             b->set_address(absl::StrCat("198.19.", i / 250, ".", i % 250 + 1));
             b->set_weight(1);
           }
         });
       },
       grpc::StatusCode::INVALID_ARGUMENT, "1000"},
      {"duplicate VIP", [&] { return add_vip([&](v1::Vip& v) { *v.mutable_key() = web; }); },
       grpc::StatusCode::ALREADY_EXISTS, "198.18.0.10:80/tcp"},
      {"duplicate backend", [&] { return add_backend(web, "198.18.1.1"); },
       grpc::StatusCode::ALREADY_EXISTS, "198.18.1.1"},
      {"weight out of range", [&] { return set_weight(web, "198.18.1.1", 3000); },
       grpc::StatusCode::INVALID_ARGUMENT, "3000 is out of range 0..1000"},
      {"unknown backend", [&] { return set_weight(web, "198.18.1.99", 5); },
       grpc::StatusCode::NOT_FOUND, "198.18.1.99"},
      {"unknown VIP", [&] { return set_weight(Key("198.18.0.99", 80), "198.18.1.1", 5); },
       grpc::StatusCode::NOT_FOUND, "198.18.0.99"},
      {"undrain of a backend that is not draining",
       [&] {
         v1::UndrainRequest req;
         *req.mutable_vip() = web;
         req.set_address("198.18.1.1");
         grpc::ClientContext ctx;
         v1::Empty resp;
         return backends->Undrain(&ctx, req, &resp);
       },
       grpc::StatusCode::FAILED_PRECONDITION, "not draining"},
      {"too many VIPs in a config",
       [&] {
         v1::ApplyConfigRequest req;
         *req.mutable_config() = Initial();
         for (int i = 0; i < 1024; ++i) {
           *req.mutable_config()->add_vips()->mutable_key() =
               Key(absl::StrCat("198.19.", i / 250, ".", i % 250 + 1), 80);
         }
         grpc::ClientContext ctx;
         v1::ApplyConfigResponse resp;
         return config->ApplyConfig(&ctx, req, &resp);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "1023"},
  };

  const v1::StatusResponse status_before = agent.Status();
  const v1::Config config_before = agent.Config();
  for (const Case& c : cases) {
    INFO(c.what);
    grpc::Status s = c.call();
    INFO("got " << s.error_code() << ": " << s.error_message());
    CHECK(s.error_code() == c.code);
    CHECK_THAT(s.error_message(), Catch::Contains(c.message));
  }
  CHECK(Same(agent.Status(), status_before));
  CHECK(Same(agent.Config(), config_before));
}

TEST_CASE("real engine: config diff shows exactly what apply then does", "[real]") {
  RealAgent agent;
  v1::Config next = Initial();
  next.mutable_vips(0)->mutable_backends(2)->set_weight(40);
  next.mutable_vips(0)->mutable_backends()->DeleteSubrange(1, 1);
  v1::Vip* added = next.add_vips();
  *added->mutable_key() = Key("198.18.0.30", 0, v1::UDP);
  added->set_table_size(7);
  v1::Backend* b = added->add_backends();
  b->set_address("198.18.1.30");
  b->set_weight(5);
  std::string text;
  REQUIRE(google::protobuf::TextFormat::PrintToString(next, &text));
  const std::string file = agent.dir.Join("next.txtpb");
  testing::WriteFile(file, text);

  const v1::Config before = agent.Config();
  LbctlResult diff = agent.Lbctl({"config", "diff", "-f", file});
  REQUIRE(diff.exit_code == 0);
  CHECK(Same(agent.Config(), before));  // a dry run changes nothing

  LbctlResult apply = agent.Lbctl({"config", "apply", "-f", file});
  REQUIRE(apply.exit_code == 0);
  // The same change lines, then each one's summary.
  const std::string diff_lines = diff.out.substr(0, diff.out.rfind("dry run:"));
  const std::string apply_lines = apply.out.substr(0, apply.out.rfind("applied "));
  CHECK_FALSE(diff_lines.empty());
  CHECK(diff_lines == apply_lines);
  CHECK(Same(agent.Config(), next));

  LbctlResult again = agent.Lbctl({"config", "diff", "-f", file});
  CHECK(again.out == "no changes\n");
}

TEST_CASE("real engine: lbctl changes a weight and status shows it", "[real]") {
  RealAgent agent;
  REQUIRE(agent.Lbctl({"backend", "weight", "198.18.0.10:80/tcp", "198.18.1.3", "0"}).exit_code ==
          0);
  LbctlResult st = agent.Lbctl({"--json", "status"});
  REQUIRE(st.exit_code == 0);
  v1::StatusResponse status;
  REQUIRE(google::protobuf::util::JsonStringToMessage(st.out, &status).ok());
  bool seen = false;
  for (const v1::VipStatus& v : status.vips()) {
    for (const v1::BackendStatus& b : v.backends()) {
      if (b.address() != "198.18.1.3") continue;
      seen = true;
      CHECK(b.nominal_weight() == 0);
      CHECK(b.table_slots() == 0);
    }
  }
  CHECK(seen);
  LbctlResult human = agent.Lbctl({"status"});
  REQUIRE(human.exit_code == 0);
  CHECK_THAT(human.out, Catch::Contains("VIP 198.18.0.10:80/tcp \"web\""));
  CHECK_THAT(human.out, Catch::Contains("[2001:db8:10::10]:443/tcp"));

  LbctlResult audit = agent.Lbctl({"audit", "--since", "1h"});
  REQUIRE(audit.exit_code == 0);
  CHECK_THAT(audit.out, Catch::Contains("operator:unix:uid=0"));

  LbctlResult bad = agent.Lbctl({"backend", "weight", "198.18.0.10:80/tcp", "198.18.1.3", "3000"});
  CHECK(bad.exit_code == lbctl::kExitInvalid);
  CHECK_THAT(bad.err, Catch::Contains("3000 is out of range 0..1000"));
}

TEST_CASE("real engine: WatchEvents delivers the engine's events", "[real][events]") {
  RealAgent agent;
  grpc::ClientContext ctx;
  auto reader = v1::Status::NewStub(agent.channel)->WatchEvents(&ctx, {});
  reader->WaitForInitialMetadata();
  REQUIRE(agent.Lbctl({"backend", "drain", "198.18.0.10:80/tcp", "198.18.1.2", "--deadline", "60s"})
              .exit_code == 0);
  v1::Event e;
  REQUIRE(reader->Read(&e));
  CHECK(e.backend() == "198.18.1.2");
  CHECK_THAT(e.kind(), Catch::Contains("drain"));
  ctx.TryCancel();
  reader->Finish();
}

TEST_CASE("real engine: a read-only TLS identity cannot change the state", "[real][tls]") {
  TempDir certs;
  const testpki::TestPki pki = testpki::GeneratePki(certs.path());
  v1::AdminAccess access;
  access.set_tcp_listen("127.0.0.1:0");
  access.set_tls_cert(pki.server_crt);
  access.set_tls_key(pki.server_key);
  access.set_tls_client_ca(pki.ca_crt);
  access.add_identities()->set_name("ops-admin");
  v1::Identity* ro = access.add_identities();
  ro->set_name("reader.example");
  ro->set_read_only(true);
  RealAgent agent(access);
  const std::string addr = "127.0.0.1:" + std::to_string(agent.server->tcp_port());
  auto tls = [&](const std::string& cert, const std::string& key, std::vector<std::string> args) {
    std::vector<std::string> all = {"--addr", addr, "--cacert", pki.ca_crt,
                                    "--cert", cert, "--key",    key};
    all.insert(all.end(), args.begin(), args.end());
    return testing::RunLbctlCaptured(all);
  };
  const v1::Config before = agent.Config();
  CHECK(tls(pki.reader_crt, pki.reader_key, {"status"}).exit_code == 0);
  LbctlResult denied = tls(pki.reader_crt, pki.reader_key,
                           {"backend", "weight", "198.18.0.10:80/tcp", "198.18.1.1", "1"});
  CHECK(denied.exit_code == lbctl::kExitDenied);
  CHECK(Same(agent.Config(), before));
  CHECK(tls(pki.rogue_crt, pki.rogue_key, {"--timeout", "3s", "vip", "del", "198.18.0.10:80/tcp"})
            .exit_code == lbctl::kExitUnreachable);
  CHECK(Same(agent.Config(), before));
  LbctlResult ok = tls(pki.admin_crt, pki.admin_key,
                       {"backend", "weight", "198.18.0.10:80/tcp", "198.18.1.1", "1"});
  CHECK(ok.exit_code == 0);
  CHECK(agent.Config().vips(0).backends(0).weight() == 1);
  LbctlResult audit = agent.Lbctl({"audit", "--since", "1h"});
  CHECK_THAT(audit.out, Catch::Contains("operator:tls:ops-admin"));
}

}  // namespace
}  // namespace ballast::api
