// The audit log: appends queued and made durable by its writer thread
// (a stalled disk never blocks Append; a full queue drops and counts),
// queries of the files and the queue, torn lines, rotation, pruning.
#include "agent/core/audit_log.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <csignal>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/core/tests/test_util.h"

namespace ballast::core {
namespace {

v1::AuditRecord Rec(int64_t t, const std::string& action) {
  v1::AuditRecord r;
  r.set_unix_ms(t);
  r.set_actor("operator:test");
  r.set_action(action);
  r.set_vip("198.18.0.10:80/tcp");
  r.set_inputs_json("{\"weight\":3}");
  r.set_result("ok");
  return r;
}

TEST_CASE("Appended records read back in order, filtered by time and limit") {
  testing::TempDir dir;
  auto log = AuditLog::Open(dir.File("sub/audit.jsonl"));
  REQUIRE(log.ok());
  for (int i = 0; i < 5; ++i) REQUIRE((*log)->Append(Rec(1000 + i, absl::StrCat("a", i))).ok());
  auto all = (*log)->Query(0, 0);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 5);
  REQUIRE((*all)[0].action() == "a0");
  REQUIRE((*all)[4].inputs_json() == "{\"weight\":3}");
  auto some = (*log)->Query(1002, 2);
  REQUIRE(some.ok());
  REQUIRE(some->size() == 2);
  REQUIRE((*some)[0].action() == "a2");
  REQUIRE((*some)[1].action() == "a3");
}

TEST_CASE("A torn last line (crash mid-write) is skipped and the next record starts clean") {
  testing::TempDir dir;
  const std::string path = dir.File("audit.jsonl");
  {
    auto log = AuditLog::Open(path);
    REQUIRE(log.ok());
    REQUIRE((*log)->Append(Rec(1, "first")).ok());
  }
  {
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND);
    REQUIRE(fd >= 0);
    const std::string torn = "{\"unix_ms\":\"2\",\"actor\":\"op";
    REQUIRE(write(fd, torn.data(), torn.size()) == static_cast<ssize_t>(torn.size()));
    close(fd);
  }
  auto log = AuditLog::Open(path);
  REQUIRE(log.ok());
  REQUIRE((*log)->Append(Rec(3, "third")).ok());
  size_t skipped = 0;
  auto all = (*log)->Query(0, 0, &skipped);
  REQUIRE(all.ok());
  REQUIRE(skipped == 1);
  REQUIRE(all->size() == 2);
  REQUIRE((*all)[1].action() == "third");
}

TEST_CASE("Prune drops old records and appends continue") {
  testing::TempDir dir;
  auto log = AuditLog::Open(dir.File("audit.jsonl"));
  REQUIRE(log.ok());
  for (int i = 0; i < 4; ++i) REQUIRE((*log)->Append(Rec(100 * i, absl::StrCat("r", i))).ok());
  auto dropped = (*log)->Prune(200);
  REQUIRE(dropped.ok());
  REQUIRE(*dropped == 2);
  REQUIRE((*log)->Append(Rec(500, "after")).ok());
  auto all = (*log)->Query(0, 0);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  REQUIRE((*all)[0].action() == "r2");
  REQUIRE((*all)[2].action() == "after");
}

TEST_CASE("The log rotates at its size limit; queries read both files; prune drops the old one") {
  testing::TempDir dir;
  const std::string path = dir.File("audit.jsonl");
  const size_t line = AuditLog::ToJsonLine(Rec(1000, "r0")).size() + 1;
  auto log = AuditLog::Open(path, {.max_bytes = 3 * line});  // three records a file
  REQUIRE(log.ok());
  for (int i = 0; i < 5; ++i) REQUIRE((*log)->Append(Rec(1000 + i, absl::StrCat("r", i))).ok());
  (*log)->Flush();
  struct stat st = {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(static_cast<size_t>(st.st_size) == 2 * line);  // r3, r4
  REQUIRE(stat((path + ".1").c_str(), &st) == 0);
  CHECK(static_cast<size_t>(st.st_size) == 3 * line);  // r0..r2
  auto all = (*log)->Query(0, 0);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 5);
  CHECK((*all)[0].action() == "r0");
  CHECK((*all)[4].action() == "r4");
  auto recent = (*log)->Query(1002, 2);
  REQUIRE(recent.ok());
  REQUIRE(recent->size() == 2);
  CHECK((*recent)[0].action() == "r2");

  // A second rotation replaces the older file: at most two files.
  for (int i = 5; i < 8; ++i) REQUIRE((*log)->Append(Rec(1000 + i, absl::StrCat("r", i))).ok());
  (*log)->Flush();
  all = (*log)->Query(0, 0);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 5);  // r3..r7
  CHECK((*all)[0].action() == "r3");

  // Prune: the rotated file (r3..r5) goes once all of it is old enough.
  auto dropped = (*log)->Prune(1005);
  REQUIRE(dropped.ok());
  CHECK(*dropped == 0);  // r5 is not older than 1005
  dropped = (*log)->Prune(1007);
  REQUIRE(dropped.ok());
  CHECK(*dropped == 4);  // r3..r5 with their file, r6
  CHECK(stat((path + ".1").c_str(), &st) != 0);
  all = (*log)->Query(0, 0);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 1);
  CHECK((*all)[0].action() == "r7");
}

// A write that runs out of room part way (here: the file size limit, EFBIG;
// ENOSPC behaves the same) leaves no torn line: the partial record is cut
// off, counted with its error, and the next append starts clean.
TEST_CASE("A failed append leaves no torn line") {
  testing::TempDir dir;
  const std::string path = dir.File("audit.jsonl");
  auto log = AuditLog::Open(path);
  REQUIRE(log.ok());
  REQUIRE((*log)->Append(Rec(1, "first")).ok());
  (*log)->Flush();
  struct stat st = {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  const off_t before = st.st_size;

  struct rlimit old = {};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = static_cast<rlim_t>(before + 10);  // room for 10 bytes of the next record
  REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  REQUIRE((*log)->Append(Rec(2, "second")).ok());  // queued
  (*log)->Flush();                                 // written (not)
  REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
  signal(SIGXFSZ, old_handler);

  const AuditLog::Stats stats = (*log)->stats();
  CHECK(stats.failed == 1);
  CHECK(stats.dropped == 0);
  CHECK_THAT(stats.last_error, Catch::Contains("audit.jsonl"));
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(st.st_size == before);
  REQUIRE((*log)->Append(Rec(3, "third")).ok());
  size_t skipped = 0;
  auto all = (*log)->Query(0, 0, &skipped);
  REQUIRE(all.ok());
  CHECK(skipped == 0);
  REQUIRE(all->size() == 2);
  CHECK((*all)[1].action() == "third");
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using std::chrono::milliseconds;

milliseconds Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0);
}

TEST_CASE("Append returns at once while the disk's sync is stalled; Query sees the records") {
  testing::TempDir dir;
  const std::string path = dir.File("audit.jsonl");
  testing::SlowDisk disk;
  auto log = AuditLog::Open(path, {.sync = disk.syncer()});
  REQUIRE(log.ok());
  disk.Stall();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) REQUIRE((*log)->Append(Rec(10 + i, absl::StrCat("s", i))).ok());
  const milliseconds took = Since(t0);
  INFO("3 appends with fdatasync blocked: " << took.count() << " ms");
  CHECK(took < milliseconds(250));
  REQUIRE(disk.WaitBlocked(milliseconds(2000)));

  // Written or still queued, not durable yet: the query has them all, once.
  auto all = (*log)->Query(0, 0);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].action() == "s0");
  CHECK((*all)[2].action() == "s2");
  auto last = (*log)->Query(12, 0);
  REQUIRE(last.ok());
  REQUIRE(last->size() == 1);
  CHECK((*last)[0].action() == "s2");

  disk.Release();
  (*log)->Flush();  // durable: written and synced
  CHECK((*log)->stats().queued == 0);
  CHECK(disk.syncs() >= 1);
  const std::string text = FileText(path);
  for (int i = 0; i < 3; ++i) CHECK(text.find(absl::StrCat("\"s", i, "\"")) != std::string::npos);
}

TEST_CASE("A full queue drops records and counts them, without blocking the caller") {
  testing::TempDir dir;
  const std::string path = dir.File("audit.jsonl");
  testing::SlowDisk disk;
  auto log = AuditLog::Open(path, {.queue_records = 3, .sync = disk.syncer()});
  REQUIRE(log.ok());
  disk.Stall();
  REQUIRE((*log)->Append(Rec(1, "q0")).ok());
  REQUIRE(disk.WaitBlocked(milliseconds(2000)));  // q0 written, its sync blocked
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i <= 3; ++i) REQUIRE((*log)->Append(Rec(1 + i, absl::StrCat("q", i))).ok());
  const absl::Status full = (*log)->Append(Rec(5, "q4"));
  const absl::Status full2 = (*log)->Append(Rec(6, "q5"));
  CHECK(Since(t0) < milliseconds(250));
  CHECK(full.code() == absl::StatusCode::kResourceExhausted);
  CHECK(full2.code() == absl::StatusCode::kResourceExhausted);
  AuditLog::Stats stats = (*log)->stats();
  CHECK(stats.queued == 3);
  CHECK(stats.dropped == 2);
  CHECK(stats.failed == 0);
  CHECK_THAT(stats.last_error, Catch::Contains("queue"));
  auto all = (*log)->Query(0, 0);
  REQUIRE(all.ok());
  CHECK(all->size() == 4);  // q0..q3

  disk.Release();
  (*log)->Flush();
  stats = (*log)->stats();
  CHECK(stats.queued == 0);
  CHECK(stats.dropped == 2);
  all = (*log)->Query(0, 0);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 4);
  CHECK((*all)[3].action() == "q3");
  // Room again.
  REQUIRE((*log)->Append(Rec(7, "q6")).ok());
}

TEST_CASE("Closing the log writes what is queued") {
  testing::TempDir dir;
  const std::string path = dir.File("audit.jsonl");
  testing::SlowDisk disk;
  auto log = AuditLog::Open(path, {.sync = disk.syncer()});
  REQUIRE(log.ok());
  disk.Stall();
  for (int i = 0; i < 3; ++i) REQUIRE((*log)->Append(Rec(i, absl::StrCat("c", i))).ok());
  std::thread release([&] {
    std::this_thread::sleep_for(milliseconds(100));
    disk.Release();
  });
  log->reset();
  release.join();
  const std::string text = FileText(path);
  for (int i = 0; i < 3; ++i) CHECK(text.find(absl::StrCat("\"c", i, "\"")) != std::string::npos);
}

}  // namespace
}  // namespace ballast::core
