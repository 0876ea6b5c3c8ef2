// Relearn: a pool frozen by a shift that stays accepts it as its new
// normal, and is then judged against it; a split pool stays frozen.
#include "agent/health/relearn.h"

#include <catch2/catch.hpp>
#include <map>

#include "agent/health/tests/sim.h"

namespace ballast::health {
namespace {

using testing::Sim;
using testing::Weights;

// Four backends with probes and traffic, answering in `ms` milliseconds,
// except those in `slow`.
struct ShiftPool {
  testing::TrafficPool pool;
  ShiftPool() { pool.keys = {"a", "b", "c", "d"}; }
  PoolInput operator()(double ms, const std::map<std::string, double>& slow = {}) {
    for (const std::string& k : pool.keys) {
      auto it = slow.find(k);
      pool.traffic[k].first_response_ms = it == slow.end() ? ms : it->second;
    }
    return pool.Next();
  }
};

TEST_CASE("Relearn forgets the judgements made against the old baselines, and nothing else") {
  Sim s;
  ShiftPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool(10));
  s.Step(pool(30));
  REQUIRE(s.state.frozen);
  PoolState before = s.state;
  before.backends[0].disagreement.direction = Disagreement::kProbePassesTrafficFails;
  before.backends[1].pinned = true;  // what Relearn must keep, whatever it is
  before.backends[1].in_service = false;
  before.backends[2].flaps = {s.now};
  before.backends[3].ramp_step = 1;
  const PoolState after = Relearn(before, s.p);
  CHECK(after == Relearn(after, s.p));
  CHECK(after.relearn_hold == s.p.baseline_min_intervals);
  CHECK(after.frozen);  // the guard lets go by its own rule (below)
  CHECK(after.frozen_since == before.frozen_since);
  REQUIRE(after.backends.size() == before.backends.size());
  for (size_t i = 0; i < after.backends.size(); ++i) {
    const BackendState& a = after.backends[i];
    for (const Baseline& b : a.baselines) CHECK(b.intervals == 0);
    CHECK(a.recent_drift_scores.empty());
    CHECK(a.drift_streak == 0);
    CHECK(a.disagreement == DisagreementEpisode{});
    // Everything else as it was.
    BackendState want = before.backends[i];
    want.baselines = {};
    want.recent_drift_scores.clear();
    want.drift_streak = 0;
    want.disagreement = {};
    CHECK(a == want);
  }
}

TEST_CASE(
    "A shift that stays: frozen for as long as it lasts, until relearned; then judged "
    "against the new normal") {
  Sim s;
  ShiftPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool(10));
  const auto normal = Weights(s.last);
  // Every backend three times slower at once, and it stays so: frozen, and
  // still frozen 200 evaluations on (the baselines absorb an anomaly only
  // at baseline_alpha_anomalous).
  for (int i = 0; i < 200; ++i) s.Step(pool(30));
  REQUIRE(s.state.frozen);
  REQUIRE(s.Count(ActionKind::kFreeze) == 1);
  // ... so a backend that gets slower than its peers meanwhile is not cut.
  for (int i = 0; i < 10; ++i) s.Step(pool(30, {{"c", 90}}));
  CHECK(s.state.frozen);
  CHECK(Weights(s.last) == normal);
  for (int i = 0; i < 10; ++i) s.Step(pool(30));

  // The operator accepts the new normal: nothing drifts any more, and the
  // guard lets go by its own rule.
  s.state = Relearn(s.state, s.p);
  const int unfreezes = s.Count(ActionKind::kUnfreeze);
  // Not before the baselines are learned again: held for
  // baseline_min_intervals evaluations, then unfreeze_after clear ones.
  for (int i = 0; i < s.p.baseline_min_intervals; ++i) {
    s.Step(pool(30));
    CHECK(s.state.frozen);
    CHECK(Weights(s.last) == normal);
  }
  for (int i = 0; i < s.p.unfreeze_after && s.state.frozen; ++i) {
    s.Step(pool(30));
    CHECK(Weights(s.last) == normal);
  }
  CHECK_FALSE(s.state.frozen);
  CHECK(s.Count(ActionKind::kUnfreeze) == unfreezes + 1);
  for (int i = 0; i < 2 * s.p.baseline_min_intervals; ++i) {
    s.Step(pool(30));
    CHECK_FALSE(s.state.frozen);
    CHECK(Weights(s.last) == normal);
  }
  const int freezes = s.Count(ActionKind::kFreeze);
  // Now a backend slower than its peers (and its new baseline) is cut, and
  // the pool does not freeze for it.
  for (int i = 0; i < 10; ++i) s.Step(pool(30, {{"c", 90}}));
  CHECK_FALSE(s.state.frozen);
  CHECK(s.Count(ActionKind::kFreeze) == freezes);
  CHECK(s.Out("c").effective_weight < 100);
  for (const char* k : {"a", "b", "d"}) CHECK(s.Out(k).effective_weight == 100);
}

TEST_CASE("Relearn does not unfreeze a split pool: most of it worse than its peers") {
  Sim s;
  ShiftPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool(10));
  // Three of four fail their probes: worse than their peers whatever the
  // baselines say.
  auto split = [&] {
    PoolInput in = pool(10);
    for (size_t i = 0; i < 3; ++i) in.backends[i].probe = testing::ProbeFail();
    return in;
  };
  for (int i = 0; i < 5; ++i) s.Step(split());
  REQUIRE(s.state.frozen);
  s.state = Relearn(s.state, s.p);
  for (int i = 0; i < 3 * s.p.unfreeze_after; ++i) s.Step(split());
  CHECK(s.state.frozen);
}

}  // namespace
}  // namespace ballast::health
