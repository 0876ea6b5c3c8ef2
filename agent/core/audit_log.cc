#include "agent/core/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/core/file_util.h"
#include "absl/strings/str_split.h"
#include <google/protobuf/util/json_util.h>
#include "absl/strings/string_view.h"

namespace ballast::core {

std::string AuditLog::ToJsonLine(const v1::AuditRecord& record) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.add_whitespace = false;
  std::string out;
  // Cannot fail for a valid message of a generated type.
  (void)google::protobuf::util::MessageToJsonString(record, &out, opts);
  return out;
}

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(std::string path) {
  if (auto s = MakeDirs(DirOf(path)); !s.ok()) return s;
  const int fd = open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("opening audit log ", path));
  // Terminate a torn last line left by a crash, so the next record starts clean.
  const off_t size = lseek(fd, 0, SEEK_END);
  if (size > 0) {
    char last = '\n';
    if (pread(fd, &last, 1, size - 1) == 1 && last != '\n') {
      if (auto s = WriteAll(fd, "\n", absl::StrCat("terminating the last line of ", path));
          !s.ok()) {
        close(fd);
        return s;
      }
    }
  }
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(path), fd));
}

AuditLog::~AuditLog() { close(fd_); }

absl::Status AuditLog::Append(const v1::AuditRecord& record) {
  const std::string line = absl::StrCat(ToJsonLine(record), "\n");
  std::lock_guard<std::mutex> lock(mu_);
  if (auto s = WriteAll(fd_, line, absl::StrCat("appending to audit log ", path_)); !s.ok()) {
    return s;
  }
  if (fdatasync(fd_) != 0) return ErrnoStatus(errno, absl::StrCat("fdatasync of ", path_));
  return absl::OkStatus();
}

absl::StatusOr<std::string> AuditLog::ReadAllLocked() const {
  std::string data;
  char buf[1 << 16];
  off_t off = 0;
  while (true) {
    const ssize_t n = pread(fd_, buf, sizeof(buf), off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("reading audit log ", path_));
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return data;
}

absl::StatusOr<std::vector<v1::AuditRecord>> AuditLog::Query(int64_t since_unix_ms, uint32_t limit,
                                                             size_t* skipped) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto data = ReadAllLocked();
  if (!data.ok()) return data.status();
  std::vector<v1::AuditRecord> out;
  size_t bad = 0;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  for (absl::string_view line : absl::StrSplit(*data, '\n', absl::SkipEmpty())) {
    v1::AuditRecord r;
    if (!google::protobuf::util::JsonStringToMessage(std::string(line), &r, opts).ok()) {
      ++bad;
      continue;
    }
    if (r.unix_ms() < since_unix_ms) continue;
    out.push_back(std::move(r));
    if (limit != 0 && out.size() >= limit) break;
  }
  if (skipped != nullptr) *skipped = bad;
  return out;
}

absl::StatusOr<size_t> AuditLog::Prune(int64_t before_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto data = ReadAllLocked();
  if (!data.ok()) return data.status();
  std::string kept;
  size_t dropped = 0;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  for (absl::string_view line : absl::StrSplit(*data, '\n', absl::SkipEmpty())) {
    v1::AuditRecord r;
    if (google::protobuf::util::JsonStringToMessage(std::string(line), &r, opts).ok() &&
        r.unix_ms() < before_unix_ms) {
      ++dropped;
      continue;
    }
    absl::StrAppend(&kept, line, "\n");
  }
  if (dropped == 0) return dropped;
  const std::string tmp = absl::StrCat(path_, ".tmp");
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("creating ", tmp));
  absl::Status s = WriteAll(fd, kept, absl::StrCat("writing ", tmp));
  if (s.ok() && fsync(fd) != 0) s = ErrnoStatus(errno, absl::StrCat("fsync of ", tmp));
  close(fd);
  if (s.ok() && rename(tmp.c_str(), path_.c_str()) != 0) {
    s = ErrnoStatus(errno, absl::StrCat("renaming ", tmp, " to ", path_));
  }
  if (!s.ok()) {
    unlink(tmp.c_str());
    return s;
  }
  const int nfd = open(path_.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (nfd < 0) return ErrnoStatus(errno, absl::StrCat("reopening audit log ", path_));
  close(fd_);
  fd_ = nfd;
  return dropped;
}

}  // namespace ballast::core
