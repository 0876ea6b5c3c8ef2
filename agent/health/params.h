// Every number of the health logic, with its default and allowed range.
//
// One Params value configures one pool's decisions. Defaults are the issue's
// (demote after 3 bad evaluations, promote after 12 good ones, ramp 5% -> 20%
// -> 50% -> 100%, cooldown capped at 1 hour, 3 flaps in 10 minutes pin, more
// than half of a pool degraded freezes it). "Evaluation" means one call of
// Next() (see machine.h); the agent calls it once per probe interval, so with a
// 200 ms interval 12 evaluations are 2.4 s.
//
// ValidateParams() is the only gate: Next() and the other functions assume
// validated Params and do not re-check them. Plain value type, no invariants
// beyond ValidateParams(); thread-compatible.
#ifndef BALLAST_AGENT_HEALTH_PARAMS_H_
#define BALLAST_AGENT_HEALTH_PARAMS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace ballast::health {

// How a backend that appears in the input for the first time starts.
enum class NewBackendStart {
  kHealthy,  // in service at 100% of its ramp, score 100 (default)
  kRamping,  // in service at the first ramp step, ramping up like a promoted backend
};

struct Params {
  // --- Evaluation and hysteresis -------------------------------------------
  // An evaluation is "good" when score >= good_score, "bad" when
  // score < bad_score, "neutral" in between (a neutral evaluation breaks both
  // streaks). Ranges: good_score 1..100, bad_score 0..99, bad_score < good_score.
  int good_score = 80;
  int bad_score = 50;
  // Consecutive bad evaluations that demote a backend in service (1..1000).
  int demote_after = 3;
  // Consecutive good evaluations that promote a demoted backend (1..1000).
  int promote_after = 12;

  // --- Ramp -----------------------------------------------------------------
  // Percent of nominal weight at each ramp step, strictly increasing, each
  // 1..100, the last exactly 100, 1..10 steps.
  std::vector<int> ramp_percents = {5, 20, 50, 100};
  // Evaluations a step is held, without a sag, before the next step (1..10000).
  int ramp_hold = 10;
  // While ramping, an evaluation with score < ramp_sag_score is a sag: the
  // backend goes back one step and the hold starts again (0..100).
  int ramp_sag_score = 80;
  NewBackendStart new_backend_start = NewBackendStart::kHealthy;

  // --- Flap damping ----------------------------------------------------------
  // A flap is a demotion that happens at most flap_window after the backend's
  // most recent promotion. Flaps are remembered for flap_window (1 s..24 h).
  absl::Duration flap_window = absl::Hours(1);
  // Cooldown after a flap before re-promotion is allowed:
  //   min(max_cooldown, cooldown_base * 2^(n-1)), n = flaps within flap_window
  // (including this one). A demotion that is not a flap has no cooldown.
  // cooldown_base 1 s..max_cooldown; max_cooldown 1 s..24 h.
  absl::Duration cooldown_base = absl::Seconds(30);
  absl::Duration max_cooldown = absl::Hours(1);
  // pin_flaps flaps within pin_window pin the backend out (weight 0) until an
  // operator releases it. pin_flaps 2..100; pin_window 1 s..flap_window.
  int pin_flaps = 3;
  absl::Duration pin_window = absl::Minutes(10);

  // --- Fleet guard -------------------------------------------------------------
  // Freeze the pool when strictly more than fleet_guard_percent % of its
  // eligible backends are unwell at the same evaluation (1..100; 100 = never).
  int fleet_guard_percent = 50;
  // Consecutive evaluations below the threshold before unfreezing (1..1000).
  int unfreeze_after = 3;

  // --- Score -----------------------------------------------------------------
  // Points taken off for probe failures: probe_failure_penalty * failed/total
  // (0..100).
  int probe_failure_penalty = 60;
  // A signal up to slowdown_tolerance times its reference costs nothing
  // (1.0..10.0). Above it, penalty_per_doubling points per doubling of
  // (ratio / slowdown_tolerance), at most max_slowdown_penalty. Ranges 0..100.
  double slowdown_tolerance = 1.25;
  double penalty_per_doubling = 30;
  double max_slowdown_penalty = 60;
  // When one signal complains (penalty >= disagreement_min_penalty) and the
  // other is clean (penalty < disagreement_min_penalty / 2), the score is
  // 100 - disagreement_penalty.
  // disagreement_penalty 0..100; disagreement_min_penalty 1..100.
  int disagreement_penalty = 40;
  double disagreement_min_penalty = 20;
  // A disagreement lasting this long raises an alert (0 s..24 h).
  absl::Duration disagreement_alert_after = absl::Seconds(10);
  // Band lower edges; a score_band action is emitted when the band changes.
  // Strictly decreasing, each 0..100, first 100, last 0, 2..10 entries.
  std::vector<int> score_bands = {100, 80, 50, 20, 0};
  // The score is rounded to a multiple of this before it scales the weight,
  // so small score noise does not rebuild tables (1..50; 1 = no rounding).
  int weight_score_step = 5;
  // The weight and the ramp's sag check use the highest score of the last
  // weight_score_window evaluated scores, so one noisy interval (a single
  // slow probe) neither moves traffic nor undoes a ramp step; a real drop
  // shows after this many evaluations. 1 = the current score (1..10).
  int weight_score_window = 2;

  // --- Passive signals ----------------------------------------------------------
  // A passive signal has an opinion only with at least this many samples in
  // the interval (new flows for ratios, completed handshakes for handshake
  // time and the unanswered ratio, first responses for first-response time)
  // (1..1000000).
  int min_samples = 10;
  // Refused SYNs (bounced by the backend: nothing listens there) in one
  // evaluation that demote an in-service backend at once, without waiting
  // for demote_after bad evaluations (1..1000000).
  int refused_demote = 3;
  // Peers (other backends of the pool with an opinion on the same signal in
  // the same evaluation) needed for a comparison with the pool median (1..1000).
  int min_peers = 1;
  // Intervals with an opinion before a backend's baseline is used (1..1000).
  int baseline_min_intervals = 5;
  // EWMA weight of a new interval in the baseline (0 < x <= 1), and the much
  // smaller weight while that signal is anomalous (value >= slowdown_tolerance
  // times the baseline), so a sustained anomaly is absorbed only slowly
  // (0 <= x <= baseline_alpha; 0 = frozen while anomalous).
  double baseline_alpha = 0.05;
  double baseline_alpha_anomalous = 0.0001;
  // Added to both sides of a comparison so tiny references do not make huge
  // ratios: ratio signals (0 < x <= 1) and times in milliseconds (0 < x <= 1000).
  double ratio_floor = 0.02;
  double latency_floor_ms = 0.1;
};

// The ranges of the settings operators set, in one place: ValidateParams
// checks Params against them, and the agent's config validation
// (agent/core/health_settings.cc) checks the config's fields against them,
// with the Params defaults above. Names are the config's; durations are in
// seconds. (In the config, 0 means "the default", so there a range starts
// at 1 at the least.)
struct SettingRange {
  std::string_view name;
  int64_t lo;
  int64_t hi;
};
namespace ranges {
inline constexpr SettingRange kGoodScore{"good_score", 1, 100};
inline constexpr SettingRange kBadScore{"bad_score", 0, 99};
inline constexpr SettingRange kDemoteAfter{"demote_after", 1, 1000};
inline constexpr SettingRange kPromoteAfter{"promote_after", 1, 1000};
inline constexpr SettingRange kRampHold{"ramp_hold", 1, 10000};
inline constexpr SettingRange kRampSagScore{"ramp_sag_score", 0, 100};
inline constexpr SettingRange kFlapWindowS{"flap_window_s", 1, 86400};
inline constexpr SettingRange kCooldownBaseS{"cooldown_base_s", 1, 86400};
inline constexpr SettingRange kMaxCooldownS{"max_cooldown_s", 1, 86400};
inline constexpr SettingRange kPinFlaps{"pin_flaps", 2, 100};
inline constexpr SettingRange kPinWindowS{"pin_window_s", 1, 86400};
inline constexpr SettingRange kFleetGuardPercent{"fleet_guard_percent", 1, 100};
inline constexpr SettingRange kUnfreezeAfter{"unfreeze_after", 1, 1000};
inline constexpr SettingRange kDisagreementAlertS{"disagreement_alert_s", 0, 86400};
inline constexpr SettingRange kMinSamples{"min_samples", 1, 1000000};
inline constexpr SettingRange kRefusedDemote{"refused_demote", 1, 1000000};
}  // namespace ranges

// OK, or InvalidArgument naming the first offending field, its value and the
// allowed range, e.g. "health params: demote_after 0 is out of range 1..1000".
absl::Status ValidateParams(const Params& p);

}  // namespace ballast::health

#endif  // BALLAST_AGENT_HEALTH_PARAMS_H_
