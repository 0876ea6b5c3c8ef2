#include "agent/health/relearn.h"

namespace ballast::health {

PoolState Relearn(PoolState pool, const Params& p) {
  for (BackendState& b : pool.backends) {
    b.baselines = {};
    b.recent_drift_scores.clear();
    b.drift_streak = 0;
    b.disagreement = {};
  }
  pool.relearn_hold = p.baseline_min_intervals;
  return pool;
}

}  // namespace ballast::health
