// The bridge between the schema's HealthSettings (config.proto, seconds and
// milliseconds, 0 = default) and the health logic's Params
// (agent/health/params.h).
//
// Pure functions; thread-safe.
#ifndef BALLAST_AGENT_CORE_HEALTH_SETTINGS_H_
#define BALLAST_AGENT_CORE_HEALTH_SETTINGS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "agent/core/validate.h"
#include "agent/health/params.h"
#include "ballast/v1/config.pb.h"

namespace ballast::core {

inline constexpr uint32_t kDefaultEvalIntervalMs = 1000;
// The agent's default comparison floor for times: a probe going from 1 ms to
// 3 ms on an idle network is jitter, not a slowdown.
inline constexpr uint32_t kDefaultLatencyFloorMs = 10;

// Params with every field the settings leave 0 at its default.
health::Params HealthParamsOf(const v1::HealthSettings& s);
// The evaluation interval (ms), default 1000.
uint32_t EvalIntervalOf(const v1::HealthSettings& s);

// The first problem of `s` (at = the health message), naming the field and
// its allowed range: each field's own range, then the rules between fields
// (bad_score < good_score, ramp_percents increasing and ending at 100, ...).
absl::Status ValidateHealthSettings(const v1::HealthSettings& s, const FieldPath& at);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_HEALTH_SETTINGS_H_
