// ClusterNode's renew loop (cluster_owner.cc) against a real etcd (the
// harness) and an engine over the in-memory data plane: an owned VIP's
// data-plane deadline keeps following its lease while a commit holds the
// engine's lock across a stalled store write (the sync loop used to wait for
// State() holding owner_mu_, which every renewal needs), and while the log
// (stderr) blocks (a lost lease used to be audited and logged by the renew
// loop under owner_mu_).
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/coord/cluster.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/core/tests/test_util.h"
#include "agent/etcd/tests/etcd_harness.h"

namespace ballast::coord {
namespace {

using core::testing::Key;
using core::testing::SmallConfig;
using core::testing::TempDir;
using etcd::testing::EtcdCluster;
using std::chrono::milliseconds;

const core::Actor kOp{"operator:test"};
const v1::VipKey kVip4 = Key("198.18.0.10", 80);
const v1::VipKey kVip6 = Key("2001:db8:10::10", 443);
constexpr char kPrefix[] = "/t";

// Both VIPs of SmallConfig ACTIVE_STANDBY.
v1::Config OwnedConfig() {
  v1::Config c = SmallConfig();
  for (v1::Vip& v : *c.mutable_vips()) v.set_ownership(v1::ACTIVE_STANDBY);
  return c;
}

// Node "a" of a cluster on `etcd`, lease TTL 2 s (margin 500 ms), running.
std::unique_ptr<ClusterNode> StartNode(const EtcdCluster& etcd, const TempDir& dir,
                                       core::RouterEngine* engine, const core::Clock* clock) {
  ClusterOptions o;
  o.cache_file = dir.File("cache.pb");
  for (const std::string& ep : etcd.endpoints()) o.config.add_endpoints(ep);
  o.config.set_node("a");
  o.config.set_prefix(kPrefix);
  o.config.set_lease_ttl_s(2);
  auto node = ClusterNode::Create(o);
  REQUIRE(node.ok());
  (*node)->Start(engine, clock);
  return std::move(*node);
}

// Milliseconds left before `vip`'s data-plane deadline (negative: passed,
// the data plane drops its packets; no deadline: a very large number).
int64_t LeftMs(const core::RouterEngine& e, const v1::VipKey& vip, const core::Clock& clock) {
  auto o = e.GetVipOwner(vip);
  REQUIRE(o.ok());
  if (!o->deadline_ns.has_value()) return INT64_MAX;
  return (static_cast<int64_t>(*o->deadline_ns) - static_cast<int64_t>(clock.NowMonotonicNs())) /
         1'000'000;
}

// Waits (up to 10 s) until node "a" owns every VIP of `vips` and forwards it.
void WaitOwner(const ClusterNode& node, const core::RouterEngine& e, const core::Clock& clock,
               std::initializer_list<v1::VipKey> vips) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool all = true;
    for (const v1::VipKey& k : vips) {
      all &= node.OwnedVips().count(core::VipKeyText(k)) != 0 && LeftMs(e, k, clock) > 0;
    }
    if (all) return;
    REQUIRE(std::chrono::steady_clock::now() < until);
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// The least time left before `vip`'s deadline over `span`, read every 20 ms.
int64_t MinLeftMs(const core::RouterEngine& e, const v1::VipKey& vip, const core::Clock& clock,
                  milliseconds span) {
  int64_t least = INT64_MAX;
  const auto until = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < until) {
    least = std::min(least, LeftMs(e, vip, clock));
    std::this_thread::sleep_for(milliseconds(20));
  }
  return least;
}

// The agent's log sink (core::SetLogFd) made a pipe nobody reads, filled:
// every Log() call blocks, as on a stalled stderr or journald, until
// Release(). The pipe stays open (drained) until the process exits, so a
// writer that took the fd before the sink was reset never writes elsewhere.
class StalledLog {
 public:
  StalledLog() {
    REQUIRE(pipe2(fds_, O_CLOEXEC) == 0);
    REQUIRE(fcntl(fds_[1], F_SETFL, O_NONBLOCK) == 0);
    const std::string chunk(4096, 'x');
    while (write(fds_[1], chunk.data(), chunk.size()) > 0) {
    }
    REQUIRE(fcntl(fds_[1], F_SETFL, 0) == 0);
    core::SetLogFd(fds_[1]);
  }
  ~StalledLog() {
    Release();
    core::SetLogFd(2);
  }
  void Release() {
    if (released_) return;
    released_ = true;
    std::thread([fd = fds_[0]] {
      char buf[65536];
      while (read(fd, buf, sizeof(buf)) > 0) {
      }
    }).detach();
  }

 private:
  int fds_[2] = {-1, -1};
  bool released_ = false;
};

TEST_CASE("A commit stalled in its store does not hold up the renewal of an owned VIP",
          "[cluster_owner]") {
  auto etcd = EtcdCluster::Start(1);
  TempDir dir;
  core::SystemClock clock;
  auto store = std::make_shared<core::testing::SlowStore>(dir.File("state.pb"));
  core::EngineOptions eo;
  eo.store = store;
  eo.vip_ownership = true;
  auto e = core::testing::StartEngine(dir, &clock, OwnedConfig(), eo);
  auto node = StartNode(*etcd, dir, e.get(), &clock);
  WaitOwner(*node, *e, clock, {kVip4});
  INFO("left before the stall: " << MinLeftMs(*e, kVip4, clock, milliseconds(500)) << " ms");

  // The commit holds the engine's lock while its store write is stalled;
  // the sync loop asks for the state every 500 ms meanwhile.
  store->Stall();
  absl::Status op_result = absl::UnknownError("not run");
  std::thread op([&] { op_result = e->SetWeight(kVip4, "198.18.1.1", 5, kOp); });
  REQUIRE(store->WaitBlocked(milliseconds(2000)));
  const int64_t least = MinLeftMs(*e, kVip4, clock, milliseconds(3000));
  INFO("least time left before the owner deadline over 3 s of a stalled commit: " << least
                                                                                  << " ms");
  // Renewed every 100 ms, the deadline stays 0.8-1.5 s ahead; stopped
  // renewing, it passes 1.5 s later (the VIP fences itself).
  CHECK(least > 250);
  CHECK(node->OwnedVips().count(core::VipKeyText(kVip4)) == 1);

  store->Release();
  op.join();
  CHECK(op_result.ok());
  node->Stop();
}

TEST_CASE("A blocked log does not hold up the renewal of the other owned VIPs", "[cluster_owner]") {
  auto etcd = EtcdCluster::Start(1);
  TempDir dir;
  core::SystemClock clock;
  core::EngineOptions eo;
  eo.vip_ownership = true;
  auto e = core::testing::StartEngine(dir, &clock, OwnedConfig(), eo);
  auto node = StartNode(*etcd, dir, e.get(), &clock);
  WaitOwner(*node, *e, clock, {kVip4, kVip6});
  etcd::ClientOptions co;
  co.endpoints = etcd->endpoints();
  auto client = etcd::Client::Create(co);
  REQUIRE(client.ok());

  int64_t least = 0;
  {
    StalledLog log;
    // kVip4's lease is lost (its key deleted): stopped at once, audited
    // `vip_lost` and logged, while every log line blocks.
    REQUIRE((*client)->Delete(absl::StrCat(kPrefix, "/owners/", core::VipKeyText(kVip4))).ok());
    least = MinLeftMs(*e, kVip6, clock, milliseconds(3000));
    log.Release();
  }
  INFO("least time left before kVip6's owner deadline over 3 s of a blocked log: " << least
                                                                                   << " ms");
  CHECK(least > 250);
  // Once the log flows again the loss is on record.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool lost = false;
  while (!lost && std::chrono::steady_clock::now() < until) {
    auto records = e->QueryAudit(0, 0);
    REQUIRE(records.ok());
    for (const v1::AuditRecord& r : *records) {
      lost |= r.action() == "vip_lost" && r.vip() == core::VipKeyText(kVip4);
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  CHECK(lost);
  node->Stop();
}

}  // namespace
}  // namespace ballast::coord
