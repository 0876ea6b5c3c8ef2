#include "agent/core/file_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ballast::core {

absl::Status ErrnoStatus(int err, absl::string_view what) {
  const std::string msg = absl::StrCat(what, ": ", strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status WriteAll(int fd, absl::string_view data, absl::string_view what) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, what);
    }
    off += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status MakeDirs(const std::string& dir) {
  if (dir.empty() || dir == "/" || dir == ".") return absl::OkStatus();
  struct stat st = {};
  if (stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(dir, " exists and is not a directory"));
    }
    return absl::OkStatus();
  }
  if (auto s = MakeDirs(DirOf(dir)); !s.ok()) return s;
  if (mkdir(dir.c_str(), 0750) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("creating directory ", dir));
  }
  return absl::OkStatus();
}

}  // namespace ballast::core
