// Key-value reads, writes and transactions against a real single-member etcd.
#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "agent/etcd/client.h"
#include "agent/etcd/tests/etcd_harness.h"
#include "agent/etcd/tests/test_util.h"

namespace ballast::etcd::testing {
namespace {

using R = Compare::Result;

TEST_CASE("put, get, prefix and delete round-trip through etcd", "[kv]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());

  absl::StatusOr<int64_t> rev = client->Put("/t/a", "1");
  REQUIRE_OK(rev);
  REQUIRE_OK(client->Put("/t/b", std::string("two\0bytes", 9)));
  REQUIRE_OK(client->Put("/t/c", "3"));
  REQUIRE_OK(client->Put("/u/x", "outside"));

  absl::StatusOr<RangeResult> a = client->Get("/t/a");
  REQUIRE_OK(a);
  REQUIRE(a->kvs.size() == 1);
  CHECK(a->kvs[0].value == "1");
  CHECK(a->kvs[0].create_revision == *rev);
  CHECK(a->kvs[0].mod_revision == *rev);
  CHECK(a->kvs[0].version == 1);

  absl::StatusOr<RangeResult> all = client->GetPrefix("/t/");
  REQUIRE_OK(all);
  REQUIRE(all->kvs.size() == 3);
  CHECK(all->kvs[0].key == "/t/a");
  CHECK(all->kvs[1].value == std::string("two\0bytes", 9));  // binary-safe
  CHECK(all->kvs[2].key == "/t/c");

  absl::StatusOr<RangeResult> missing = client->Get("/t/none");
  REQUIRE_OK(missing);
  CHECK(missing->kvs.empty());
  CHECK(missing->revision >= *rev);

  ReadOptions limited;
  limited.limit = 2;
  absl::StatusOr<RangeResult> two = client->GetPrefix("/t/", limited);
  REQUIRE_OK(two);
  CHECK(two->kvs.size() == 2);
  CHECK(two->more);

  absl::StatusOr<int64_t> deleted = client->Delete("/t/a");
  REQUIRE_OK(deleted);
  CHECK(*deleted == 1);
  deleted = client->DeletePrefix("/t/");
  REQUIRE_OK(deleted);
  CHECK(*deleted == 2);
  absl::StatusOr<RangeResult> rest = client->GetPrefix("/");
  REQUIRE_OK(rest);
  REQUIRE(rest->kvs.size() == 1);
  CHECK(rest->kvs[0].key == "/u/x");
}

TEST_CASE("txn compares on value, create_revision, mod_revision and version", "[kv]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());

  // Put if absent: succeeds once.
  absl::StatusOr<TxnResult> t =
      client->Txn({Compare::Missing("/k")}, {Op::Put("/k", "v1")}, {Op::Get("/k")});
  REQUIRE_OK(t);
  CHECK(t->succeeded);
  const int64_t created = t->revision;
  t = client->Txn({Compare::Missing("/k")}, {Op::Put("/k", "other")}, {Op::Get("/k")});
  REQUIRE_OK(t);
  CHECK_FALSE(t->succeeded);
  REQUIRE(t->results.size() == 1);
  REQUIRE(t->results[0].kvs.size() == 1);
  CHECK(t->results[0].kvs[0].value == "v1");
  CHECK(t->results[0].kvs[0].create_revision == created);

  // Value compare.
  t = client->Txn({Compare::Value("/k", R::kEqual, "v1")}, {Op::Put("/k", "v2")});
  REQUIRE_OK(t);
  CHECK(t->succeeded);
  const int64_t modified = t->revision;
  t = client->Txn({Compare::Value("/k", R::kEqual, "v1")}, {Op::Put("/k", "bad")});
  REQUIRE_OK(t);
  CHECK_FALSE(t->succeeded);
  t = client->Txn({Compare::Value("/k", R::kNotEqual, "v1")}, {Op::Get("/k")});
  REQUIRE_OK(t);
  CHECK(t->succeeded);

  // Mod revision (compare-and-swap) and version.
  t = client->Txn(
      {Compare::ModRevision("/k", R::kEqual, modified), Compare::Version("/k", R::kEqual, 2),
       Compare::CreateRevision("/k", R::kEqual, created)},
      {Op::Put("/k", "v3"), Op::Put("/k2", "x")});
  REQUIRE_OK(t);
  CHECK(t->succeeded);
  REQUIRE(t->results.size() == 2);
  CHECK(t->results[0].type == Op::Type::kPut);
  t = client->Txn({Compare::ModRevision("/k", R::kEqual, modified)}, {Op::Put("/k", "stale")});
  REQUIRE_OK(t);
  CHECK_FALSE(t->succeeded);
  t = client->Txn(
      {Compare::Version("/k", R::kGreater, 2), Compare::ModRevision("/k", R::kLess, 1000)},
      {Op::DeletePrefix("/k")});
  REQUIRE_OK(t);
  CHECK(t->succeeded);
  REQUIRE(t->results.size() == 1);
  CHECK(t->results[0].deleted == 2);
  absl::StatusOr<RangeResult> gone = client->GetPrefix("/k");
  REQUIRE_OK(gone);
  CHECK(gone->kvs.empty());
}

TEST_CASE("reading a compacted revision is reported as compacted", "[kv]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  absl::StatusOr<int64_t> first = client->Put("/c", "1");
  REQUIRE_OK(first);
  absl::StatusOr<int64_t> last = client->Put("/c", "2");
  REQUIRE_OK(last);
  REQUIRE_OK(client->Compact(*last));
  ReadOptions old;
  old.revision = *first;
  absl::StatusOr<RangeResult> r = client->Get("/c", old);
  REQUIRE_FALSE(r.ok());
  INFO(r.status().ToString());
  CHECK(IsCompacted(r.status()));
}

TEST_CASE("bad endpoints are rejected and an unreachable cluster fails in time, naming members",
          "[kv]") {
  CHECK(Client::Create({}).status().code() == absl::StatusCode::kInvalidArgument);
  ClientOptions remote;  // plaintext off loopback: auth_test.cc
  remote.endpoints = {"http://198.18.0.1:2379"};
  CHECK(Client::Create(remote).status().code() == absl::StatusCode::kInvalidArgument);
  ClientOptions junk;
  junk.endpoints = {"127.0.0.1"};
  CHECK(Client::Create(junk).status().code() == absl::StatusCode::kInvalidArgument);

  // A port nobody listens on: start and kill a member to get one.
  auto etcd = EtcdCluster::Start(1);
  const std::string dead = etcd->endpoint(0);
  etcd->Kill(0);
  ClientOptions opts;
  opts.call_timeout = absl::Seconds(1);
  auto client = MakeClient({dead}, opts);
  const auto t0 = SteadyClock::now();
  absl::StatusOr<int64_t> r = client->Put("/x", "y");
  const double ms = MsSince(t0);
  REQUIRE_FALSE(r.ok());
  INFO(r.status().ToString());
  CHECK(r.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(r.status().message(), dead.substr(7)));  // host:port
  CHECK(ms < 2500);
  CHECK_FALSE(client->Health().ok());
}

}  // namespace
}  // namespace ballast::etcd::testing
