// The append-only audit log: one v1::AuditRecord per line, in protobuf's
// JSON mapping (field names as in the .proto), e.g.
//   {"unix_ms":"1764439452345","actor":"operator:root","action":"set_weight",
//    "vip":"198.18.0.10:80/tcp","backend":"198.18.1.2","inputs_json":"{...}","result":"ok"}
//
// Writing: Append() queues the record in memory and returns; the log's own
// writer thread writes the queued records in order and fdatasyncs the file
// after each batch, so no caller waits for the disk (the cluster's owner
// audits under its renewal lock). The queue is bounded: when it is full,
// Append() drops the record, counts it and returns RESOURCE_EXHAUSTED.
//
// Durability: a record is durable once the writer's fdatasync after it has
// returned, not when Append() returns. Flush() waits for that; so does the
// destructor (a clean shutdown). A crash can lose the records not yet
// synced: normally the last few milliseconds' worth, the whole queue while
// the disk stalls. A write that fails part way (ENOSPC, EFBIG) is cut back
// off the file, so no torn line is left, and the record is counted and
// logged; a crash mid-write can leave one, which Open() terminates and
// Query() skips (counted in `skipped`).
//
// Size: before a write would take the file past `max_bytes`, the file is
// rotated: renamed to `<path>.1` (replacing the previous one), and a new
// file started. Query() reads both; Prune() drops records older than the
// retention from the current file and the rotated file once all of it is.
// Both run on the writer thread.
//
// Thread-safety: every method may be called from any thread. Append() and
// stats() take a lock never held across I/O. Query() reads the files
// without a lock, and the queued records; it waits only while the writer
// renames a file. Flush() and Prune() wait for the writer, and so for the
// disk. One process appends to a given file.
#ifndef BALLAST_AGENT_CORE_AUDIT_LOG_H_
#define BALLAST_AGENT_CORE_AUDIT_LOG_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::core {

struct AuditLogOptions {
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{64} << 20;
  // Makes what was written to `fd` durable: 0, or -1 with errno.
  using Syncer = std::function<int(int fd)>;

  // Rotated before a write would take the file past this (> 0).
  uint64_t max_bytes = kDefaultMaxBytes;
  // The queue (> 0 each): at most this many records waiting for the
  // writer, minutes of a busy agent's changes, and at most this many bytes
  // of them (their protobuf size; an apply_config record holds the whole
  // config, and one record alone always fits).
  size_t queue_records = 4096;
  uint64_t queue_bytes = uint64_t{16} << 20;
  Syncer sync;  // null: fdatasync(2); tests inject a slow disk
};

class AuditLog {
 public:
  static constexpr uint64_t kDefaultMaxBytes = AuditLogOptions::kDefaultMaxBytes;
  using Syncer = AuditLogOptions::Syncer;

  struct Stats {
    uint64_t queued = 0;     // records waiting for the writer
    uint64_t dropped = 0;    // refused by a full queue, since Open
    uint64_t failed = 0;     // written or synced with an error, since Open
    std::string last_error;  // why the latest of the dropped or failed was lost
  };

  // Opens (creates with mode 0640, and its directory with 0750) `path` for
  // appending and starts the writer thread.
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(std::string path,
                                                        AuditLogOptions options = {});
  // Writes and syncs what is queued (waits for the disk), then stops the
  // writer.
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  const std::string& path() const { return path_; }

  // Queues `record` (see the file comment). OK: queued. RESOURCE_EXHAUSTED:
  // the queue is full, the record was dropped and counted. Never waits for
  // the disk.
  absl::Status Append(const v1::AuditRecord& record);

  // Waits until every record appended before the call is written and
  // synced (or failed, and counted).
  void Flush();

  Stats stats() const;

  // Records with unix_ms >= since_unix_ms, oldest first (file order, then
  // the queue), at most `limit` (0 = all). `skipped` (optional) counts
  // unparsable lines.
  absl::StatusOr<std::vector<v1::AuditRecord>> Query(int64_t since_unix_ms, uint32_t limit,
                                                     size_t* skipped = nullptr) const;

  // Drops records older than `before_unix_ms` by rewriting the file
  // atomically (temp, sync, rename), and the rotated file when its last
  // record is older; the records appended before the call are written
  // first. Runs on the writer thread; the caller waits for it. Returns how
  // many were dropped.
  absl::StatusOr<size_t> Prune(int64_t before_unix_ms);

  // One record as its JSON line (without the newline).
  static std::string ToJsonLine(const v1::AuditRecord& record);

 private:
  struct PruneJob {
    int64_t before_unix_ms = 0;
    bool done = false;  // guarded by queue_mu_, with result
    absl::StatusOr<size_t> result = 0;
  };
  struct Item {
    v1::AuditRecord record;  // unless prune is set
    uint64_t bytes = 0;      // record.ByteSizeLong(), for the queue's bound
    std::shared_ptr<PruneJob> prune;
  };

  AuditLog(std::string path, int fd, uint64_t size, AuditLogOptions options);
  // The writer thread: batches of the queued records (each written, then
  // one sync), and prune jobs in their turn.
  void WriterLoop();
  // Writes the record at the queue's front and pops it (failed: counted).
  void WriteFront();
  // Syncs what was written since the last sync; the records up to the
  // last written count as done (Flush).
  void SyncBatch();
  absl::StatusOr<size_t> PruneNow(int64_t before_unix_ms);
  // Renames the file to rotated_path() and starts a new one.
  absl::Status Rotate();
  // Counts `records` lost with `error` and logs it (`record`: the one lost,
  // or null for a batch whose sync failed).
  void Fail(uint64_t records, const std::string& error, const v1::AuditRecord* record);
  int SyncFd(int fd) const;
  std::string rotated_path() const { return path_ + ".1"; }

  const std::string path_;
  const AuditLogOptions options_;

  // file_mu_ guards fd_ and visible_size_: the writer holds it only to
  // swap files (rotation, prune), and to publish a write together with
  // popping its record (with queue_mu_); Query holds it to take its view.
  // Order: file_mu_ before queue_mu_.
  mutable std::mutex file_mu_;
  int fd_;                     // O_APPEND; replaced by the writer only
  uint64_t visible_size_ = 0;  // bytes of fd_ holding records no longer queued

  mutable std::mutex queue_mu_;
  std::condition_variable wake_;  // the writer: work or stop
  std::condition_variable done_;  // Flush, Prune: progress
  std::deque<Item> queue_;        // records in order, and prune jobs
  uint64_t queued_records_ = 0;
  uint64_t queued_bytes_ = 0;
  uint64_t appended_seq_ = 0;  // records accepted so far
  uint64_t done_seq_ = 0;      // of those, written and synced (or failed)
  uint64_t dropped_ = 0;
  uint64_t failed_ = 0;
  std::string last_error_;
  bool stop_ = false;

  // The writer thread's own.
  uint64_t size_ = 0;         // bytes of fd_
  uint64_t written_seq_ = 0;  // records written (or failed), synced or not
  uint64_t unsynced_ = 0;     // records written since the last sync
  std::thread writer_;        // started by the constructor, joined by the destructor
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_AUDIT_LOG_H_
