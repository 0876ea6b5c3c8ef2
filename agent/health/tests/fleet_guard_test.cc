// The fleet guard: more than half of a pool unwell at once freezes every
// automated weight change in that pool until it clears.
#include <catch2/catch.hpp>
#include <set>

#include "agent/health/machine.h"
#include "agent/health/tests/sim.h"

namespace ballast::health {
namespace {

using testing::ProbeFail;
using testing::ProbeOk;
using testing::ProbePool;
using testing::Sim;
using testing::Weights;

// Four backends; the first `failing` of a, b, c, d fail their probes.
PoolInput Failing(int failing) {
  std::map<std::string, ProbeSummary> m;
  int i = 0;
  for (const char* k : {"a", "b", "c", "d"}) m[k] = i++ < failing ? ProbeFail() : ProbeOk();
  return ProbePool(m);
}

TEST_CASE("exactly half of the pool unwell does not freeze") {
  Sim s;
  s.Step(Failing(0));
  for (int i = 0; i < 3; ++i) s.Step(Failing(2));
  CHECK_FALSE(s.last.frozen);
  CHECK(s.last.unwell == 2);
  CHECK(s.last.eligible == 4);
  CHECK(s.Count(ActionKind::kFreeze) == 0);
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(s.Out("b").state == HealthState::kDown);
  CHECK(Weights(s.last) ==
        std::map<std::string, uint32_t>{{"a", 0}, {"b", 0}, {"c", 100}, {"d", 100}});
}

TEST_CASE("more than half unwell freezes the pool: no weight changes until it clears") {
  Sim s;
  s.Step(Failing(0));
  const auto before = Weights(s.last);
  // Unwell counts the steady score (best of the last two): one bad
  // evaluation is noise, the second freezes -- still before the third bad
  // evaluation could demote anyone.
  const Result& first = s.Step(Failing(3));
  CHECK(s.CountIn(first, ActionKind::kFreeze) == 0);
  CHECK_FALSE(first.frozen);
  CHECK(Weights(first) == before);
  const Result& r = s.Step(Failing(3));
  REQUIRE(s.CountIn(r, ActionKind::kFreeze) == 1);
  const Action& freeze = r.actions.front();
  CHECK(freeze.kind == ActionKind::kFreeze);
  CHECK(IsAlert(freeze.kind));
  CHECK(freeze.backend.empty());
  CHECK_THAT(freeze.message, Catch::Contains("fleet-wide degradation: 3 of 4"));
  CHECK_THAT(freeze.inputs_json, Catch::Contains("\"unwell_backends\":[\"a\",\"b\",\"c\"]"));
  CHECK(r.frozen);
  CHECK(Weights(r) == before);  // the evaluation that freezes changes nothing either
  for (int i = 0; i < 30; ++i) {
    s.Step(Failing(3));
    CHECK(Weights(s.last) == before);
    CHECK(s.state.frozen);
  }
  CHECK(s.Count(ActionKind::kDemote) == 0);
  CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("frozen")));
  CHECK(s.Out("a").score == 40);  // scores are still reported

  // Clears: unfreeze_after evaluations at or below the threshold.
  s.Step(Failing(0));
  s.Step(Failing(0));
  CHECK(s.state.frozen);
  const Result& u = s.Step(Failing(0));
  CHECK(s.CountIn(u, ActionKind::kUnfreeze) == 1);
  CHECK_FALSE(u.frozen);
  CHECK(s.Count(ActionKind::kFreeze) == 1);
}

TEST_CASE("after an unfreeze the machine resumes with fresh streaks") {
  Sim s;
  s.Step(Failing(0));
  for (int i = 0; i < 10; ++i) s.Step(Failing(3));
  REQUIRE(s.state.frozen);
  // Two still fail: exactly half. Dead while their peers answer, they are
  // demoted although the pool is still frozen; the guard clears after
  // unfreeze_after.
  const Result& r = s.Step(Failing(2));
  CHECK(r.frozen);
  CHECK(s.CountIn(r, ActionKind::kDemote) == 2);
  for (int i = 1; i < s.p.unfreeze_after; ++i) s.Step(Failing(2));
  REQUIRE_FALSE(s.state.frozen);
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(s.Out("b").state == HealthState::kDown);
  // The good streak restarted at the unfreeze (the unfreezing evaluation is
  // the first to count): promote_after good evaluations promote, not fewer.
  CHECK(s.State("a").good_streak == 0);
  for (int i = 1; i < s.p.promote_after; ++i) {
    s.Step(Failing(0));
    CHECK(s.Out("a").state == HealthState::kDown);
  }
  s.Step(Failing(0));
  CHECK(s.Out("a").state == HealthState::kRamping);
  CHECK(s.Out("b").state == HealthState::kRamping);
}

TEST_CASE("a short dip below the threshold does not unfreeze") {
  Sim s;
  s.Step(Failing(0));
  s.Step(Failing(3));
  s.Step(Failing(3));
  REQUIRE(s.state.frozen);
  s.Step(Failing(0));
  s.Step(Failing(0));
  s.Step(Failing(4));
  s.Step(Failing(4));  // unwell again (steady): the clear streak starts over
  s.Step(Failing(0));
  s.Step(Failing(0));
  CHECK(s.state.frozen);
  s.Step(Failing(0));
  CHECK_FALSE(s.state.frozen);
}

TEST_CASE("while frozen the operator's drain and weights still apply") {
  Sim s;
  s.Step(Failing(0));
  s.Step(Failing(3));
  s.Step(Failing(3));
  REQUIRE(s.state.frozen);
  PoolInput in = Failing(3);
  in.backends[3].operator_state = OperatorState::kDraining;
  in.backends[2].nominal_weight = 50;
  s.Step(in);
  CHECK(s.Out("d").effective_weight == 0);
  CHECK(s.Out("c").effective_weight == 50);
  CHECK(s.Out("a").effective_weight == 100);
}

TEST_CASE("the guard counts only active backends with a positive nominal weight") {
  Sim s;
  PoolInput in = Failing(2);
  in.backends[2].operator_state = OperatorState::kDraining;  // c does not count
  s.Step(in);
  CHECK(s.last.eligible == 3);
  CHECK(s.last.unwell == 2);
  CHECK(s.state.frozen);  // 2 of 3
}

TEST_CASE("fleet_guard_percent = 100 never freezes") {
  Sim s;
  s.p.fleet_guard_percent = 100;
  s.Step(Failing(0));
  for (int i = 0; i < 3; ++i) s.Step(Failing(4));
  CHECK(s.Count(ActionKind::kFreeze) == 0);
  CHECK(s.Out("d").state == HealthState::kDown);
}

TEST_CASE("a pool that slows down together freezes, though no backend is slower than its peers") {
  Sim s;
  std::map<std::string, testing::Counters> counters;
  auto pool = [&](double first_response_ms) {
    PoolInput in;
    in.pool = "198.18.0.10:443/tcp";
    testing::Traffic t;
    t.first_response_ms = first_response_ms;
    for (const char* k : {"a", "b", "c", "d"}) {
      BackendInput b;
      b.key = k;
      b.nominal_weight = 100;
      b.probe = ProbeOk();
      b.counters = counters[k].Add(t);
      in.backends.push_back(b);
    }
    return in;
  };
  for (int i = 0; i < 20; ++i) s.Step(pool(10));
  REQUIRE_FALSE(s.state.frozen);
  const auto before = Weights(s.last);
  // Every backend drifts from its baseline at the same evaluation: frozen at
  // once, before any weight moves.
  const Result& r = s.Step(pool(30));
  CHECK(s.CountIn(r, ActionKind::kFreeze) == 1);
  CHECK_THAT(r.actions.back().inputs_json, Catch::Contains("\"drifting_now\":4"));
  CHECK(s.Out("a").score == 100);  // no worse than its peers
  CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("drift_from_baseline")));
  for (int i = 0; i < 50; ++i) {
    s.Step(pool(30));
    CHECK(Weights(s.last) == before);
  }
  CHECK(s.state.frozen);
  for (int i = 0; i < s.p.unfreeze_after; ++i) s.Step(pool(10));
  CHECK_FALSE(s.state.frozen);
  CHECK(s.Count(ActionKind::kUnfreeze) == 1);
}

// A pool with probes and traffic in which the backends named in `slow`
// answer 3x slower (30 ms instead of 10) in that interval.
struct DriftPool {
  std::vector<std::string> keys;
  std::map<std::string, testing::Counters> counters;
  PoolInput operator()(const std::set<std::string>& slow) {
    PoolInput in;
    in.pool = "198.18.0.10:443/tcp";
    for (const auto& k : keys) {
      testing::Traffic t;
      t.first_response_ms = slow.contains(k) ? 30 : 10;
      BackendInput b;
      b.key = k;
      b.nominal_weight = 100;
      b.probe = ProbeOk();
      b.counters = counters[k].Add(t);
      in.backends.push_back(b);
    }
    return in;
  }
};

TEST_CASE("a weight cut in the evaluation before a freeze is undone by the freeze") {
  Sim s;
  DriftPool pool{{"a", "b", "c"}};
  for (int i = 0; i < 20; ++i) s.Step(pool({}));
  // The slowdown reaches a first, two evaluations early: slower than its
  // peers, its steady score drops and it loses weight ...
  s.Step(pool({"a"}));
  s.Step(pool({"a"}));
  REQUIRE_FALSE(s.state.frozen);
  REQUIRE(s.Out("a").effective_weight < 100);
  // ... then everyone is slow: the freeze gives a its weight back and holds.
  const Result& r = s.Step(pool({"a", "b", "c"}));
  REQUIRE(s.CountIn(r, ActionKind::kFreeze) == 1);
  CHECK_THAT(r.actions.front().message, Catch::Contains("the last weight change of a undone"));
  CHECK_THAT(r.actions.front().inputs_json, Catch::Contains("\"weights_restored\":[\"a\"]"));
  for (int i = 0; i < 20; ++i) {
    s.Step(pool({"a", "b", "c"}));
    CHECK(Weights(s.last) == (std::map<std::string, uint32_t>{{"a", 100}, {"b", 100}, {"c", 100}}));
  }
}

TEST_CASE("one backend in a long brownout plus one noisy peer does not freeze a pool of three") {
  Sim s;
  DriftPool pool{{"a", "b", "c"}};
  for (int i = 0; i < 20; ++i) s.Step(pool({}));
  // a browns out and stays slow: unwell (1 of 3), its weight moves.
  for (int i = 0; i < 10; ++i) s.Step(pool({"a"}));
  REQUIRE_FALSE(s.state.frozen);
  REQUIRE(s.Out("a").effective_weight < 100);
  // Now and then a peer has one slow evaluation. a drifting for many
  // evaluations is no onset: 1 of 3 started drifting, not most.
  for (int i = 0; i < 12; ++i) {
    const Result& r = s.Step(pool(i % 3 == 0 ? std::set<std::string>{"a", i % 2 ? "b" : "c"}
                                             : std::set<std::string>{"a"}));
    CHECK_FALSE(r.frozen);
  }
  CHECK(s.Count(ActionKind::kFreeze) == 0);
}

TEST_CASE("noise that makes a few backends drift for one evaluation at a time does not freeze") {
  Sim s;
  DriftPool pool{{"a", "b", "c", "d", "e", "f"}};
  const std::vector<std::string>& keys = pool.keys;
  for (int i = 0; i < 20; ++i) s.Step(pool({}));
  // Two backends failing their probes (steadily unwell) and, every other evaluation, a
  // different two drifting for that one evaluation: 2 + 2 of 6 never adds up
  // to more than half in the steady counts, and 2 drifting is not most.
  for (int i = 0; i < 60; ++i) {
    std::set<std::string> blip;
    if (i % 2 == 0) blip = {keys[2 + (i / 2) % 4], keys[2 + (i / 2 + 1) % 4]};
    PoolInput in = pool(blip);
    for (auto& b : in.backends) {
      if (b.key == "a" || b.key == "b") b.probe = testing::ProbeFail();
    }
    s.Step(in);
  }
  CHECK(s.Count(ActionKind::kFreeze) == 0);
}

// A pool of four with traffic: every backend slower by `slow_ms` than its
// learned 10 ms; the backends in `dead` answer no probe, those in `refusing`
// also refuse SYNs (no listener).
struct FrozenPool {
  std::map<std::string, testing::Counters> counters;
  PoolInput operator()(double first_response_ms, const std::set<std::string>& dead = {},
                       const std::set<std::string>& refusing = {}) {
    PoolInput in;
    in.pool = "198.18.0.10:443/tcp";
    for (const char* k : {"a", "b", "c", "d"}) {
      testing::Traffic t;
      t.first_response_ms = first_response_ms;
      if (refusing.contains(k)) t.refused = 100;
      BackendInput b;
      b.key = k;
      b.nominal_weight = 100;
      b.probe = dead.contains(k) || refusing.contains(k) ? ProbeFail() : ProbeOk();
      b.counters = counters[k].Add(t);
      in.backends.push_back(b);
    }
    return in;
  }
};

TEST_CASE("a backend that dies while its pool is frozen is demoted; its peers keep their weights") {
  Sim s;
  FrozenPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool(10));
  const auto before = Weights(s.last);
  s.Step(pool(30));  // the whole pool slows down: frozen
  REQUIRE(s.state.frozen);
  for (int i = 0; i < 10; ++i) s.Step(pool(30));
  REQUIRE(Weights(s.last) == before);

  // a dies: its probes fail. Like a demotion in a pool that is not frozen,
  // after demote_after evaluations in a row.
  for (int i = 1; i < s.p.demote_after; ++i) {
    s.Step(pool(30, {"a"}));
    CHECK(Weights(s.last) == before);
  }
  const Result& r = s.Step(pool(30, {"a"}));
  REQUIRE(s.CountIn(r, ActionKind::kDemote) == 1);
  const Action& demote = r.actions.back();
  CHECK(demote.backend == "a");
  CHECK_THAT(demote.message,
             Catch::Contains("demoted although the pool is frozen: every probe failed for 3 "
                             "evaluations in a row; 1 of 4 eligible backends look dead"));
  CHECK(r.frozen);
  auto want = before;
  want["a"] = 0;
  CHECK(Weights(r) == want);
  CHECK(s.Out("a").state == HealthState::kDown);

  // Another dies: still at most half of the pool dead, demoted too. A third
  // is more than half: the prober's own path is the likelier fault, nothing
  // more moves.
  for (int i = 0; i < s.p.demote_after; ++i) s.Step(pool(30, {"a", "b"}));
  want["b"] = 0;
  CHECK(Weights(s.last) == want);
  for (int i = 0; i < 20; ++i) s.Step(pool(30, {"a", "b", "c"}));
  CHECK(Weights(s.last) == want);
  CHECK(s.Count(ActionKind::kDemote) == 2);
  CHECK(s.state.frozen);

  // The pool recovers: the freeze ends, and the dead ones come back the way
  // any demoted backend does (promote_after good evaluations, then the ramp).
  for (int i = 0; i < 40 && s.Count(ActionKind::kPromote) < 2; ++i) s.Step(pool(10));
  CHECK_FALSE(s.state.frozen);
  CHECK(s.Count(ActionKind::kPromote) == 2);
  CHECK(s.Out("a").state == HealthState::kRamping);
  CHECK(s.Out("c").state == HealthState::kHealthy);
}

TEST_CASE("a backend that refuses SYNs while its pool is frozen is demoted at once") {
  Sim s;
  FrozenPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool(10));
  const auto before = Weights(s.last);
  for (int i = 0; i < 5; ++i) s.Step(pool(30));
  REQUIRE(s.state.frozen);
  const Result& r = s.Step(pool(30, {}, {"d"}));
  REQUIRE(s.CountIn(r, ActionKind::kDemote) == 1);
  CHECK_THAT(r.actions.back().message,
             Catch::Contains("demoted although the pool is frozen: 100 SYNs refused in one "
                             "evaluation"));
  auto want = before;
  want["d"] = 0;
  CHECK(Weights(r) == want);
  CHECK(r.frozen);
}

TEST_CASE("a frozen pool whose backends are merely slow demotes none, however long") {
  Sim s;
  FrozenPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool(10));
  const auto before = Weights(s.last);
  for (int i = 0; i < 200; ++i) s.Step(pool(i % 2 ? 60 : 30));
  CHECK(s.state.frozen);
  CHECK(Weights(s.last) == before);
  CHECK(s.Count(ActionKind::kDemote) == 0);
}

}  // namespace
}  // namespace ballast::health
