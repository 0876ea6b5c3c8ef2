// Probation (bpf/lib/probation.h): a connection whose handshake the router
// saw complete, or that it adopted mid-stream, takes a place in `flows` only
// after its backend showed it holds it: its probe was not bounced. A blind
// spoofer's SYN and ACK complete nothing on the backend, so its probe is
// bounced and it never gets there.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "agent/dataplane/decap.h"
#include "tests/bpf/lb_fixture.h"
#include "tests/lib/netns.h"

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

// ---- the backend's half, with the request socket a spoofed SYN leaves -------

namespace spoofed {

// A client address the test namespace routes out of a veth whose peer
// holds no address: the kernel's SYN-ACKs to it go nowhere (a blind
// spoofer's source), and the test reads them there.
const Addr kSpoofer = Addr::Parse("198.18.200.1");

Bytes Segment(uint16_t port, uint8_t flags, uint32_t seq, uint32_t ack, size_t payload = 0) {
  return pktgen::PacketBuilder()
      .Eth(Lab::TorMac(), Lab::RouterMac())
      .Ip4(kSpoofer, Lab::Vip4())
      .Tcp(port, 80, flags, seq, ack)
      .PayloadSize(payload)
      .Build();
}

// Sends the SYN's IP packet into the namespace's own stack (so the
// listener makes a request socket) and returns the ISN of the SYN-ACK the
// kernel sends back, read on that veth by `capture` (an AF_PACKET socket
// bound to it).
uint32_t SynAckIsn(int capture, const Bytes& syn_frame, uint16_t port) {
  const Bytes ip = pktgen::IpPacketOf(syn_frame);
  const int raw = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
  REQUIRE(raw >= 0);
  sockaddr_in dst = {};
  dst.sin_family = AF_INET;
  std::memcpy(&dst.sin_addr, Lab::Vip4().b.data(), 4);
  REQUIRE(sendto(raw, ip.data(), ip.size(), 0, reinterpret_cast<sockaddr*>(&dst), sizeof dst) ==
          static_cast<ssize_t>(ip.size()));
  close(raw);
  for (int i = 0; i < 20; ++i) {
    uint8_t buf[2048];
    const ssize_t n = recv(capture, buf, sizeof buf, 0);
    REQUIRE(n > 0);  // SO_RCVTIMEO: the SYN-ACK comes within a second
    auto v = pktgen::ParseFrame(Bytes(buf, buf + n));
    if (!v.ok() || !v->ip || !v->ip->l4) continue;
    const pktgen::L4View& l4 = *v->ip->l4;
    if (l4.dport == port && l4.flags == (tcp::kSyn | tcp::kAck)) return l4.seq;
  }
  FAIL("no SYN-ACK for port " << port);
  return 0;
}

}  // namespace spoofed

TEST_CASE("A spoofed SYN's request socket vouches only for the ACK of its SYN-ACK",
          "[lb][probation][decap]") {
  // The attack suite's blind handshakes: the spoofed SYN reaches the
  // backend, whose listener makes a request socket and sends its SYN-ACK
  // to the spoofed source (lost). The spoofer's ACK and probe then found
  // that request socket, so the probe passed and the flow was promoted into
  // `flows` (400 of 400). Only a packet that acknowledges the SYN-ACK (its
  // ISN + 1, which the spoofer never saw) has the request socket's word.
  const std::string name = "ballast-bt-req";
  const std::string n = "ip -n " + name + " ";
  auto ns = pktgen::ScopedNetns::Create(
      name, {n + "link set lo up", n + "addr add 198.18.0.10/32 dev lo",
             n + "link add d0 type veth peer name d1", n + "link set d0 up",
             n + "link set d1 up", n + "route add 198.18.200.0/24 dev d0",
             n + "neigh add 198.18.200.1 lladdr 02:00:00:00:c8:01 dev d0 nud permanent"});
  INFO(ns.status().ToString());
  REQUIRE(ns.ok());
  Listener l(AF_INET, 80);
  const int capture = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  REQUIRE(capture >= 0);
  sockaddr_ll sll = {};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(if_nametoindex("d0"));
  REQUIRE(sll.sll_ifindex > 0);
  REQUIRE(bind(capture, reinterpret_cast<sockaddr*>(&sll), sizeof sll) == 0);
  timeval tv = {1, 0};
  REQUIRE(setsockopt(capture, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);

  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  const std::unique_ptr<dataplane::Decap> decap = LoadRouterOnlyDecap();
  const auto before = DecapStats(*decap);
  for (const bool knows_isn : {false, true}) {
    INFO((knows_isn ? "the ACK of the SYN-ACK" : "a guessed ACK"));
    const uint16_t port = knows_isn ? 40001 : 40000;
    const Bytes syn = spoofed::Segment(port, tcp::kSyn, 1000, 0);
    REQUIRE(BackendOf(fx, fx.Run(syn)) == 1);
    const uint32_t isn = spoofed::SynAckIsn(capture, syn, port);
    const uint32_t ack = knows_isn ? isn + 1 : isn + 1 + 0x10000;
    REQUIRE(BackendOf(fx, fx.Run(spoofed::Segment(port, tcp::kAck, 1001, ack))) == 1);
    const Outcome probe = fx.Run(spoofed::Segment(port, tcp::kAck | tcp::kPsh, 1001, ack, 10));
    REQUIRE(Probed(probe));
    const auto r = RunDecap(*decap, probe.out);
    if (!knows_isn) {
      // No socket holds it: back to the router, which ends the probation.
      REQUIRE(r.action == XDP_TX);
      CHECK(fx.Run(r.out).verdict == BALLAST_V_DROP_PROBATION_REFUTED);
      const auto f = fx.Flow(FlowKey(spoofed::kSpoofer, Lab::Vip4(), port, 80, IPPROTO_TCP));
      REQUIRE(f);
      CHECK((f->flags & BALLAST_FLOW_F_PROBATION) == 0);
    } else {
      // The client completing its own handshake: passed up.
      CHECK(r.action == XDP_PASS);
    }
  }
  const auto after = DecapStats(*decap);
  CHECK(after[BALLAST_DECAP_V_BOUNCED_EST] - before[BALLAST_DECAP_V_BOUNCED_EST] == 1);
  close(capture);
}

}  // namespace
}  // namespace ballast::bpftest
