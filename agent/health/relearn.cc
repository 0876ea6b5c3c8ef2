#include "agent/health/relearn.h"

namespace ballast::health {

PoolState Relearn(PoolState pool) {
  for (BackendState& b : pool.backends) {
    b.baselines = {};
    b.recent_drift_scores.clear();
    b.drift_streak = 0;
    b.disagreement = {};
  }
  return pool;
}

}  // namespace ballast::health
