// lbctl end to end against the admin server (on a test socket, over the
// recording engine): exit codes, messages, human and JSON output.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grp.h>

#include <algorithm>
#include <thread>

#include "agent/api/server.h"
#include "agent/api/tests/recording_engine.h"
#include "agent/api/tests/test_util.h"
#include "tests/lib/test_pki.h"
#include "tools/lbctl/commands.h"
#include "tools/lbctl/exit_codes.h"

namespace ballast::api {
namespace {

using testing::LbctlResult;
using testing::RecordingEngine;
using testing::TempDir;

struct Fixture {
  Fixture() {
    v1::AdminAccess a;
    a.set_socket_path(dir.Join("lbagent.sock"));
    AdminServerOptions opts;
    opts.log = [](absl::string_view, absl::string_view) {};
    opts.shutdown_grace = std::chrono::milliseconds(500);
    auto s = StartAdminServer(engine, a, opts);
    if (!s.ok()) FAIL("server did not start: " << s.status());
    server = std::move(*s);
  }
  LbctlResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--socket", dir.Join("lbagent.sock")});
    LbctlResult r = testing::RunLbctlCaptured(args);
    UNSCOPED_INFO("lbctl exit " << r.exit_code << "\nstdout:\n" << r.out << "stderr:\n" << r.err);
    return r;
  }

  TempDir dir;
  RecordingEngine engine;
  std::unique_ptr<AdminServer> server;
};

TEST_CASE_METHOD(Fixture, "lbctl vip add with backends, then list and status", "[lbctl]") {
  LbctlResult r = Run({"vip", "add", "198.18.0.10:80/tcp", "--name", "web", "--table-size", "251",
                       "--backend", "198.18.1.1,weight=50", "--backend", "[2001:db8::1]"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "added VIP 198.18.0.10:80/tcp with 2 backends\n");
  std::vector<v1::Vip> vips = engine.ListVips();
  REQUIRE(vips.size() == 1);
  CHECK(vips[0].name() == "web");
  CHECK(vips[0].table_size() == 251);
  REQUIRE(vips[0].backends_size() == 2);
  CHECK(vips[0].backends(0).weight() == 50);
  CHECK(vips[0].backends(1).address() == "2001:db8::1");
  CHECK(vips[0].backends(1).weight() == 100);

  r = Run({"vip", "list"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("198.18.0.10:80/tcp  web"));
  CHECK_THAT(r.out, Catch::Contains("198.18.1.1,weight=50 2001:db8::1,weight=100"));

  r = Run({"status"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("VIP 198.18.0.10:80/tcp \"web\""));
  CHECK_THAT(r.out, Catch::Contains("BACKEND"));
  CHECK_THAT(r.out, Catch::Contains("HS-MS"));
  CHECK_THAT(r.out, Catch::Contains("2001:db8::1"));

  // The socket from the environment when --socket is not given.
  setenv("LBCTL_SOCKET", dir.Join("lbagent.sock").c_str(), 1);
  r = testing::RunLbctlCaptured({"vip", "list"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("198.18.0.10:80/tcp  web"));
  // $LBCTL_ADDR wins over $LBCTL_SOCKET (here: refused, no certificates);
  // a flag wins over both.
  setenv("LBCTL_ADDR", "127.0.0.1:1", 1);
  r = testing::RunLbctlCaptured({"vip", "list"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--addr needs --cacert"));
  CHECK(Run({"vip", "list"}).exit_code == 0);
  unsetenv("LBCTL_ADDR");
  unsetenv("LBCTL_SOCKET");

  // One VIP: only its section; an unknown one is not found (3), a malformed one invalid (2).
  REQUIRE(Run({"vip", "add", "198.18.0.11:80/tcp", "--backend", "198.18.1.9"}).exit_code == 0);
  r = Run({"status", "198.18.0.11:80/tcp"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("VIP 198.18.0.11:80/tcp"));
  CHECK_THAT(r.out, !Catch::Contains("VIP 198.18.0.10:80/tcp"));
  r = Run({"status", "198.18.0.12:80/tcp"});
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Catch::Contains("vip 198.18.0.12:80/tcp does not exist"));
  CHECK(Run({"status", "198.18.0.12"}).exit_code == 2);
}

TEST_CASE_METHOD(Fixture, "lbctl vip add --mode: encap or gue, shown by list and status",
                 "[lbctl]") {
  LbctlResult r =
      Run({"vip", "add", "198.18.0.10:80/tcp", "--mode", "gue", "--backend", "198.18.1.1"});
  REQUIRE(r.exit_code == 0);
  REQUIRE(Run({"vip", "add", "198.18.0.11:80/tcp", "--mode", "encap"}).exit_code == 0);
  REQUIRE(Run({"vip", "add", "198.18.0.12:80/tcp"}).exit_code == 0);
  std::vector<v1::Vip> vips = engine.ListVips();
  REQUIRE(vips.size() == 3);
  CHECK(vips[0].mode() == v1::GUE);
  CHECK(vips[1].mode() == v1::ENCAP);
  CHECK(vips[2].mode() == v1::FORWARDING_MODE_UNSPECIFIED);

  r = Run({"vip", "list"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out,
             Catch::Contains("198.18.0.10:80/tcp  -     default  gue    198.18.1.1,weight=100\n"));
  CHECK_THAT(r.out, Catch::Contains("198.18.0.11:80/tcp  -     default  encap  -\n"));
  r = Run({"status"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("VIP 198.18.0.10:80/tcp  id 0  table 65537  encap gue  pkts"));
  CHECK_THAT(r.out, Catch::Contains("VIP 198.18.0.11:80/tcp  id 0  table 65537  pkts"));

  // Anything else is refused before a call (exit 2), naming the choices.
  const size_t calls = engine.calls().size();
  r = Run({"vip", "add", "198.18.0.13:80/tcp", "--mode", "dsr"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--mode 'dsr': encap (IP-in-IP) or gue (IP in UDP)"));
  CHECK(engine.calls().size() == calls);
}

TEST_CASE_METHOD(Fixture, "lbctl flows lists a VIP's flows; bad input is refused before a call",
                 "[lbctl]") {
  REQUIRE(Run({"vip", "add", "198.18.0.10:80/tcp", "--backend", "198.18.1.1"}).exit_code == 0);
  v1::ListFlowsResponse flows;
  v1::Flow* f = flows.add_flows();
  f->set_client("198.18.1.5");
  f->set_client_port(40001);
  f->set_vip_port(80);
  f->set_backend("198.18.1.1");
  f->set_state("established");
  f->set_table("flows");
  flows.set_matched(1);
  flows.set_scanned(1);
  engine.SetFlows(flows);
  LbctlResult r = Run({"flows", "198.18.0.10:80/tcp", "198.18.1.1", "--limit", "5"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("198.18.1.5:40001"));
  CHECK_THAT(r.out, Catch::Contains("1 of 1 live flows of 198.18.0.10:80/tcp shown"));
  CHECK(engine.calls().back().method == "ListFlows");
  CHECK(engine.calls().back().detail == "198.18.0.10:80/tcp 198.18.1.1 limit=5");
  r = Run({"flows", "198.18.0.10:80/tcp", "-o", "json"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("\"clientPort\": 40001"));
  // Unknown VIP: not found (3); a malformed one, a bad backend or limit: invalid (2).
  CHECK(Run({"flows", "198.18.0.11:80/tcp"}).exit_code == 3);
  CHECK(Run({"flows", "198.18.0.10"}).exit_code == 2);
  CHECK(Run({"flows", "198.18.0.10:80/tcp", "not-an-ip"}).exit_code == 2);
  r = Run({"flows", "198.18.0.10:80/tcp", "--limit", "100001"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--limit 100001 is above 100000"));
}

TEST_CASE_METHOD(Fixture, "lbctl status --watch draws frames with rates from the second on",
                 "[lbctl]") {
  REQUIRE(Run({"vip", "add", "198.18.0.10:80/tcp", "--backend", "198.18.1.1"}).exit_code == 0);
  LbctlResult r = Run({"status", "--watch", "--interval", "200ms", "--frames", "2"});
  REQUIRE(r.exit_code == 0);
  INFO(r.out);
  // Not a terminal: frames follow each other, no screen clearing.
  CHECK_THAT(r.out, !Catch::Contains("\033["));
  CHECK_THAT(r.out, Catch::StartsWith("every 200ms, "));
  CHECK_THAT(r.out, Catch::Contains("RATES: from the next refresh on"));
  CHECK_THAT(r.out, Catch::Contains("RATES over the last 0."));
  CHECK_THAT(r.out, Catch::Contains("PACKETS/S"));
  CHECK_THAT(r.out, Catch::Contains("\n\nevery 200ms, "));
  // Only with --watch, not with --json, not faster than 200ms.
  r = Run({"status", "--frames", "2"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--interval and --frames go with --watch"));
  r = Run({"-o", "json", "status", "--watch", "--frames", "1"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--watch draws tables for a person"));
  r = Run({"status", "-w", "--interval", "50ms", "--frames", "1"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--interval 50ms is below 200ms"));
}

TEST_CASE_METHOD(Fixture, "lbctl --json prints the API message in protobuf's JSON mapping",
                 "[lbctl]") {
  REQUIRE(Run({"vip", "add", "[2001:db8::10]:443/tcp", "--backend", "2001:db8::2"}).exit_code == 0);
  LbctlResult r = Run({"--json", "vip", "list"});
  REQUIRE(r.exit_code == 0);
  v1::ListVipsResponse parsed;
  auto st = google::protobuf::util::JsonStringToMessage(r.out, &parsed);
  REQUIRE(st.ok());
  REQUIRE(parsed.vips_size() == 1);
  CHECK(parsed.vips(0).key().address() == "2001:db8::10");
  CHECK(parsed.vips(0).key().protocol() == v1::TCP);
  CHECK_THAT(r.out, Catch::Contains("\"protocol\": \"TCP\""));
  CHECK_THAT(r.out, Catch::Contains("\"tableSize\": 0"));  // defaults printed too

  r = Run({"--json", "backend", "weight", "[2001:db8::10]:443/tcp", "2001:db8::2", "7"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "{}\n");

  // Global flags after the command work as before it.
  r = Run({"vip", "list", "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("\"protocol\": \"TCP\""));
  r = Run({"backend", "weight", "[2001:db8::10]:443/tcp", "2001:db8::2", "8", "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "{}\n");

  // -o json is --json, before or after the command; -o table is the default.
  const std::string as_json = Run({"--json", "vip", "list"}).out;
  CHECK(Run({"-o", "json", "vip", "list"}).out == as_json);
  CHECK(Run({"vip", "list", "--output", "json"}).out == as_json);
  CHECK(Run({"vip", "list", "-o", "table"}).out == Run({"vip", "list"}).out);
  r = Run({"vip", "list", "-o", "yaml"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("yaml"));
  r = Run({"--json", "vip", "list", "-o", "table"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--json and -o table disagree"));
}

TEST_CASE_METHOD(Fixture, "lbctl exit codes follow the API status", "[lbctl]") {
  REQUIRE(Run({"vip", "add", "198.18.0.10:80/tcp", "--backend", "198.18.1.1"}).exit_code == 0);

  SECTION("0: weight set") {
    LbctlResult r = Run({"backend", "weight", "198.18.0.10:80/tcp", "198.18.1.1", "0"});
    CHECK(r.exit_code == lbctl::kExitOk);
    CHECK(engine.ListVips()[0].backends(0).weight() == 0);
  }
  SECTION("2: the engine's INVALID_ARGUMENT, message intact") {
    LbctlResult r = Run({"backend", "weight", "198.18.0.10:80/tcp", "198.18.1.1", "3000"});
    CHECK(r.exit_code == lbctl::kExitInvalid);
    CHECK(r.err == "lbctl: backend 198.18.1.1: weight 3000 is out of range 0..1000\n");
  }
  SECTION("2: bad input never reaches the agent") {
    for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
             {"backend", "weight", "198.18.0.10:80", "198.18.1.1", "5"},
             {"backend", "weight", "198.18.0.10:80/tcp", "198.18.1.1", "-5"},
             {"backend", "weight", "198.18.0.10:80/tcp", "backend1", "5"},
             {"backend", "drain", "198.18.0.10:80/tcp", "198.18.1.1", "--deadline", "1.5s"},
             {"backend", "drain", "198.18.0.10:80/tcp", "198.18.1.1", "--deadline", "0"},
             {"vip", "add", "198.18.0.10:80/tcp", "--backend", "198.18.1.1:x"},
             {"vip", "frobnicate"},
             {"vip", "relearn", "198.18.0.10:80"},
             {"vip", "relearn"},
             {"backend"},
             {"audit", "--since", "yesterday"},
             {"teardown"},
             {"--timeout", "0s", "status"},
         }) {
      const size_t before = engine.calls().size();
      LbctlResult r = Run(args);
      CHECK(r.exit_code == lbctl::kExitInvalid);
      CHECK_FALSE(r.err.empty());
      CHECK(engine.calls().size() == before);
    }
    CHECK_FALSE(engine.ShutdownRequested());
  }
  SECTION("3: not found") {
    LbctlResult r = Run({"backend", "del", "198.18.0.10:80/tcp", "198.18.1.99"});
    CHECK(r.exit_code == lbctl::kExitNotFound);
    CHECK_THAT(r.err, Catch::Contains("198.18.1.99 not found"));
    CHECK(Run({"vip", "del", "198.18.0.11:80/tcp"}).exit_code == lbctl::kExitNotFound);
  }
  SECTION("4: already exists / failed precondition") {
    CHECK(Run({"vip", "add", "198.18.0.10:80/tcp"}).exit_code == lbctl::kExitConflict);
    engine.FailWith(absl::FailedPreconditionError("backend 198.18.1.1 is not draining"));
    LbctlResult r = Run({"backend", "undrain", "198.18.0.10:80/tcp", "198.18.1.1"});
    CHECK(r.exit_code == lbctl::kExitConflict);
    CHECK(r.err == "lbctl: backend 198.18.1.1 is not draining\n");
  }
  SECTION("6: permission denied") {
    engine.FailWith(absl::PermissionDeniedError("no"));
    LbctlResult r = Run({"status"});
    CHECK(r.exit_code == lbctl::kExitDenied);
    CHECK_THAT(r.err, Catch::StartsWith("lbctl: access denied by lbagent at unix:"));
  }
  SECTION("1: anything else") {
    engine.FailWith(absl::InternalError("map update failed: No space left on device"));
    CHECK(Run({"status"}).exit_code == lbctl::kExitFailure);
  }
}

TEST_CASE_METHOD(Fixture, "lbctl backend verbs send what the operator typed", "[lbctl]") {
  REQUIRE(Run({"vip", "add", "198.18.0.10:0/udp"}).exit_code == 0);
  REQUIRE(Run({"backend", "add", "198.18.0.10:0/udp", "198.18.1.5", "--weight", "30"}).exit_code ==
          0);
  REQUIRE(
      Run({"backend", "drain", "198.18.0.10:0/udp", "198.18.1.5", "--deadline", "2m"}).exit_code ==
      0);
  REQUIRE(Run({"backend", "drain", "198.18.0.10:0/udp", "198.18.1.5"}).exit_code == 0);
  REQUIRE(Run({"backend", "undrain", "198.18.0.10:0/udp", "198.18.1.5"}).exit_code == 0);
  REQUIRE(Run({"backend", "release", "198.18.0.10:0/udp", "198.18.1.5"}).exit_code == 0);
  REQUIRE(Run({"backend", "del", "198.18.0.10:0/udp", "198.18.1.5"}).exit_code == 0);
  const LbctlResult relearn = Run({"vip", "relearn", "198.18.0.10:0/udp"});
  REQUIRE(relearn.exit_code == 0);
  CHECK(relearn.out ==
        "VIP 198.18.0.10:0/udp: health checking learns its baselines again from the next "
        "evaluation (a pool frozen by a shift that stays then unfreezes)\n");
  CHECK(Run({"vip", "relearn", "198.18.0.11:0/udp"}).exit_code == lbctl::kExitNotFound);
  std::vector<std::string> details;
  for (const auto& c : engine.calls()) details.push_back(c.method + " " + c.detail);
  const std::vector<std::string> want = {
      "AddVip 198.18.0.10:0/udp",
      "AddBackend 198.18.0.10:0/udp 198.18.1.5 weight=30",
      "Drain 198.18.0.10:0/udp 198.18.1.5 deadline=120",
      "Drain 198.18.0.10:0/udp 198.18.1.5 deadline=0",
      "Undrain 198.18.0.10:0/udp 198.18.1.5",
      "Release 198.18.0.10:0/udp 198.18.1.5",
      "DeleteBackend 198.18.0.10:0/udp 198.18.1.5",
      "RelearnHealth 198.18.0.10:0/udp",
      "RelearnHealth 198.18.0.11:0/udp",
  };
  CHECK(details == want);
}

TEST_CASE_METHOD(Fixture, "lbctl config apply, diff and get", "[lbctl][config]") {
  const std::string file = dir.Join("config.txtpb");
  testing::WriteFile(file, R"(
vips {
  key { address: "198.18.0.20" port: 443 protocol: TCP }
  name: "api"
  backends { address: "198.18.1.1" weight: 100 }
}
)");
  LbctlResult r = Run({"config", "diff", "-f", file});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "+ vip 198.18.0.20:443/tcp\ndry run: 1 change, nothing applied\n");
  CHECK(engine.ListVips().empty());

  r = Run({"config", "apply", "--dry-run", "-f", file});
  REQUIRE(r.exit_code == 0);
  CHECK(engine.ListVips().empty());

  r = Run({"config", "apply", "-f", file});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("applied 1 change, generation"));
  REQUIRE(engine.ListVips().size() == 1);

  r = Run({"config", "get"});
  REQUIRE(r.exit_code == 0);
  v1::Config parsed;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(r.out, &parsed));
  REQUIRE(parsed.vips_size() == 1);
  CHECK(parsed.vips(0).name() == "api");

  SECTION("a syntax error names the line") {
    testing::WriteFile(file, "vips {\n  key { adress: \"x\" }\n}\n");
    r = Run({"config", "apply", "-f", file});
    CHECK(r.exit_code == lbctl::kExitInvalid);
    CHECK_THAT(r.err, Catch::Contains("2:"));
    CHECK_THAT(r.err, Catch::Contains("adress"));
  }
  SECTION("an empty config needs --allow-empty") {
    testing::WriteFile(file, "");
    r = Run({"config", "apply", "-f", file});
    CHECK(r.exit_code == lbctl::kExitInvalid);
    CHECK_THAT(r.err, Catch::Contains("--allow-empty"));
    CHECK(engine.ListVips().size() == 1);
    r = Run({"config", "apply", "-f", file, "--allow-empty"});
    CHECK(r.exit_code == 0);
    CHECK(engine.ListVips().empty());
  }
  SECTION("a missing file") {
    r = Run({"config", "apply", "-f", dir.Join("nope")});
    CHECK(r.exit_code == lbctl::kExitInvalid);
    CHECK_THAT(r.err, Catch::Contains("cannot read"));
  }
}

TEST_CASE_METHOD(Fixture, "lbctl events prints events as they happen", "[lbctl][events]") {
  LbctlResult r;
  std::thread t([&] { r = Run({"events", "--count", "2"}); });
  for (int i = 0; i < 250 && engine.subscribers() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(engine.subscribers() == 1);
  v1::Event e;
  e.set_unix_ms(1700000000000);
  e.set_kind("backend_drained");
  e.set_vip("198.18.0.10:80/tcp");
  e.set_backend("198.18.1.1");
  e.set_generation(4);
  engine.Emit(e);
  e.set_kind("weight_changed");
  engine.Emit(e);
  t.join();
  CHECK(r.exit_code == 0);
  CHECK(r.out ==
        "2023-11-14T22:13:20.000Z  backend_drained  vip=198.18.0.10:80/tcp  backend=198.18.1.1  "
        "(generation 4)\n"
        "2023-11-14T22:13:20.000Z  weight_changed  vip=198.18.0.10:80/tcp  backend=198.18.1.1  "
        "(generation 4)\n");
}

TEST_CASE_METHOD(Fixture, "lbctl audit and teardown", "[lbctl]") {
  REQUIRE(Run({"vip", "add", "198.18.0.10:80/tcp"}).exit_code == 0);
  LbctlResult r = Run({"audit", "--since", "1h"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("operator:unix:uid="));
  CHECK_THAT(r.out, Catch::Contains("AddVip"));
  r = Run({"teardown", "--yes"});
  REQUIRE(r.exit_code == 0);
  CHECK(engine.ShutdownRequested());
}

TEST_CASE("lbctl: unreachable agent is exit 5 with a clear message", "[lbctl]") {
  TempDir dir;
  SECTION("no socket") {
    LbctlResult r = testing::RunLbctlCaptured({"--socket", dir.Join("none.sock"), "status"});
    CHECK(r.exit_code == lbctl::kExitUnreachable);
    CHECK(r.err == "lbctl: cannot reach lbagent at unix:" + dir.Join("none.sock") +
                       ": no such socket. Is lbagent running?\n");
  }
  SECTION("a stale socket nobody listens on") {
    RecordingEngine engine;
    v1::AdminAccess a;
    a.set_socket_path(dir.Join("lbagent.sock"));
    AdminServerOptions quiet;
    quiet.log = [](absl::string_view, absl::string_view) {};
    {
      auto s = StartAdminServer(engine, a, quiet);
      REQUIRE(s.ok());
      // Keep the file after shutdown by renaming it away and back: a crash.
      REQUIRE(rename(dir.Join("lbagent.sock").c_str(), dir.Join("keep.sock").c_str()) == 0);
    }
    REQUIRE(rename(dir.Join("keep.sock").c_str(), dir.Join("lbagent.sock").c_str()) == 0);
    LbctlResult r = testing::RunLbctlCaptured(
        {"--socket", dir.Join("lbagent.sock"), "--timeout", "2s", "vip", "list"});
    CHECK(r.exit_code == lbctl::kExitUnreachable);
    CHECK_THAT(r.err, Catch::StartsWith("lbctl: cannot reach lbagent at unix:"));
    CHECK_THAT(r.err, Catch::EndsWith("Is lbagent running?\n"));
  }
  SECTION("a socket this user may not open") {
    // Root bypasses file permissions; drop to nobody in a child process.
    RecordingEngine engine;
    v1::AdminAccess a;
    a.set_socket_path(dir.Join("lbagent.sock"));
    AdminServerOptions quiet;
    quiet.log = [](absl::string_view, absl::string_view) {};
    auto s = StartAdminServer(engine, a, quiet);
    REQUIRE(s.ok());
    REQUIRE(chmod(dir.path().c_str(), 0755) == 0);
    // The real lbctl binary, as user nobody (a forked copy of this
    // multi-threaded gRPC process must not use gRPC itself).
    const std::string err_path = dir.Join("child.err");
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Open stderr's file while still root: nobody may not create it.
      int errfd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (errfd < 0 || dup2(errfd, 2) < 0) _exit(102);
      if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(100);
      execl(LBCTL_PATH, "lbctl", "--socket", a.socket_path().c_str(), "status", nullptr);
      _exit(101);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == lbctl::kExitDenied);
    CHECK_THAT(testing::ReadFileOrDie(err_path),
               Catch::StartsWith("lbctl: permission denied on unix:" + a.socket_path() +
                                 ": run as root or as a member of the socket's group"));
    CHECK(engine.calls().empty());
  }
}

TEST_CASE("lbctl over mutual TLS: read-only identity", "[lbctl][tls]") {
  TempDir dir;
  const testpki::TestPki pki = testpki::GeneratePki(dir.path());
  RecordingEngine engine;
  v1::AdminAccess a;
  a.set_socket_path(dir.Join("lbagent.sock"));
  a.set_tcp_listen("127.0.0.1:0");
  a.set_tls_cert(pki.server_crt);
  a.set_tls_key(pki.server_key);
  a.set_tls_client_ca(pki.ca_crt);
  v1::Identity* ro = a.add_identities();
  ro->set_name("reader.example");
  ro->set_read_only(true);
  AdminServerOptions quiet;
  quiet.log = [](absl::string_view, absl::string_view) {};
  auto server = StartAdminServer(engine, a, quiet);
  REQUIRE(server.ok());
  const std::string addr = "127.0.0.1:" + std::to_string((*server)->tcp_port());
  auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"--addr", addr,           "--cacert", pki.ca_crt,
                                    "--cert", pki.reader_crt, "--key",    pki.reader_key};
    all.insert(all.end(), args.begin(), args.end());
    return testing::RunLbctlCaptured(all);
  };
  CHECK(run({"status"}).exit_code == 0);
  LbctlResult r = run({"backend", "weight", "198.18.0.10:80/tcp", "198.18.1.1", "5"});
  CHECK(r.exit_code == lbctl::kExitDenied);
  CHECK_THAT(r.err, Catch::StartsWith("lbctl: access denied by lbagent at " + addr));
  CHECK_THAT(r.err, Catch::Contains("read-only"));

  r = testing::RunLbctlCaptured({"--addr", addr, "status"});
  CHECK(r.exit_code == lbctl::kExitInvalid);
  CHECK_THAT(r.err, Catch::Contains("--addr needs --cacert, --cert and --key"));

  const size_t calls = engine.calls().size();
  r = testing::RunLbctlCaptured({"--addr", addr, "--cacert", pki.ca_crt, "--cert", pki.rogue_crt,
                                 "--key", pki.rogue_key, "--timeout", "3s", "status"});
  CHECK(r.exit_code == lbctl::kExitUnreachable);
  CHECK_THAT(r.err, Catch::Contains("Is lbagent running?"));
  CHECK(engine.calls().size() == calls);
}

TEST_CASE_METHOD(Fixture, "lbctl vip quic-config, quic-rotate, quic-retire and status",
                 "[lbctl][quic]") {
  REQUIRE(Run({"vip", "add", "198.18.0.10:443/udp", "--backend", "198.18.1.5"}).exit_code == 0);
  // Not a QUIC VIP yet: not found (3).
  CHECK(Run({"vip", "quic-config", "198.18.0.10:443/udp", "198.18.1.5"}).exit_code ==
        lbctl::kExitNotFound);
  v1::ExportQuicConfigResponse exp;
  v1::QuicServerConfig* cur = exp.add_configs();
  cur->set_config_id(1);
  cur->set_server_id_len(2);
  cur->set_nonce_len(14);
  cur->set_server_id(std::string("\x00\x03", 2));
  cur->set_key(std::string("\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff", 16));
  cur->set_current(true);
  v1::QuicServerConfig* old = exp.add_configs();
  old->set_config_id(0);
  old->set_server_id_len(3);
  old->set_nonce_len(6);
  old->set_server_id(std::string("\x00\x00\x03", 3));
  engine.SetQuicExport(exp);
  LbctlResult r = Run({"vip", "quic-config", "198.18.0.10:443/udp", "198.18.1.5"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out ==
        "# QUIC-LB server configuration of backend 198.18.1.5 of VIP 198.18.0.10:443/udp\n"
        "# (docs/operations.md, \"QUIC backends\"). Secret: it holds the key.\n"
        "\nconfig_id=1\nserver_id_len=2\nnonce_len=14\nserver_id=0003\n"
        "key=00112233445566778899aabbccddeeff\ncurrent=1\n"
        "\nconfig_id=0\nserver_id_len=3\nnonce_len=6\nserver_id=000003\ncurrent=0\n");
  CHECK(Run({"vip", "quic-config", "198.18.0.10:443/udp", "198.18.1.6"}).exit_code ==
        lbctl::kExitNotFound);
  CHECK(Run({"vip", "quic-config", "198.18.0.10:443/udp", "not-an-ip"}).exit_code == 2);

  r = Run({"vip", "quic-rotate", "198.18.0.10:443/udp", "--reason", "quarterly"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("VIP 198.18.0.10:443/udp: QUIC-LB config_id 1 started "
                                      "(generation "));
  CHECK_THAT(r.out, Catch::Contains("config_id 0 stays live"));
  r = Run({"vip", "quic-retire", "198.18.0.10:443/udp"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("QUIC-LB config_id 0 retired"));
  CHECK_THAT(r.out, Catch::EndsWith("config_id 1 is the only one\n"));

  std::vector<std::string> details;
  for (const auto& c : engine.calls()) details.push_back(c.method + " " + c.detail);
  CHECK(std::count(details.begin(), details.end(),
                   "ExportQuicConfig 198.18.0.10:443/udp 198.18.1.5") == 2);
  CHECK(std::count(details.begin(), details.end(),
                   "RotateQuicConfig 198.18.0.10:443/udp quarterly") == 1);
  CHECK(std::count(details.begin(), details.end(), "RetireQuicConfig 198.18.0.10:443/udp ") == 1);

  // Status: the configurations and each backend's server ID.
  v1::StatusResponse st;
  v1::VipStatus* vs = st.add_vips();
  vs->mutable_key()->set_address("198.18.0.10");
  vs->mutable_key()->set_port(443);
  vs->mutable_key()->set_protocol(v1::UDP);
  vs->set_table_size(7);
  v1::QuicConfigStatus* q = vs->add_quic();
  q->set_config_id(1);
  q->set_server_id_len(2);
  q->set_nonce_len(14);
  q->set_encrypted(true);
  v1::BackendStatus* b = vs->add_backends();
  b->set_address("198.18.1.5");
  b->set_state("active");
  b->set_quic_server_id("0003");
  engine.SetStatus(st);
  r = Run({"status"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("QUIC-LB config 1: server ID 2 + nonce 14 octets, encrypted"));
  // Columns are padded: compare with runs of spaces as one.
  std::string squeezed;
  for (char ch : r.out) {
    if (ch != ' ' || squeezed.empty() || squeezed.back() != ' ') squeezed.push_back(ch);
  }
  CHECK_THAT(squeezed, Catch::Contains("BACKEND SERVER-ID STATE"));
  CHECK_THAT(squeezed, Catch::Contains("198.18.1.5 0003 active"));
}

}  // namespace
}  // namespace ballast::api
