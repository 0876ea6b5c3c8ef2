// Effective weight: what the Maglev table uses for one backend.
//
//   effective = round(nominal * ramp_percent/100 * weight_score/100)
//
// weight_score is the backend's steady score (the highest of its last
// Params::weight_score_window evaluated scores, machine.h SteadyScore) rounded
// to the nearest multiple of Params::weight_score_step (halves up, at most
// 100), so a score of 62 scales by 0.60 and a score of 98 by 1.00 with the
// default step of 5. The product is
// computed exactly in integers and rounded half up. A backend in service with
// a positive nominal weight never gets 0: the result is at least 1 (so a 5%
// ramp step of a nominal weight of 10 still receives traffic).
//
// Precedence, first match wins (documented for operators in docs/health.md):
//   1. operator state draining or evicted        -> 0 (health does not touch it)
//   2. nominal (operator/manual) weight 0         -> 0
//   3. health: demoted (down) or pinned           -> 0
//   4. otherwise                                  -> the formula above, >= 1
// While a pool is frozen (fleet guard) the ramp percent, weight score and
// in-service flag are the ones held from the last unfrozen evaluation; the
// operator's inputs (1, 2 and the nominal) still apply.
//
// Pure functions; thread-safe.
#ifndef BALLAST_AGENT_HEALTH_WEIGHT_H_
#define BALLAST_AGENT_HEALTH_WEIGHT_H_

#include <cstdint>
#include <string_view>

#include "agent/health/params.h"

namespace ballast::health {

// The operator's intent for a backend (from the state store / lbctl).
enum class OperatorState : uint8_t { kActive = 0, kDraining, kEvicted };
// "active", "draining", "evicted".
std::string_view OperatorStateName(OperatorState s);

// score (0..100) rounded to a multiple of p.weight_score_step, at most 100.
int WeightScore(int score, const Params& p);

// The weight score to apply next, given the one applied now and the steady
// score: WeightScore(steady), except that a steady score less than one
// weight_score_step away from `applied` keeps `applied` (unless it rounds to
// 100: a recovered backend gets its whole weight back). Rounding alone
// leaves a score that jitters around a rounding edge (72, 73, 72, ...)
// switching between two weights (70, 75, 70, ...) and rebuilding the table
// each time; with this dead band it must move a whole step first. A step of
// 1 has no dead band.
int NextWeightScore(int applied, int steady, const Params& p);

// See the file comment. ramp_percent 1..100, weight_score 0..100.
uint32_t EffectiveWeight(OperatorState op, uint32_t nominal, bool in_service, int ramp_percent,
                         int weight_score);

}  // namespace ballast::health

#endif  // BALLAST_AGENT_HEALTH_WEIGHT_H_
