#include "agent/core/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "agent/core/file_util.h"
#include "agent/core/log.h"
#include "agent/dataplane/bpf_util.h"

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

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(std::string path,
                                                         AuditLogOptions options) {
  if (options.max_bytes == 0) return absl::InvalidArgumentError("audit log: max_bytes must be > 0");
  if (options.queue_records == 0 || options.queue_bytes == 0) {
    return absl::InvalidArgumentError("audit log: the queue's bounds must be > 0");
  }
  if (auto s = MakeDirs(DirOf(path)); !s.ok()) return s;
  const int fd = open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("opening audit log ", path));
  // Terminate a torn last line left by a crash, so the next record starts clean.
  off_t size = lseek(fd, 0, SEEK_END);
  if (size > 0) {
    char last = '\n';
    if (pread(fd, &last, 1, size - 1) == 1 && last != '\n') {
      if (auto s = WriteAll(fd, "\n", absl::StrCat("terminating the last line of ", path));
          !s.ok()) {
        close(fd);
        return s;
      }
      ++size;
    }
  }
  if (size < 0) size = 0;
  return std::unique_ptr<AuditLog>(
      new AuditLog(std::move(path), fd, static_cast<uint64_t>(size), std::move(options)));
}

AuditLog::AuditLog(std::string path, int fd, uint64_t size, AuditLogOptions options)
    : path_(std::move(path)),
      options_(std::move(options)),
      fd_(fd),
      visible_size_(size),
      size_(size) {
  writer_ = std::thread([this] { WriterLoop(); });
}

AuditLog::~AuditLog() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  writer_.join();  // it drains the queue first
  close(fd_);
}

absl::Status AuditLog::Append(const v1::AuditRecord& record) {
  Item item{record, record.ByteSizeLong(), nullptr};  // the copy, outside the lock
  std::lock_guard<std::mutex> lock(queue_mu_);
  if (queued_records_ >= options_.queue_records ||
      (queued_records_ > 0 && queued_bytes_ + item.bytes > options_.queue_bytes)) {
    ++dropped_;
    last_error_ =
        absl::StrCat("audit log ", path_, ": the queue is full (", queued_records_, " records, ",
                     queued_bytes_, " bytes waiting for the disk): record dropped");
    return absl::ResourceExhaustedError(last_error_);
  }
  ++queued_records_;
  queued_bytes_ += item.bytes;
  ++appended_seq_;
  queue_.push_back(std::move(item));
  wake_.notify_one();
  return absl::OkStatus();
}

void AuditLog::Flush() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  const uint64_t target = appended_seq_;
  done_.wait(lock, [&] { return done_seq_ >= target; });
}

AuditLog::Stats AuditLog::stats() const {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return Stats{queued_records_, dropped_, failed_, last_error_};
}

int AuditLog::SyncFd(int fd) const { return options_.sync ? options_.sync(fd) : fdatasync(fd); }

void AuditLog::Fail(uint64_t records, const std::string& error, const v1::AuditRecord* record) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    failed_ += records;
    last_error_ = error;
  }
  if (record != nullptr) {
    Log(LogLevel::kError, "audit record lost: the change was applied unaudited",
        {{"action", record->action()},
         {"actor", record->actor()},
         {"vip", record->vip()},
         {"backend", record->backend()},
         {"error", error}});
  } else {
    Log(LogLevel::kError, "audit records written but not made durable",
        {{"records", records}, {"error", error}});
  }
}

// ---- the writer thread ---------------------------------------------------------------

void AuditLog::WriterLoop() {
  for (;;) {
    size_t records = 0;  // the batch: the records before the first prune job
    std::shared_ptr<PruneJob> prune;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and drained
      while (records < queue_.size() && queue_[records].prune == nullptr) ++records;
      if (records == 0) prune = queue_.front().prune;
    }
    if (prune != nullptr) {
      absl::StatusOr<size_t> result = PruneNow(prune->before_unix_ms);
      std::lock_guard<std::mutex> lock(queue_mu_);
      prune->result = std::move(result);
      prune->done = true;
      queue_.pop_front();
      done_.notify_all();
      continue;
    }
    for (size_t i = 0; i < records; ++i) WriteFront();
    SyncBatch();
  }
}

void AuditLog::WriteFront() {
  const Item* item;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    item = &queue_.front();  // stays put: Append only pushes at the back
  }
  const std::string line = absl::StrCat(ToJsonLine(item->record), "\n");
  absl::Status s = absl::OkStatus();
  if (size_ > 0 && size_ + line.size() > options_.max_bytes) {
    SyncBatch();  // what went to the old file is synced before it is closed
    s = Rotate();
  }
  if (s.ok()) {
    s = WriteAll(fd_, line, absl::StrCat("appending to audit log ", path_));
    // Whatever part of the line went out is cut off again: no torn line.
    if (!s.ok() && ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
      s = absl::Status(s.code(), absl::StrCat(s.message(),
                                              "; cutting the partial record off "
                                              "failed too: ",
                                              strerror(errno)));
    }
  }
  if (!s.ok()) {
    const v1::AuditRecord record = item->record;
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      --queued_records_;
      queued_bytes_ -= item->bytes;
      queue_.pop_front();
    }
    ++written_seq_;
    Fail(1, std::string(s.message()), &record);
    return;
  }
  size_ += line.size();
  {
    // The record moves from the queue to the file in one step for Query.
    std::lock_guard<std::mutex> flock(file_mu_);
    std::lock_guard<std::mutex> lock(queue_mu_);
    visible_size_ = size_;
    --queued_records_;
    queued_bytes_ -= item->bytes;
    queue_.pop_front();
  }
  ++written_seq_;
  ++unsynced_;
}

void AuditLog::SyncBatch() {
  if (unsynced_ > 0) {
    if (SyncFd(fd_) != 0) {
      Fail(unsynced_, ErrnoStatus(errno, absl::StrCat("fdatasync of ", path_)).ToString(), nullptr);
    }
    unsynced_ = 0;
  }
  std::lock_guard<std::mutex> lock(queue_mu_);
  done_seq_ = written_seq_;
  done_.notify_all();
}

absl::Status AuditLog::Rotate() {
  const std::string old = rotated_path();
  int old_fd = -1;
  {
    // Under file_mu_: a query sees either both files before or both after.
    std::lock_guard<std::mutex> flock(file_mu_);
    if (rename(path_.c_str(), old.c_str()) != 0) {
      return ErrnoStatus(errno, absl::StrCat("rotating audit log ", path_, " to ", old));
    }
    const int nfd = open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (nfd < 0) return ErrnoStatus(errno, absl::StrCat("starting audit log ", path_));
    old_fd = fd_;
    fd_ = nfd;
    visible_size_ = 0;
  }
  close(old_fd);
  size_ = 0;
  return absl::OkStatus();
}

// ---- queries and pruning --------------------------------------------------------------

absl::StatusOr<std::vector<v1::AuditRecord>> AuditLog::Query(int64_t since_unix_ms, uint32_t limit,
                                                             size_t* skipped) const {
  // Under the locks: handles on both files, the current file's size that
  // holds only records no longer queued (so a record being written is read
  // from the queue, once), and the queued records. The reads run without
  // them.
  UniqueFd current, rotated;
  uint64_t size = 0;
  std::vector<v1::AuditRecord> queued;
  {
    std::lock_guard<std::mutex> flock(file_mu_);
    current = UniqueFd(dup(fd_));
    if (!current) return ErrnoStatus(errno, absl::StrCat("dup of audit log ", path_));
    size = visible_size_;
    rotated = UniqueFd(open(rotated_path().c_str(), O_RDONLY | O_CLOEXEC));
    std::lock_guard<std::mutex> lock(queue_mu_);
    for (const Item& item : queue_) {
      if (item.prune == nullptr && item.record.unix_ms() >= since_unix_ms) {
        queued.push_back(item.record);
      }
    }
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
  for (v1::AuditRecord& r : queued) out.push_back(std::move(r));
  if (limit != 0 && out.size() > limit) out.resize(limit);
  if (skipped != nullptr) *skipped = bad;
  return out;
}

absl::StatusOr<size_t> AuditLog::Prune(int64_t before_unix_ms) {
  auto job = std::make_shared<PruneJob>();
  job->before_unix_ms = before_unix_ms;
  std::unique_lock<std::mutex> lock(queue_mu_);
  queue_.push_back(Item{{}, 0, job});
  wake_.notify_one();
  done_.wait(lock, [&] { return job->done; });
  return job->result;
}

absl::StatusOr<size_t> AuditLog::PruneNow(int64_t before_unix_ms) {
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
  // Every record written is synced (batches end with a sync), and only
  // this thread writes: the file is all of size_.
  auto data = ReadUpTo(fd_, size_, path_);
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
  if (s.ok() && SyncFd(fd) != 0) s = ErrnoStatus(errno, absl::StrCat("syncing ", tmp));
  close(fd);
  if (!s.ok()) {
    unlink(tmp.c_str());
    return s;
  }
  int old_fd = -1;
  {
    std::lock_guard<std::mutex> flock(file_mu_);
    if (rename(tmp.c_str(), path_.c_str()) != 0) {
      s = ErrnoStatus(errno, absl::StrCat("renaming ", tmp, " to ", path_));
      unlink(tmp.c_str());
      return s;
    }
    const int nfd = open(path_.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
    if (nfd < 0) return ErrnoStatus(errno, absl::StrCat("reopening audit log ", path_));
    old_fd = fd_;
    fd_ = nfd;
    visible_size_ = kept.size();
  }
  close(old_fd);
  size_ = kept.size();
  return dropped;
}

}  // namespace ballast::core
