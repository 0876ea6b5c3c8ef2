// lbctl's exit codes and the message it prints for a failed command.
//
//   0 ok
//   1 any other failure (INTERNAL, UNKNOWN, RESOURCE_EXHAUSTED, ...)
//   2 invalid input: bad flags or arguments, INVALID_ARGUMENT, OUT_OF_RANGE
//   3 not found: NOT_FOUND
//   4 conflict: ALREADY_EXISTS, FAILED_PRECONDITION, ABORTED
//   5 unreachable: UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED
//   6 access denied: PERMISSION_DENIED, UNAUTHENTICATED
#ifndef BALLAST_TOOLS_LBCTL_EXIT_CODES_H_
#define BALLAST_TOOLS_LBCTL_EXIT_CODES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ballast::lbctl {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,
  kExitInvalid = 2,
  kExitNotFound = 3,
  kExitConflict = 4,
  kExitUnreachable = 5,
  kExitDenied = 6,
};

ExitCode ExitCodeFor(const absl::Status& status);

// One line for stderr, e.g. "lbctl: cannot reach lbagent at
// unix:/run/ballast/lbagent.sock: connection refused. Is lbagent running?".
// `target` is where lbctl connected ("unix:/path" or "host:port").
std::string ErrorMessage(const absl::Status& status, absl::string_view target);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_EXIT_CODES_H_
