// The engine's side of health checking: marks (ApplyHealth) set effective
// weights in the state, the file and the data plane; pins and the operator's
// release; marks survive a restart; turning health checking off clears them;
// HealthSettings validation.
#include <algorithm>

#include <catch2/catch.hpp>

#include "agent/core/health_controller.h"
#include "agent/core/health_settings.h"
#include "agent/core/names.h"
#include "agent/core/tests/test_util.h"
#include "agent/core/timeline.h"
#include "agent/core/validate.h"
#include "agent/maglev/maglev.h"

namespace ballast::core {
namespace {

using testing::Key;
using testing::SmallConfig;
using testing::StartEngine;
using testing::TempDir;

const Actor kOp{"operator:test"};
const v1::VipKey kVip4 = Key("198.18.0.10", 80);
constexpr const char* kB3 = "198.18.1.3";

HealthDecision Mark(bool in_service, uint32_t ramp, uint32_t weight_score, const char* state,
                    bool pin = false) {
  HealthDecision d;
  d.vip = kVip4;
  d.address = kB3;
  d.mark.set_in_service(in_service);
  d.mark.set_ramp_percent(ramp);
  d.mark.set_weight_score(weight_score);
  d.mark.set_score(weight_score);
  d.mark.set_state(state);
  d.pin = pin;
  return d;
}

const v1::BackendStatus& B3(const v1::StatusResponse& st) { return st.vips(0).backends(2); }

// The table in the map equals BuildTable of the effective weights in status.
void RequireTableFollowsStatus(const RouterEngine& e) {
  auto st = e.GetStatus();
  REQUIRE(st.ok());
  const v1::State s = e.State();
  std::vector<maglev::Backend> in;
  for (const v1::BackendStatus& b : st->vips(0).backends()) {
    in.push_back({b.backend_id(), CanonicalAddress(b.address()), b.effective_weight()});
  }
  auto want = maglev::BuildTable(in, st->vips(0).table_size());
  REQUIRE(want.ok());
  auto got = e.ReadTable(kVip4);
  REQUIRE(got.ok());
  REQUIRE(*got == *want);
}

TEST_CASE("ApplyHealth: marks scale the weight, are persisted, programmed and audited") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  {
    auto e = StartEngine(dir, &clock, SmallConfig());
    REQUIRE(e->SetWeight(kVip4, kB3, 100, kOp).ok());
    std::vector<std::string> kinds;
    e->Subscribe([&](const v1::Event& ev) { kinds.push_back(ev.kind()); });
    const uint64_t gen = e->Health().generation;

    // Ramping at 20 %: 100 -> 20.
    REQUIRE(e->ApplyHealth({Mark(true, 20, 100, "ramping")},
                           {{"ramp_step", VipKeyText(kVip4), kB3, "{\"ramp_percent\":20}",
                             "ramp step to 20%"}})
                .ok());
    auto st = e->GetStatus();
    REQUIRE(st.ok());
    CHECK(B3(*st).nominal_weight() == 100);
    CHECK(B3(*st).effective_weight() == 20);
    CHECK(B3(*st).state() == "active");
    RequireTableFollowsStatus(*e);
    CHECK(e->Health().generation == gen + 1);
    CHECK(kinds == std::vector<std::string>{"ramp_step"});
    auto audit = e->QueryAudit(0, 0);
    REQUIRE(audit.ok());
    CHECK(audit->back().actor() == "automation");
    CHECK(audit->back().action() == "ramp_step");
    CHECK(audit->back().inputs_json() == "{\"ramp_percent\":20}");
    CHECK(e->Health().health_actions.at("ramp_step") == 1);

    // The same mark again (only the score moved) changes nothing.
    HealthDecision same = Mark(true, 20, 100, "ramping");
    same.mark.set_score(97);
    REQUIRE(e->ApplyHealth({same}, {}).ok());
    CHECK(e->Health().generation == gen + 1);

    // Degraded: weight score 70 -> 70 % of nominal.
    REQUIRE(e->ApplyHealth({Mark(true, 100, 70, "degraded")}, {}).ok());
    CHECK(B3(*e->GetStatus()).effective_weight() == 70);
    RequireTableFollowsStatus(*e);

    // Demoted: out of the table, but the map keeps it ACTIVE (its flows stay).
    REQUIRE(e->ApplyHealth({Mark(false, 100, 40, "down")}, {}).ok());
    st = e->GetStatus();
    CHECK(B3(*st).effective_weight() == 0);
    CHECK(B3(*st).table_slots() == 0);
    CHECK(e->ReadDataplane()->backends.at(B3(*st).backend_id()).state == BALLAST_BACKEND_ACTIVE);
    RequireTableFollowsStatus(*e);

    // A decision for a backend that is gone is ignored.
    HealthDecision gone = Mark(true, 100, 100, "healthy");
    gone.address = "198.18.1.99";
    REQUIRE(e->ApplyHealth({gone}, {}).ok());
  }
  // Restart: the mark is in the state file; the backend stays out.
  auto e = StartEngine(dir, &clock, SmallConfig());
  auto st = e->GetStatus();
  REQUIRE(st.ok());
  CHECK(B3(*st).effective_weight() == 0);
  RequireTableFollowsStatus(*e);
}

TEST_CASE("A pin evicts the backend; release clears it and leaves it down until promoted") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, SmallConfig());
  REQUIRE(e->Release(kVip4, kB3, kOp).code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE(e->ApplyHealth({Mark(false, 100, 40, "pinned", /*pin=*/true)},
                         {{"pin", VipKeyText(kVip4), kB3, "{}", "pinned after 3 flaps"}})
              .ok());
  auto st = e->GetStatus();
  REQUIRE(st.ok());
  CHECK(B3(*st).state() == "pinned");
  CHECK(B3(*st).effective_weight() == 0);
  CHECK(e->ReadDataplane()->backends.at(B3(*st).backend_id()).state == BALLAST_BACKEND_EVICTED);
  // The operator cannot drain it or undrain it while pinned.
  CHECK(e->Undrain(kVip4, kB3, kOp).code() == absl::StatusCode::kFailedPrecondition);

  REQUIRE(e->Release(kVip4, kB3, kOp).ok());
  st = e->GetStatus();
  CHECK(B3(*st).state() == "active");
  CHECK(B3(*st).effective_weight() == 0);  // down until health checking promotes it
  const v1::State state = e->State();      // FindOverride points into it
  const v1::BackendOverride* o = FindOverride(state, kVip4, kB3);
  REQUIRE(o != nullptr);
  CHECK_FALSE(o->pinned());
  CHECK(o->health().state() == "down");
  CHECK_FALSE(o->health().in_service());
  RequireTableFollowsStatus(*e);
}

TEST_CASE("With health checking off, the controller clears every mark") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, SmallConfig());  // no global.health
  REQUIRE(e->ApplyHealth({Mark(false, 100, 40, "down")}, {}).ok());
  REQUIRE(B3(*e->GetStatus()).effective_weight() == 0);
  HealthController hc(e.get(), &clock, HealthControllerOptions{}, nullptr);
  REQUIRE(hc.Evaluate().ok());
  CHECK_FALSE(hc.Enabled());
  CHECK(B3(*e->GetStatus()).effective_weight() == 2);
  const v1::State state = e->State();
  CHECK(FindOverride(state, kVip4, kB3) == nullptr);
  RequireTableFollowsStatus(*e);
}

// The controller reads its inputs, runs the machine, then stores the
// decisions; an operator's release can land in between. The decision must
// not pin the backend again: only a pin the machine made in this very
// evaluation is a pin to store (health_flap once saw the release undone).
TEST_CASE("A release between the controller's read and its apply is not undone") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  v1::Config cfg = SmallConfig();
  cfg.mutable_global()->mutable_health();
  // Port-0 VIPs without probe ports: nothing is probed, so this test sends
  // no packet anywhere.
  for (v1::Vip& v : *cfg.mutable_vips()) v.mutable_key()->set_port(0);
  auto e = StartEngine(dir, &clock, cfg);
  const v1::VipKey any4 = Key("198.18.0.10", 0);
  HealthDecision pin = Mark(false, 100, 40, "pinned", /*pin=*/true);
  pin.vip = any4;
  REQUIRE(e->ApplyHealth({pin}, {{"pin", VipKeyText(any4), kB3, "{}", "pinned"}}).ok());

  HealthControllerOptions o;
  bool released = false;
  o.decision_gate = [&](std::vector<HealthDecision>* decisions, std::vector<HealthRecord>*) {
    const bool about_b3 = std::any_of(decisions->begin(), decisions->end(), [&](const auto& d) {
      return d.address == kB3 && d.mark.state() == "pinned";
    });
    if (about_b3 && !released) released = e->Release(any4, kB3, kOp).ok();
  };
  HealthController hc(e.get(), &clock, std::move(o), nullptr);
  REQUIRE(hc.Evaluate().ok());
  REQUIRE(released);
  {
    const v1::State state = e->State();
    const v1::BackendOverride* ov = FindOverride(state, any4, kB3);
    REQUIRE(ov != nullptr);
    CHECK_FALSE(ov->pinned());
  }
  // The next evaluation sees the release: down, not pinned, until promoted.
  clock.AdvanceMs(200);
  REQUIRE(hc.Evaluate().ok());
  const v1::State state = e->State();
  const v1::BackendOverride* ov = FindOverride(state, any4, kB3);
  REQUIRE(ov != nullptr);
  CHECK_FALSE(ov->pinned());
  CHECK(ov->health().state() == "down");
}

// Health checking on, every VIP of every port: nothing is probed.
v1::Config UnprobedHealthConfig() {
  v1::Config cfg = SmallConfig();
  cfg.mutable_global()->mutable_health();
  for (v1::Vip& v : *cfg.mutable_vips()) v.mutable_key()->set_port(0);
  return cfg;
}

// The status page's timeline shows the weight the table uses, which in
// cluster mode is what the gate let through (the leader's quorum, or none of
// this node's decisions on a follower), not what this node's machine chose.
TEST_CASE("The timeline records the weight the table uses, after the decision gate") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, UnprobedHealthConfig());
  const v1::VipKey any4 = Key("198.18.0.10", 0);

  Timeline timeline;
  HealthControllerOptions o;
  o.timeline = &timeline;
  // A gate that overrules this node's machine: B3 out (as an observer
  // quorum would), whatever the machine says.
  o.decision_gate = [&](std::vector<HealthDecision>* decisions, std::vector<HealthRecord>*) {
    for (HealthDecision& d : *decisions) {
      if (d.address != kB3) continue;
      d.mark.set_in_service(false);
      d.mark.set_state("down");
    }
  };
  HealthController hc(e.get(), &clock, std::move(o), nullptr);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(hc.Evaluate().ok());
    clock.AdvanceMs(1'000);
  }
  auto st = e->GetStatus();
  REQUIRE(st.ok());
  REQUIRE(B3(*st).effective_weight() == 0);
  const auto points = timeline.Snapshot(clock.NowUnixMs());
  auto it = points.find({VipKeyText(any4), kB3});
  REQUIRE(it != points.end());
  REQUIRE(!it->second.empty());
  CHECK(it->second.back().weight == 0);
  // A backend the gate left alone shows its weight in the table.
  auto b1 = points.find({VipKeyText(any4), std::string(st->vips(0).backends(0).address())});
  REQUIRE(b1 != points.end());
  REQUIRE(!b1->second.empty());
  CHECK(b1->second.back().weight == st->vips(0).backends(0).effective_weight());
  CHECK(b1->second.back().weight > 0);
}

TEST_CASE("Status carries the controller's record of each backend's health state") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  v1::Config cfg = UnprobedHealthConfig();
  auto e = StartEngine(dir, &clock, cfg);
  HealthController hc(e.get(), &clock, HealthControllerOptions{}, nullptr);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(hc.Evaluate().ok());
    clock.AdvanceMs(1'000);
  }
  auto st = e->GetStatus();
  REQUIRE(st.ok());
  // No probe and no passive data: unchecked since the first evaluation, never changed.
  const v1::BackendStatus& b = B3(*st);
  CHECK(b.health() == "unchecked");
  CHECK(b.health_since_unix_ms() == 1'700'000'000'000);
  CHECK(b.health_transitions() == 0);
  CHECK(b.health_down_ms() == 0);
  CHECK(b.probe_failures() == 0);
  // Health checking off: no record (and none kept for when it comes back).
  cfg.mutable_global()->clear_health();
  REQUIRE(e->ApplyConfig(cfg, /*dry_run=*/false, kOp).ok());
  REQUIRE(hc.Evaluate().ok());
  st = e->GetStatus();
  REQUIRE(st.ok());
  CHECK(B3(*st).health().empty());
  CHECK(B3(*st).health_since_unix_ms() == 0);
  cfg.mutable_global()->mutable_health();
  REQUIRE(e->ApplyConfig(cfg, /*dry_run=*/false, kOp).ok());
  clock.AdvanceMs(5'000);
  REQUIRE(hc.Evaluate().ok());
  CHECK(B3(*e->GetStatus()).health_since_unix_ms() == 1'700'000'008'000);
}

TEST_CASE("Status shows a VIP's fleet guard from the health view, by the VIP's typed key") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, SmallConfig());
  auto v6 = ToDataplaneKey(Key("2001:DB8:10::10", 443));  // the IPv6 VIP, spelled otherwise
  REQUIRE(v6.ok());
  HealthView view;
  view.vips[*v6] = {true, 1'699'999'000'000};
  e->SetHealthView(view);
  auto st = e->GetStatus();
  REQUIRE(st.ok());
  REQUIRE(st->vips_size() == 2);
  for (const v1::VipStatus& vs : st->vips()) {
    const bool is_v6 = vs.key().address() == "2001:db8:10::10";
    CHECK(vs.frozen() == is_v6);
    CHECK(vs.frozen_since_unix_ms() == (is_v6 ? 1'699'999'000'000 : 0));
  }
}

TEST_CASE("RelearnHealth: checked, audited, and applied by the controller at its next evaluation") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  v1::Config cfg = SmallConfig();
  for (v1::Vip& v : *cfg.mutable_vips()) v.mutable_key()->set_port(0);  // nothing probed
  cfg.mutable_global()->mutable_health();
  auto e = StartEngine(dir, &clock, cfg);
  CHECK(e->RelearnHealth(Key("198.18.0.99", 0), kOp).code() == absl::StatusCode::kNotFound);
  CHECK(e->RelearnHealth(Key("198.18.0.10", 0, v1::PROTOCOL_UNSPECIFIED), kOp).code() ==
        absl::StatusCode::kInvalidArgument);

  HealthController hc(e.get(), &clock, HealthControllerOptions{}, nullptr);
  REQUIRE(hc.Evaluate().ok());
  auto in = e->ReadHealthInputs();
  REQUIRE(in.ok());
  for (const HealthPool& p : in->pools) CHECK(p.relearn_requests == 0);

  const uint64_t gen_health = e->State().generation();
  const absl::Status relearned = e->RelearnHealth(Key("198.18.0.10", 0), kOp);
  INFO(relearned.message());
  REQUIRE(relearned.ok());
  CHECK(e->State().generation() == gen_health);  // no state change
  in = e->ReadHealthInputs();
  REQUIRE(in.ok());
  for (const HealthPool& p : in->pools) {
    CHECK(p.relearn_requests == (p.key_text == "198.18.0.10:0/tcp" ? 1u : 0u));
  }
  clock.AdvanceMs(1'000);
  REQUIRE(hc.Evaluate().ok());
  clock.AdvanceMs(1'000);
  REQUIRE(hc.Evaluate().ok());  // applied once, not at every evaluation

  auto audit = e->QueryAudit(0, 0);
  REQUIRE(audit.ok());
  int requests = 0, applied = 0;
  for (const v1::AuditRecord& r : *audit) {
    if (r.action() == "relearn_health") {
      ++requests;
      CHECK(r.actor() == "operator:test");
      CHECK(r.vip() == "198.18.0.10:0/tcp");
    }
    if (r.action() == "relearn") {
      ++applied;
      CHECK(r.actor() == "automation");
      CHECK(r.vip() == "198.18.0.10:0/tcp");
      CHECK_THAT(r.inputs_json(), Catch::Contains("\"was_frozen\":false"));
    }
  }
  CHECK(requests == 1);
  CHECK(applied == 1);

  // Health checking off: nothing to relearn.
  v1::Config without = e->GetConfig();
  without.mutable_global()->clear_health();
  REQUIRE(e->ApplyConfig(without, false, kOp).ok());
  CHECK(e->RelearnHealth(Key("198.18.0.10", 0), kOp).code() ==
        absl::StatusCode::kFailedPrecondition);
}

// Which backends are probed, and at which port. Those that are not show
// `unchecked` in status unless passive signals cover them.
TEST_CASE("PlanProbe: port-0 VIPs need probe.port, UDP VIPs a UDP probe") {
  auto spec = [](v1::ProbeSpec::Kind kind, uint32_t port) {
    v1::ProbeSpec p;
    p.set_kind(kind);
    p.set_port(port);
    return p;
  };
  const v1::VipKey tcp80 = Key("198.18.0.10", 80);
  v1::VipKey tcp_any = Key("198.18.0.10", 0);
  v1::VipKey udp53 = Key("198.18.0.10", 53);
  udp53.set_protocol(v1::UDP);

  CHECK(PlanProbe(tcp80, false, {}).none.empty());  // the default TCP connect
  CHECK(PlanProbe(tcp80, false, {}).port == 80);
  CHECK(PlanProbe(tcp80, true, spec(v1::ProbeSpec::HTTP, 8080)).port == 8080);

  CHECK_THAT(PlanProbe(tcp_any, false, {}).none, Catch::Contains("needs probe.port"));
  CHECK_THAT(PlanProbe(tcp_any, true, spec(v1::ProbeSpec::HTTP, 0)).none,
             Catch::Contains("needs probe.port"));
  CHECK(PlanProbe(tcp_any, true, spec(v1::ProbeSpec::HTTP, 80)).none.empty());
  CHECK(PlanProbe(tcp_any, true, spec(v1::ProbeSpec::HTTP, 80)).port == 80);

  // A UDP VIP: no TCP connect to a UDP port by default.
  CHECK_THAT(PlanProbe(udp53, false, {}).none, Catch::Contains("no UDP probe"));
  CHECK_THAT(PlanProbe(udp53, true, spec(v1::ProbeSpec::TCP, 0)).none,
             Catch::Contains("no UDP probe"));
  CHECK(PlanProbe(udp53, true, spec(v1::ProbeSpec::UDP, 0)).none.empty());
  CHECK(PlanProbe(udp53, true, spec(v1::ProbeSpec::UDP, 0)).port == 53);
  // A TCP service beside the UDP one, on its own port (DNS over TCP).
  CHECK(PlanProbe(udp53, true, spec(v1::ProbeSpec::TCP, 53)).none.empty());
}

TEST_CASE("HealthSettings: every field's range and the rules between fields") {
  const auto bad = [](const std::function<void(v1::HealthSettings&)>& mutate) {
    v1::Config c = SmallConfig();
    mutate(*c.mutable_global()->mutable_health());
    return std::string(ValidateConfig(c, FieldPath::Index()).message());
  };
  v1::Config ok = SmallConfig();
  ok.mutable_global()->mutable_health();
  REQUIRE(ValidateConfig(ok, FieldPath::Index()).ok());
  CHECK(bad([](v1::HealthSettings& h) { h.set_eval_interval_ms(10); }) ==
        "global.health.eval_interval_ms: 10 is out of range 50..60000 (0 = default 1000)");
  CHECK(bad([](v1::HealthSettings& h) { h.set_demote_after(5000); }) ==
        "global.health.demote_after: 5000 is out of range 1..1000 (0 = default 3)");
  CHECK(bad([](v1::HealthSettings& h) {
          h.set_good_score(60);
          h.set_bad_score(70);
        }) == "global.health.bad_score: effective bad_score 70 must be below good_score 60");
  CHECK(bad([](v1::HealthSettings& h) {
          h.add_ramp_percents(10);
          h.add_ramp_percents(5);
        }) ==
        "global.health.ramp_percents[1]: 5 is not above the step before it (10): steps "
        "must increase");
  CHECK(bad([](v1::HealthSettings& h) {
          h.add_ramp_percents(10);
          h.add_ramp_percents(50);
        }) == "global.health.ramp_percents: [10, 50] must end at 100 (full weight)");
  CHECK(bad([](v1::HealthSettings& h) { h.set_cooldown_base_s(7200); }) ==
        "global.health.cooldown_base_s: effective cooldown_base_s 7200 is above "
        "max_cooldown_s 3600");
  CHECK(bad([](v1::HealthSettings& h) { h.set_pin_flaps(1); }) ==
        "global.health.pin_flaps: 1 is out of range 2..100 (0 = default 3)");
  CHECK(bad([](v1::HealthSettings& h) { h.set_refused_demote(2000000); }) ==
        "global.health.refused_demote: 2000000 is out of range 1..1000000 (0 = default 3)");

  // Defaults and conversions.
  const health::Params p = HealthParamsOf(v1::HealthSettings());
  CHECK(p.demote_after == 3);
  CHECK(p.promote_after == 12);
  CHECK(p.ramp_percents == std::vector<int>{5, 20, 50, 100});
  CHECK(p.latency_floor_ms == kDefaultLatencyFloorMs);
  CHECK(p.refused_demote == 3);
  CHECK(EvalIntervalOf(v1::HealthSettings()) == 1000);
  v1::HealthSettings s;
  s.set_cooldown_base_s(2);
  s.set_pin_window_s(120);
  CHECK(HealthParamsOf(s).cooldown_base == absl::Seconds(2));
  CHECK(HealthParamsOf(s).pin_window == absl::Minutes(2));
  s.set_refused_demote(7);
  CHECK(HealthParamsOf(s).refused_demote == 7);
}

// Probes of a GUE VIP are forwarded in GUE (tc_probe), to the port its
// clients' packets go to: the health inputs carry it per pool.
TEST_CASE("Health inputs: a GUE VIP's pool carries global.gue_port, an IP-in-IP VIP's none") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  v1::Config cfg = SmallConfig();
  cfg.mutable_global()->mutable_health();
  cfg.mutable_vips(1)->set_mode(v1::GUE);
  auto e = StartEngine(dir, &clock, cfg);
  auto in = e->ReadHealthInputs();
  REQUIRE(in.ok());
  REQUIRE(in->pools.size() == 2);
  CHECK(in->pools[0].gue_port == 0);
  CHECK(in->pools[1].gue_port == BALLAST_GUE_PORT_DEFAULT);

  cfg.mutable_global()->set_gue_port(7000);
  REQUIRE(e->ApplyConfig(cfg, false, kOp).ok());
  in = e->ReadHealthInputs();
  REQUIRE(in.ok());
  CHECK(in->pools[0].gue_port == 0);
  CHECK(in->pools[1].gue_port == 7000);
}

}  // namespace
}  // namespace ballast::core
