// Leases and Sessions against a real etcd: expiry deletes keys, a Session
// keeps its lease alive, and loses it (reporting so) when etcd is frozen or
// the lease is revoked.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>

#include "agent/etcd/client.h"
#include "agent/etcd/session.h"
#include "agent/etcd/tests/etcd_harness.h"
#include "agent/etcd/tests/test_util.h"
#include "agent/etcd/tests/watch_collector.h"

namespace ballast::etcd::testing {
namespace {

using namespace std::chrono_literals;

TEST_CASE("an expired lease deletes its keys", "[lease]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  const auto granted_at = SteadyClock::now();
  absl::StatusOr<LeaseGrant> lease = client->GrantLease(2);
  REQUIRE_OK(lease);
  CHECK(lease->ttl_seconds == 2);
  REQUIRE_OK(client->Put("/lease/a", "x", lease->id));
  REQUIRE_OK(client->Put("/lease/b", "y", lease->id));
  absl::StatusOr<int64_t> ttl = client->LeaseTimeToLive(lease->id);
  REQUIRE_OK(ttl);
  CHECK(*ttl > 0);
  CHECK(*ttl <= 2);

  WatchCollector seen;
  WatchSpec spec;
  spec.key = "/lease/";
  spec.prefix = true;
  auto watch = client->StartWatch(spec, seen.Callback());
  REQUIRE_OK(watch);
  REQUIRE(seen.WaitEvents(2, 6s));
  const double ms =
      std::chrono::duration<double, std::milli>(seen.events()[0].at - granted_at).count();
  Report("lease TTL 2 s: grant -> delete event", ms, "ms");
  CHECK(ms >= 2000);
  for (const auto& s : seen.events()) CHECK(s.event.type == Event::Type::kDelete);
  absl::StatusOr<RangeResult> left = client->GetPrefix("/lease/");
  REQUIRE_OK(left);
  CHECK(left->kvs.empty());
  CHECK(client->LeaseTimeToLive(lease->id).status().code() == absl::StatusCode::kNotFound);
  CHECK(client->KeepAliveOnce(lease->id, absl::Now() + absl::Seconds(2)).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("a session keeps its lease alive past its TTL, and closing it revokes it", "[lease]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  SessionOptions opts;
  opts.ttl_seconds = 2;
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*client, opts);
  REQUIRE_OK(session);
  REQUIRE_OK(client->Put("/s/key", "v", (*session)->lease_id()));
  std::this_thread::sleep_for(5s);
  CHECK((*session)->alive());
  absl::StatusOr<RangeResult> r = client->Get("/s/key");
  REQUIRE_OK(r);
  CHECK(r->kvs.size() == 1);
  // The deadline is in the future and at most TTL after the last renewal.
  const auto now = Session::Clock::now();
  CHECK((*session)->deadline() > now);
  CHECK((*session)->deadline() - (*session)->last_renewed() == std::chrono::seconds(2));
  CHECK(now - (*session)->last_renewed() < 1500ms);

  REQUIRE_OK((*session)->Close());
  CHECK((*session)->status().code() == absl::StatusCode::kCancelled);
  r = client->Get("/s/key");
  REQUIRE_OK(r);
  CHECK(r->kvs.empty());
}

TEST_CASE("keep-alive loss is detected when etcd is frozen (SIGSTOP)", "[lease]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  std::mutex mu;
  absl::Status lost_status;
  std::atomic<bool> lost{false};
  SteadyClock::time_point lost_at;
  SessionOptions opts;
  opts.ttl_seconds = 2;
  opts.on_lost = [&](const absl::Status& why) {
    std::lock_guard<std::mutex> lock(mu);
    lost_status = why;
    lost_at = SteadyClock::now();
    lost = true;
  };
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*client, opts);
  REQUIRE_OK(session);
  REQUIRE_OK(client->Put("/frozen/key", "v", (*session)->lease_id()));
  std::this_thread::sleep_for(1200ms);  // a renewal or two

  const auto frozen_at = SteadyClock::now();
  const auto deadline_at_freeze = (*session)->deadline();
  etcd->Freeze(0);
  const bool detected = WaitFor([&] { return lost.load(); }, 5s);
  etcd->Thaw(0);
  REQUIRE(detected);
  {
    std::lock_guard<std::mutex> lock(mu);
    INFO(lost_status.ToString());
    CHECK(lost_status.code() == absl::StatusCode::kUnavailable);
    // Loss is declared at the deadline, not before, and promptly after it.
    CHECK(lost_at >= deadline_at_freeze);
    const double late_ms =
        std::chrono::duration<double, std::milli>(lost_at - deadline_at_freeze).count();
    Report("keep-alive loss: declared after the lease deadline by", late_ms, "ms");
    Report("keep-alive loss: freeze -> loss declared",
           std::chrono::duration<double, std::milli>(lost_at - frozen_at).count(), "ms");
    CHECK(late_ms < 1000);
  }
  CHECK_FALSE((*session)->alive());
  // The deadline was conservative: etcd, thawed, expires the lease (and the
  // key) by itself; it never outlived our deadline on the server's side.
  REQUIRE(WaitFor(
      [&] {
        absl::StatusOr<RangeResult> r = client->Get("/frozen/key");
        return r.ok() && r->kvs.empty();
      },
      8s));
}

TEST_CASE("a session learns that its lease was revoked elsewhere", "[lease]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  std::atomic<bool> lost{false};
  SessionOptions opts;
  opts.ttl_seconds = 3;
  opts.on_lost = [&](const absl::Status& why) {
    if (why.code() == absl::StatusCode::kNotFound) lost = true;
  };
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*client, opts);
  REQUIRE_OK(session);
  auto other = MakeClient(etcd->endpoints());
  REQUIRE_OK(other->RevokeLease((*session)->lease_id()));
  REQUIRE(WaitFor([&] { return lost.load(); }, 3s));
  CHECK((*session)->status().code() == absl::StatusCode::kNotFound);
  REQUIRE_OK(other->RevokeLease((*session)->lease_id()));  // already gone: OK
}

}  // namespace
}  // namespace ballast::etcd::testing
