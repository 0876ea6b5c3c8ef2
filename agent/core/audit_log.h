// The append-only audit log: one v1::AuditRecord per line, in protobuf's
// JSON mapping (field names as in the .proto), e.g.
//   {"unix_ms":"1764439452345","actor":"operator:root","action":"set_weight",
//    "vip":"198.18.0.10:80/tcp","backend":"198.18.1.2","inputs_json":"{...}","result":"ok"}
//
// Durability: Append() returns after write(2) and fdatasync(2) of the record,
// so an acknowledged record survives a crash. A write that fails part way
// (ENOSPC, EFBIG) is cut back off the file, so no torn line is left; a crash
// in the middle of a write can leave one, which Open() terminates and
// Query() skips (reporting how many in `skipped`).
//
// Size: before an append would take the file past `max_bytes`, the file is
// rotated: renamed to `<path>.1` (replacing the previous one), and a new
// file started. Query() reads both; Prune() drops records older than the
// retention from the current file and the rotated file once all of it is.
//
// Thread-safety: every method may be called from any thread. Appends
// serialise on an internal mutex; a Query() holds it only to take its own
// handles on the files, and reads them without it. One process appends to
// a given file.
#ifndef BALLAST_AGENT_CORE_AUDIT_LOG_H_
#define BALLAST_AGENT_CORE_AUDIT_LOG_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::core {

class AuditLog {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{64} << 20;

  // Opens (creates with mode 0640, and its directory with 0750) `path` for
  // appending; rotated at `max_bytes` (> 0).
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(std::string path,
                                                        uint64_t max_bytes = kDefaultMaxBytes);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  const std::string& path() const { return path_; }

  absl::Status Append(const v1::AuditRecord& record);

  // Records with unix_ms >= since_unix_ms, oldest first (file order), at
  // most `limit` (0 = all). `skipped` (optional) counts unparsable lines.
  absl::StatusOr<std::vector<v1::AuditRecord>> Query(int64_t since_unix_ms, uint32_t limit,
                                                     size_t* skipped = nullptr) const;

  // Drops records older than `before_unix_ms` by rewriting the file
  // atomically (temp, fsync, rename), and the rotated file when its last
  // record is older. Returns how many were dropped.
  absl::StatusOr<size_t> Prune(int64_t before_unix_ms);

  // One record as its JSON line (without the newline).
  static std::string ToJsonLine(const v1::AuditRecord& record);

 private:
  AuditLog(std::string path, int fd, uint64_t max_bytes)
      : path_(std::move(path)), max_bytes_(max_bytes), fd_(fd) {}
  // Renames the file to rotated_path() and starts a new one. Holds mu_.
  absl::Status RotateLocked();
  std::string rotated_path() const { return path_ + ".1"; }

  const std::string path_;
  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  int fd_;  // O_APPEND
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_AUDIT_LOG_H_
