// The score from probe and passive penalties, and its bands.
#include <catch2/catch.hpp>

#include "agent/health/score.h"

namespace ballast::health {
namespace {

TEST_CASE("slowdown penalty: nothing up to the tolerance, 30 points per doubling, capped") {
  Params p;
  CHECK(SlowdownPenalty(0.5, p) == 0);
  CHECK(SlowdownPenalty(1.25, p) == 0);
  CHECK(SlowdownPenalty(2.5, p) == Approx(30));
  CHECK(SlowdownPenalty(3.0, p) == Approx(37.89).epsilon(0.001));
  CHECK(SlowdownPenalty(5.0, p) == Approx(60));
  CHECK(SlowdownPenalty(100.0, p) == 60);
}

TEST_CASE("probe penalty: failure fraction, latency, no results") {
  Params p;
  CHECK_FALSE(ProbePenalty(ProbeSummary{}, std::nullopt, p).has_value());
  CHECK(*ProbePenalty(ProbeSummary{0, 1, {}}, std::nullopt, p) == 60);
  CHECK(*ProbePenalty(ProbeSummary{1, 1, absl::Milliseconds(2)}, std::nullopt, p) == 30);
  CHECK(*ProbePenalty(ProbeSummary{3, 0, absl::Milliseconds(6)}, std::nullopt, p) == 0);
  CHECK(*ProbePenalty(ProbeSummary{3, 0, absl::Milliseconds(6)}, 2.5, p) == Approx(30));
  CHECK(*ProbeLatencyMs(ProbeSummary{3, 0, absl::Milliseconds(6)}) == Approx(2));
  CHECK_FALSE(ProbeLatencyMs(ProbeSummary{0, 2, {}}).has_value());
}

TEST_CASE("both signals healthy give 100") {
  Params p;
  ScoreResult r = ComputeScore(0.0, 0.0, p);
  CHECK(r.evaluated);
  CHECK(r.score == 100);
  CHECK(r.disagreement == Disagreement::kNone);
}

TEST_CASE("no opinion on either side is not an evaluation") {
  Params p;
  CHECK_FALSE(ComputeScore(std::nullopt, std::nullopt, p).evaluated);
  ScoreResult probe_only = ComputeScore(60.0, std::nullopt, p);
  CHECK(probe_only.evaluated);
  CHECK(probe_only.score == 40);
  CHECK(probe_only.disagreement == Disagreement::kNone);
}

TEST_CASE("when both complain the larger penalty counts, once") {
  Params p;
  CHECK(ComputeScore(60.0, 37.9, p).score == 40);
  CHECK(ComputeScore(36.4, 37.9, p).score == 62);
}

TEST_CASE("disagreement lowers the score on its own, in both directions") {
  Params p;
  ScoreResult traffic = ComputeScore(0.0, 60.0, p);
  CHECK(traffic.disagreement == Disagreement::kProbePassesTrafficFails);
  CHECK(traffic.score == 60);
  ScoreResult probe = ComputeScore(60.0, 0.0, p);
  CHECK(probe.disagreement == Disagreement::kProbeFailsTrafficHealthy);
  CHECK(probe.score == 60);
  // A complaint below disagreement_min_penalty is not a disagreement.
  ScoreResult mild = ComputeScore(0.0, 10.0, p);
  CHECK(mild.disagreement == Disagreement::kNone);
  CHECK(mild.score == 90);
  // A few points of jitter on the other side (below half of
  // disagreement_min_penalty) still count as clean.
  ScoreResult jitter = ComputeScore(9.9, 37.9, p);
  CHECK(jitter.disagreement == Disagreement::kProbePassesTrafficFails);
  CHECK(jitter.score == 60);
  ScoreResult jitter_probe = ComputeScore(60.0, 4.0, p);
  CHECK(jitter_probe.disagreement == Disagreement::kProbeFailsTrafficHealthy);
  // The other side not clean (half of disagreement_min_penalty or more): the
  // ordinary rule.
  ScoreResult both = ComputeScore(10.0, 37.9, p);
  CHECK(both.disagreement == Disagreement::kNone);
  CHECK(both.score == 62);
  CHECK(DisagreementName(Disagreement::kProbePassesTrafficFails) == "probe_passes_traffic_fails");
  CHECK(DisagreementName(Disagreement::kProbeFailsTrafficHealthy) == "probe_fails_traffic_healthy");
}

TEST_CASE("score bands are the largest edge at or below the score") {
  Params p;
  CHECK(ScoreBand(100, p) == 100);
  CHECK(ScoreBand(99, p) == 80);
  CHECK(ScoreBand(80, p) == 80);
  CHECK(ScoreBand(79, p) == 50);
  CHECK(ScoreBand(20, p) == 20);
  CHECK(ScoreBand(19, p) == 0);
  CHECK(ScoreBand(0, p) == 0);
}

}  // namespace
}  // namespace ballast::health
