// Where second-chance bounces arrive: the pure decision (bounce_path.h), and
// the engine carrying it out over the in-memory data plane
// (RefreshBouncePaths: attach, detach, status, the record across restarts).
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/core/bounce_path.h"
#include "agent/core/clock.h"
#include "agent/core/router_engine.h"
#include "agent/core/tests/test_util.h"
#include "agent/dataplane/fake_dataplane.h"

namespace ballast::core {
namespace {

using testing::Key;
using testing::MakeBackend;
using testing::TempDir;

IpAddress Addr(const std::string& text) {
  auto a = IpAddress::Parse(text);
  REQUIRE(a.ok());
  return *a;
}

// eth0 faces the clients; backends behind eth1 (198.18.11.2) and eth2
// (198.18.12.2, 2001:db8:12::2).
BounceFacts Lab() {
  BounceFacts f;
  f.interface = "eth0";
  f.routes[Addr("198.18.11.2")] = {"eth1", ""};
  f.routes[Addr("198.18.12.2")] = {"eth2", ""};
  f.routes[Addr("2001:db8:12::2")] = {"eth2", ""};
  return f;
}

using Devices = std::set<std::string>;

TEST_CASE("bounce paths: a backend reached through an unconfigured device gets it attached",
          "[bounce]") {
  BounceState st;
  const BouncePlan plan = PlanBounceDevices(st, Lab(), 0);
  CHECK(plan.attach == Devices{"eth1", "eth2"});
  CHECK(plan.detach.empty());
  CHECK(plan.release.empty());
}

TEST_CASE("bounce paths: the interface and extra_interfaces need nothing", "[bounce]") {
  BounceFacts f = Lab();
  f.extra_interfaces = {"eth1", "eth2"};
  CHECK(PlanBounceDevices({}, f, 0).attach.empty());
  f.extra_interfaces.clear();
  f.routes = {{Addr("198.18.1.2"), {"eth0", ""}}};
  CHECK(PlanBounceDevices({}, f, 0).attach.empty());
  const BounceReport r = ReportBouncePaths({}, f);
  CHECK(r.backends.at(Addr("198.18.1.2")).ok);
  CHECK(r.backends.at(Addr("198.18.1.2")).via == "interface");
  CHECK(r.problems.empty());
}

TEST_CASE("bounce paths: switched off, nothing is attached and each backend shows why",
          "[bounce]") {
  BounceFacts f = Lab();
  f.automatic = false;
  BounceState st;
  CHECK(PlanBounceDevices(st, f, 0).attach.empty());
  const BounceReport r = ReportBouncePaths(st, f);
  const BackendBouncePath& p = r.backends.at(Addr("198.18.11.2"));
  CHECK_FALSE(p.ok);
  CHECK(p.device == "eth1");
  CHECK(p.problem ==
        "bounces_unreachable: device eth1 runs no lb program (global.no_auto_bounce_interfaces "
        "is set)");
  // One warning per device, however many backends are behind it.
  CHECK(r.warn == std::vector<std::string>{"eth1", "eth2"});
  CHECK(r.problems.at("eth2").backends == 2);
}

TEST_CASE("bounce paths: each problem is logged once, and its end once", "[bounce]") {
  BounceFacts f = Lab();
  f.automatic = false;
  BounceState st;
  st.warned = {"eth1", "eth2"};
  BounceReport r = ReportBouncePaths(st, f);
  CHECK(r.warn.empty());
  CHECK(r.recovered.empty());
  f.extra_interfaces = {"eth2"};  // the operator lists eth2
  r = ReportBouncePaths(st, f);
  CHECK(r.warn.empty());
  CHECK(r.recovered == std::vector<std::string>{"eth2"});
}

TEST_CASE("bounce paths: detaches what it attached once no backend needs it", "[bounce]") {
  BounceState st;
  st.attached = {"eth1", "eth2"};
  BounceFacts f = Lab();
  f.routes.erase(Addr("198.18.11.2"));  // the backend behind eth1 was deleted
  BouncePlan plan = PlanBounceDevices(st, f, 0);
  CHECK(plan.detach == Devices{"eth1"});
  CHECK(plan.attach.empty());
  // Switched off: everything it attached goes.
  f.automatic = false;
  plan = PlanBounceDevices(st, f, 0);
  CHECK(plan.detach == Devices{"eth1", "eth2"});
  // No interface: the agent attaches nothing at all.
  f = Lab();
  f.interface.clear();
  plan = PlanBounceDevices(st, f, 0);
  CHECK(plan.detach == Devices{"eth1", "eth2"});
  CHECK(ReportBouncePaths(st, f).backends.empty());
}

TEST_CASE("bounce paths: never detaches a device the operator configured", "[bounce]") {
  BounceState st;
  st.attached = {"eth1"};
  st.inherited = {"eth2"};
  BounceFacts f = Lab();
  f.extra_interfaces = {"eth1", "eth2"};
  f.routes.clear();  // no backend needs either
  const BouncePlan plan = PlanBounceDevices(st, f, 0);
  CHECK(plan.detach.empty());
  CHECK(plan.release == Devices{"eth1", "eth2"});
}

TEST_CASE("bounce paths: what a previous run attached is kept where needed, else detached",
          "[bounce]") {
  BounceState st;
  st.inherited = {"eth1", "eth9"};
  const BouncePlan plan = PlanBounceDevices(st, Lab(), 0);
  CHECK(plan.attach == Devices{"eth1", "eth2"});  // eth1 again: a no-op where it runs
  CHECK(plan.detach == Devices{"eth9"});
}

TEST_CASE("bounce paths: a failed attach is reported and tried again a minute later", "[bounce]") {
  BounceState st;
  st.attached = {"eth2"};
  st.failed["eth1"] = {"dev eth1 already runs XDP program id 7", 1000};
  BounceFacts f = Lab();
  CHECK(PlanBounceDevices(st, f, 1000 + kBounceAttachRetryMs - 1).attach.empty());
  CHECK(PlanBounceDevices(st, f, 1000 + kBounceAttachRetryMs).attach == Devices{"eth1"});
  const BounceReport r = ReportBouncePaths(st, f);
  CHECK(r.backends.at(Addr("198.18.11.2")).problem ==
        "bounces_unreachable: device eth1 runs no lb program (attaching it failed: dev eth1 "
        "already runs XDP program id 7)");
  CHECK(r.backends.at(Addr("198.18.12.2")).ok);
  CHECK(r.backends.at(Addr("198.18.12.2")).via == "automatic");
  // Once no backend is behind eth1, its failure is forgotten.
  f.routes.erase(Addr("198.18.11.2"));
  CHECK(PlanBounceDevices(st, f, 1000).forget == Devices{"eth1"});
}

TEST_CASE("bounce paths: a backend without a route is reported, nothing attached", "[bounce]") {
  BounceFacts f = Lab();
  f.routes[Addr("198.18.99.2")] = {"", "Network is unreachable"};
  CHECK(PlanBounceDevices({}, f, 0).attach == Devices{"eth1", "eth2"});
  const BounceReport r = ReportBouncePaths({}, f);
  CHECK(r.backends.at(Addr("198.18.99.2")).problem ==
        "bounces_unreachable: no route to the backend (Network is unreachable)");
  CHECK(r.problems.count("route 198.18.99.2") == 1);
}

TEST_CASE("bounce paths: a device leaving the config stays attached while bounces arrive there",
          "[bounce]") {
  const BounceFacts f = Lab();
  CHECK(BouncesNeed(f, "eth1"));
  CHECK_FALSE(BouncesNeed(f, "eth7"));
  BounceFacts off = f;
  off.automatic = false;
  CHECK_FALSE(BouncesNeed(off, "eth1"));
}

// ---- the engine over the in-memory data plane ----

v1::Config LabConfig() {
  v1::Config c;
  c.mutable_global()->set_interface("eth0");
  c.mutable_global()->set_source_v4("198.18.0.1");
  c.mutable_global()->set_source_v6("2001:db8::1");
  v1::Vip* v = c.add_vips();
  *v->mutable_key() = Key("198.18.0.10", 80);
  v->set_table_size(251);
  *v->add_backends() = MakeBackend("198.18.11.2", 1);
  *v->add_backends() = MakeBackend("198.18.12.2", 1);
  return c;
}

// Routes as a map the test edits: 198.18.1<i>.x behind eth<i>.
struct Fib {
  std::map<std::string, std::string> device_of = {{"198.18.11.2", "eth1"}, {"198.18.12.2", "eth2"}};
  int lookups = 0;
  RouteLookup lookup() {
    return [this](const std::vector<IpAddress>& addrs) {
      std::vector<RouteFact> out;
      for (const IpAddress& a : addrs) {
        ++lookups;
        auto it = device_of.find(a.ToString());
        out.push_back(it == device_of.end() ? RouteFact{"", "no route"}
                                            : RouteFact{it->second, ""});
      }
      return out;
    };
  }
};

struct Router {
  TempDir dir;
  FakeClock clock{1'700'000'000'000, 1'000'000'000};
  Fib fib;
  dataplane::FakeDataplane* dp = nullptr;
  std::unique_ptr<RouterEngine> engine;

  void Start(const v1::Config& initial, std::set<std::string> devices = {"eth0", "eth1", "eth2"}) {
    dataplane::FakeDataplane::Options o;
    o.devices = std::move(devices);
    auto fake = std::make_unique<dataplane::FakeDataplane>(o);
    dp = fake.get();
    EngineOptions eo;
    eo.state_file = dir.File("state.pb");
    eo.audit_log = dir.File("audit.jsonl");
    eo.route_lookup = fib.lookup();
    eo.bounce_devices_file = dir.File("bounce-interfaces");
    auto e = RouterEngine::Start(std::move(fake), eo, &clock, initial);
    REQUIRE(e.ok());
    engine = std::move(*e);
  }
  bool Attached(const std::string& dev) const { return dp->AttachedMode(dev).ok(); }
  v1::BouncePath PathOf(const std::string& backend) {
    auto st = engine->GetStatus();
    REQUIRE(st.ok());
    for (const v1::VipStatus& v : st->vips()) {
      for (const v1::BackendStatus& b : v.backends()) {
        if (b.address() == backend) return b.bounce_path();
      }
    }
    FAIL("no backend " << backend);
    return {};
  }
};

const Actor kOp{"operator:test"};

TEST_CASE("engine bounce paths: attaches where bounces arrive, shows it, detaches when unneeded",
          "[bounce]") {
  Router r;
  r.Start(LabConfig());
  CHECK(r.Attached("eth0"));
  CHECK_FALSE(r.Attached("eth1"));
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  CHECK(r.Attached("eth1"));
  CHECK(r.Attached("eth2"));
  const v1::BouncePath p = r.PathOf("198.18.11.2");
  CHECK(p.ok());
  CHECK(p.device() == "eth1");
  CHECK(p.via() == "automatic");
  auto st = r.engine->GetStatus();
  REQUIRE(st.ok());
  CHECK(std::vector<std::string>(st->bounce_interfaces().begin(), st->bounce_interfaces().end()) ==
        std::vector<std::string>{"eth1", "eth2"});

  REQUIRE(r.engine->DeleteBackend(Key("198.18.0.10", 80), "198.18.11.2", kOp).ok());
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  CHECK_FALSE(r.Attached("eth1"));
  CHECK(r.Attached("eth2"));
  CHECK(r.Attached("eth0"));
}

TEST_CASE("engine bounce paths: switched off, detaches and shows the condition", "[bounce]") {
  Router r;
  r.Start(LabConfig());
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  REQUIRE(r.Attached("eth1"));
  v1::Config c = r.engine->GetConfig();
  c.mutable_global()->set_no_auto_bounce_interfaces(true);
  REQUIRE(r.engine->ApplyConfig(c, false, kOp).ok());
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  CHECK_FALSE(r.Attached("eth1"));
  const v1::BouncePath p = r.PathOf("198.18.11.2");
  CHECK_FALSE(p.ok());
  CHECK(p.device() == "eth1");
  CHECK(p.problem() ==
        "bounces_unreachable: device eth1 runs no lb program (global.no_auto_bounce_interfaces "
        "is set)");
}

TEST_CASE("engine bounce paths: a device in extra_interfaces is the operator's", "[bounce]") {
  Router r;
  v1::Config c = LabConfig();
  c.mutable_global()->add_extra_interfaces("eth1");
  r.Start(c);
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  CHECK(r.PathOf("198.18.11.2").via() == "extra_interfaces");
  // No backend behind eth1 any more, and switched off: eth1 stays (configured).
  c = r.engine->GetConfig();
  c.mutable_global()->set_no_auto_bounce_interfaces(true);
  REQUIRE(r.engine->ApplyConfig(c, false, kOp).ok());
  REQUIRE(r.engine->DeleteBackend(Key("198.18.0.10", 80), "198.18.11.2", kOp).ok());
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  CHECK(r.Attached("eth1"));
  CHECK_FALSE(r.Attached("eth2"));
}

TEST_CASE("engine bounce paths: a device dropped from extra_interfaces stays while needed",
          "[bounce]") {
  Router r;
  v1::Config c = LabConfig();
  c.mutable_global()->add_extra_interfaces("eth1");
  r.Start(c);
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  c = r.engine->GetConfig();
  c.mutable_global()->clear_extra_interfaces();
  REQUIRE(r.engine->ApplyConfig(c, false, kOp).ok());
  CHECK(r.Attached("eth1"));  // not detached in between
  CHECK(r.dp->Calls("Detach") == 0);
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  CHECK(r.PathOf("198.18.11.2").via() == "automatic");
}

TEST_CASE("engine attachments: a device moved from extra_interfaces to interface stays attached",
          "[bounce]") {
  Router r;
  v1::Config c = LabConfig();
  c.mutable_global()->add_extra_interfaces("eth1");
  r.Start(c);
  c = r.engine->GetConfig();
  c.mutable_global()->set_interface("eth1");
  c.mutable_global()->clear_extra_interfaces();
  c.mutable_global()->set_no_auto_bounce_interfaces(true);  // nothing kept for bounces
  REQUIRE(r.engine->ApplyConfig(c, false, kOp).ok());
  CHECK(r.Attached("eth1"));
  CHECK_FALSE(r.Attached("eth0"));
}

TEST_CASE("engine bounce paths: a device that cannot be attached is reported", "[bounce]") {
  Router r;
  r.Start(LabConfig(), {"eth0", "eth2"});  // eth1 is missing
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  const v1::BouncePath p = r.PathOf("198.18.11.2");
  CHECK_FALSE(p.ok());
  CHECK_THAT(p.problem(), Catch::StartsWith("bounces_unreachable: device eth1 runs no lb program "
                                            "(attaching it failed: "));
  CHECK(r.PathOf("198.18.12.2").ok());
}

TEST_CASE("engine bounce paths: routes are looked up again on each refresh", "[bounce]") {
  Router r;
  r.Start(LabConfig());
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  r.fib.device_of["198.18.11.2"] = "eth2";  // the route moved
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  CHECK_FALSE(r.Attached("eth1"));
  CHECK(r.PathOf("198.18.11.2").device() == "eth2");
  CHECK(r.fib.lookups == 4);
}

TEST_CASE("engine bounce paths: the next run detaches what the last one attached if unneeded",
          "[bounce]") {
  Router r;
  r.Start(LabConfig());
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  REQUIRE(r.Attached("eth1"));
  const v1::Config c = r.engine->GetConfig();
  r.engine.reset();  // SIGTERM: everything stays attached
  // The next run (a new fake: attach what the last run left); meanwhile
  // the route to the backend behind eth1 moved to eth2.
  r.fib.device_of["198.18.11.2"] = "eth2";
  r.Start(c);
  for (const char* dev : {"eth1", "eth2"}) {
    REQUIRE(r.dp->Attach(dev, dataplane::AttachMode::kAuto).ok());
  }
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  CHECK_FALSE(r.Attached("eth1"));
  CHECK(r.Attached("eth2"));
  CHECK(r.PathOf("198.18.11.2").via() == "automatic");
}

TEST_CASE("engine bounce paths: teardown forgets the devices", "[bounce]") {
  Router r;
  r.Start(LabConfig());
  REQUIRE(r.engine->RefreshBouncePaths().ok());
  REQUIRE(r.engine->Teardown(kOp).ok());
  CHECK_FALSE(r.Attached("eth1"));
  CHECK(r.engine->RefreshBouncePaths().ok());
  CHECK_FALSE(r.Attached("eth1"));
}

}  // namespace
}  // namespace ballast::core
