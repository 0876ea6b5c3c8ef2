// Durations on the lbctl command line: "500ms", "60s", "5m", "1h30m", "2d".
// A bare number is seconds. Negative durations are rejected.
#ifndef BALLAST_TOOLS_LBCTL_DURATION_H_
#define BALLAST_TOOLS_LBCTL_DURATION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace ballast::lbctl {

// `flag` names the option in the error, e.g. "--deadline".
absl::StatusOr<absl::Duration> ParseDuration(absl::string_view text, absl::string_view flag);

// Whole seconds for fields like DrainRequest.deadline_s: rejects fractions
// of a second and values above UINT32_MAX.
absl::StatusOr<uint32_t> ParseWholeSeconds(absl::string_view text, absl::string_view flag);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_DURATION_H_
