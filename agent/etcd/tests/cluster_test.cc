// A 3-member etcd cluster on 127.0.0.1: the client keeps working through the
// others when a member dies, and a watch moves to another member without
// losing or repeating events.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "agent/etcd/client.h"
#include "agent/etcd/election.h"
#include "agent/etcd/fence.h"
#include "agent/etcd/session.h"
#include "agent/etcd/tests/etcd_harness.h"
#include "agent/etcd/tests/test_util.h"
#include "agent/etcd/tests/watch_collector.h"

namespace ballast::etcd::testing {
namespace {

using namespace std::chrono_literals;

// The index of the member that is the raft leader, asking each member.
int RaftLeader(Client& client, const EtcdCluster& etcd) {
  for (int i = 0; i < etcd.size(); ++i) {
    absl::StatusOr<MemberStatus> st = client.MemberStatusOf(etcd.endpoint(i));
    if (st.ok() && st->leader_id != 0 && st->leader_id == st->member_id) return i;
  }
  return -1;
}

TEST_CASE("one member of three killed: reads, writes, txns, leases and elections go on",
          "[cluster]") {
  auto etcd = EtcdCluster::Start(3);
  auto probe = MakeClient(etcd->endpoints());
  REQUIRE(WaitFor([&] { return RaftLeader(*probe, *etcd) >= 0; }, 5s));
  const int leader = RaftLeader(*probe, *etcd);
  // The client talks to a follower first; that follower dies.
  const int victim = (leader + 1) % 3;
  std::vector<std::string> endpoints;
  for (int k = 0; k < 3; ++k) endpoints.push_back(etcd->endpoint((victim + k) % 3));
  auto client = MakeClient(endpoints);
  REQUIRE_OK(client->Health());
  REQUIRE_OK(client->Put("/cl/a", "1"));
  SessionOptions so;
  so.ttl_seconds = 3;
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*client, so);
  REQUIRE_OK(session);
  Election election(*client, "/cl/leader", (*session)->lease_id(), "node-a");
  absl::StatusOr<Fence> fence = election.Campaign(absl::Seconds(5));
  REQUIRE_OK(fence);

  etcd->Kill(victim);
  auto t0 = SteadyClock::now();
  REQUIRE_OK(client->Put("/cl/b", "2"));
  Report("cluster: first write after the client's member (a follower) was killed", MsSince(t0),
         "ms");
  double worst = 0;
  for (int i = 0; i < 50; ++i) {
    const auto t = SteadyClock::now();
    REQUIRE_OK(client->Put("/cl/n", std::to_string(i)));
    absl::StatusOr<RangeResult> r = client->Get("/cl/n");
    REQUIRE_OK(r);
    REQUIRE(r->kvs.size() == 1);
    CHECK(r->kvs[0].value == std::to_string(i));
    worst = std::max(worst, MsSince(t));
  }
  Report("cluster: worst put+get of 50 after the kill", worst, "ms");
  absl::StatusOr<TxnResult> t = FencedTxn(*client, *fence, {}, {Op::Put("/cl/state", "by leader")});
  REQUIRE_OK(t);
  CHECK(t->succeeded);
  // The lease outlives the dead member (renewed through the others).
  std::this_thread::sleep_for(4s);
  CHECK((*session)->alive());
  absl::StatusOr<std::optional<KeyValue>> current = election.Leader();
  REQUIRE_OK(current);
  REQUIRE(current->has_value());
  CHECK((*current)->create_revision == fence->revision);
  CHECK_FALSE(client->MemberStatusOf(etcd->endpoint(victim)).ok());
  REQUIRE_OK(client->Health());

  // The member comes back; then the raft leader dies: writes wait for the
  // remaining two to elect a leader (etcd's election timeout, 1 s here).
  etcd->Restart(victim);
  etcd->Kill(leader);
  t0 = SteadyClock::now();
  REQUIRE_OK(client->Put("/cl/c", "3"));
  Report("cluster: first write after the raft leader member was killed", MsSince(t0), "ms");
  CHECK((*session)->alive());
}

TEST_CASE("a watch moves to another member when its member dies, losing nothing", "[cluster]") {
  auto etcd = EtcdCluster::Start(3);
  auto watcher = MakeClient(etcd->endpoints());                      // on member 0
  auto writer = MakeClient({etcd->endpoint(1), etcd->endpoint(2)});  // never member 0
  WatchCollector seen;
  WatchSpec spec;
  spec.key = "/cw/";
  spec.prefix = true;
  auto watch = watcher->StartWatch(spec, seen.Callback());
  REQUIRE_OK(watch);
  REQUIRE_OK(writer->Put("/cw/0", "before"));
  REQUIRE(seen.WaitEvents(1, 5s));

  const bool was_leader = RaftLeader(*writer, *etcd) == 0;
  etcd->Kill(0);
  const auto t0 = SteadyClock::now();
  for (int i = 1; i <= 20; ++i) REQUIRE_OK(writer->Put("/cw/" + std::to_string(i), "during"));
  REQUIRE(seen.WaitEvents(21, 10s));
  Report(std::string("cluster: watch's member killed -> watch caught up (20 writes") +
             (was_leader ? ", member was the raft leader: includes an election)" : ")"),
         MsSince(t0), "ms");
  CHECK(seen.count(WatchUpdate::Kind::kDisconnected) == 1);
  CHECK(seen.count(WatchUpdate::Kind::kResumed) == 1);

  // The member comes back; then the watch's new member dies too.
  etcd->Restart(0);
  const int current = watcher->preferred() == 1 ? 1 : 2;
  etcd->Kill(current);
  for (int i = 21; i <= 30; ++i) REQUIRE_OK(writer->Put("/cw/" + std::to_string(i), "later"));
  REQUIRE(seen.WaitEvents(31, 10s));
  std::this_thread::sleep_for(300ms);
  const auto events = seen.events();
  REQUIRE(events.size() == 31);
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].event.kv.key == "/cw/" + std::to_string(i));
    if (i > 0) CHECK(events[i].event.kv.mod_revision > events[i - 1].event.kv.mod_revision);
  }
}

}  // namespace
}  // namespace ballast::etcd::testing
