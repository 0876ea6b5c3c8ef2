// VIP ownership (active/standby): an owned VIP is forwarded only before its
// owner deadline; from the deadline on every packet of it is dropped and
// counted (drop_fenced, vip_stats.fenced), new and established flows alike.
#include <linux/bpf.h>
#include <netinet/in.h>

#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;
using pktgen::PacketBuilder;

constexpr uint64_t kHourNs = 3600ull * 1000000000ull;
constexpr uint16_t kPort = 43000;

uint64_t Now() { return dataplane::Dataplane::MonotonicNowNs(); }

Bytes Syn(uint16_t sport) { return FromClient4().Tcp(sport, 80, tcp::kSyn, 100).Build(); }
Bytes Ack(uint16_t sport, size_t payload = 0) {
  return FromClient4().Tcp(sport, 80, tcp::kAck, 101, 5001).PayloadSize(payload).Build();
}

// The standard lab with 198.18.0.10:80/tcp on backend 1 and an established
// flow from kPort on it.
void SetUpWithFlow(LbFixture& fx) {
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  REQUIRE(BackendOf(fx, fx.Run(Syn(kPort))) == 1);
  REQUIRE(BackendOf(fx, fx.Run(Ack(kPort))) == 1);
  const auto f = fx.Flow(FlowKey(Lab::Client4(), Lab::Vip4(), kPort, 80, IPPROTO_TCP));
  REQUIRE(f);
  REQUIRE(f->state == BALLAST_FLOW_ESTABLISHED);
  REQUIRE(f->vip_id == kVipTcp4);  // its packets take the vip_refs shortcut
}

void ExpectFenced(LbFixture& fx, const Bytes& frame) {
  const Outcome o = fx.Run(frame);
  CHECK(o.action == XDP_DROP);
  CHECK(o.verdict == BALLAST_V_DROP_FENCED);
}

TEST_CASE("An owned VIP forwards new and established flows before its owner deadline",
          "[lb][owner]") {
  LbFixture fx;
  SetUpWithFlow(fx);
  fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, Now() + kHourNs);
  fx.SetOwnerDeadline(Lab::Vip4(), 53, IPPROTO_UDP, Now() + kHourNs);

  // Established flow (shortcut path), with payload: state and signals move on.
  Outcome o = fx.Run(Ack(kPort, 100));
  CHECK(o.verdict == BALLAST_V_TX);
  CHECK(BackendOf(fx, o) == 1);
  // New flows (`vips` lookup path), TCP and UDP.
  o = fx.Run(Syn(kPort + 1));
  CHECK(o.verdict == BALLAST_V_TX);
  CHECK(BackendOf(fx, o) == 1);
  CHECK(fx.Run(FromClient4().Udp(5353, 53).PayloadSize(20).Build()).verdict == BALLAST_V_TX);
  const auto vs = fx.VipStats(kVipTcp4);
  CHECK(vs.packets == 4);
  CHECK(vs.dropped == 0);
  CHECK(vs.fenced == 0);
  CHECK(fx.VipStats(kVipUdp4).packets == 1);
  const auto f = fx.Flow(FlowKey(Lab::Client4(), Lab::Vip4(), kPort, 80, IPPROTO_TCP));
  REQUIRE(f);
  CHECK(f->state == BALLAST_FLOW_ESTABLISHED);
  CHECK((f->flags & BALLAST_FLOW_F_PAYLOAD_SEEN) != 0);
}

TEST_CASE("Past the owner deadline every packet of the VIP is dropped and counted as fenced",
          "[lb][owner]") {
  LbFixture fx;
  SetUpWithFlow(fx);
  const auto before = fx.BackendStats(1);
  fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, Now() - 1);

  ExpectFenced(fx, Ack(kPort, 100));  // established flow, shortcut path
  ExpectFenced(fx, Syn(kPort + 1));   // new flow, `vips` lookup path
  ExpectFenced(fx, Syn(kPort));       // a SYN on the established tuple
  ExpectFenced(fx, FromClient4().Tcp(kPort + 2, 80, tcp::kAck, 1, 1).Build());  // mid-stream
  ExpectFenced(fx, FromClient4().Ttl(1).Tcp(kPort, 80, tcp::kSyn).Build());     // TTL 1 too
  // An ICMP error about the flow is not steered to its backend either.
  ExpectFenced(fx, PacketBuilder()
                       .Eth(Lab::TorMac(), Lab::RouterMac())
                       .Ip4(Addr::Parse("198.18.200.1"), Lab::Vip4())
                       .Icmp(3, 4, 1280)
                       .Quote(PacketBuilder()
                                  .Ip4(Lab::Vip4(), Lab::Client4())
                                  .Tcp(80, kPort, tcp::kAck, 5001, 101)
                                  .PayloadSize(1400)
                                  .BuildIp(),
                              28)
                       .Build());

  const auto vs = fx.VipStats(kVipTcp4);
  CHECK(vs.fenced == 6);
  CHECK(vs.dropped == 6);
  CHECK(vs.packets == 2);  // the handshake before the deadline
  CHECK(fx.Verdicts()[BALLAST_V_DROP_FENCED] == 6);
  // Nothing reached a backend, and the flow still names backend 1.
  const auto after = fx.BackendStats(1);
  CHECK(after.packets == before.packets);
  CHECK(after.new_flows == before.new_flows);
  CHECK(fx.BackendStats(2).packets == 0);
  const auto f = fx.Flow(FlowKey(Lab::Client4(), Lab::Vip4(), kPort, 80, IPPROTO_TCP));
  REQUIRE(f);
  CHECK(f->backend_id == 1);
  CHECK_FALSE(fx.Flow(FlowKey(Lab::Client4(), Lab::Vip4(), kPort + 1, 80, IPPROTO_TCP)));

  auto owner = fx.dp().GetVipOwner({ToIpAddress(Lab::Vip4()), 80, IPPROTO_TCP});
  REQUIRE(owner.ok());
  CHECK(owner->fenced == 6);
  REQUIRE(owner->deadline_ns.has_value());

  SECTION("clearing the deadline restores forwarding, the flow on its backend") {
    fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, std::nullopt);
    Outcome o = fx.Run(Ack(kPort, 100));
    CHECK(o.verdict == BALLAST_V_TX);
    CHECK(BackendOf(fx, o) == 1);
    CHECK(fx.Run(Syn(kPort + 1)).verdict == BALLAST_V_TX);
    CHECK(fx.VipStats(kVipTcp4).fenced == 6);
  }
  SECTION("a renewed deadline restores forwarding") {
    fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, Now() + kHourNs);
    CHECK(BackendOf(fx, fx.Run(Ack(kPort, 100))) == 1);
    CHECK(fx.Run(Syn(kPort + 1)).verdict == BALLAST_V_TX);
  }
}

TEST_CASE("The deadline is compared with the clock as it runs: forwarding stops when it passes",
          "[lb][owner]") {
  LbFixture fx;
  SetUpWithFlow(fx);
  const uint64_t deadline = Now() + 200'000'000ull;  // 200 ms
  fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, deadline);
  // Before: forwarded (unless this host was too slow to get here in time).
  const Outcome o = fx.Run(Ack(kPort));
  if (Now() < deadline) CHECK(o.verdict == BALLAST_V_TX);
  while (Now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // At once after the deadline: stopped, with no user-space action.
  ExpectFenced(fx, Ack(kPort));
  ExpectFenced(fx, Syn(kPort + 1));
}

TEST_CASE("Other VIPs are not affected by one VIP's fence", "[lb][owner]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, 0);  // owned, stopped
  ExpectFenced(fx, Syn(kPort));
  // Same address, other port and protocol; another family.
  CHECK(fx.Run(FromClient4().Tcp(kPort, 443, tcp::kSyn).Build()).verdict == BALLAST_V_TX);
  CHECK(fx.Run(FromClient4().Udp(5353, 53).PayloadSize(8).Build()).verdict == BALLAST_V_TX);
  CHECK(fx.Run(FromClient6().Tcp(kPort, 443, tcp::kSyn).Build()).verdict == BALLAST_V_TX);
  CHECK(fx.VipStats(kVip4To6).fenced == 0);
  CHECK(fx.VipStats(kVipUdp4).fenced == 0);
  // Non-VIP traffic is untouched.
  CHECK(fx.Run(FromClient4(Addr::Parse("198.18.0.99")).Tcp(kPort, 80, tcp::kSyn).Build()).verdict ==
        BALLAST_V_PASS_NOT_VIP);
  // A VIP that was never owned has no deadline.
  auto owner = fx.dp().GetVipOwner({ToIpAddress(Lab::Vip4()), 443, IPPROTO_TCP});
  REQUIRE(owner.ok());
  CHECK_FALSE(owner->deadline_ns.has_value());
}

TEST_CASE("The owner deadline survives table swaps and VIP updates", "[lb][owner]") {
  LbFixture fx;
  SetUpWithFlow(fx);
  const dataplane::VipKey key{ToIpAddress(Lab::Vip4()), 80, IPPROTO_TCP};
  fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, 0);
  ExpectFenced(fx, Ack(kPort));

  SECTION("table swap") {
    fx.SetUniformTable(kVipTcp4, 2);
    ExpectFenced(fx, Ack(kPort));
    ExpectFenced(fx, Syn(kPort + 1));
  }
  SECTION("the VIP re-programmed (UpsertVip of the same key and id)") {
    fx.AddVip(Lab::Vip4(), 80, IPPROTO_TCP, kVipTcp4);
    ExpectFenced(fx, Ack(kPort));
    ExpectFenced(fx, Syn(kPort + 1));
  }
  SECTION("the VIP moved to another id") {
    fx.AddVip(Lab::Vip4(), 80, IPPROTO_TCP, 9);
    fx.SetUniformTable(9, 2);
    ExpectFenced(fx, Ack(kPort));
    ExpectFenced(fx, Syn(kPort + 1));
    CHECK(fx.VipStats(9).fenced == 2);
  }
  SECTION("a future deadline too, and the flows' shortcut is kept") {
    const uint64_t deadline = Now() + kHourNs;
    fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, deadline);
    const uint32_t gen =
        fx.Flow(FlowKey(Lab::Client4(), Lab::Vip4(), kPort, 80, IPPROTO_TCP))->vip_gen;
    fx.SetUniformTable(kVipTcp4, 2);
    fx.AddVip(Lab::Vip4(), 80, IPPROTO_TCP, kVipTcp4);
    auto owner = fx.dp().GetVipOwner(key);
    REQUIRE(owner.ok());
    CHECK(owner->deadline_ns == deadline);
    CHECK(BackendOf(fx, fx.Run(Ack(kPort))) == 1);
    CHECK(fx.Flow(FlowKey(Lab::Client4(), Lab::Vip4(), kPort, 80, IPPROTO_TCP))->vip_gen == gen);
  }
  SECTION("deleted and added again: a new VIP, not owned unless asked") {
    REQUIRE(fx.dp().DeleteVip(key).ok());
    fx.AddVip(Lab::Vip4(), 80, IPPROTO_TCP, kVipTcp4);
    fx.SetUniformTable(kVipTcp4, 1);
    CHECK(fx.Run(Syn(kPort + 1)).verdict == BALLAST_V_TX);
    REQUIRE(fx.dp().DeleteVip(key).ok());
    fx.AddVip(Lab::Vip4(), 80, IPPROTO_TCP, kVipTcp4, {.owner_deadline_if_new = 0});
    fx.SetUniformTable(kVipTcp4, 1);
    ExpectFenced(fx, Syn(kPort + 2));
  }
}

}  // namespace
}  // namespace ballast::bpftest
