// An owned VIP's renewal and a stalled disk (issue #41, item 8): the engine
// calls that the cluster's owner loops make (coord/cluster_owner.cc:
// SetVipOwnerDeadline in the renew pass, Record for a lost lease in the
// sync loop) complete at once while the audit log's fdatasync, its daily
// prune or a commit's store write is blocked. The records show in
// QueryAudit meanwhile and reach the file once the disk is back; a queue
// that fills is counted, never waited for. (The loops themselves, with a
// stalled commit and a blocked log: agent/coord/tests/cluster_owner_test.cc.)
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "agent/core/metrics.h"
#include "agent/core/names.h"
#include "agent/core/router_engine.h"
#include "agent/core/tests/test_util.h"

namespace ballast::core {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using testing::Key;
using testing::SlowDisk;
using testing::SlowStore;
using testing::SmallConfig;
using testing::TempDir;

const Actor kOp{"operator:test"};
const Actor kCluster{"cluster"};
const v1::VipKey kVip4 = Key("198.18.0.10", 80);
const v1::VipKey kVip6 = Key("2001:db8:10::10", 443);
constexpr uint64_t kDeadlineNs = 5'000'123'000'000;
// The renew loop runs every 100 ms and its data-plane deadline is a
// quarter of the lease before the lease's: a pass must take a few ms.
constexpr milliseconds kRenewBudget{250};

// One pass of the owner loops over two owned VIPs: kVip4's lease was lost
// (stopped, audited `vip_lost` through Record), kVip6's deadline is
// renewed. Returns how long the engine calls took.
microseconds RenewPass(RouterEngine& e) {
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(e.SetVipOwnerDeadline(kVip4, 0).ok());
  e.Record(kCluster, "vip_lost", VipKeyText(kVip4), "", "{\"node\":\"a\"}",
           "node a lost vip 198.18.0.10:80/tcp: stopped forwarding it");
  CHECK(e.SetVipOwnerDeadline(kVip6, kDeadlineNs).ok());
  const auto took = std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - t0);
  auto owner = e.GetVipOwner(kVip6);
  REQUIRE(owner.ok());
  CHECK(owner->deadline_ns == kDeadlineNs);
  return took;
}

int Count(const absl::StatusOr<std::vector<v1::AuditRecord>>& records, const std::string& action) {
  REQUIRE(records.ok());
  int n = 0;
  for (const v1::AuditRecord& r : *records) n += r.action() == action;
  return n;
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Both VIPs ACTIVE_STANDBY (cluster mode), every record so far on disk.
std::unique_ptr<RouterEngine> StartOwned(const TempDir& dir, const Clock* clock, EngineOptions eo) {
  eo.vip_ownership = true;
  auto e = testing::StartEngine(dir, clock, SmallConfig(), std::move(eo));
  REQUIRE(e->SetVipOwnership(kVip4, v1::ACTIVE_STANDBY, kOp).ok());
  REQUIRE(e->SetVipOwnership(kVip6, v1::ACTIVE_STANDBY, kOp).ok());
  e->FlushAudit();
  return e;
}

TEST_CASE("A stalled audit fdatasync does not hold up an owner's renewal", "[audit][ownership]") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  SlowDisk disk;
  EngineOptions eo;
  eo.audit_sync = disk.syncer();
  auto e = StartOwned(dir, &clock, eo);

  // An operator's change is being audited when the disk stalls.
  disk.Stall();
  absl::Status op_result = absl::UnknownError("not run");
  std::thread op([&] { op_result = e->SetWeight(kVip4, "198.18.1.1", 5, kOp); });
  REQUIRE(disk.WaitBlocked(milliseconds(2000)));

  const microseconds took = RenewPass(*e);
  INFO("renew pass with the audit fdatasync blocked: " << took.count() << " us");
  CHECK(took < kRenewBudget);
  // Not durable yet, but visible.
  const auto t0 = std::chrono::steady_clock::now();
  auto records = e->QueryAudit(0, 0);
  CHECK(std::chrono::steady_clock::now() - t0 < kRenewBudget);
  CHECK(Count(records, "vip_lost") == 1);
  CHECK(Count(records, "set_weight") == 1);

  disk.Release();
  op.join();
  CHECK(op_result.ok());
  e->FlushAudit();
  const std::string text = FileText(dir.File("audit.jsonl"));
  CHECK(text.find("\"action\":\"set_weight\"") != std::string::npos);
  CHECK(text.find("\"action\":\"vip_lost\"") != std::string::npos);
  CHECK(e->Health().audit_records_dropped == 0);
  CHECK(e->Health().audit_append_failures == 0);
}

TEST_CASE("A daily prune stalled on the disk does not hold up an owner's renewal",
          "[audit][ownership]") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  SlowDisk disk;
  EngineOptions eo;
  eo.audit_sync = disk.syncer();
  auto e = StartOwned(dir, &clock, eo);  // two set_ownership records, now old
  clock.AdvanceMs(2 * 86'400'000);

  disk.Stall();
  absl::StatusOr<size_t> pruned = absl::UnknownError("not run");
  std::thread prune([&] { pruned = e->PruneAudit(1); });
  REQUIRE(disk.WaitBlocked(milliseconds(2000)));  // the rewritten file's sync

  const microseconds took = RenewPass(*e);
  INFO("renew pass with the prune's sync blocked: " << took.count() << " us");
  CHECK(took < kRenewBudget);

  disk.Release();
  prune.join();
  REQUIRE(pruned.ok());
  CHECK(*pruned == 2);
  auto records = e->QueryAudit(0, 0);
  CHECK(Count(records, "set_ownership") == 0);
  CHECK(Count(records, "vip_lost") == 1);
}

TEST_CASE("A commit stalled in its store does not hold up an owner's renewal",
          "[audit][ownership]") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto store = std::make_shared<SlowStore>(dir.File("state.pb"));
  EngineOptions eo;
  eo.store = store;
  auto e = StartOwned(dir, &clock, eo);

  // The commit holds the engine's lock while it waits for its store.
  store->Stall();
  absl::Status op_result = absl::UnknownError("not run");
  std::thread op([&] { op_result = e->SetWeight(kVip4, "198.18.1.1", 5, kOp); });
  REQUIRE(store->WaitBlocked(milliseconds(2000)));

  const microseconds took = RenewPass(*e);
  INFO("renew pass with a commit's store write blocked: " << took.count() << " us");
  CHECK(took < kRenewBudget);
  CHECK(Count(e->QueryAudit(0, 0), "vip_lost") == 1);

  store->Release();
  op.join();
  CHECK(op_result.ok());
}

TEST_CASE("Audit records refused by a full queue are counted and exported, never waited for",
          "[audit]") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  SlowDisk disk;
  EngineOptions eo;
  eo.audit_sync = disk.syncer();
  auto e = StartOwned(dir, &clock, eo);

  // Records of 2 MiB: the queue's 16 MiB bound fills with about 8.
  disk.Stall();
  const std::string big = "\"" + std::string(2 << 20, 'x') + "\"";
  constexpr int kRecords = 12;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kRecords; ++i) e->Record(kCluster, "big", "", "", big, "a large record");
  const auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0);
  INFO(kRecords << " records with the disk stalled took " << took.count() << " ms");
  CHECK(took < milliseconds(2000));

  const EngineHealth h = e->Health();
  CHECK(h.audit_records_dropped > 0);
  CHECK(h.audit_records_dropped < kRecords);
  CHECK_THAT(h.last_audit_error, Catch::Contains("queue"));
  // Every record is either there (queued or written) or counted.
  CHECK(Count(e->QueryAudit(0, 0), "big") + static_cast<int>(h.audit_records_dropped) == kRecords);
  const std::string metrics = RenderMetrics(nullptr, h, nullptr);
  CHECK_THAT(metrics, Catch::Contains("ballast_audit_records_dropped_total " +
                                      std::to_string(h.audit_records_dropped) + "\n"));
  auto status = e->GetStatus();
  REQUIRE(status.ok());
  CHECK(status->audit_append_failures() == h.audit_records_dropped);

  disk.Release();
  e->FlushAudit();
  CHECK(Count(e->QueryAudit(0, 0), "big") + static_cast<int>(h.audit_records_dropped) == kRecords);
}

}  // namespace
}  // namespace ballast::core
