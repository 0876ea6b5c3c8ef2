// EtcdStore against a real single-member etcd: compare-and-swap writes,
// fenced automated writes, and the verified local cache.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/coord/etcd_store.h"
#include "agent/coord/hash.h"
#include "agent/etcd/election.h"
#include "agent/etcd/session.h"
#include "agent/etcd/tests/etcd_harness.h"

namespace ballast::coord {
namespace {

using etcd::testing::EtcdCluster;

std::unique_ptr<etcd::Client> MakeClient(const std::vector<std::string>& endpoints) {
  etcd::ClientOptions o;
  o.endpoints = endpoints;
  o.call_timeout = absl::Seconds(2);
  o.attempt_timeout = absl::Milliseconds(800);
  o.connect_timeout = absl::Milliseconds(300);
  auto c = etcd::Client::Create(o);
  REQUIRE(c.ok());
  return std::move(*c);
}

// Temporary directories, removed when the test program exits.
struct TempDirs {
  std::vector<std::string> dirs;
  ~TempDirs() {
    for (const std::string& d : dirs) std::filesystem::remove_all(d);
  }
} temp_dirs;

std::string TempPath(const std::string& name) {
  char dir[] = "/tmp/ballast-coord-test.XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  temp_dirs.dirs.push_back(dir);
  return absl::StrCat(dir, "/", name);
}

v1::State StateWithWeight(uint32_t w) {
  v1::State s;
  s.set_generation(w);
  v1::Vip* v = s.mutable_config()->add_vips();
  v->mutable_key()->set_address("198.18.0.10");
  v->mutable_key()->set_port(80);
  v1::Backend* b = v->add_backends();
  b->set_address("198.18.11.2");
  b->set_weight(w);
  (*s.mutable_ids())["vip 198.18.0.10:80/tcp"] = 1;
  (*s.mutable_ids())["backend 198.18.0.10:80/tcp 198.18.11.2"] = 1;
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST_CASE("writes compare the state's revision: a stale writer gets ABORTED", "[store]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  EtcdStore a(*client, {"/t", TempPath("a.cache"), nullptr});
  EtcdStore b(*client, {"/t", TempPath("b.cache"), nullptr});
  CHECK(a.Load().status().code() == absl::StatusCode::kNotFound);

  auto r1 = a.Save(StateWithWeight(1), 0, WriteKind::kOperator);
  REQUIRE(r1.ok());
  // A second "first start" loses: the key exists now.
  CHECK(b.Save(StateWithWeight(9), 0, WriteKind::kOperator).status().code() ==
        absl::StatusCode::kAborted);
  auto r2 = b.Save(StateWithWeight(2), *r1, WriteKind::kOperator);
  REQUIRE(r2.ok());
  // a still thinks the state is at r1: refused, nothing written.
  auto stale = a.Save(StateWithWeight(3), *r1, WriteKind::kOperator);
  CHECK(stale.status().code() == absl::StatusCode::kAborted);
  CHECK(absl::StrContains(stale.status().message(), "changed concurrently"));
  auto now = a.Load();
  REQUIRE(now.ok());
  CHECK(now->revision == *r2);
  CHECK(now->source == "etcd");
  CHECK(now->state.config().vips(0).backends(0).weight() == 2);
}

TEST_CASE("a state too large for one etcd request is refused, naming the limit", "[store]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  EtcdStoreOptions o{"/t", TempPath("s.cache"), nullptr};
  CHECK(o.max_state_bytes == 1572864 - 65536);  // etcd's default request limit, less room
  o.max_state_bytes = 2000;
  EtcdStore s(*client, o);
  auto r1 = s.Save(StateWithWeight(1), 0, WriteKind::kOperator);
  REQUIRE(r1.ok());
  v1::State big = StateWithWeight(2);
  for (int i = 0; i < 200; ++i) {  // about 4 KB
    big.mutable_config()->mutable_vips(0)->add_backends()->set_address(
        absl::StrCat("198.19.", i / 250, ".", i % 250 + 1));
  }
  auto r2 = s.Save(big, *r1, WriteKind::kOperator);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(r2.status().message()), Catch::Contains("over the 2000 that fit"));
  CHECK_THAT(std::string(r2.status().message()), Catch::Contains("--max-request-bytes"));
  auto now = s.Load();  // nothing written
  REQUIRE(now.ok());
  CHECK(now->revision == *r1);
  CHECK(now->state.config().vips(0).backends(0).weight() == 1);
}

TEST_CASE("automated writes need the leader's fence; a stale leader is rejected", "[store]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  int fenced = 0;
  EtcdStore s(*client, {"/t", TempPath("s.cache"), [&](const absl::Status&) { ++fenced; }});
  auto r = s.Save(StateWithWeight(1), 0, WriteKind::kOperator);
  REQUIRE(r.ok());
  CHECK(s.Save(StateWithWeight(2), *r, WriteKind::kAutomation).status().code() ==
        absl::StatusCode::kFailedPrecondition);

  auto lease1 = client->GrantLease(5);
  REQUIRE(lease1.ok());
  etcd::Election e1(*client, "/t/leader", lease1->id, "n1");
  auto f1 = e1.TryCampaign();
  REQUIRE(f1.ok());
  REQUIRE(f1->has_value());
  s.SetFence(**f1);
  auto r2 = s.Save(StateWithWeight(2), *r, WriteKind::kAutomation);
  REQUIRE(r2.ok());

  // The lease is gone (as after a SIGSTOP beyond the TTL); another node leads.
  REQUIRE(client->RevokeLease(lease1->id).ok());
  auto lease2 = client->GrantLease(5);
  REQUIRE(lease2.ok());
  etcd::Election e2(*client, "/t/leader", lease2->id, "n2");
  auto f2 = e2.TryCampaign();
  REQUIRE(f2.ok());
  REQUIRE(f2->has_value());

  auto rejected = s.Save(StateWithWeight(3), *r2, WriteKind::kAutomation);
  CHECK(etcd::IsFenced(rejected.status()));
  CHECK(fenced == 1);
  CHECK_FALSE(s.fence().has_value());
  auto now = s.Load();
  REQUIRE(now.ok());
  CHECK(now->state.config().vips(0).backends(0).weight() == 2);
}

TEST_CASE("the cache is used only while etcd is unreachable, and never when edited", "[store]") {
  auto etcd = EtcdCluster::Start(1);
  auto client = MakeClient(etcd->endpoints());
  const std::string cache = TempPath("state.cache");
  EtcdStore s(*client, {"/t", cache, nullptr});
  auto r = s.Save(StateWithWeight(7), 0, WriteKind::kOperator);
  REQUIRE(r.ok());
  auto cached = EtcdStore::ReadCache(cache);
  REQUIRE(cached.ok());
  CHECK(cached->revision == *r);
  CHECK(StateHash(cached->state) == StateHash(StateWithWeight(7)));

  // Edited while etcd is reachable: etcd wins and the cache is rewritten.
  std::string text = ReadFile(cache);
  REQUIRE(absl::StrContains(text, "weight: 7"));
  text.replace(text.find("weight: 7"), 9, "weight: 9");
  std::ofstream(cache) << text;
  CHECK(EtcdStore::ReadCache(cache).status().code() == absl::StatusCode::kDataLoss);
  auto loaded = s.Load();
  REQUIRE(loaded.ok());
  CHECK(loaded->source == "etcd");
  CHECK(loaded->state.config().vips(0).backends(0).weight() == 7);
  CHECK(EtcdStore::ReadCache(cache).ok());

  // etcd gone: the intact cache is used...
  etcd->Kill(0);
  auto from_cache = s.Load();
  REQUIRE(from_cache.ok());
  CHECK(from_cache->source == "cache");
  CHECK(from_cache->revision == *r);
  // ...an edited one is refused, loudly.
  text = ReadFile(cache);
  text.replace(text.find("weight: 7"), 9, "weight: 9");
  std::ofstream(cache) << text;
  auto refused = s.Load();
  CHECK(refused.status().code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(refused.status().message(), "was modified after ballast wrote it"));
  // Writes while unreachable say so.
  auto w = s.Save(StateWithWeight(8), *r, WriteKind::kOperator);
  CHECK(w.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(w.status().message(), "etcd unreachable"));
}

}  // namespace
}  // namespace ballast::coord
