#include "agent/health/weight.h"

#include <algorithm>
#include <cstdlib>

namespace ballast::health {

std::string_view OperatorStateName(OperatorState s) {
  switch (s) {
    case OperatorState::kActive:
      return "active";
    case OperatorState::kDraining:
      return "draining";
    case OperatorState::kEvicted:
      return "evicted";
  }
  return "unknown";
}

int WeightScore(int score, const Params& p) {
  const int step = p.weight_score_step;
  int q = (std::clamp(score, 0, 100) + step / 2) / step * step;
  return std::min(q, 100);
}

int NextWeightScore(int applied, int steady, const Params& p) {
  const int next = WeightScore(steady, p);
  if (next == applied || next == 100) return next;
  if (std::abs(std::clamp(steady, 0, 100) - applied) < p.weight_score_step) return applied;
  return next;
}

uint32_t EffectiveWeight(OperatorState op, uint32_t nominal, bool in_service, int ramp_percent,
                         int weight_score) {
  if (op != OperatorState::kActive) return 0;
  if (nominal == 0) return 0;
  if (!in_service) return 0;
  const uint64_t num = uint64_t{nominal} * static_cast<uint64_t>(std::clamp(ramp_percent, 0, 100)) *
                       static_cast<uint64_t>(std::clamp(weight_score, 0, 100));
  const uint64_t w = (num + 5000) / 10000;
  return static_cast<uint32_t>(std::max<uint64_t>(w, 1));
}

}  // namespace ballast::health
