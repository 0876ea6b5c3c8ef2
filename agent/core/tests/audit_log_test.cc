// The audit log: durable appends, queries, torn lines, pruning.
#include "agent/core/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

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
  for (int i = 0; i < 5; ++i) REQUIRE((*log)->Append(Rec(1000 + i, "a" + std::to_string(i))).ok());
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
  for (int i = 0; i < 4; ++i) REQUIRE((*log)->Append(Rec(100 * i, "r" + std::to_string(i))).ok());
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

}  // namespace
}  // namespace ballast::core
