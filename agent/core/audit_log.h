// The append-only audit log: one v1::AuditRecord per line, in protobuf's
// JSON mapping (field names as in the .proto), e.g.
//   {"unix_ms":"1764439452345","actor":"operator:root","action":"set_weight",
//    "vip":"198.18.0.10:80/tcp","backend":"198.18.1.2","inputs_json":"{...}","result":"ok"}
//
// Durability: Append() returns after write(2) and fdatasync(2) of the record,
// so an acknowledged record survives a crash. A crash in the middle of a
// write can leave a torn last line; Open() terminates it, and Query() skips
// lines that do not parse (reporting how many in `skipped`).
//
// Thread-safety: every method may be called from any thread (one internal
// mutex). One process appends to a given file.
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
  // Opens (creates with mode 0640, and its directory with 0750) `path` for
  // appending.
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(std::string path);
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
  // atomically (temp, fsync, rename). Returns how many were dropped.
  absl::StatusOr<size_t> Prune(int64_t before_unix_ms);

  // One record as its JSON line (without the newline).
  static std::string ToJsonLine(const v1::AuditRecord& record);

 private:
  AuditLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  absl::StatusOr<std::string> ReadAllLocked() const;

  const std::string path_;
  mutable std::mutex mu_;
  int fd_;  // O_APPEND
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_AUDIT_LOG_H_
