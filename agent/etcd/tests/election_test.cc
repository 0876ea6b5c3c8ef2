// Leader election and fencing against a real etcd.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <optional>

#include "absl/strings/match.h"
#include "agent/etcd/client.h"
#include "agent/etcd/election.h"
#include "agent/etcd/fence.h"
#include "agent/etcd/session.h"
#include "agent/etcd/tests/etcd_harness.h"
#include "agent/etcd/tests/test_util.h"

namespace ballast::etcd::testing {
namespace {

using namespace std::chrono_literals;
using R = Compare::Result;

constexpr char kLeaderKey[] = "/ballast/leader";

std::unique_ptr<Session> MakeSession(Client& client, int64_t ttl) {
  SessionOptions opts;
  opts.ttl_seconds = ttl;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(client, opts);
  REQUIRE_OK(s);
  return std::move(*s);
}

TEST_CASE("one candidate leads; the other sees it and does not", "[election]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  auto sa = MakeSession(*client, 5);
  auto sb = MakeSession(*client, 5);
  Election a(*client, kLeaderKey, sa->lease_id(), "node-a");
  Election b(*client, kLeaderKey, sb->lease_id(), "node-b");

  absl::StatusOr<Fence> fa = a.Campaign(absl::Seconds(5));
  REQUIRE_OK(fa);
  CHECK(fa->key == kLeaderKey);
  absl::StatusOr<std::optional<Fence>> fb = b.TryCampaign();
  REQUIRE_OK(fb);
  CHECK_FALSE(fb->has_value());
  // Campaigning again under the same lease is idempotent.
  absl::StatusOr<std::optional<Fence>> again = a.TryCampaign();
  REQUIRE_OK(again);
  REQUIRE(again->has_value());
  CHECK((*again)->revision == fa->revision);

  absl::StatusOr<std::optional<KeyValue>> leader = b.Leader();
  REQUIRE_OK(leader);
  REQUIRE(leader->has_value());
  CHECK((*leader)->value == "node-a");
  CHECK((*leader)->create_revision == fa->revision);
  CHECK((*leader)->lease == sa->lease_id());

  absl::StatusOr<Fence> timed_out = b.Campaign(absl::Milliseconds(300));
  REQUIRE_FALSE(timed_out.ok());
  INFO(timed_out.status().ToString());
  CHECK(timed_out.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(absl::StrContains(timed_out.status().message(), "node-a"));
}

TEST_CASE("resign hands leadership to the waiting candidate; observers follow", "[election]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  auto sa = MakeSession(*client, 5);
  auto sb = MakeSession(*client, 5);
  Election a(*client, kLeaderKey, sa->lease_id(), "node-a");
  Election b(*client, kLeaderKey, sb->lease_id(), "node-b");
  Election observer(*client, kLeaderKey, 0, "");

  std::mutex mu;
  std::vector<std::string> seen;  // "" = no leader
  auto obs = observer.Observe([&](const std::optional<KeyValue>& kv) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(kv ? kv->value : "");
  });
  REQUIRE_OK(obs);

  absl::StatusOr<Fence> fa = a.Campaign(absl::Seconds(5));
  REQUIRE_OK(fa);
  auto b_leads = std::async(std::launch::async, [&] { return b.Campaign(absl::Seconds(10)); });
  std::this_thread::sleep_for(300ms);
  const auto t0 = SteadyClock::now();
  REQUIRE_OK(a.Resign(*fa));
  absl::StatusOr<Fence> fb = b_leads.get();
  REQUIRE_OK(fb);
  Report("election: resign -> next candidate leads", MsSince(t0), "ms");
  CHECK(fb->revision > fa->revision);
  REQUIRE(WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return !seen.empty() && seen.back() == "node-b";
      },
      5s));
  std::lock_guard<std::mutex> lock(mu);
  CHECK(seen == std::vector<std::string>{"", "node-a", "", "node-b"});
}

TEST_CASE("a leader whose lease expires is replaced, and its fenced writes are rejected",
          "[election]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  // The old leader stops renewing (as a frozen process would): a lease with
  // no keep-alive.
  const auto granted = SteadyClock::now();
  absl::StatusOr<LeaseGrant> old_lease = client->GrantLease(2);
  REQUIRE_OK(old_lease);
  const auto old_deadline = granted + std::chrono::seconds(old_lease->ttl_seconds);
  Election old_leader(*client, kLeaderKey, old_lease->id, "node-old");
  absl::StatusOr<Fence> old_fence = old_leader.Campaign(absl::Seconds(5));
  REQUIRE_OK(old_fence);
  absl::StatusOr<TxnResult> w = FencedTxn(*client, *old_fence, {}, {Op::Put("/state/x", "old-1")});
  REQUIRE_OK(w);
  CHECK(w->succeeded);

  auto sb = MakeSession(*client, 5);
  Election next(*client, kLeaderKey, sb->lease_id(), "node-new");
  absl::StatusOr<Fence> new_fence = next.Campaign(absl::Seconds(10));
  const auto elected = SteadyClock::now();
  REQUIRE_OK(new_fence);
  CHECK(elected >= old_deadline);
  Report("election: old lease deadline -> new leader",
         std::chrono::duration<double, std::milli>(elected - old_deadline).count(), "ms");
  CHECK(new_fence->revision > old_fence->revision);

  // The old leader, unaware, writes with its token: rejected, and told why.
  absl::StatusOr<TxnResult> stale =
      FencedTxn(*client, *old_fence, {}, {Op::Put("/state/x", "old-2")});
  REQUIRE_FALSE(stale.ok());
  INFO(stale.status().ToString());
  CHECK(IsFenced(stale.status()));
  CHECK(stale.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(stale.status().message(), "node-new"));
  CHECK(absl::StrContains(stale.status().message(), "step down"));
  CHECK(IsFenced(old_leader.Resign(*old_fence)));  // cannot delete the new leader's key

  // The new leader's writes go through; a failed compare of its own is not
  // a fence.
  absl::StatusOr<TxnResult> fresh =
      FencedTxn(*client, *new_fence, {Compare::Value("/state/x", R::kEqual, "old-1")},
                {Op::Put("/state/x", "new-1")});
  REQUIRE_OK(fresh);
  CHECK(fresh->succeeded);
  absl::StatusOr<TxnResult> cas =
      FencedTxn(*client, *new_fence, {Compare::Value("/state/x", R::kEqual, "old-1")},
                {Op::Put("/state/x", "new-2")});
  REQUIRE_OK(cas);
  CHECK_FALSE(cas->succeeded);
  absl::StatusOr<RangeResult> x = client->Get("/state/x");
  REQUIRE_OK(x);
  REQUIRE(x->kvs.size() == 1);
  CHECK(x->kvs[0].value == "new-1");
}

}  // namespace
}  // namespace ballast::etcd::testing
