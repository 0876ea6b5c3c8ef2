#include "agent/health/params.h"

#include <cmath>
#include <string>
#include <string_view>

#include "agent/base/status_macros.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agent/base/strcat.h"

namespace ballast::health {
namespace {

using base::AV;

absl::Status OutOfRange(std::string_view field, std::string_view value, std::string_view range) {
  return absl::InvalidArgumentError(
      absl::StrCat("health params: ", AV(field), " ", AV(value), " is out of range ", AV(range)));
}

absl::Status CheckInt(std::string_view field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) return OutOfRange(field, absl::StrCat(v), absl::StrCat(lo, "..", hi));
  return absl::OkStatus();
}

absl::Status CheckInt(const SettingRange& r, int64_t v) { return CheckInt(r.name, v, r.lo, r.hi); }

// [lo, hi] inclusive unless lo_open (then (lo, hi]).
absl::Status CheckDouble(std::string_view field, double v, double lo, double hi,
                         bool lo_open = false) {
  bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
  if (!ok) {
    return OutOfRange(field, absl::StrFormat("%g", v),
                      absl::StrFormat("%s%g..%g", lo_open ? ">" : "", lo, hi));
  }
  return absl::OkStatus();
}

absl::Status CheckDuration(std::string_view field, absl::Duration v, absl::Duration lo,
                           absl::Duration hi) {
  if (v < lo || v > hi) {
    return OutOfRange(field, absl::FormatDuration(v),
                      absl::StrCat(absl::FormatDuration(lo), "..", absl::FormatDuration(hi)));
  }
  return absl::OkStatus();
}

absl::Status Invalid(std::string_view field, const std::vector<int>& v, std::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("health params: ", AV(field), " [", absl::StrJoin(v, ", "), "] ", AV(rule)));
}

}  // namespace

absl::Status ValidateParams(const Params& p) {
  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kGoodScore, p.good_score));
  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kBadScore, p.bad_score));
  if (p.bad_score >= p.good_score) {
    return absl::InvalidArgumentError(absl::StrCat("health params: bad_score ", p.bad_score,
                                                   " must be below good_score ", p.good_score));
  }
  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kDemoteAfter, p.demote_after));
  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kPromoteAfter, p.promote_after));

  if (p.ramp_percents.empty() || p.ramp_percents.size() > 10) {
    return Invalid("ramp_percents", p.ramp_percents, "must have 1..10 steps");
  }
  for (size_t i = 0; i < p.ramp_percents.size(); ++i) {
    int v = p.ramp_percents[i];
    if (v < 1 || v > 100) return Invalid("ramp_percents", p.ramp_percents, "steps must be 1..100");
    if (i > 0 && v <= p.ramp_percents[i - 1]) {
      return Invalid("ramp_percents", p.ramp_percents, "must be strictly increasing");
    }
  }
  if (p.ramp_percents.back() != 100) {
    return Invalid("ramp_percents", p.ramp_percents, "must end at 100");
  }
  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kRampHold, p.ramp_hold));
  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kRampSagScore, p.ramp_sag_score));

  BALLAST_RETURN_IF_ERROR(CheckDuration("flap_window", p.flap_window,
                                        absl::Seconds(ranges::kFlapWindowS.lo),
                                        absl::Seconds(ranges::kFlapWindowS.hi)));
  BALLAST_RETURN_IF_ERROR(CheckDuration("max_cooldown", p.max_cooldown,
                                        absl::Seconds(ranges::kMaxCooldownS.lo),
                                        absl::Seconds(ranges::kMaxCooldownS.hi)));
  BALLAST_RETURN_IF_ERROR(CheckDuration("cooldown_base", p.cooldown_base,
                                        absl::Seconds(ranges::kCooldownBaseS.lo), p.max_cooldown));
  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kPinFlaps, p.pin_flaps));
  BALLAST_RETURN_IF_ERROR(CheckDuration("pin_window", p.pin_window,
                                        absl::Seconds(ranges::kPinWindowS.lo), p.flap_window));

  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kFleetGuardPercent, p.fleet_guard_percent));
  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kUnfreezeAfter, p.unfreeze_after));

  BALLAST_RETURN_IF_ERROR(CheckInt("probe_failure_penalty", p.probe_failure_penalty, 0, 100));
  BALLAST_RETURN_IF_ERROR(CheckDouble("slowdown_tolerance", p.slowdown_tolerance, 1.0, 10.0));
  BALLAST_RETURN_IF_ERROR(CheckDouble("penalty_per_doubling", p.penalty_per_doubling, 0, 100));
  BALLAST_RETURN_IF_ERROR(CheckDouble("max_slowdown_penalty", p.max_slowdown_penalty, 0, 100));
  BALLAST_RETURN_IF_ERROR(CheckInt("disagreement_penalty", p.disagreement_penalty, 0, 100));
  BALLAST_RETURN_IF_ERROR(
      CheckDouble("disagreement_min_penalty", p.disagreement_min_penalty, 1, 100));
  BALLAST_RETURN_IF_ERROR(CheckDuration("disagreement_alert_after", p.disagreement_alert_after,
                                        absl::Seconds(ranges::kDisagreementAlertS.lo),
                                        absl::Seconds(ranges::kDisagreementAlertS.hi)));
  if (p.score_bands.size() < 2 || p.score_bands.size() > 10) {
    return Invalid("score_bands", p.score_bands, "must have 2..10 entries");
  }
  for (size_t i = 0; i < p.score_bands.size(); ++i) {
    int v = p.score_bands[i];
    if (v < 0 || v > 100) return Invalid("score_bands", p.score_bands, "entries must be 0..100");
    if (i > 0 && v >= p.score_bands[i - 1]) {
      return Invalid("score_bands", p.score_bands, "must be strictly decreasing");
    }
  }
  if (p.score_bands.front() != 100 || p.score_bands.back() != 0) {
    return Invalid("score_bands", p.score_bands, "must start at 100 and end at 0");
  }
  BALLAST_RETURN_IF_ERROR(CheckInt("weight_score_step", p.weight_score_step, 1, 50));
  BALLAST_RETURN_IF_ERROR(CheckInt("weight_score_window", p.weight_score_window, 1, 10));

  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kMinSamples, p.min_samples));
  BALLAST_RETURN_IF_ERROR(CheckInt(ranges::kRefusedDemote, p.refused_demote));
  BALLAST_RETURN_IF_ERROR(CheckInt("min_peers", p.min_peers, 1, 1000));
  BALLAST_RETURN_IF_ERROR(CheckInt("baseline_min_intervals", p.baseline_min_intervals, 1, 1000));
  BALLAST_RETURN_IF_ERROR(CheckDouble("baseline_alpha", p.baseline_alpha, 0, 1, /*lo_open=*/true));
  BALLAST_RETURN_IF_ERROR(
      CheckDouble("baseline_alpha_anomalous", p.baseline_alpha_anomalous, 0, p.baseline_alpha));
  BALLAST_RETURN_IF_ERROR(CheckDouble("ratio_floor", p.ratio_floor, 0, 1, /*lo_open=*/true));
  BALLAST_RETURN_IF_ERROR(
      CheckDouble("latency_floor_ms", p.latency_floor_ms, 0, 1000, /*lo_open=*/true));
  return absl::OkStatus();
}

}  // namespace ballast::health
