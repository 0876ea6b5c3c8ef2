#include "agent/core/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/core/file_util.h"
#include "agent/dataplane/bpf_util.h"
#include "absl/strings/str_split.h"
#include <google/protobuf/util/json_util.h>
#include "absl/strings/string_view.h"

namespace ballast::core {

using dataplane::UniqueFd;

std::string AuditLog::ToJsonLine(const v1::AuditRecord& record) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.add_whitespace = false;
  std::string out;
  // Cannot fail for a valid message of a generated type.
  (void)google::protobuf::util::MessageToJsonString(record, &out, opts);
  return out;
}

namespace {

// The whole of `fd` from offset 0 up to `size` bytes (pread: the fd's offset
// is not used, so a dup of the append fd can be read without its lock).
absl::StatusOr<std::string> ReadUpTo(int fd, uint64_t size, const std::string& what) {
  std::string data;
  data.resize(size);
  uint64_t off = 0;
  while (off < size) {
    const ssize_t n = pread(fd, data.data() + off, size - off, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("reading audit log ", what));
    }
    if (n == 0) break;
    off += static_cast<uint64_t>(n);
  }
  data.resize(off);
  return data;
}

absl::StatusOr<std::string> ReadFile(int fd, const std::string& what) {
  struct stat st = {};
  if (fstat(fd, &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat of ", what));
  return ReadUpTo(fd, static_cast<uint64_t>(st.st_size), what);
}

// Parses the JSON lines of `data` into `out` (records at or after `since`).
void ParseLines(const std::string& data, int64_t since_unix_ms, std::vector<v1::AuditRecord>* out,
                size_t* bad) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  for (absl::string_view line : absl::StrSplit(data, '\n', absl::SkipEmpty())) {
    v1::AuditRecord r;
    if (!google::protobuf::util::JsonStringToMessage(std::string(line), &r, opts).ok()) {
      ++*bad;
      continue;
    }
    if (r.unix_ms() < since_unix_ms) continue;
    out->push_back(std::move(r));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(std::string path, uint64_t max_bytes) {
  if (max_bytes == 0) return absl::InvalidArgumentError("audit log: max_bytes must be > 0");
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
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(path), fd, max_bytes));
}

AuditLog::~AuditLog() { close(fd_); }

absl::Status AuditLog::RotateLocked() {
  const std::string old = rotated_path();
  if (rename(path_.c_str(), old.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("rotating audit log ", path_, " to ", old));
  }
  const int nfd = open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (nfd < 0) return ErrnoStatus(errno, absl::StrCat("starting audit log ", path_));
  close(fd_);
  fd_ = nfd;
  return absl::OkStatus();
}

absl::Status AuditLog::Append(const v1::AuditRecord& record) {
  const std::string line = absl::StrCat(ToJsonLine(record), "\n");
  std::lock_guard<std::mutex> lock(mu_);
  struct stat st = {};
  if (fstat(fd_, &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat of ", path_));
  if (st.st_size > 0 && static_cast<uint64_t>(st.st_size) + line.size() > max_bytes_) {
    if (auto s = RotateLocked(); !s.ok()) return s;
    st.st_size = 0;
  }
  if (auto s = WriteAll(fd_, line, absl::StrCat("appending to audit log ", path_)); !s.ok()) {
    // Whatever part of the line went out is cut off again: no torn line.
    if (ftruncate(fd_, st.st_size) != 0) {
      return absl::Status(s.code(), absl::StrCat(s.message(),
                                                 "; cutting the partial record off "
                                                 "failed too: ",
                                                 strerror(errno)));
    }
    return s;
  }
  if (fdatasync(fd_) != 0) return ErrnoStatus(errno, absl::StrCat("fdatasync of ", path_));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::AuditRecord>> AuditLog::Query(int64_t since_unix_ms, uint32_t limit,
                                                             size_t* skipped) const {
  // Under the lock: handles on both files and the current file's size (so
  // a record appended meanwhile is not read half-written). The reads below
  // run without it: appends go on.
  UniqueFd current, rotated;
  uint64_t size = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    current = UniqueFd(dup(fd_));
    if (!current) return ErrnoStatus(errno, absl::StrCat("dup of audit log ", path_));
    struct stat st = {};
    if (fstat(current.get(), &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat of ", path_));
    size = static_cast<uint64_t>(st.st_size);
    rotated = UniqueFd(open(rotated_path().c_str(), O_RDONLY | O_CLOEXEC));
  }
  std::vector<v1::AuditRecord> out;
  size_t bad = 0;
  if (rotated) {
    auto old = ReadFile(rotated.get(), rotated_path());
    if (!old.ok()) return old.status();
    ParseLines(*old, since_unix_ms, &out, &bad);
  }
  auto data = ReadUpTo(current.get(), size, path_);
  if (!data.ok()) return data.status();
  ParseLines(*data, since_unix_ms, &out, &bad);
  if (limit != 0 && out.size() > limit) out.resize(limit);
  if (skipped != nullptr) *skipped = bad;
  return out;
}

absl::StatusOr<size_t> AuditLog::Prune(int64_t before_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t dropped = 0;
  // The rotated file goes once its newest (last) record is older.
  if (UniqueFd rotated(open(rotated_path().c_str(), O_RDONLY | O_CLOEXEC)); rotated) {
    auto old = ReadFile(rotated.get(), rotated_path());
    if (!old.ok()) return old.status();
    std::vector<v1::AuditRecord> recs;
    size_t bad = 0;
    ParseLines(*old, 0, &recs, &bad);
    if (recs.empty() || recs.back().unix_ms() < before_unix_ms) {
      if (unlink(rotated_path().c_str()) != 0) {
        return ErrnoStatus(errno, absl::StrCat("removing ", rotated_path()));
      }
      dropped += recs.size();
    }
  }
  auto data = ReadFile(fd_, path_);
  if (!data.ok()) return data.status();
  std::string kept;
  const size_t dropped_rotated = dropped;
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
  if (dropped == dropped_rotated) return dropped;
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
