// Small POSIX file helpers shared by the state store and the audit log, with
// errors as absl::Status naming what was being done.
#ifndef BALLAST_AGENT_CORE_FILE_UTIL_H_
#define BALLAST_AGENT_CORE_FILE_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ballast::core {

// errno `err` while doing `what`: NOT_FOUND, PERMISSION_DENIED (incl. a
// read-only file system), RESOURCE_EXHAUSTED (disk full, quota) or INTERNAL.
absl::Status ErrnoStatus(int err, absl::string_view what);

// Writes all of `data` to `fd`, retrying short writes and EINTR.
absl::Status WriteAll(int fd, absl::string_view data, absl::string_view what);

// The directory part of `path`: "." without a slash, "/" for "/x".
std::string DirOf(const std::string& path);

// Creates `dir` and its missing parents (mode 0750). FAILED_PRECONDITION if
// something on the way exists and is not a directory.
absl::Status MakeDirs(const std::string& dir);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_FILE_UTIL_H_
