// Probation (bpf/lib/probation.h): a connection whose handshake the router
// saw complete, or that it adopted mid-stream, takes a place in `flows` only
// after its backend showed it holds it: its probe was not bounced. A blind
// spoofer's SYN and ACK complete nothing on the backend, so its probe is
// bounced and it never gets there.
#include <linux/bpf.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>

#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

constexpr uint16_t kPort = 41700;
const ballast_flow_key kKey = FlowKey(Lab::Client4(), Lab::Vip4(), kPort, 80, IPPROTO_TCP);

Bytes Segment(uint8_t flags, uint32_t seq, uint32_t ack, size_t payload = 0) {
  return FromClient4().Tcp(kPort, 80, flags, seq, ack).PayloadSize(payload).Build();
}

// The probe mark as a backend's decap program reads it on a packet other
// than a SYN (mark.h).
bool Probed(const Outcome& o) {
  auto v = pktgen::ParseFrame(o.out);
  REQUIRE(v.ok());
  return v->ip->id != 0 && v->ip->id != BALLAST_ENCAP_ID_LAST;
}

ballast_flow FlowOf(const LbFixture& fx) {
  const auto f = fx.Flow(kKey);
  REQUIRE(f);
  return *f;
}

TEST_CASE("A handshake completes on probation; the backend's silence promotes it",
          "[lb][probation]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 100, 0))) == 1);
  const Outcome ack = fx.Run(Segment(tcp::kAck, 101, 5001));
  CHECK_FALSE(Probed(ack));
  CHECK(fx.FlowMap(kKey) == dataplane::kAdoptedFlowsMap);
  CHECK((FlowOf(fx).flags & BALLAST_FLOW_F_PROBATION) != 0);
  // The next packet is the probe, and so is every one within the wait.
  CHECK(Probed(fx.Run(Segment(tcp::kAck | tcp::kPsh, 101, 5001, 10))));
  CHECK(Probed(fx.Run(Segment(tcp::kAck, 111, 5001))));
  CHECK(fx.FlowMap(kKey) == dataplane::kAdoptedFlowsMap);
  // No bounce came: after the wait the next packet moves it into `flows`,
  // unmarked, with what it knew (backend, sequence, handshake seen).
  WaitOutProbation();
  fx.SetUniformTable(kVipTcp4, 2);
  const Outcome next = fx.Run(Segment(tcp::kAck, 111, 5001));
  CHECK(BackendOf(fx, next) == 1);
  CHECK_FALSE(Probed(next));
  CHECK(fx.FlowMap(kKey) == "flows");
  const ballast_flow f = FlowOf(fx);
  CHECK(f.backend_id == 1);
  CHECK(f.seq_next == 111);
  CHECK((f.flags & BALLAST_FLOW_F_HANDSHAKE_SEEN) != 0);
  CHECK((f.flags & BALLAST_FLOW_F_PROBATION) == 0);
  // A promoted flow's reset is the client's: counted.
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kRst, 111, 0))) == 1);
  CHECK(fx.BackendStats(1).client_rsts == 1);
}

TEST_CASE("A spoofed handshake's probe is bounced: never promoted, its RSTs not counted",
          "[lb][probation]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  // The spoofer's SYN and ACK (its own ISN + 1): the router sees a handshake.
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 4000, 0))) == 1);
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kAck, 4001, 1))) == 1);
  const Outcome probe = fx.Run(Segment(tcp::kAck, 4001, 1, 5));
  REQUIRE(Probed(probe));

  SECTION("the backend bounces the probe: probation over") {
    const Outcome b = fx.Run(Bounce(probe.out));
    CHECK(b.verdict == BALLAST_V_DROP_PROBATION_REFUTED);
    CHECK(b.action == XDP_DROP);
    const ballast_flow f = FlowOf(fx);
    CHECK((f.flags & (BALLAST_FLOW_F_PROBATION | BALLAST_FLOW_F_HANDSHAKE_SEEN)) == 0);
    WaitOutProbation();
    const Outcome later = fx.Run(Segment(tcp::kAck, 4006, 1));
    CHECK(BackendOf(fx, later) == 1);
    CHECK_FALSE(Probed(later));  // the backend's kernel answers it
    CHECK(fx.FlowMap(kKey) == dataplane::kAdoptedFlowsMap);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kRst, 4006, 0))) == 1);
    CHECK(fx.BackendStats(1).client_rsts == 0);
  }
  SECTION("a forged bounce without the router's tag: dropped, and no promotion either") {
    const Outcome b = fx.Run(WithOuterMark(Bounce(probe.out), OuterMarkOf(probe.out) ^ 0x40));
    CHECK(b.verdict == BALLAST_V_DROP_BOUNCE_FORGED);
    CHECK((FlowOf(fx).flags & BALLAST_FLOW_F_PROBATION) == 0);
    WaitOutProbation();
    fx.Run(Segment(tcp::kAck, 4006, 1));
    CHECK(fx.FlowMap(kKey) == dataplane::kAdoptedFlowsMap);
  }
  SECTION("a bounce from another address is a stranger's") {
    CHECK(fx.Run(BounceFrom(probe.out, Lab::Backend4(2))).verdict ==
          BALLAST_V_DROP_BOUNCE_STRANGER);
    CHECK((FlowOf(fx).flags & BALLAST_FLOW_F_PROBATION) != 0);
  }
}

TEST_CASE("A flow adopted mid-stream is probed at once and promoted the same way",
          "[lb][probation]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  const Outcome first = fx.Run(Segment(tcp::kAck | tcp::kPsh, 900000, 5001, 10));
  CHECK(Probed(first));
  CHECK(fx.FlowMap(kKey) == dataplane::kAdoptedFlowsMap);
  WaitOutProbation();
  CHECK_FALSE(Probed(fx.Run(Segment(tcp::kAck, 900010, 5001))));
  CHECK(fx.FlowMap(kKey) == "flows");
  CHECK((FlowOf(fx).flags & BALLAST_FLOW_F_HANDSHAKE_SEEN) == 0);
  // A spoofed ACK flood's tuple: its probe bounced, it stays adopted.
  const ballast_flow_key other = FlowKey(Lab::Client4(), Lab::Vip4(), kPort + 1, 80, IPPROTO_TCP);
  const Outcome spoofed = fx.Run(FromClient4().Tcp(kPort + 1, 80, tcp::kAck, 7, 1).Build());
  REQUIRE(Probed(spoofed));
  CHECK(fx.Run(Bounce(spoofed.out)).verdict == BALLAST_V_DROP_PROBATION_REFUTED);
  WaitOutProbation();
  fx.Run(FromClient4().Tcp(kPort + 1, 80, tcp::kAck, 7, 1).Build());
  CHECK(fx.FlowMap(other) == dataplane::kAdoptedFlowsMap);
}

}  // namespace
}  // namespace ballast::bpftest
