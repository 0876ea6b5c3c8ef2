// Refused SYNs (second chance: the backend bounced them, nothing listens
// there): certain evidence that demotes at once, counted by the fleet guard
// like any other sickness. Time is passed in (sim.h).
#include <catch2/catch.hpp>

#include "agent/health/machine.h"
#include "agent/health/tests/sim.h"

namespace ballast::health {
namespace {

using testing::Sim;
using testing::TrafficPool;

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A pool of three with a settled baseline.
void Settle(Sim& s, TrafficPool& pool) {
  for (int i = 0; i < 10; ++i) s.Step(pool.Next());
  REQUIRE(s.Out("a").state == HealthState::kHealthy);
}

TEST_CASE("refused SYNs at refused_demote demote at once, audited with the count") {
  Sim s;
  TrafficPool pool;
  Settle(s, pool);
  // The server died, the host answers: its probes have not failed yet, and
  // the SYNs it got in this evaluation came back.
  pool.traffic["a"].refused = 3;
  pool.traffic["a"].completed = 0.2;
  const Result& r = s.Step(pool.Next());
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(s.Out("a").effective_weight == 0);
  CHECK(Has(s.Out("a").conditions, "refused_syns"));
  REQUIRE(s.CountIn(r, ActionKind::kDemote) == 1);
  const Action& a = r.actions.back();
  CHECK(a.backend == "a");
  CHECK_THAT(a.message, Catch::Contains("demoted at once: 3 SYNs refused in one evaluation"));
  CHECK_THAT(a.inputs_json, Catch::Contains("\"refused_syns\":3"));
  CHECK(s.Out("b").effective_weight == 100);
  CHECK(s.Out("c").effective_weight == 100);
  CHECK_FALSE(r.frozen);
}

TEST_CASE("fewer refusals than refused_demote do not demote; the count is a condition") {
  Sim s;
  TrafficPool pool;
  Settle(s, pool);
  pool.traffic["a"].refused = 2;
  s.Step(pool.Next());
  CHECK(s.Out("a").state == HealthState::kHealthy);
  CHECK(Has(s.Out("a").conditions, "refused_syns"));
  CHECK(s.Count(ActionKind::kDemote) == 0);

  s.p.refused_demote = 10;  // configurable
  pool.traffic["a"].refused = 9;
  s.Step(pool.Next());
  CHECK(s.Out("a").state == HealthState::kHealthy);
  pool.traffic["a"].refused = 10;
  s.Step(pool.Next());
  CHECK(s.Out("a").state == HealthState::kDown);
}

TEST_CASE("the same refusals everywhere freeze the pool: nobody is demoted") {
  Sim s;
  TrafficPool pool;
  Settle(s, pool);
  for (const char* k : {"a", "b", "c"}) pool.traffic[k].refused = 50;
  const Result& r = s.Step(pool.Next());
  CHECK(r.frozen);
  CHECK(s.CountIn(r, ActionKind::kFreeze) == 1);
  CHECK(s.Count(ActionKind::kDemote) == 0);
  for (const char* k : {"a", "b", "c"}) CHECK(s.Out(k).effective_weight == 100);
}

// Every server killed at once: each client SYN is refused by its first and
// second choices, so the first evaluation may see one backend at
// refused_demote and the others below it. They count as unwell all the
// same (a serving backend refuses nothing): the pool freezes, nobody is
// demoted (e2e health_allkilled saw one demotion here before).
TEST_CASE("refusals below refused_demote count for the fleet guard") {
  Sim s;
  TrafficPool pool;
  Settle(s, pool);
  pool.traffic["a"].refused = 3;
  pool.traffic["b"].refused = 2;
  pool.traffic["c"].refused = 1;
  const Result& r = s.Step(pool.Next());
  CHECK(r.frozen);
  CHECK(s.Count(ActionKind::kDemote) == 0);
  for (const char* k : {"a", "b", "c"}) CHECK(s.Out(k).effective_weight == 100);
}

TEST_CASE("once the refusals stop, the probes promote the backend as after any demotion") {
  Sim s;
  TrafficPool pool;
  Settle(s, pool);
  pool.traffic["a"].refused = 5;
  s.Step(pool.Next());
  REQUIRE(s.Out("a").state == HealthState::kDown);
  // Down, it gets no traffic; the probes pass again (the server is back).
  pool.traffic["a"] = testing::Traffic{.flows = 0};
  int evals = 0;
  while (s.Count(ActionKind::kPromote) == 0 && evals < 100) {
    s.Step(pool.Next());
    ++evals;
  }
  // The refusals disagreed with passing probes: that episode ends after
  // kDisagreementEndAfter evaluations without one, and until then the
  // evaluations are not good ones (machine.h, "Disagreement").
  CHECK(evals == s.p.promote_after + kDisagreementEndAfter);
}

}  // namespace
}  // namespace ballast::health
