// The health score: 0..100 per backend per evaluation, from the synthetic
// probes and the passive signals.
//
// Each side yields a penalty in points, or no opinion:
//
//   probe penalty   = max(probe_failure_penalty * failed / (succeeded + failed),
//                         SlowdownPenalty(probe latency severity))
//                     no opinion when no probe finished in the interval.
//   passive penalty = max over passive signals with an opinion of
//                     SlowdownPenalty(severity)   (see passive.h)
//                     no opinion when no passive signal has one (quiet backend).
//
//   SlowdownPenalty(r) = 0                                   if r <= slowdown_tolerance
//                      = min(max_slowdown_penalty,
//                            penalty_per_doubling * log2(r / slowdown_tolerance))
//   With the defaults (1.25, 30, 60): 2x -> 20, 3x -> 38, 4x -> 50, >= 5x -> 60.
//
// Combining (a side "complains" when its penalty >= disagreement_min_penalty
// and is "clean" when its penalty is below half of that, 10 points with the
// defaults: a few milliseconds of probe jitter on a busy host is a penalty of
// a few points and must not hide a disagreement):
//   - neither side has an opinion: not evaluated; the score keeps its previous
//     value and the evaluation counts neither good nor bad;
//   - one side complains and the other is clean: disagreement, in the direction
//     of the complaining side; score = 100 - disagreement_penalty (60 by default).
//     The signals contradict each other, so the score does not follow either
//     alone: it takes weight off (the disagreement lowers the score on its
//     own) but does not demote with the defaults; a sustained disagreement
//     raises an alert (machine.h);
//   - otherwise: score = 100 - max(probe penalty, passive penalty). The max,
//     not the sum: when both see the same slowness it is counted once.
// Both healthy (no penalty) -> 100. The score is rounded to an integer.
//
// All functions are pure; thread-compatible value types.
#ifndef BALLAST_AGENT_HEALTH_SCORE_H_
#define BALLAST_AGENT_HEALTH_SCORE_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/time/time.h"
#include "agent/health/params.h"

namespace ballast::health {

// The probes that finished in one interval for one backend.
struct ProbeSummary {
  uint32_t successes = 0;
  uint32_t failures = 0;
  // Sum of the latencies of the successful probes (mean = sum / successes).
  absl::Duration success_latency_sum = absl::ZeroDuration();
  // No probe finished in this interval: the previous interval's verdict,
  // which stands until the next probe is due (core/probe_verdicts.h). Its
  // latency is not a new sample.
  bool carried = false;
};

// Mean latency of the successful probes in milliseconds; nullopt when none.
std::optional<double> ProbeLatencyMs(const ProbeSummary& s);

double SlowdownPenalty(double severity, const Params& p);

// nullopt when the summary holds no result. `latency_severity`: the severity of
// the probe latency signal (passive.h Compare), if it has one.
std::optional<double> ProbePenalty(const ProbeSummary& s, std::optional<double> latency_severity,
                                   const Params& p);

enum class Disagreement : uint8_t {
  kNone = 0,
  kProbePassesTrafficFails,   // probe clean, real traffic degraded
  kProbeFailsTrafficHealthy,  // probe degraded, real traffic clean
};
// "none", "probe_passes_traffic_fails", "probe_fails_traffic_healthy".
std::string_view DisagreementName(Disagreement d);

struct ScoreResult {
  bool evaluated = false;  // false: neither side had an opinion; score unused
  int score = 100;         // 0..100
  Disagreement disagreement = Disagreement::kNone;
};
ScoreResult ComputeScore(std::optional<double> probe_penalty, std::optional<double> passive_penalty,
                         const Params& p);

// The band of a score: the largest entry of score_bands that is <= score
// (with the defaults: 100, 80, 50, 20 or 0).
int ScoreBand(int score, const Params& p);

}  // namespace ballast::health

#endif  // BALLAST_AGENT_HEALTH_SCORE_H_
