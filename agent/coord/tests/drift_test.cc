// AssessDrift: configuration drift between cluster nodes, with the time
// passed in (no etcd, no clock).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "agent/coord/drift.h"

namespace ballast::coord {
namespace {

v1::NodeRecord Record(const std::string& node, int64_t revision, const std::string& config_hash) {
  v1::NodeRecord r;
  r.set_node(node);
  r.set_state_revision(revision);
  r.set_config_hash(config_hash);
  return r;
}

constexpr int64_t kGraceMs = 5000;

TEST_CASE("drift: equal records never alert", "[drift]") {
  DriftTracker t;
  const v1::NodeRecord a = Record("a", 7, "aaaa");
  const std::map<std::string, v1::NodeRecord> peers = {{"a", a}, {"b", Record("b", 7, "aaaa")}};
  for (int64_t now = 0; now <= 60'000; now += 1000) {
    const DriftVerdict v = AssessDrift(&t, a, peers, true, now, kGraceMs);
    CHECK(v.differences.empty());
    CHECK_FALSE(v.alert);
  }
}

TEST_CASE("drift: a different config hash alerts once, after the grace period", "[drift]") {
  DriftTracker t;
  const v1::NodeRecord a = Record("a", 7, "aaaaaaaaaaaaaaaa");
  std::map<std::string, v1::NodeRecord> peers = {{"a", a},
                                                 {"b", Record("b", 7, "bbbbbbbbbbbbbbbb")}};
  DriftVerdict v = AssessDrift(&t, a, peers, true, 1000, kGraceMs);
  REQUIRE(v.differences.size() == 1);
  CHECK(v.differences[0] ==
        "node b: config hash bbbbbbbbbbbb (state revision 7) != aaaaaaaaaaaa (node a, revision 7)");
  CHECK_FALSE(v.alert);
  CHECK_FALSE(AssessDrift(&t, a, peers, true, 5999, kGraceMs).alert);
  v = AssessDrift(&t, a, peers, true, 6000, kGraceMs);
  CHECK(v.alert);
  CHECK(v.lasted_ms == 5000);
  CHECK_FALSE(AssessDrift(&t, a, peers, true, 20'000, kGraceMs).alert);  // once per episode

  // The difference goes away: the episode ends; a new one alerts again.
  peers["b"] = Record("b", 7, "aaaaaaaaaaaaaaaa");
  CHECK(AssessDrift(&t, a, peers, true, 21'000, kGraceMs).differences.empty());
  peers["b"] = Record("b", 7, "cccccccccccccccc");
  CHECK_FALSE(AssessDrift(&t, a, peers, true, 22'000, kGraceMs).alert);
  CHECK(AssessDrift(&t, a, peers, true, 27'000, kGraceMs).alert);
}

TEST_CASE("drift: a node at another revision is catching up until the grace period ends",
          "[drift]") {
  DriftTracker t;
  const v1::NodeRecord a = Record("a", 9, "aaaa");
  // b is behind, with another hash: not compared (it is catching up).
  const std::map<std::string, v1::NodeRecord> peers = {{"a", a}, {"b", Record("b", 8, "bbbb")}};
  CHECK(AssessDrift(&t, a, peers, true, 0, kGraceMs).differences.empty());
  CHECK(AssessDrift(&t, a, peers, true, 4999, kGraceMs).differences.empty());
  DriftVerdict v = AssessDrift(&t, a, peers, true, 5000, kGraceMs);
  REQUIRE(v.differences.size() == 1);
  CHECK(v.differences[0] == "node b: behind at state revision 8 for 5 s (node a: 9)");
  CHECK_FALSE(v.alert);  // the episode starts now
  CHECK(AssessDrift(&t, a, peers, true, 10'000, kGraceMs).alert);
}

TEST_CASE("drift: a peer that moves on restarts its clock", "[drift]") {
  DriftTracker t;
  const v1::NodeRecord a = Record("a", 9, "aaaa");
  std::map<std::string, v1::NodeRecord> peers = {{"a", a}, {"b", Record("b", 7, "aaaa")}};
  CHECK(AssessDrift(&t, a, peers, true, 0, kGraceMs).differences.empty());
  peers["b"] = Record("b", 8, "aaaa");  // progress at 4 s
  CHECK(AssessDrift(&t, a, peers, true, 4000, kGraceMs).differences.empty());
  CHECK(AssessDrift(&t, a, peers, true, 8000, kGraceMs).differences.empty());
  CHECK(AssessDrift(&t, a, peers, true, 9000, kGraceMs).differences.size() == 1);
}

TEST_CASE("drift: nothing while this node does not see the store", "[drift]") {
  DriftTracker t;
  const v1::NodeRecord a = Record("a", 7, "aaaa");
  const std::map<std::string, v1::NodeRecord> peers = {{"a", a}, {"b", Record("b", 7, "bbbb")}};
  CHECK(AssessDrift(&t, a, peers, true, 0, kGraceMs).differences.size() == 1);
  // Down: no differences, and the episode ends (its clock starts again).
  CHECK(AssessDrift(&t, a, peers, false, 3000, kGraceMs).differences.empty());
  CHECK_FALSE(AssessDrift(&t, a, peers, true, 6000, kGraceMs).alert);
  CHECK(AssessDrift(&t, a, peers, true, 11'000, kGraceMs).alert);
}

}  // namespace
}  // namespace ballast::coord
