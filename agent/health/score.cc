#include "agent/health/score.h"

#include <algorithm>
#include <cmath>

namespace ballast::health {

std::optional<double> ProbeLatencyMs(const ProbeSummary& s) {
  if (s.successes == 0) return std::nullopt;
  return absl::ToDoubleMilliseconds(s.success_latency_sum) / s.successes;
}

double SlowdownPenalty(double severity, const Params& p) {
  if (!(severity > p.slowdown_tolerance)) return 0;
  double pen = p.penalty_per_doubling * std::log2(severity / p.slowdown_tolerance);
  return std::min(pen, p.max_slowdown_penalty);
}

std::optional<double> ProbePenalty(const ProbeSummary& s, std::optional<double> latency_severity,
                                   const Params& p) {
  const uint64_t total = uint64_t{s.successes} + s.failures;
  if (total == 0) return std::nullopt;
  double pen =
      p.probe_failure_penalty * static_cast<double>(s.failures) / static_cast<double>(total);
  if (latency_severity) pen = std::max(pen, SlowdownPenalty(*latency_severity, p));
  return pen;
}

std::string_view DisagreementName(Disagreement d) {
  switch (d) {
    case Disagreement::kNone:
      return "none";
    case Disagreement::kProbePassesTrafficFails:
      return "probe_passes_traffic_fails";
    case Disagreement::kProbeFailsTrafficHealthy:
      return "probe_fails_traffic_healthy";
  }
  return "unknown";
}

ScoreResult ComputeScore(std::optional<double> probe_penalty, std::optional<double> passive_penalty,
                         const Params& p) {
  ScoreResult r;
  if (!probe_penalty && !passive_penalty) return r;
  r.evaluated = true;
  if (probe_penalty && passive_penalty) {
    const bool probe_complains = *probe_penalty >= p.disagreement_min_penalty;
    const bool traffic_complains = *passive_penalty >= p.disagreement_min_penalty;
    const double clean_below = p.disagreement_min_penalty / 2;
    if (probe_complains && *passive_penalty < clean_below) {
      r.disagreement = Disagreement::kProbeFailsTrafficHealthy;
    } else if (traffic_complains && *probe_penalty < clean_below) {
      r.disagreement = Disagreement::kProbePassesTrafficFails;
    }
  }
  double pen;
  if (r.disagreement != Disagreement::kNone) {
    pen = p.disagreement_penalty;
  } else {
    pen = std::max(probe_penalty.value_or(0), passive_penalty.value_or(0));
  }
  r.score = static_cast<int>(std::lround(std::clamp(100.0 - pen, 0.0, 100.0)));
  return r;
}

int ScoreBand(int score, const Params& p) {
  for (int edge : p.score_bands) {
    if (score >= edge) return edge;
  }
  return p.score_bands.back();
}

}  // namespace ballast::health
