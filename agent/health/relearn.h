// Accepting a pool's new normal: the operator's answer to a shift that
// stays (docs/health.md, "A shift that stays"). Pure; thread-compatible.
#ifndef BALLAST_AGENT_HEALTH_RELEARN_H_
#define BALLAST_AGENT_HEALTH_RELEARN_H_

#include "agent/health/machine.h"

namespace ballast::health {

// `pool` with every judgement made against the backends' baselines
// forgotten: the baselines themselves (learned again from the next
// evaluations), the drift history, and disagreement episodes (their
// traffic side was judged against the old baselines). Everything else
// stays: in service or not, pins, ramps, flap history, streaks, scores, the
// weights applied, and the fleet guard. A pool frozen by the shift then
// unfreezes by the guard's own rule, but not before the baselines are
// learned again (relearn_hold = baseline_min_intervals evaluations): until
// then a signal is judged against the peers alone, which is noisier than
// against the peers and the backend's own baseline both, and the freeze
// keeps holding the weights meanwhile. Nothing drifts from the new
// baselines, so after unfreeze_after evaluations in which no more than
// fleet_guard_percent of the pool is unwell it lets go. A pool that is
// split (most of it worse than its peers) stays frozen: relearning accepts
// a shift, not a split.
PoolState Relearn(PoolState pool, const Params& p);

}  // namespace ballast::health

#endif  // BALLAST_AGENT_HEALTH_RELEARN_H_
