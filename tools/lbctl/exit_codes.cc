#include "tools/lbctl/exit_codes.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ballast::lbctl {
namespace {

// gRPC reports a unix socket that we may not open as UNAVAILABLE.
bool LooksLikeSocketPermission(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable &&
         absl::StrContains(status.message(), "Permission denied");
}

}  // namespace

ExitCode ExitCodeFor(const absl::Status& status) {
  if (LooksLikeSocketPermission(status)) return kExitDenied;
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return kExitInvalid;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
      return kExitConflict;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
      return kExitUnreachable;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return kExitDenied;
    default:
      return kExitFailure;
  }
}

std::string ErrorMessage(const absl::Status& status, absl::string_view target) {
  if (LooksLikeSocketPermission(status)) {
    return absl::StrCat("lbctl: permission denied on ", target,
                        ": run as root or as a member of the socket's group "
                        "(admin.socket_group in lbagent's config)");
  }
  switch (ExitCodeFor(status)) {
    case kExitUnreachable:
      return absl::StrCat("lbctl: cannot reach lbagent at ", target, ": ", status.message(),
                          ". Is lbagent running?");
    case kExitDenied:
      return absl::StrCat("lbctl: access denied by lbagent at ", target, ": ", status.message());
    default:
      return absl::StrCat("lbctl: ", status.message());
  }
}

}  // namespace ballast::lbctl
