// The audit log: durable appends, queries, torn lines, pruning.
#include "agent/core/audit_log.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <csignal>
#include <unistd.h>

#include <catch2/catch.hpp>

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
  auto log = AuditLog::Open(path, 3 * line);  // three records a file
  REQUIRE(log.ok());
  for (int i = 0; i < 5; ++i) REQUIRE((*log)->Append(Rec(1000 + i, absl::StrCat("r", i))).ok());
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
// off, the error returned, and the next append starts clean.
TEST_CASE("A failed append leaves no torn line") {
  testing::TempDir dir;
  const std::string path = dir.File("audit.jsonl");
  auto log = AuditLog::Open(path);
  REQUIRE(log.ok());
  REQUIRE((*log)->Append(Rec(1, "first")).ok());
  struct stat st = {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  const off_t before = st.st_size;

  struct rlimit old = {};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = static_cast<rlim_t>(before + 10);  // room for 10 bytes of the next record
  REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  const absl::Status failed = (*log)->Append(Rec(2, "second"));
  REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
  signal(SIGXFSZ, old_handler);

  INFO(failed.ToString());
  CHECK_FALSE(failed.ok());
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

}  // namespace
}  // namespace ballast::core
