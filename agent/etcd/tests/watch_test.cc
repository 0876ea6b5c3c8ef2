// Watches against a real etcd: order, history, resume after a restart,
// compaction, progress; and the latency from a write to the callback.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "agent/etcd/client.h"
#include "agent/etcd/tests/etcd_harness.h"
#include "agent/etcd/tests/test_util.h"
#include "agent/etcd/tests/watch_collector.h"
#include "agent/etcd/watch.h"

namespace ballast::etcd::testing {
namespace {

using namespace std::chrono_literals;
using Kind = WatchUpdate::Kind;

TEST_CASE("a prefix watch sees puts and deletes in revision order", "[watch]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  WatchCollector seen;
  WatchSpec spec;
  spec.key = "/w/";
  spec.prefix = true;
  auto watch = client->StartWatch(spec, seen.Callback());
  REQUIRE_OK(watch);

  std::vector<double> latency_ms;
  std::vector<int64_t> revs;
  for (int i = 0; i < 50; ++i) {
    const auto t0 = SteadyClock::now();
    absl::StatusOr<int64_t> rev = client->Put("/w/k" + std::to_string(i % 5), std::to_string(i));
    REQUIRE_OK(rev);
    revs.push_back(*rev);
    REQUIRE(seen.WaitEvents(static_cast<size_t>(i) + 1, 5s));
    latency_ms.push_back(
        std::chrono::duration<double, std::milli>(seen.events().back().at - t0).count());
  }
  REQUIRE_OK(client->Put("/other", "not watched"));
  REQUIRE_OK(client->Delete("/w/k1"));
  REQUIRE(seen.WaitEvents(51, 5s));
  const auto events = seen.events();
  REQUIRE(events.size() == 51);
  for (size_t i = 0; i < 50; ++i) {
    CHECK(events[i].event.type == Event::Type::kPut);
    CHECK(events[i].event.kv.mod_revision == revs[i]);
    CHECK(events[i].event.kv.value == std::to_string(i));
  }
  CHECK(events[50].event.type == Event::Type::kDelete);
  CHECK(events[50].event.kv.key == "/w/k1");
  std::sort(latency_ms.begin(), latency_ms.end());
  Report("watch latency (put sent -> callback), median of 50", latency_ms[25], "ms");
  Report("watch latency (put sent -> callback), max of 50", latency_ms.back(), "ms");
  CHECK(seen.count(Kind::kDisconnected) == 0);
}

TEST_CASE("a watch from a past revision replays the history since then", "[watch]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  absl::StatusOr<int64_t> first = client->Put("/h/a", "1");
  REQUIRE_OK(first);
  REQUIRE_OK(client->Put("/h/a", "2"));
  REQUIRE_OK(client->Delete("/h/a"));
  WatchCollector seen;
  WatchSpec spec;
  spec.key = "/h/a";
  spec.start_revision = *first + 1;
  auto watch = client->StartWatch(spec, seen.Callback());
  REQUIRE_OK(watch);
  REQUIRE(seen.WaitEvents(2, 5s));
  const auto events = seen.events();
  CHECK(events[0].event.kv.value == "2");
  CHECK(events[1].event.type == Event::Type::kDelete);
  CHECK((*watch)->next_revision() == events[1].event.kv.mod_revision + 1);
}

TEST_CASE("a watch resumes after its member restarts, without loss or repeats", "[watch]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  WatchCollector seen;
  WatchSpec spec;
  spec.key = "/r/";
  spec.prefix = true;
  auto watch = client->StartWatch(spec, seen.Callback());
  REQUIRE_OK(watch);
  REQUIRE_OK(client->Put("/r/1", "before"));
  REQUIRE(seen.WaitEvents(1, 5s));

  etcd->Restart(0);  // SIGKILL, start again on the same data and ports
  REQUIRE(seen.WaitKind(Kind::kDisconnected, 5s));
  const auto t0 = SteadyClock::now();
  REQUIRE_OK(client->Put("/r/2", "after"));
  REQUIRE_OK(client->Put("/r/3", "after"));
  REQUIRE(seen.WaitEvents(3, 10s));
  Report("watch: restart -> first event after it", MsSince(t0), "ms (from the first put)");
  CHECK(seen.count(Kind::kResumed) >= 1);
  std::this_thread::sleep_for(300ms);  // no late duplicates
  const auto events = seen.events();
  REQUIRE(events.size() == 3);
  CHECK(events[0].event.kv.key == "/r/1");
  CHECK(events[1].event.kv.key == "/r/2");
  CHECK(events[2].event.kv.key == "/r/3");
}

TEST_CASE("a watch behind a compaction is told to resync", "[watch]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  absl::StatusOr<int64_t> first = client->Put("/c/a", "1");
  REQUIRE_OK(first);
  absl::StatusOr<int64_t> last = client->Put("/c/a", "2");
  REQUIRE_OK(last);
  REQUIRE_OK(client->Compact(*last));
  WatchCollector seen;
  WatchSpec spec;
  spec.key = "/c/";
  spec.prefix = true;
  spec.start_revision = *first;
  auto watch = client->StartWatch(spec, seen.Callback());
  REQUIRE_OK(watch);
  REQUIRE(seen.WaitKind(Kind::kCompacted, 5s));
  const WatchUpdate u = seen.last_other();
  CHECK(u.revision == *last);
  INFO(u.status.ToString());
  CHECK(u.status.code() == absl::StatusCode::kOutOfRange);
  CHECK(seen.events().empty());
}

TEST_CASE("progress requests report the revision the watch has reached", "[watch]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  WatchCollector seen;
  WatchSpec spec;
  spec.key = "/p/";
  spec.prefix = true;
  auto watch = client->StartWatch(spec, seen.Callback());
  REQUIRE_OK(watch);
  absl::StatusOr<int64_t> elsewhere = client->Put("/elsewhere", "x");
  REQUIRE_OK(elsewhere);
  // The stream may still be being created: ask until answered.
  REQUIRE(WaitFor(
      [&] {
        (*watch)->RequestProgress();
        return seen.WaitKind(Kind::kProgress, 200ms);
      },
      5s));
  CHECK(seen.last_other().revision >= *elsewhere);
  CHECK((*watch)->next_revision() > *elsewhere);
}

}  // namespace
}  // namespace ballast::etcd::testing
