// The per-backend state machine: hysteresis thresholds, ramp, flap damping,
// pinning and release, precedence with operator state, membership changes.
// Pools have three or more backends so that one sick backend stays below the
// fleet guard (fleet_guard_test.cc covers the guard).
#include <catch2/catch.hpp>

#include "agent/health/machine.h"
#include "agent/health/tests/sim.h"

namespace ballast::health {
namespace {

using testing::ProbeFail;
using testing::ProbeOk;
using testing::ProbePool;
using testing::Sim;

PoolInput Healthy() { return ProbePool({{"a", ProbeOk()}, {"b", ProbeOk()}, {"c", ProbeOk()}}); }
PoolInput AFails() { return ProbePool({{"a", ProbeFail()}, {"b", ProbeOk()}, {"c", ProbeOk()}}); }
// One success and one failure: probe penalty 30, score 70 (neutral, a sag).
PoolInput AHalf() {
  return ProbePool(
      {{"a", ProbeSummary{1, 1, absl::Milliseconds(2)}}, {"b", ProbeOk()}, {"c", ProbeOk()}});
}

void Demote(Sim& s) {
  for (int i = 0; i < s.p.demote_after; ++i) s.Step(AFails());
  const HealthState st = s.Out("a").state;
  REQUIRE((st == HealthState::kDown || st == HealthState::kPinned));
}

// Good evaluations until "a" is promoted (at most `limit`); returns how many.
int PromoteWithin(Sim& s, int limit) {
  for (int i = 1; i <= limit; ++i) {
    const Result& r = s.Step(Healthy());
    if (s.CountIn(r, ActionKind::kPromote) > 0) return i;
  }
  return -1;
}

TEST_CASE("two bad evaluations do not demote, the third does") {
  Sim s;
  s.Step(Healthy());
  s.Step(AFails());
  s.Step(AFails());
  CHECK(s.Out("a").state == HealthState::kDegraded);
  CHECK(s.Out("a").score == 40);
  CHECK(s.Out("a").effective_weight == 40);  // scaled by the score, still in service
  CHECK(s.Count(ActionKind::kDemote) == 0);
  const Result& r = s.Step(AFails());
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(s.Out("a").effective_weight == 0);
  REQUIRE(s.CountIn(r, ActionKind::kDemote) == 1);
  CHECK_THAT(r.actions.back().message, Catch::Contains("3 consecutive bad evaluations"));
  CHECK_THAT(r.actions.back().inputs_json, Catch::Contains("\"bad_streak\":3"));
  CHECK_THAT(r.actions.back().inputs_json, Catch::Contains("\"state\":\"down\""));
  CHECK(s.Out("b").effective_weight == 100);
}

TEST_CASE("a neutral evaluation breaks the bad streak") {
  Sim s;
  s.Step(AFails());
  s.Step(AFails());
  s.Step(AHalf());  // score 70: neither good nor bad
  s.Step(AFails());
  s.Step(AFails());
  CHECK(s.Out("a").state == HealthState::kDegraded);
  s.Step(AFails());
  CHECK(s.Out("a").state == HealthState::kDown);
}

TEST_CASE("a failing probe carried between probes keeps the bad streak under mild passive doubt") {
  // Evaluations twice as frequent as probes: every other one has no new
  // probe result. Real traffic to "a" is mildly wrong (its score alone would
  // be neutral). Without the carried verdict those evaluations were neutral
  // and broke the bad streak every time: "a" was never demoted.
  Sim s;
  testing::TrafficPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool.Next());
  pool.traffic["a"].first_response_ms = 25.0;  // 2.5x its peers: penalty ~ 26
  int evals = 0;
  for (; evals < 10 && s.Out("a").state != HealthState::kDown; ++evals) {
    pool.probes["a"] = ProbeFail();
    pool.probes["a"].carried = evals % 2 == 1;
    s.Step(pool.Next());
  }
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(evals == s.p.demote_after);
}

TEST_CASE("a backend nothing probes, demoted by its traffic, is promoted for a trial when down") {
  // Down, it gets no traffic and so no data: without a trial it stayed down
  // for good however well it recovered.
  Sim s;
  testing::TrafficPool pool;
  pool.no_probe = {"a", "b", "c"};
  const auto step = [&] {
    PoolInput in = pool.Next();
    for (BackendInput& b : in.backends) b.unprobed = true;
    s.Step(in);
  };
  for (int i = 0; i < 20; ++i) step();
  pool.traffic["a"].answered = 0.0;  // hung: handshakes, no responses
  for (int i = 0; i < 5 && s.Out("a").state != HealthState::kDown; ++i) step();
  REQUIRE(s.Out("a").state == HealthState::kDown);
  pool.traffic["a"].flows = 0;  // down: no traffic, no data
  int evals = 0;
  while (s.Count(ActionKind::kPromote) == 0 && evals < 100) {
    step();
    ++evals;
  }
  CHECK(evals == s.p.promote_after);
  CHECK_THAT(s.actions.back().message, Catch::Contains("promoted for a trial"));
  CHECK(s.Out("a").state == HealthState::kRamping);
  CHECK(s.Out("a").effective_weight >= 1);  // 5% of 100, scaled by its last score
  CHECK(s.Out("a").effective_weight <= 5);

  // Still hung: its trial traffic demotes it again, a flap with a cooldown.
  pool.traffic["a"] = testing::Traffic{};
  pool.traffic["a"].answered = 0.0;
  for (int i = 0; i < 5 && s.Out("a").state != HealthState::kDown; ++i) step();
  REQUIRE(s.Out("a").state == HealthState::kDown);
  CHECK_THAT(s.actions.back().message, Catch::Contains("flap 1"));
  pool.traffic["a"].flows = 0;
  for (int i = 0; i < 3 * s.p.promote_after; ++i) step();  // within the 30 s cooldown
  CHECK(s.Count(ActionKind::kPromote) == 1);
  s.Advance(s.p.cooldown_base);
  step();
  CHECK(s.Count(ActionKind::kPromote) == 2);

  // Recovered: its traffic is fine and it ramps back to full weight.
  pool.traffic["a"] = testing::Traffic{};
  for (int i = 0; i < 60; ++i) step();
  CHECK(s.Out("a").state == HealthState::kHealthy);
  CHECK(s.Out("a").effective_weight == 100);
}

TEST_CASE("a probed backend gets no trial: evaluations without data do not promote it") {
  Sim s;
  testing::TrafficPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool.Next());
  pool.probes["a"] = ProbeFail();
  pool.traffic["a"].flows = 0;  // its probes alone judge it
  for (int i = 0; i < s.p.demote_after; ++i) s.Step(pool.Next());
  REQUIRE(s.Out("a").state == HealthState::kDown);
  pool.no_probe = {"a"};  // probes in flight: no result, and no traffic while down
  for (int i = 0; i < 3 * s.p.promote_after; ++i) s.Step(pool.Next());
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(s.Count(ActionKind::kPromote) == 0);
}

TEST_CASE("eleven good evaluations do not promote, the twelfth does") {
  Sim s;
  Demote(s);
  for (int i = 0; i < 11; ++i) s.Step(Healthy());
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(s.Out("a").effective_weight == 0);
  const Result& r = s.Step(Healthy());
  CHECK(s.CountIn(r, ActionKind::kPromote) == 1);
  CHECK(s.Out("a").state == HealthState::kRamping);
  CHECK(s.Out("a").effective_weight >= 1);  // 5% of 100, scaled by its last score
  CHECK(s.Out("a").effective_weight <= 5);
}

TEST_CASE("a bad evaluation restarts the count towards promotion") {
  Sim s;
  Demote(s);
  for (int i = 0; i < 11; ++i) s.Step(Healthy());
  s.Step(AFails());
  CHECK(PromoteWithin(s, 20) == 12);
}

TEST_CASE("a promoted backend ramps 5 -> 20 -> 50 -> 100, each step held ramp_hold evaluations") {
  Sim s;
  Demote(s);
  REQUIRE(PromoteWithin(s, 12) == 12);
  std::vector<uint32_t> seen;
  for (int step : {20, 50, 100}) {
    for (int i = 0; i < s.p.ramp_hold - 1; ++i) {
      s.Step(Healthy());
      CHECK(s.Out("a").effective_weight == static_cast<uint32_t>(step == 20   ? 5
                                                                 : step == 50 ? 20
                                                                              : 50));
    }
    const Result& r = s.Step(Healthy());
    CHECK(s.CountIn(r, ActionKind::kRampStep) == 1);
    seen.push_back(s.Out("a").effective_weight);
  }
  CHECK(seen == std::vector<uint32_t>{20, 50, 100});
  CHECK(s.Out("a").state == HealthState::kHealthy);
  CHECK(s.Count(ActionKind::kRampStep, "a") == 3);
}

TEST_CASE("a sag during the ramp goes back one step and restarts the hold") {
  Sim s;
  Demote(s);
  REQUIRE(PromoteWithin(s, 12) == 12);
  for (int i = 0; i < s.p.ramp_hold; ++i) s.Step(Healthy());
  REQUIRE(s.Out("a").ramp_percent == 20);
  for (int i = 0; i < 5; ++i) s.Step(Healthy());
  // Score 70 < ramp_sag_score 80 for weight_score_window (2) evaluations.
  s.Step(AHalf());
  CHECK(s.Count(ActionKind::kRampBack) == 0);
  const Result& r = s.Step(AHalf());
  CHECK(s.CountIn(r, ActionKind::kRampBack) == 1);
  CHECK_THAT(r.actions.back().message, Catch::Contains("ramp 20% -> 5%: score 70 stayed below 80"));
  CHECK(s.Out("a").ramp_percent == 5);
  CHECK(s.Out("a").effective_weight == 4);  // 100 * 5% * 70% = 3.5, rounded half up
  // The hold starts again: ramp_hold - 1 good evaluations stay at 5%.
  for (int i = 0; i < s.p.ramp_hold - 1; ++i) s.Step(Healthy());
  CHECK(s.Out("a").ramp_percent == 5);
  s.Step(Healthy());
  CHECK(s.Out("a").ramp_percent == 20);
}

TEST_CASE("a sag at the first ramp step stays there and restarts the hold") {
  Sim s;
  Demote(s);
  REQUIRE(PromoteWithin(s, 12) == 12);
  for (int i = 0; i < s.p.ramp_hold - 3; ++i) s.Step(Healthy());
  s.Step(AHalf());
  const Result& r = s.Step(AHalf());
  CHECK(s.CountIn(r, ActionKind::kRampBack) == 0);
  CHECK(s.Out("a").ramp_percent == 5);
  for (int i = 0; i < s.p.ramp_hold - 1; ++i) s.Step(Healthy());
  CHECK(s.Out("a").ramp_percent == 5);
  s.Step(Healthy());
  CHECK(s.Out("a").ramp_percent == 20);
}

TEST_CASE("one noisy evaluation neither moves the weight nor undoes a ramp step") {
  Sim s;
  s.Step(Healthy());
  s.Step(AHalf());  // one interval at score 70
  CHECK(s.Out("a").score == 70);
  CHECK(s.Out("a").effective_weight == 100);
  s.Step(Healthy());
  CHECK(s.Out("a").effective_weight == 100);
  s.Step(AHalf());
  s.Step(AHalf());  // the drop persists: now it counts
  CHECK(s.Out("a").effective_weight == 70);
  s.Step(Healthy());  // recovery counts at once
  CHECK(s.Out("a").effective_weight == 100);

  Demote(s);
  REQUIRE(PromoteWithin(s, 12) == 12);
  for (int i = 0; i < s.p.ramp_hold; ++i) s.Step(Healthy());
  REQUIRE(s.Out("a").ramp_percent == 20);
  s.Step(AHalf());
  s.Step(Healthy());
  s.Step(AHalf());
  CHECK(s.Out("a").ramp_percent == 20);
  CHECK(s.Count(ActionKind::kRampBack) == 0);

  s.p.weight_score_window = 1;  // no smoothing: the current score counts
  s.Step(AHalf());
  CHECK(s.Out("a").ramp_percent == 5);
}

TEST_CASE("a small nominal weight at the 5% step gets weight 1, never 0") {
  Sim s;
  s.Step(ProbePool({{"a", ProbeOk()}, {"b", ProbeOk()}, {"c", ProbeOk()}}, 3));
  for (int i = 0; i < 3; ++i) {
    s.Step(ProbePool({{"a", ProbeFail()}, {"b", ProbeOk()}, {"c", ProbeOk()}}, 3));
  }
  REQUIRE(s.Out("a").state == HealthState::kDown);
  for (int i = 0; i < 12; ++i)
    s.Step(ProbePool({{"a", ProbeOk()}, {"b", ProbeOk()}, {"c", ProbeOk()}}, 3));
  REQUIRE(s.Out("a").state == HealthState::kRamping);
  CHECK(s.Out("a").effective_weight == 1);  // 3 * 5% = 0.15 -> floor of 1 while in service
}

TEST_CASE("a demotion right after a promotion is a flap and starts a cooldown") {
  Sim s;
  Demote(s);  // never promoted before: not a flap, no cooldown
  CHECK(s.State("a").flaps.empty());
  CHECK(s.State("a").cooldown_until <= s.now);
  REQUIRE(PromoteWithin(s, 12) == 12);
  Demote(s);
  CHECK(s.State("a").flaps.size() == 1);
  CHECK(s.State("a").cooldown_until - s.now == absl::Seconds(30));
  CHECK_THAT(s.actions.back().message, Catch::Contains("cooldown 30s"));
  // promote_after good evaluations are not enough while the cooldown runs.
  for (int i = 0; i < 20; ++i) s.Step(Healthy());  // 4 s
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("cooldown")));
  const absl::Time until = s.State("a").cooldown_until;
  s.StepAt(Healthy(), until - absl::Milliseconds(1));
  CHECK(s.Out("a").state == HealthState::kDown);
  s.StepAt(Healthy(), until);
  CHECK(s.Out("a").state == HealthState::kRamping);
}

TEST_CASE("a demotion more than flap_window after the promotion is not a flap") {
  Sim s;
  Demote(s);
  REQUIRE(PromoteWithin(s, 12) == 12);
  s.Advance(s.p.flap_window + absl::Seconds(1));
  Demote(s);
  CHECK(s.State("a").flaps.empty());
  CHECK(s.State("a").cooldown_until <= s.now);
  CHECK(PromoteWithin(s, 12) == 12);
}

TEST_CASE("the cooldown doubles with each flap in the window and is capped at max_cooldown") {
  Sim s;
  s.p.cooldown_base = absl::Minutes(10);
  s.p.max_cooldown = absl::Hours(1);
  s.p.flap_window = absl::Hours(24);
  s.p.pin_flaps = 100;  // no pinning in this test
  REQUIRE(ValidateParams(s.p).ok());
  Demote(s);
  REQUIRE(PromoteWithin(s, 12) == 12);
  std::vector<absl::Duration> cooldowns;
  for (int flap = 0; flap < 5; ++flap) {
    Demote(s);
    const absl::Time until = s.State("a").cooldown_until;
    cooldowns.push_back(until - s.now);
    for (int i = 0; i < 12; ++i) s.Step(Healthy());
    CHECK(s.Out("a").state == HealthState::kDown);
    s.StepAt(Healthy(), until - absl::Seconds(1));
    CHECK(s.Out("a").state == HealthState::kDown);
    s.StepAt(Healthy(), until);
    REQUIRE(s.Out("a").state == HealthState::kRamping);
  }
  CHECK(cooldowns == std::vector<absl::Duration>{absl::Minutes(10), absl::Minutes(20),
                                                 absl::Minutes(40), absl::Hours(1),
                                                 absl::Hours(1)});
  CHECK(s.Count(ActionKind::kPin) == 0);
}

// Flaps "a" once more: a short time in service, then demote_after failures.
void FlapAgain(Sim& s, absl::Duration in_service) {
  const absl::Time until = s.State("a").cooldown_until;
  if (until > s.now) s.Advance(until - s.now);
  REQUIRE(PromoteWithin(s, 12) >= 1);
  s.Advance(in_service);
  Demote(s);
}

TEST_CASE("the third flap within pin_window pins the backend out with an alert") {
  Sim s;
  Demote(s);
  FlapAgain(s, absl::Seconds(1));
  FlapAgain(s, absl::Seconds(1));
  CHECK(s.Count(ActionKind::kPin) == 0);
  CHECK(s.State("a").cooldown_until - s.now == absl::Minutes(1));  // 30 s doubled
  FlapAgain(s, absl::Seconds(1));
  REQUIRE(s.Count(ActionKind::kPin) == 1);
  const Action& pin = s.actions.back();
  CHECK(pin.kind == ActionKind::kPin);
  CHECK(IsAlert(pin.kind));
  CHECK(pin.backend == "a");
  CHECK_THAT(pin.message, Catch::Contains("3 flaps"));
  CHECK_THAT(pin.inputs_json, Catch::Contains("\"flaps_in_window\":3"));
  CHECK(s.Out("a").state == HealthState::kPinned);
  CHECK(s.Out("a").effective_weight == 0);
  // However healthy it looks, and however long, it stays pinned.
  s.Advance(absl::Hours(3));
  for (int i = 0; i < 100; ++i) s.Step(Healthy());
  CHECK(s.Out("a").state == HealthState::kPinned);
  CHECK(s.Out("a").effective_weight == 0);
  CHECK(s.Count(ActionKind::kPromote, "a") == 3);
}

TEST_CASE("three flaps spread wider than pin_window do not pin, but the cooldown keeps doubling") {
  Sim s;
  Demote(s);
  FlapAgain(s, absl::Minutes(6));
  FlapAgain(s, absl::Minutes(6));
  FlapAgain(s, absl::Minutes(6));
  CHECK(s.Count(ActionKind::kPin) == 0);
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(s.State("a").flaps.size() == 3);
  CHECK(s.State("a").cooldown_until - s.now == absl::Minutes(2));  // 30 s * 2^2
}

TEST_CASE("release un-pins: the backend is down, forgets its flaps and is promoted after 12 good") {
  Sim s;
  Demote(s);
  for (int i = 0; i < 3; ++i) FlapAgain(s, absl::Seconds(1));
  REQUIRE(s.Out("a").state == HealthState::kPinned);

  auto rel = Release(s.state, "a", s.now, s.p);
  REQUIRE(rel.ok());
  CHECK(rel->action.kind == ActionKind::kRelease);
  CHECK(rel->action.backend == "a");
  CHECK_THAT(rel->action.inputs_json, Catch::Contains("\"flaps_forgotten\":3"));
  s.state = rel->state;
  CHECK(StateOf(s.State("a"), s.p) == HealthState::kDown);
  CHECK(s.State("a").flaps.empty());
  for (int i = 0; i < 11; ++i) s.Step(Healthy());
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(s.Out("a").effective_weight == 0);
  s.Step(Healthy());  // no cooldown after a release
  CHECK(s.Out("a").state == HealthState::kRamping);
  CHECK(s.Out("a").effective_weight >= 1);  // 5% of 100, scaled by its last score
  CHECK(s.Out("a").effective_weight <= 5);
}

TEST_CASE("release refuses an unknown or unpinned backend") {
  Sim s;
  s.Step(Healthy());
  auto missing = Release(s.state, "zz", s.now, s.p);
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  auto healthy = Release(s.state, "b", s.now, s.p);
  CHECK(healthy.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(healthy.status().message()), Catch::Contains("b is not pinned"));
}

TEST_CASE("drained and evicted backends get weight 0 whatever their health") {
  Sim s;
  PoolInput in = Healthy();
  in.backends[1].operator_state = OperatorState::kDraining;
  in.backends[2].operator_state = OperatorState::kEvicted;
  s.Step(in);
  CHECK(s.Out("a").effective_weight == 100);
  CHECK(s.Out("b").effective_weight == 0);
  CHECK(s.Out("c").effective_weight == 0);
  CHECK(s.Out("b").state == HealthState::kHealthy);  // health is still tracked
  CHECK_THAT(s.Out("b").conditions, Catch::VectorContains(std::string("draining")));
  // Undrained: health decides again.
  s.Step(Healthy());
  CHECK(s.Out("b").effective_weight == 100);
}

TEST_CASE("a manual weight of 0 stays 0 and health scales other manual weights") {
  Sim s;
  PoolInput in = AHalf();  // a scores 70
  in.backends[0].nominal_weight = 300;
  in.backends[1].nominal_weight = 0;
  in.backends.push_back(in.backends[2]);
  in.backends.back().key = "d";
  s.Step(in);
  CHECK(s.Out("a").score == 70);
  CHECK(s.Out("a").effective_weight == 210);
  CHECK(s.Out("b").effective_weight == 0);
  CHECK_THAT(s.Out("b").conditions, Catch::VectorContains(std::string("nominal_zero")));
  CHECK(s.Out("c").effective_weight == 100);
}

TEST_CASE("both probe and passive healthy give score 100 and full nominal weight") {
  Sim s;
  for (int i = 0; i < 10; ++i) s.Step(Healthy());
  for (const auto& b : s.last.backends) {
    CHECK(b.score == 100);
    CHECK(b.state == HealthState::kHealthy);
    CHECK(b.effective_weight == 100);
  }
  CHECK(s.actions.empty());
}

TEST_CASE("score band crossings are actions carrying their inputs") {
  Sim s;
  s.Step(Healthy());
  // One failing evaluation does not move the steady score (best of the last
  // two); the second does.
  CHECK(s.CountIn(s.Step(AFails()), ActionKind::kScoreBand) == 0);
  const Result& r = s.Step(AFails());
  REQUIRE(s.CountIn(r, ActionKind::kScoreBand) == 1);
  const Action& a = r.actions.front();
  CHECK(a.backend == "a");
  CHECK(a.pool == "198.18.0.10:80/tcp");
  CHECK(a.at == s.now);
  CHECK_THAT(a.message, Catch::Contains("score 40 (band 20), was 100 (band 100)"));
  CHECK_THAT(a.inputs_json, Catch::Contains("\"score\":40"));
  CHECK_THAT(a.inputs_json, Catch::Contains("\"probe\":{\"successes\":0,\"failures\":1"));
  const std::string line = a.ToJson();
  CHECK_THAT(line, Catch::StartsWith("{\"at_unix_ms\":"));
  CHECK_THAT(line, Catch::Contains("\"kind\":\"score_band\""));
  CHECK_THAT(line, Catch::Contains("\"inputs\":{\"score\":40"));
  s.Step(AFails());  // same band: no action
  CHECK(s.Count(ActionKind::kScoreBand) == 1);
  s.Step(Healthy());
  CHECK(s.Count(ActionKind::kScoreBand) == 2);
}

TEST_CASE("evidence is built for backends with actions or a health weight change only") {
  Sim s;
  s.Step(Healthy());
  CHECK(s.Out("a").evidence_json.empty());
  s.Step(AFails());  // one bad evaluation: neither an action nor a weight change
  CHECK(s.last.actions.empty());
  CHECK(s.Out("a").evidence_json.empty());
  s.Step(AFails());  // the steady score moves: band action, weight 100 -> 40
  CHECK(s.CountIn(s.last, ActionKind::kScoreBand) == 1);
  CHECK_THAT(s.Out("a").evidence_json, Catch::StartsWith("{\"score\":40"));
  CHECK(s.Out("b").evidence_json.empty());
  CHECK(s.Out("a").effective_weight == 40);
  CHECK_THAT(s.Out("a").evidence_json, Catch::Contains("\"effective_weight\":40"));
  PoolInput in = AFails();
  in.backends[1].nominal_weight = 50;  // an operator change is not health's
  s.Step(in);
  CHECK(s.Out("b").effective_weight == 50);
  CHECK(s.Out("b").evidence_json.empty());
}

TEST_CASE("an evaluation without any data keeps the score and the streaks") {
  Sim s;
  s.Step(AFails());
  s.Step(AFails());
  PoolInput none = Healthy();
  none.backends[0].probe.reset();
  s.Step(none);
  CHECK_FALSE(s.Out("a").evaluated);
  CHECK(s.Out("a").score == 40);
  CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("no_data")));
  s.Step(AFails());
  CHECK(s.Out("a").state == HealthState::kDown);
}

TEST_CASE("backends appear and disappear with the input; new ones start healthy") {
  Sim s;
  s.Step(Healthy());
  PoolInput in = ProbePool({{"a", ProbeOk()}, {"c", ProbeOk()}, {"d", ProbeOk()}});
  s.Step(in);
  CHECK(s.state.backends.size() == 3);
  CHECK(s.state.backends[2].key == "d");
  CHECK(s.Out("d").state == HealthState::kHealthy);
  CHECK(s.Out("d").effective_weight == 100);
  CHECK(std::none_of(s.state.backends.begin(), s.state.backends.end(),
                     [](const BackendState& b) { return b.key == "b"; }));
}

TEST_CASE("with new_backend_start = ramping a new backend starts at the first ramp step") {
  Sim s;
  s.p.new_backend_start = NewBackendStart::kRamping;
  s.Step(Healthy());
  CHECK(s.Out("a").state == HealthState::kRamping);
  CHECK(s.Out("a").effective_weight >= 1);  // 5% of 100, scaled by its last score
  CHECK(s.Out("a").effective_weight <= 5);
  for (int i = 0; i < 3 * s.p.ramp_hold; ++i) s.Step(Healthy());
  CHECK(s.Out("a").effective_weight == 100);
  CHECK(s.Count(ActionKind::kPromote) == 0);  // a start is not a promotion
}

TEST_CASE("params may change between evaluations: a shortened ramp keeps the step in range") {
  Sim s;
  Demote(s);
  REQUIRE(PromoteWithin(s, 12) == 12);
  for (int i = 0; i < 3 * s.p.ramp_hold - 1; ++i) s.Step(Healthy());
  REQUIRE(s.State("a").ramp_step == 2);  // at 50%
  s.p.ramp_percents = {10, 100};
  s.Step(Healthy());
  CHECK(s.Out("a").ramp_percent == 100);
  CHECK(s.Out("a").state == HealthState::kHealthy);
}

TEST_CASE("the input is rejected when a key is empty or repeated") {
  PoolInput in = Healthy();
  in.backends[2].key = "a";
  auto r = Next(PoolState{}, in, testing::kT0, Params{});
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("backend a appears twice"));
  in.backends[2].key = "";
  CHECK(Next(PoolState{}, in, testing::kT0, Params{}).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("next is a pure function of its inputs") {
  Sim s;
  s.Step(Healthy());
  s.Step(AFails());
  auto r1 = Next(s.state, AFails(), s.now + testing::kTick, s.p);
  auto r2 = Next(s.state, AFails(), s.now + testing::kTick, s.p);
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  CHECK(r1->state == r2->state);
  REQUIRE(r1->actions.size() == r2->actions.size());
  for (size_t i = 0; i < r1->actions.size(); ++i)
    CHECK(r1->actions[i].ToJson() == r2->actions[i].ToJson());
}

}  // namespace
}  // namespace ballast::health
