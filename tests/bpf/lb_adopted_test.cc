// Adopted flows (`adopted_flows`, bpf/lib/adopted.h): 4-way sets chosen by
// flow hash. A set holds four flows; a fifth displaces the one seen longest
// ago, whose next packet is adopted again; a tuple never takes two ways.
#include <netinet/in.h>

#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "agent/dataplane/types.h"
#include "ballast_flow_hash.h"
#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

// `n` client ports of Lab::Client4() whose flows to the TCP VIP hash to one
// set of a table of `sets` sets.
std::vector<uint16_t> PortsInOneSet(const LbFixture& fx, uint32_t sets, size_t n) {
  std::vector<uint16_t> ports;
  uint32_t set = 0;
  for (uint32_t port = 20000; port < 65536 && ports.size() < n; ++port) {
    const ballast_flow_key k =
        FlowKey(Lab::Client4(), Lab::Vip4(), static_cast<uint16_t>(port), 80, IPPROTO_TCP);
    const uint32_t s = fx.Hash(k) & (sets - 1);
    if (ports.empty()) set = s;
    if (s == set) ports.push_back(static_cast<uint16_t>(port));
  }
  REQUIRE(ports.size() == n);
  return ports;
}

ballast_flow_key Key(uint16_t port) {
  return FlowKey(Lab::Client4(), Lab::Vip4(), port, 80, IPPROTO_TCP);
}

// A client ACK with data on `port`: no handshake slot, so adopted.
Outcome Ack(LbFixture& fx, uint16_t port) {
  const Outcome o =
      fx.Run(FromClient4().Tcp(port, 80, tcp::kAck | tcp::kPsh, 5000, 1).PayloadSize(10).Build());
  REQUIRE(o.verdict == BALLAST_V_TX);
  return o;
}

// Flows the agent's reader sees in `adopted_flows`: at most `max`, read
// `batch` flows per system call.
size_t AdoptedFlows(LbFixture& fx, size_t max = SIZE_MAX, size_t batch = 4096) {
  size_t called = 0;
  auto n = fx.dp().ForEachFlowIn(
      dataplane::kAdoptedFlowsMap, max,
      [&](const ballast_flow_key&, const ballast_flow&) { ++called; }, batch);
  REQUIRE(n.ok());
  REQUIRE(*n == called);
  return *n;
}

TEST_CASE("Adopted flows: four to a set, the oldest displaced by a fifth", "[lb][adopted]") {
  LbFixture fx(4096);
  SetUpLab(fx);
  REQUIRE(fx.dp().adopted_sets() == 2048);
  REQUIRE(fx.dp().MapCapacity(dataplane::kAdoptedFlowsMap).value_or(0) == 8192);
  fx.SetTable(kVipTcp4, CyclingTable({1, 2, 3}));
  const std::vector<uint16_t> ports = PortsInOneSet(fx, fx.dp().adopted_sets(), 5);

  // Four flows fill the set; each is found by its tuple, on the table's pick.
  std::vector<uint32_t> backend;
  for (size_t i = 0; i < 4; ++i) {
    backend.push_back(BackendOf(fx, Ack(fx, ports[i])));
    INFO("flow " << i);
    CHECK(backend[i] == fx.Predict(kVipTcp4, Key(ports[i])));
    CHECK(fx.FlowMap(Key(ports[i])) == dataplane::kAdoptedFlowsMap);
    CHECK(fx.Flow(Key(ports[i]))->backend_id == backend[i]);
    CHECK(fx.Flow(Key(ports[i]))->state == BALLAST_FLOW_ESTABLISHED);
  }
  // Their next packets find them: no way is taken twice.
  for (size_t i = 0; i < 4; ++i) CHECK(BackendOf(fx, Ack(fx, ports[i])) == backend[i]);
  CHECK(AdoptedFlows(fx) == 4);
  CHECK(AdoptedFlows(fx, SIZE_MAX, 1) == 4);  // one set per system call
  CHECK(AdoptedFlows(fx, 2) == 2);

  // Past their probation's probe (probation.h: as if refuted, or a
  // connection whose backend never answers probes) they are plain adopted
  // flows: a fifth displaces the first (seen longest ago), and only it.
  for (size_t i = 0; i < 4; ++i) {
    ballast_flow f = *fx.Flow(Key(ports[i]));
    REQUIRE((f.flags & BALLAST_FLOW_F_PROBATION) != 0);  // adopted: probed at once
    f.flags &= ~BALLAST_FLOW_F_PROBATION;
    fx.SetFlow(Key(ports[i]), f);
  }
  const uint32_t fifth = BackendOf(fx, Ack(fx, ports[4]));
  CHECK_FALSE(fx.Flow(Key(ports[0])));
  for (size_t i = 1; i < 4; ++i) CHECK(fx.Flow(Key(ports[i]))->backend_id == backend[i]);
  CHECK(fx.Flow(Key(ports[4]))->backend_id == fifth);
  CHECK(AdoptedFlows(fx) == 4);

  // The table changes: the flows still in the set keep their backends; the
  // displaced one is adopted again on the new table's pick (what an evicted
  // LRU entry costs too) and displaces the next oldest (the fifth is on
  // probation: it goes after the plain ones).
  fx.SetTable(kVipTcp4, CyclingTable({2, 3, 1}));
  for (size_t i = 2; i < 4; ++i) CHECK(BackendOf(fx, Ack(fx, ports[i])) == backend[i]);
  CHECK(BackendOf(fx, Ack(fx, ports[0])) == fx.Predict(kVipTcp4, Key(ports[0])));
  CHECK_FALSE(fx.Flow(Key(ports[1])));
  CHECK(fx.Flow(Key(ports[0]))->backend_id == fx.Predict(kVipTcp4, Key(ports[0])));
  CHECK(AdoptedFlows(fx) == 4);
}

TEST_CASE("Adopted flows on probation: a fifth displaces the one probed last", "[lb][adopted]") {
  // Five flows sharing a set's four ways, each taken in again on its next
  // packet: were the oldest displaced, they would push each other out in
  // turn and none would stay long enough to be promoted (probation.h).
  LbFixture fx(4096);
  SetUpLab(fx);
  fx.SetTable(kVipTcp4, CyclingTable({1, 2, 3}));
  const std::vector<uint16_t> ports = PortsInOneSet(fx, fx.dp().adopted_sets(), 5);
  for (size_t i = 0; i < 4; ++i) {
    REQUIRE(BackendOf(fx, Ack(fx, ports[i])) == fx.Predict(kVipTcp4, Key(ports[i])));
    // probes 10 ms apart, the first probed first
    ballast_flow f = *fx.Flow(Key(ports[i]));
    REQUIRE((f.flags & BALLAST_FLOW_F_PROBATION) != 0);
    f.reserved = 1u | ((f.reserved >> 8) - 40u + 10u * static_cast<uint32_t>(i)) << 8;
    fx.SetFlow(Key(ports[i]), f);
  }
  REQUIRE(BackendOf(fx, Ack(fx, ports[4])) == fx.Predict(kVipTcp4, Key(ports[4])));
  CHECK_FALSE(fx.Flow(Key(ports[3])));  // probed last
  for (size_t i = 0; i < 3; ++i) CHECK(fx.Flow(Key(ports[i])));
  CHECK(fx.Flow(Key(ports[4])));
  // After the wait, each one's next packet promotes it; the displaced one
  // finds a way free again.
  WaitOutProbation();
  for (size_t i = 0; i < 3; ++i) {
    REQUIRE(BackendOf(fx, Ack(fx, ports[i])) == fx.Predict(kVipTcp4, Key(ports[i])));
    CHECK(fx.FlowMap(Key(ports[i])) == "flows");
  }
  REQUIRE(BackendOf(fx, Ack(fx, ports[3])) == fx.Predict(kVipTcp4, Key(ports[3])));
  CHECK(fx.FlowMap(Key(ports[3])) == dataplane::kAdoptedFlowsMap);
  CHECK(fx.Flow(Key(ports[4])));
}

TEST_CASE("Adopted flows: IPv6 keys, and a way found by its whole tuple", "[lb][adopted]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetTable(kVipTcp6, CyclingTable({11, 12, 13}));
  const Outcome o =
      fx.Run(FromClient6().Tcp(40000, 443, tcp::kAck, 7000, 1).PayloadSize(10).Build());
  REQUIRE(o.verdict == BALLAST_V_TX);
  const ballast_flow_key key = FlowKey(Lab::Client6(), Lab::Vip6(), 40000, 443, IPPROTO_TCP);
  REQUIRE(fx.FlowMap(key) == dataplane::kAdoptedFlowsMap);
  CHECK(fx.Flow(key)->backend_id == BackendOf(fx, o));
  // Another port, or the same port to the IPv4 VIP, is another flow.
  CHECK_FALSE(fx.Flow(FlowKey(Lab::Client6(), Lab::Vip6(), 40001, 443, IPPROTO_TCP)));
  CHECK_FALSE(fx.Flow(FlowKey(Lab::Client4(), Lab::Vip4(), 40000, 443, IPPROTO_TCP)));
  CHECK(AdoptedFlows(fx) == 1);
}

}  // namespace
}  // namespace ballast::bpftest
