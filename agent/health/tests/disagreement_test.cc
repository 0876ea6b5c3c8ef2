// Probe and real traffic disagreeing: the score drops on its own, and a
// disagreement sustained for disagreement_alert_after raises one alert naming
// its direction, cleared when the signals agree again.
#include <catch2/catch.hpp>

#include "agent/health/machine.h"
#include "agent/health/tests/sim.h"

namespace ballast::health {
namespace {

using testing::ProbeFail;
using testing::ProbeOk;
using testing::Sim;
using testing::TrafficPool;

// Evaluations that fit in d at the test's tick.
int Ticks(absl::Duration d) { return static_cast<int>(d / testing::kTick); }

void WarmUp(Sim& s, TrafficPool& pool) {
  for (int i = 0; i < 20; ++i) s.Step(pool.Next());
  REQUIRE(s.actions.empty());
}

TEST_CASE("probe passes while real traffic fails: score lowered, alert only after the timer") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  testing::Traffic resets;
  resets.rst_ratio = 0.5;  // real requests reset, the probe's still passes
  pool.traffic["a"] = resets;

  const int alert_at = Ticks(s.p.disagreement_alert_after);  // 50 evaluations after the start
  for (int i = 0; i < alert_at; ++i) {
    s.Step(pool.Next());
    CHECK(s.Out("a").score == 60);
    CHECK(s.Out("a").state == HealthState::kDegraded);
    // The weight follows from the second evaluation (weight_score_window 2).
    CHECK(s.Out("a").effective_weight == (i == 0 ? 100u : 60u));
    CHECK_THAT(s.Out("a").conditions,
               Catch::VectorContains(std::string("disagreement:probe_passes_traffic_fails")));
    CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("client_rst_ratio_high")));
  }
  CHECK(s.Count(ActionKind::kDisagreement) == 0);
  const Result& r = s.Step(pool.Next());  // exactly disagreement_alert_after after the start
  REQUIRE(s.CountIn(r, ActionKind::kDisagreement) == 1);
  const Action& alert = r.actions.back();
  CHECK(IsAlert(alert.kind));
  CHECK(alert.backend == "a");
  CHECK_THAT(alert.message, Catch::Contains("probe_passes_traffic_fails"));
  CHECK_THAT(alert.message, Catch::Contains("for 10s"));
  CHECK_THAT(alert.inputs_json, Catch::Contains("\"client_rst_ratio\":{\"value\":0.5"));
  CHECK_THAT(alert.inputs_json, Catch::Contains("\"disagreement\":\"probe_passes_traffic_fails\""));

  for (int i = 0; i < 100; ++i) s.Step(pool.Next());
  CHECK(s.Count(ActionKind::kDisagreement) == 1);  // once per episode
  CHECK(s.Count(ActionKind::kDemote) == 0);        // disagreement alone does not demote

  pool.traffic.erase("a");
  // The episode ends after kDisagreementEndAfter agreeing evaluations.
  for (int i = 1; i < kDisagreementEndAfter; ++i) {
    s.Step(pool.Next());
    CHECK(s.Count(ActionKind::kDisagreementCleared) == 0);
  }
  const Result& c = s.Step(pool.Next());
  REQUIRE(s.CountIn(c, ActionKind::kDisagreementCleared) == 1);
  CHECK_THAT(c.actions.back().message, Catch::Contains("probe_passes_traffic_fails ended after"));
  CHECK(s.Out("a").score == 100);
}

TEST_CASE("probe fails while real traffic is healthy: score lowered, alert after the timer") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  pool.probes["a"] = ProbeFail();
  const int alert_at = Ticks(s.p.disagreement_alert_after);
  for (int i = 0; i < alert_at; ++i) {
    s.Step(pool.Next());
    CHECK(s.Out("a").score == 60);
  }
  CHECK(s.Count(ActionKind::kDisagreement) == 0);
  s.Step(pool.Next());
  REQUIRE(s.Count(ActionKind::kDisagreement) == 1);
  CHECK_THAT(s.actions.back().message, Catch::Contains("probe_fails_traffic_healthy"));
  CHECK_THAT(s.actions.back().message, Catch::Contains("probes fail but real traffic is healthy"));
  CHECK(s.Out("a").state == HealthState::kDegraded);
  pool.probes.erase("a");
  for (int i = 0; i < kDisagreementEndAfter; ++i) s.Step(pool.Next());
  CHECK(s.Count(ActionKind::kDisagreementCleared) == 1);
}

TEST_CASE("one agreeing evaluation inside a disagreement does not restart its timer") {
  Sim s;
  s.p.disagreement_alert_after = absl::Seconds(2);
  TrafficPool pool;
  WarmUp(s, pool);
  pool.probes["a"] = ProbeFail();
  const int half = Ticks(absl::Seconds(1));
  for (int i = 0; i < half; ++i) s.Step(pool.Next());
  // Jitter: one (and then two) evaluations in which the signals agree.
  pool.probes.erase("a");
  s.Step(pool.Next());
  pool.probes["a"] = ProbeFail();
  for (int i = 0; i < 3; ++i) s.Step(pool.Next());
  pool.probes.erase("a");
  for (int i = 0; i < kDisagreementEndAfter - 1; ++i) s.Step(pool.Next());
  pool.probes["a"] = ProbeFail();
  CHECK(s.State("a").disagreement.direction == Disagreement::kProbeFailsTrafficHealthy);
  // The episode started `half + 1 + 3 + kDisagreementEndAfter - 1` evaluations
  // ago; the alert comes 2 s after its start, not 2 s after the jitter.
  const int so_far = half + 3 + kDisagreementEndAfter;
  for (int i = so_far; i < Ticks(absl::Seconds(2)); ++i) s.Step(pool.Next());
  CHECK(s.Count(ActionKind::kDisagreement) == 0);
  s.Step(pool.Next());
  CHECK(s.Count(ActionKind::kDisagreement) == 1);
  CHECK(s.Count(ActionKind::kDisagreementCleared) == 0);
}

TEST_CASE("the alert timer follows disagreement_alert_after") {
  Sim s;
  s.p.disagreement_alert_after = absl::Seconds(2);
  TrafficPool pool;
  WarmUp(s, pool);
  pool.probes["a"] = ProbeFail();
  for (int i = 0; i < Ticks(absl::Seconds(2)); ++i) s.Step(pool.Next());
  CHECK(s.Count(ActionKind::kDisagreement) == 0);
  s.Step(pool.Next());
  CHECK(s.Count(ActionKind::kDisagreement) == 1);
}

TEST_CASE("a disagreement shorter than the timer raises neither alert nor cleared") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  pool.probes["a"] = ProbeFail();
  for (int i = 0; i < 10; ++i) s.Step(pool.Next());
  pool.probes.erase("a");
  for (int i = 0; i < 10; ++i) s.Step(pool.Next());
  CHECK(s.Count(ActionKind::kDisagreement) == 0);
  CHECK(s.Count(ActionKind::kDisagreementCleared) == 0);
  CHECK(s.State("a").disagreement.direction == Disagreement::kNone);
}

TEST_CASE("when probe and traffic agree that a backend is dead there is no disagreement") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  testing::Traffic refused;  // the port answers SYN with RST: no handshake completes
  refused.completed = 0;
  pool.traffic["a"] = refused;
  pool.probes["a"] = ProbeFail();
  for (int i = 0; i < 3; ++i) s.Step(pool.Next());
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK(s.Out("a").score == 40);
  CHECK_THAT(s.Out("a").conditions,
             Catch::VectorContains(std::string("incomplete_handshake_ratio_high")));
  CHECK(s.State("a").disagreement.direction == Disagreement::kNone);
}

TEST_CASE("a hung backend is seen by traffic as unanswered requests and agrees with the probe") {
  Sim s;
  TrafficPool pool;
  WarmUp(s, pool);
  testing::Traffic hung;  // handshakes complete in the kernel, nothing answers
  hung.answered = 0;
  pool.traffic["a"] = hung;
  pool.probes["a"] = ProbeFail();
  for (int i = 0; i < 3; ++i) s.Step(pool.Next());
  CHECK(s.Out("a").state == HealthState::kDown);
  CHECK_THAT(s.Out("a").conditions, Catch::VectorContains(std::string("unanswered_ratio_high")));
  CHECK(s.Count(ActionKind::kDisagreement) == 0);
}

TEST_CASE("a disagreement turning the other way starts a new episode and clears the old alert") {
  Sim s;
  s.p.disagreement_alert_after = absl::ZeroDuration();
  TrafficPool pool;
  WarmUp(s, pool);
  pool.probes["a"] = ProbeFail();
  s.Step(pool.Next());
  REQUIRE(s.Count(ActionKind::kDisagreement) == 1);
  pool.probes.erase("a");
  testing::Traffic resets;
  resets.rst_ratio = 0.5;
  pool.traffic["a"] = resets;
  s.Step(pool.Next());
  CHECK(s.Count(ActionKind::kDisagreementCleared) == 1);
  CHECK(s.Count(ActionKind::kDisagreement) == 2);
  CHECK(s.State("a").disagreement.direction == Disagreement::kProbePassesTrafficFails);
}

}  // namespace
}  // namespace ballast::health

namespace ballast::health {
namespace {

TEST_CASE("while a disagreement is open, a side without an opinion does not lift the score") {
  testing::Sim s;
  testing::TrafficPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool.Next());
  testing::Traffic resets;
  resets.rst_ratio = 0.5;
  pool.traffic["a"] = resets;
  for (int i = 0; i < 5; ++i) s.Step(pool.Next());
  REQUIRE(s.Out("a").score == 60);
  // No probe finished in this interval: the passive side alone would say 40
  // anyway; and with too few flows for a passive opinion the probe alone
  // would say 100.
  pool.no_probe.insert("a");
  s.Step(pool.Next());
  CHECK(s.Out("a").score <= 60);
  pool.no_probe.clear();
  testing::Traffic quiet;
  quiet.flows = 3;  // below min_samples: no passive opinion
  pool.traffic["a"] = quiet;
  s.Step(pool.Next());
  CHECK(s.Out("a").score == 60);
  CHECK(s.State("a").disagreement.direction == Disagreement::kProbePassesTrafficFails);
}

}  // namespace
}  // namespace ballast::health

namespace ballast::health {
namespace {

TEST_CASE("a demoted backend without traffic is promoted by its probes after a disagreement") {
  testing::Sim s;
  testing::TrafficPool pool;
  for (int i = 0; i < 20; ++i) s.Step(pool.Next());
  // It breaks: the first evaluation sees the probe fail while the traffic of
  // the same interval still looks fine (a disagreement episode opens) ...
  pool.probes["a"] = testing::ProbeFail();
  s.Step(pool.Next());
  REQUIRE(s.State("a").disagreement.direction == Disagreement::kProbeFailsTrafficHealthy);
  // ... then it is demoted and gets no traffic at all.
  testing::Traffic none;
  none.flows = 0;
  pool.traffic["a"] = none;
  for (int i = 0; i < 10; ++i) s.Step(pool.Next());
  REQUIRE(s.Out("a").state == HealthState::kDown);
  // Repaired: probes pass, still no traffic (it is out of the table). The
  // silent passive side ended the episode, so the probes alone promote it.
  pool.probes.erase("a");
  bool promoted = false;
  for (int i = 0; i < 100 && !promoted; ++i) {
    s.Step(pool.Next());
    promoted = s.Out("a").state == HealthState::kRamping;
  }
  CHECK(promoted);
  CHECK(s.State("a").disagreement.direction == Disagreement::kNone);
}

}  // namespace
}  // namespace ballast::health
