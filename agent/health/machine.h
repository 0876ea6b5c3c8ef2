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
// Per backend, each evaluation:
//   1. Passive: the counter snapshot is diffed with the previous one
//      (passive.h); a missing previous snapshot or a counter reset gives no
//      passive data this time. Probe summary: the probes finished in the
//      interval, or the last interval's again (`carried`), or none.
//   2. Each signal is compared with the backend's baseline and the pool's
//      median of the same signal; score 0..100 (score.h). When neither side
//      has an opinion the backend is "not evaluated": the score is kept and
//      the streaks, ramp holds and disagreement timer do not move.
//   3. Baselines are updated (slowly while the signal is anomalous).
//   4. The evaluation is good (score >= good_score), bad (< bad_score) or
//      neutral; good_streak / bad_streak count consecutive ones (a neutral one
//      resets both).
//   5. Transitions (below), then the effective weight (weight.h) from the
//      operator state, nominal weight, ramp percent and SteadyScore().
//
// States (HealthState): a backend is in service or not.
//   healthy   in service, ramp at 100%, score >= good_score
//   degraded  in service, ramp at 100%, score < good_score (weight scaled down
//             by the score, not demoted until demote_after bad evaluations)
//   ramping   in service, below the last ramp step (after a promotion)
//   down      demoted: weight 0, waiting for promote_after good evaluations and
//             the end of its cooldown
//   pinned    out after too many flaps: weight 0 until Release()
//
// Transitions (none while the pool is frozen):
//   in service, bad_streak >= demote_after  -> down (action demote). If the
//     backend was promoted at most flap_window before, this demotion is a flap:
//     its time is recorded; n = flaps within flap_window (this one included);
//     cooldown_until = now + min(max_cooldown, cooldown_base * 2^(n-1)). If
//     pin_flaps flaps fall within pin_window (this one included) -> pinned
//     (actions demote then pin). A demotion that is not a flap has no cooldown.
//   in service, Params::refused_demote refused SYNs in this evaluation
//     (passive.h: the backend bounced them, nothing listens there) -> down at
//     once, whatever the streak (action demote, the count in its message and
//     inputs; a flap like any other demotion). Those refusals also set the
//     passive penalty to 100.
//   down, at an evaluated evaluation with good_streak >= promote_after and
//     now >= cooldown_until -> ramping at
//     the first ramp step (action promote; with a single ramp step of 100 the
//     backend is healthy at once). Streaks are reset on demote and promote.
//   ramping: an evaluated evaluation with SteadyScore() < ramp_sag_score (the
//     score stayed low for weight_score_window evaluations) is a sag: one
//     step back (action ramp_back; none at the first step) and the hold
//     restarts; otherwise it counts towards the hold, and after ramp_hold
//     evaluations at a step the next step is taken (action ramp_step).
//     Demotion is checked first.
//   pinned: only Release() leaves it (-> down, flaps and cooldown forgotten).
//
// Score bands: when an evaluation moves the steady score (SteadyScore(), what
// the weight uses) into another band (score.h ScoreBand), action score_band.
// A single noisy evaluation does not move the steady score, so it writes no
// record.
//
// Disagreement (score.h): an episode starts at the first evaluation whose
// signals disagree; it continues through evaluations that disagree in the
// same direction; it ends after kDisagreementEndAfter evaluations in a row
// without a disagreement (both sides agree, or one has no opinion), so one
// jittery or silent evaluation does not restart the alert timer, or at once
// when the signals disagree the other way, which starts a new episode. When
// a disagreeing evaluation comes at least disagreement_alert_after after the
// episode's start, action disagreement (once per episode, message names the
// direction); when an alerted episode ends, action disagreement_cleared.
// While an episode is open, an evaluation in which a side has no opinion
// scores at most 100 - disagreement_penalty: a moment of silence is not
// agreement (and a lasting one ends the episode, so a demoted backend that
// gets no traffic can still be promoted by its probes).
//
// Fleet guard: eligible backends are those with operator state active and a
// positive nominal weight. An eligible backend is unwell at this evaluation if
// its SteadyScore() < good_score (so one noisy evaluation does not count), or if it refused
// refused_demote SYNs in this evaluation (so refusals everywhere freeze), or if its signals
// compared with its own baseline alone (ignoring peers) would give a score < good_score in each of
// its last weight_score_window evaluations (SteadyDriftScore(); same reason) -- that is how a pool
// that slows down as a whole is seen even though no backend is worse than its peers. A backend is
// drifting if its drift score in this evaluation alone is < good_score. If
// unwell * 100 > fleet_guard_percent * eligible, or drifting * 100 > fleet_guard_percent *
// eligible (strictly more than half with the default 50; exactly half does not freeze) the pool
// freezes (action freeze). The second count catches a fleet-wide slowdown at its first
// evaluation, before a weight moves; noise makes a few backends drift at a time, not most. A
// slowdown reaches backends milliseconds apart, so the first one to slow down may have lost weight
// in the evaluation just before the freeze: the freeze undoes that last weight-score change (its
// inputs list the backends as weights_restored) and holds the weights from before it. While
// frozen: no demotion, promotion, ramp step or pin; streaks and ramp holds stay at 0; each
// backend's weight uses the ramp percent, weight score and in-service flag held from the last
// unfrozen evaluation, so weights do not change unless the operator changes them (drain, nominal
// weight). Scores, baselines, bands and disagreements are still evaluated and reported. After
// unfreeze_after consecutive evaluations at or below the threshold: action unfreeze, and the
// machine resumes.
//
// Backends present in the input but not in the state are added (started as
// Params::new_backend_start says: healthy at 100% by default, or at the first
// ramp step; a start is not a promotion, so an early demotion is not a flap);
// backends in the state but absent from the input are dropped with their
// history. Output order follows the input.
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
