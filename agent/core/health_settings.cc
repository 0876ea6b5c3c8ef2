#include "agent/core/health_settings.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"

namespace ballast::core {

namespace {

// 0 = default; otherwise lo..hi.
absl::Status Optional(uint32_t v, int64_t lo, int64_t hi, int64_t def, const FieldPath& at) {
  if (v == 0 || (v >= lo && v <= hi)) return absl::OkStatus();
  return at.Invalid(absl::StrCat(v, " is out of range ", lo, "..", hi, " (0 = default ", def, ")"));
}

}  // namespace

uint32_t EvalIntervalOf(const v1::HealthSettings& s) {
  return s.eval_interval_ms() != 0 ? s.eval_interval_ms() : kDefaultEvalIntervalMs;
}

health::Params HealthParamsOf(const v1::HealthSettings& s) {
  health::Params p;
  if (s.good_score() != 0) p.good_score = static_cast<int>(s.good_score());
  if (s.bad_score() != 0) p.bad_score = static_cast<int>(s.bad_score());
  if (s.demote_after() != 0) p.demote_after = static_cast<int>(s.demote_after());
  if (s.promote_after() != 0) p.promote_after = static_cast<int>(s.promote_after());
  if (s.ramp_percents_size() != 0) {
    p.ramp_percents.assign(s.ramp_percents().begin(), s.ramp_percents().end());
  }
  if (s.ramp_hold() != 0) p.ramp_hold = static_cast<int>(s.ramp_hold());
  if (s.ramp_sag_score() != 0) p.ramp_sag_score = static_cast<int>(s.ramp_sag_score());
  if (s.flap_window_s() != 0) p.flap_window = absl::Seconds(s.flap_window_s());
  if (s.cooldown_base_s() != 0) p.cooldown_base = absl::Seconds(s.cooldown_base_s());
  if (s.max_cooldown_s() != 0) p.max_cooldown = absl::Seconds(s.max_cooldown_s());
  if (s.pin_flaps() != 0) p.pin_flaps = static_cast<int>(s.pin_flaps());
  if (s.pin_window_s() != 0) p.pin_window = absl::Seconds(s.pin_window_s());
  if (s.fleet_guard_percent() != 0)
    p.fleet_guard_percent = static_cast<int>(s.fleet_guard_percent());
  if (s.unfreeze_after() != 0) p.unfreeze_after = static_cast<int>(s.unfreeze_after());
  if (s.disagreement_alert_s() != 0) {
    p.disagreement_alert_after = absl::Seconds(s.disagreement_alert_s());
  }
  if (s.min_samples() != 0) p.min_samples = static_cast<int>(s.min_samples());
  if (s.refused_demote() != 0) p.refused_demote = static_cast<int>(s.refused_demote());
  if (s.new_backends_ramp()) p.new_backend_start = health::NewBackendStart::kRamping;
  p.latency_floor_ms = s.latency_floor_ms() != 0 ? s.latency_floor_ms() : kDefaultLatencyFloorMs;
  return p;
}

absl::Status ValidateHealthSettings(const v1::HealthSettings& s, const FieldPath& at) {
  // The ranges are health's (params.h); the defaults are Params'. The
  // config's 0 means the default, so its range starts at 1 at the least.
  const health::Params def;
  struct Range {
    uint32_t v;
    int64_t lo, hi, def;
    std::string_view name;
  };
  auto of = [](uint32_t v, const health::SettingRange& r, int64_t d) {
    return Range{v, std::max<int64_t>(r.lo, 1), r.hi, d, r.name};
  };
  namespace hr = health::ranges;
  const Range ranges[] = {
      {s.eval_interval_ms(), 50, 60000, kDefaultEvalIntervalMs, "eval_interval_ms"},
      of(s.good_score(), hr::kGoodScore, def.good_score),
      of(s.bad_score(), hr::kBadScore, def.bad_score),
      of(s.demote_after(), hr::kDemoteAfter, def.demote_after),
      of(s.promote_after(), hr::kPromoteAfter, def.promote_after),
      of(s.ramp_hold(), hr::kRampHold, def.ramp_hold),
      of(s.ramp_sag_score(), hr::kRampSagScore, def.ramp_sag_score),
      of(s.flap_window_s(), hr::kFlapWindowS, absl::ToInt64Seconds(def.flap_window)),
      of(s.cooldown_base_s(), hr::kCooldownBaseS, absl::ToInt64Seconds(def.cooldown_base)),
      of(s.max_cooldown_s(), hr::kMaxCooldownS, absl::ToInt64Seconds(def.max_cooldown)),
      of(s.pin_flaps(), hr::kPinFlaps, def.pin_flaps),
      of(s.pin_window_s(), hr::kPinWindowS, absl::ToInt64Seconds(def.pin_window)),
      of(s.fleet_guard_percent(), hr::kFleetGuardPercent, def.fleet_guard_percent),
      of(s.unfreeze_after(), hr::kUnfreezeAfter, def.unfreeze_after),
      of(s.disagreement_alert_s(), hr::kDisagreementAlertS,
         absl::ToInt64Seconds(def.disagreement_alert_after)),
      of(s.min_samples(), hr::kMinSamples, def.min_samples),
      of(s.refused_demote(), hr::kRefusedDemote, def.refused_demote),
      {s.latency_floor_ms(), 1, 1000, kDefaultLatencyFloorMs, "latency_floor_ms"},
  };
  for (const Range& r : ranges) {
    if (auto st = Optional(r.v, r.lo, r.hi, r.def,
                           at.Child(absl::string_view(r.name.data(), r.name.size())));
        !st.ok()) {
      return st;
    }
  }
  if (s.ramp_percents_size() > 10) {
    return at.Child("ramp_percents")
        .Invalid(absl::StrCat(s.ramp_percents_size(), " steps; at most 10"));
  }
  for (int i = 0; i < s.ramp_percents_size(); ++i) {
    const uint32_t v = s.ramp_percents(i);
    const FieldPath el = at.Child(absl::StrCat("ramp_percents[", i, "]"));
    if (v < 1 || v > 100) return el.Invalid(absl::StrCat(v, " is out of range 1..100"));
    if (i > 0 && v <= s.ramp_percents(i - 1)) {
      return el.Invalid(absl::StrCat(v, " is not above the step before it (",
                                     s.ramp_percents(i - 1), "): steps must increase"));
    }
  }
  if (s.ramp_percents_size() != 0 && s.ramp_percents(s.ramp_percents_size() - 1) != 100) {
    return at.Child("ramp_percents")
        .Invalid(absl::StrCat("[", absl::StrJoin(s.ramp_percents(), ", "),
                              "] must end at 100 (full weight)"));
  }
  // The rules between fields, on the effective values.
  const health::Params p = HealthParamsOf(s);
  if (p.bad_score >= p.good_score) {
    return at.Child("bad_score")
        .Invalid(absl::StrCat("effective bad_score ", p.bad_score, " must be below good_score ",
                              p.good_score));
  }
  if (p.cooldown_base > p.max_cooldown) {
    return at.Child("cooldown_base_s")
        .Invalid(absl::StrCat("effective cooldown_base_s ", absl::ToInt64Seconds(p.cooldown_base),
                              " is above max_cooldown_s ", absl::ToInt64Seconds(p.max_cooldown)));
  }
  if (p.pin_window > p.flap_window) {
    return at.Child("pin_window_s")
        .Invalid(absl::StrCat("effective pin_window_s ", absl::ToInt64Seconds(p.pin_window),
                              " is above flap_window_s ", absl::ToInt64Seconds(p.flap_window),
                              " (flaps are remembered only for flap_window_s)"));
  }
  if (auto st = health::ValidateParams(p); !st.ok()) {
    return at.Invalid(st.message());
  }
  return absl::OkStatus();
}

}  // namespace ballast::core
