// Per-key ownership under its own lease, against a real etcd.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "agent/etcd/client.h"
#include "agent/etcd/fence.h"
#include "agent/etcd/ownership.h"
#include "agent/etcd/tests/etcd_harness.h"
#include "agent/etcd/tests/test_util.h"

namespace ballast::etcd::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kVipKey[] = "/ballast/owners/198.18.0.10:80/tcp";

TEST_CASE("one node owns a key; another sees the holder, and takes over after release",
          "[ownership]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  OwnershipOptions opts;
  opts.ttl_seconds = 3;
  absl::StatusOr<std::unique_ptr<Ownership>> a =
      Ownership::TryAcquire(*client, kVipKey, "router-a", opts);
  REQUIRE_OK(a);
  REQUIRE(*a != nullptr);
  CHECK((*a)->held());
  CHECK((*a)->fence().key == kVipKey);
  const auto now = Session::Clock::now();
  CHECK((*a)->deadline() > now);
  CHECK((*a)->deadline() <= now + 3s);

  KeyValue holder;
  absl::StatusOr<std::unique_ptr<Ownership>> b =
      Ownership::TryAcquire(*client, kVipKey, "router-b", opts, &holder);
  REQUIRE_OK(b);
  CHECK(*b == nullptr);
  CHECK(holder.value == "router-a");
  CHECK(holder.lease == (*a)->lease_id());

  // Renewal keeps it past the TTL.
  std::this_thread::sleep_for(4s);
  CHECK((*a)->held());
  absl::StatusOr<TxnResult> w = FencedTxn(*client, (*a)->fence(), {}, {Op::Put("/vip/state", "a")});
  REQUIRE_OK(w);
  CHECK(w->succeeded);

  REQUIRE_OK((*a)->Release());
  CHECK_FALSE((*a)->held());
  b = Ownership::TryAcquire(*client, kVipKey, "router-b", opts);
  REQUIRE_OK(b);
  REQUIRE(*b != nullptr);
  CHECK((*b)->fence().revision > (*a)->fence().revision);
  CHECK(IsFenced(FencedTxn(*client, (*a)->fence(), {}, {Op::Put("/vip/state", "a2")}).status()));
}

TEST_CASE("an owner notices that its key was deleted", "[ownership]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  std::atomic<bool> lost{false};
  OwnershipOptions opts;
  opts.ttl_seconds = 5;
  opts.on_lost = [&](const absl::Status& why) {
    if (absl::StrContains(why.message(), "deleted")) lost = true;
  };
  absl::StatusOr<std::unique_ptr<Ownership>> a =
      Ownership::TryAcquire(*client, kVipKey, "router-a", opts);
  REQUIRE_OK(a);
  REQUIRE(*a != nullptr);
  const auto t0 = SteadyClock::now();
  REQUIRE_OK(client->Delete(kVipKey));
  REQUIRE(WaitFor([&] { return lost.load(); }, 3s));
  Report("ownership: key deleted -> owner told", MsSince(t0), "ms");
  CHECK_FALSE((*a)->held());
  CHECK((*a)->status().code() == absl::StatusCode::kAborted);
}

// The key watch ends when its history is compacted away (here: the member
// restarts while the watch's next revision is compacted); the owner reads
// the key and watches again, so a later deletion is still noticed.
TEST_CASE("an owner keeps watching its key across a compaction and a member restart",
          "[ownership]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  std::atomic<bool> lost{false};
  OwnershipOptions opts;
  opts.ttl_seconds = 10;
  opts.on_lost = [&](const absl::Status& why) {
    if (absl::StrContains(why.message(), "deleted")) lost = true;
  };
  absl::StatusOr<std::unique_ptr<Ownership>> a =
      Ownership::TryAcquire(*client, kVipKey, "router-a", opts);
  REQUIRE_OK(a);
  REQUIRE(*a != nullptr);
  absl::StatusOr<int64_t> last = 0;
  for (int i = 0; i < 5; ++i) {
    last = client->Put("/ballast/other", std::to_string(i));
    REQUIRE_OK(last);
  }
  REQUIRE_OK(client->Compact(*last));
  etcd->Kill(0);
  etcd->Restart(0);
  // The watch resumes from before the compaction: ended, then re-made.
  std::this_thread::sleep_for(2s);
  REQUIRE((*a)->held());
  const auto t0 = SteadyClock::now();
  REQUIRE_OK(client->Delete(kVipKey));
  REQUIRE(WaitFor([&] { return lost.load(); }, 1s));
  Report("ownership: key deleted after compaction + restart -> owner told", MsSince(t0), "ms");
  CHECK_FALSE((*a)->held());
}

TEST_CASE("a frozen etcd: the owner gives up at its deadline, before a standby can take over",
          "[ownership]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  std::atomic<bool> lost{false};
  std::mutex mu;
  SteadyClock::time_point lost_at;
  OwnershipOptions opts;
  opts.ttl_seconds = 2;
  opts.on_lost = [&](const absl::Status&) {
    std::lock_guard<std::mutex> lock(mu);
    lost_at = SteadyClock::now();
    lost = true;
  };
  absl::StatusOr<std::unique_ptr<Ownership>> owner =
      Ownership::TryAcquire(*client, kVipKey, "router-a", opts);
  REQUIRE_OK(owner);
  REQUIRE(*owner != nullptr);
  std::this_thread::sleep_for(1s);

  etcd->Freeze(0);
  const auto deadline = (*owner)->deadline();
  REQUIRE(WaitFor([&] { return lost.load(); }, 5s));
  etcd->Thaw(0);

  // The standby polls; it can only win after the owner's deadline.
  auto standby_client = MakeClient(etcd->endpoints());
  std::unique_ptr<Ownership> standby;
  REQUIRE(WaitFor(
      [&] {
        absl::StatusOr<std::unique_ptr<Ownership>> s =
            Ownership::TryAcquire(*standby_client, kVipKey, "router-b", opts);
        if (s.ok() && *s != nullptr) standby = std::move(*s);
        return standby != nullptr;
      },
      10s));
  const auto acquired = SteadyClock::now();
  std::lock_guard<std::mutex> lock(mu);
  CHECK(lost_at >= deadline);
  CHECK(acquired > deadline);
  Report("ownership: owner gave up before the standby acquired by",
         std::chrono::duration<double, std::milli>(acquired - lost_at).count(), "ms");
}

}  // namespace
}  // namespace ballast::etcd::testing
