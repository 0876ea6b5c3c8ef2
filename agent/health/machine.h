// The health state machine of one pool: next(state, observation, now) ->
// (state, actions).
//
// The agent keeps one PoolState per pool (a copyable value), and once per
// evaluation interval calls
//
//   absl::StatusOr<Result> r = Next(state, input, now, params);
//   state = r->state;  apply r->backends[i].effective_weight;  audit r->actions;
//
// Next() is pure: no I/O, no clock (time is `now`), no globals, no threads.
// Params may differ from one call to the next (a configuration change): a
// ramp step beyond a shortened ramp_percents becomes its last step, and the
// other numbers apply from that evaluation on.
// The same inputs give the same outputs, so every rule is unit-tested with
// time values passed in (tests/machine_test.cc). `now` must not go backwards
// between calls for one pool (not checked; durations would be negative).
//
// The rules of one evaluation (signals, score, streaks, demotion, ramps,
// flap damping, the fleet guard, added and removed backends) are written
// out step by step in docs/health.md, "One evaluation, step by step".
//
// Thread-compatible value types; functions are pure.
#ifndef BALLAST_AGENT_HEALTH_MACHINE_H_
#define BALLAST_AGENT_HEALTH_MACHINE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/health/action.h"
#include "agent/health/params.h"
#include "agent/health/passive.h"
#include "agent/health/score.h"
#include "agent/health/weight.h"

namespace ballast::health {

enum class HealthState : uint8_t { kHealthy = 0, kDegraded, kRamping, kDown, kPinned };
// "healthy", "degraded", "ramping", "down", "pinned".
std::string_view HealthStateName(HealthState s);

// One backend's observation for one evaluation.
struct BackendInput {
  std::string key;              // stable identity, e.g. "198.18.1.7:80"; non-empty
  uint32_t nominal_weight = 0;  // operator/manual weight (the nominal)
  OperatorState operator_state = OperatorState::kActive;
  std::optional<ProbeSummary> probe;        // probes finished in the interval, if any
  std::optional<CounterSnapshot> counters;  // cumulative data-plane counters, if read
  // Nothing probes this backend (no probe configured for it): only its
  // traffic can judge it, and down it has none. An evaluation without data
  // then counts towards promoting it for a trial at the first ramp step.
  bool unprobed = false;
};

struct PoolInput {
  std::string pool;  // identity used in actions, e.g. the VIP "198.18.0.10:80/tcp"
  std::vector<BackendInput> backends;
};

// Evaluations in a row without a disagreement that end a disagreement episode.
inline constexpr int kDisagreementEndAfter = 3;
// Evaluations whose probe latency enters the probe latency signal (median).
inline constexpr size_t kProbeLatencyWindow = 3;

struct DisagreementEpisode {
  Disagreement direction = Disagreement::kNone;
  absl::Time since = absl::InfinitePast();  // first disagreeing evaluation
  bool alerted = false;
  int settled = 0;  // evaluations in a row without a disagreement since the last one

  bool operator==(const DisagreementEpisode&) const = default;
};

// Everything Next() remembers about one backend. Invariants: pinned implies
// !in_service; ramp_step < ramp_percents.size(); flaps sorted, all within
// flap_window of the last evaluation.
struct BackendState {
  std::string key;
  bool in_service = true;
  bool pinned = false;
  int score = 100;
  // The last Params::weight_score_window evaluated scores, oldest first.
  std::vector<int> recent_scores;
  // The same for the drift score: 100 - the penalty of the signals judged
  // against the backend's own baseline alone (the fleet guard's second rule).
  std::vector<int> recent_drift_scores;
  // Evaluations in a row with a drift score below good_score (0 = not
  // drifting): the fleet guard's "drifting now" counts onsets only.
  int drift_streak = 0;
  size_t ramp_step = 0;  // index into Params::ramp_percents
  int hold = 0;          // evaluations held at the current ramp step
  int good_streak = 0;
  int bad_streak = 0;
  // Evaluations in a row in which the backend looked dead, not slow: every
  // probe failed, or SYNs were refused (refused_demote). A frozen pool still
  // demotes on it (docs/health.md, "Fleet guard").
  int down_streak = 0;
  std::optional<absl::Time> last_promotion;
  std::vector<absl::Time> flaps;
  absl::Time cooldown_until = absl::InfinitePast();
  std::array<Baseline, kNumSignals> baselines{};
  std::optional<CounterSnapshot> last_counters;
  absl::Time last_counters_at = absl::InfinitePast();  // when last_counters was taken
  // Mean probe latency (ms) of the last kProbeLatencyWindow evaluations that
  // had a successful probe, oldest first. The probe latency signal is their
  // median: one probe per evaluation is one sample, and a single scheduling
  // hiccup on the prober must not read as a slow backend.
  std::vector<double> recent_probe_ms;
  DisagreementEpisode disagreement;
  // What the weight uses; held while the pool is frozen.
  bool applied_in_service = true;
  int applied_ramp_percent = 100;
  int applied_weight_score = 100;
  // applied_weight_score as it was before the last unfrozen evaluation: a
  // freeze restores it (see the fleet guard above).
  int prev_applied_weight_score = 100;

  bool operator==(const BackendState&) const = default;
};

struct PoolState {
  std::string pool;
  std::vector<BackendState> backends;  // sorted by key, keys unique
  bool frozen = false;
  absl::Time frozen_since = absl::InfinitePast();
  int clear_streak = 0;  // evaluations at or below the guard threshold while frozen
  // Evaluations left before a relearned pool's guard may let go
  // (relearn.h): its baselines are being learned again.
  int relearn_hold = 0;

  bool operator==(const PoolState&) const = default;
};

// What happened to one backend in this evaluation.
struct BackendOutput {
  std::string key;
  int score = 100;         // current score (kept from before if not evaluated)
  bool evaluated = false;  // whether this evaluation produced a score
  HealthState state = HealthState::kHealthy;
  std::string_view state_name;    // HealthStateName(state)
  uint32_t effective_weight = 0;  // what the Maglev table should use
  int ramp_percent = 100;         // applied ramp percent
  int weight_score = 100;         // applied weight score (weight.h)
  // Short tokens explaining the score and state, e.g. "probe_failures",
  // "first_response_ms_high", "low_traffic", "counter_reset",
  // "disagreement:probe_passes_traffic_fails", "drift_from_baseline",
  // "cooldown", "frozen", "draining", "evicted", "nominal_zero".
  std::vector<std::string> conditions;
  // The inputs JSON attached to this backend's actions. Built only when the
  // backend has actions in this evaluation or health changed its weight
  // (effective_weight differs from this input's weight under the previous
  // evaluation's ramp, weight score and in-service flag); empty otherwise,
  // since building it for every backend is most of an evaluation's cost.
  std::string evidence_json;
};

struct Result {
  PoolState state;
  std::vector<Action> actions;          // in decision order
  std::vector<BackendOutput> backends;  // same order as PoolInput::backends
  bool frozen = false;                  // == state.frozen
  int unwell = 0;                       // fleet guard count this evaluation
  int eligible = 0;
};

// Makes the state of a backend seen for the first time (see the file comment).
BackendState NewBackendState(std::string key, const Params& p);

// One evaluation. `prev` may be a default PoolState (first call). Params must
// be valid (ValidateParams). Errors (InvalidArgument): an empty backend key,
// or a key given twice, e.g. "pool 198.18.0.10:80/tcp: backend 198.18.1.7
// appears twice in the input".
absl::StatusOr<Result> Next(const PoolState& prev, const PoolInput& input, absl::Time now,
                            const Params& p);

struct ReleaseResult {
  PoolState state;
  Action action;  // kind release
};
// The operator's `lbctl backend release`: a pinned backend becomes down with
// its flaps, cooldown and streaks forgotten; it is promoted again after
// promote_after good evaluations. Weight stays 0 until then. Errors: NotFound
// (no such backend in the pool), FailedPrecondition (backend is not pinned).
absl::StatusOr<ReleaseResult> Release(const PoolState& prev, std::string_view backend,
                                      absl::Time now, const Params& p);

// The highest of b.recent_scores (b.score when empty): what the weight and
// the ramp's sag check use.
int SteadyScore(const BackendState& b);
// The best of the recent drift scores (100 when there are none).
int SteadyDriftScore(const BackendState& b);

// The state a backend is in (see the file comment).
HealthState StateOf(const BackendState& b, const Params& p);

}  // namespace ballast::health

#endif  // BALLAST_AGENT_HEALTH_MACHINE_H_
