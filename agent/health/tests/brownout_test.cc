// Passive signals inside the machine: a brownout moves weight off partially
// and quickly without a flap; quiet backends and counter resets give no
// passive opinion; a backend that was always slower than its peers is left
// alone.
#include <catch2/catch.hpp>

#include "agent/health/machine.h"
#include "agent/health/tests/sim.h"

namespace ballast::health {
namespace {

using testing::ProbeOk;
using testing::Sim;
using testing::TrafficPool;

// 5 s at a 200 ms probe interval.
constexpr int kBudget = 25;

void WarmUp(Sim& s, TrafficPool& pool) {
  for (int i = 0; i < 20; ++i) s.Step(pool.Next());
  for (const auto& b : s.last.backends) REQUIRE(b.effective_weight == 100);
}

// Runs the brownout and returns the evaluations it took until at least 30% of
// a's weight was off (or -1); checks that it never flaps over 500 evaluations.
int Brownout(Sim& s, TrafficPool& pool) {
  int moved_at = -1;
  for (int i = 1; i <= 500; ++i) {
    s.Step(pool.Next());
    if (moved_at < 0 && s.Out("a").effective_weight <= 70) moved_at = i;
    REQUIRE(s.Out("a").state != HealthState::kDown);
    REQUIRE(s.Out("b").effective_weight == 100);
    REQUIRE(s.Out("c").effective_weight == 100);
  }
  CHECK(s.Count(ActionKind::kDemote) == 0);
  CHECK(s.Count(ActionKind::kFreeze) == 0);
  // 500 evaluations (100 s) later the slowdown is still not absorbed.
  CHECK(s.Out("a").effective_weight <= 70);
  return moved_at;
}

TEST_CASE("a 3x brownout seen by traffic and probe moves >= 30% of the weight off in 5 s") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  testing::Traffic slow;
  slow.first_response_ms = 30;  // 3x its own 10 ms and its peers' 10 ms
  pool.traffic["a"] = slow;
  pool.probes["a"] = ProbeOk(6);  // the probe's request is 3x slower too
  const int moved_at = Brownout(s, pool);
  CHECK(moved_at >= 1);
  CHECK(moved_at <= kBudget);
  CHECK(s.Out("a").state == HealthState::kDegraded);
  CHECK(s.Out("a").score >= s.p.bad_score);  // degraded, not dead
  CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("first_response_ms_high")));
  CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("probe_latency_ms_high")));
  CHECK(s.State("a").disagreement.direction == Disagreement::kNone);
}

TEST_CASE("a 3x brownout that a TCP-connect probe cannot see still moves >= 30% off in 5 s") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  testing::Traffic slow;
  slow.first_response_ms = 30;
  pool.traffic["a"] = slow;
  const int moved_at = Brownout(s, pool);
  CHECK(moved_at >= 1);
  CHECK(moved_at <= kBudget);
  CHECK(s.Out("a").score == 100 - s.p.disagreement_penalty);
}

TEST_CASE("a backend that was always slower than its peers keeps its weight") {
  Sim s;
  TrafficPool pool;
  testing::Traffic slow;
  slow.first_response_ms = 30;
  pool.traffic["a"] = slow;
  for (int i = 0; i < 100; ++i) s.Step(pool.Next());
  CHECK(s.Out("a").score == 100);
  CHECK(s.Out("a").effective_weight == 100);
}

TEST_CASE("a low-traffic interval gives no passive opinion") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  testing::Traffic quiet;
  quiet.flows = 5;  // below min_samples
  quiet.rst_ratio = 0.4;
  quiet.first_response_ms = 100;
  pool.traffic["a"] = quiet;
  s.Step(pool.Next());
  CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("low_traffic")));
  CHECK(s.Out("a").score == 100);  // the probe alone, which passes
  CHECK(s.Out("a").evaluated);
  CHECK(s.Out("a").effective_weight == 100);
}

TEST_CASE("a counter reset gives no passive data for that interval, then resumes") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  pool.counters["a"] = testing::Counters{};  // the data plane was reloaded
  testing::Traffic bad;
  bad.rst_ratio = 0.9;  // would be a loud signal if the delta were trusted
  pool.traffic["a"] = bad;
  PoolInput in = pool.Next();
  in.backends[0].probe.reset();
  s.Step(in);
  CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("counter_reset")));
  CHECK_FALSE(s.Out("a").evaluated);
  CHECK(s.Out("a").score == 100);
  pool.traffic.erase("a");
  s.Step(pool.Next());
  CHECK(s.Out("a").evaluated);
  CHECK(s.Out("a").score == 100);
}

TEST_CASE("a SYN retransmission surge on one backend lowers its score") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  testing::Traffic lossy;
  lossy.syn_retransmit_ratio = 0.3;  // (0.3 + 0.02) / 0.02 = 16x its baseline and peers
  pool.traffic["a"] = lossy;
  pool.probes["a"] = testing::ProbeFail();
  s.Step(pool.Next());
  CHECK(s.Out("a").score == 40);
  CHECK_THAT(s.Out("a").conditions,
             Catch::VectorContains(std::string("syn_retransmit_ratio_high")));
}

}  // namespace
}  // namespace ballast::health

namespace ballast::health {
namespace {

TEST_CASE("one slow probe among fast ones is a hiccup, not a slowdown") {
  testing::Sim s;
  testing::TrafficPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool.Next());
  // One probe takes 20 ms (10x its 2 ms): the probe latency signal is the
  // median of the last kProbeLatencyWindow evaluations, so nothing moves.
  pool.probes["a"] = testing::ProbeOk(20);
  s.Step(pool.Next());
  CHECK(s.Out("a").score == 100);
  pool.probes.erase("a");
  for (int i = 0; i < 5; ++i) {
    s.Step(pool.Next());
    CHECK(s.Out("a").score == 100);
  }
  CHECK(s.Count(ActionKind::kScoreBand) == 0);
  // Two slow probes in a row are a slowdown.
  pool.probes["a"] = testing::ProbeOk(20);
  s.Step(pool.Next());
  CHECK(s.Out("a").score == 100);
  s.Step(pool.Next());
  CHECK(s.Out("a").score < 100);
}

TEST_CASE("a carried probe verdict is not a new latency sample") {
  testing::Sim s;
  testing::TrafficPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool.Next());
  // One slow probe, then two evaluations that see its verdict again
  // (evaluations twice as frequent as probes): still one sample of 20 ms
  // among 2 ms ones, so nothing moves.
  pool.probes["a"] = testing::ProbeOk(20);
  s.Step(pool.Next());
  pool.probes["a"].carried = true;
  for (int i = 0; i < 2; ++i) {
    s.Step(pool.Next());
    CHECK(s.Out("a").score == 100);
  }
  // A second slow probe (not carried) is a slowdown, as above.
  pool.probes["a"].carried = false;
  s.Step(pool.Next());
  CHECK(s.Out("a").score < 100);
}

}  // namespace
}  // namespace ballast::health
