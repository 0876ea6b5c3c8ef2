// Fragments and truncation at every layer: each case has its own verdict,
// nothing is forwarded half-parsed, malformed L2/L3 is passed untouched by
// default and dropped with BALLAST_POLICY_DROP_MALFORMED.
#include <linux/bpf.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>

#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

using pktgen::PacketBuilder;
namespace tcp = pktgen::tcp;
namespace proto = pktgen::proto;

Bytes Cut(Bytes f, size_t n) {
  f.resize(n);
  return f;
}

TEST_CASE("Fragments addressed to a VIP are dropped and counted per family", "[lb][malformed]") {
  LbFixture fx;
  SetUpLab(fx);
  const std::vector<VerdictCase> cases = {
      {"IPv4 first fragment (MF, offset 0)",
       FromClient4().Ip4Fragment(0, true).Tcp(40000, 80, tcp::kAck).PayloadSize(200).Build(),
       BALLAST_V_DROP_FRAG4},
      {"IPv4 middle fragment",
       FromClient4().Ip4Fragment(100, true).L4Proto(proto::kTcp).PayloadSize(200).Build(),
       BALLAST_V_DROP_FRAG4},
      {"IPv4 last fragment",
       FromClient4().Ip4Fragment(200, false).L4Proto(proto::kUdp).PayloadSize(64).Build(),
       BALLAST_V_DROP_FRAG4},
      {"IPv6 first fragment",
       FromClient6().Ip6Fragment(0, true).Tcp(40000, 443, tcp::kAck).PayloadSize(200).Build(),
       BALLAST_V_DROP_FRAG6},
      {"IPv6 last fragment",
       FromClient6().Ip6Fragment(50, false).L4Proto(proto::kTcp).PayloadSize(64).Build(),
       BALLAST_V_DROP_FRAG6},
      {"IPv6 atomic fragment after a hop-by-hop header",
       FromClient6()
           .Ip6Ext(proto::kHopByHop)
           .Ip6Fragment(0, false)
           .Tcp(40000, 443, tcp::kSyn)
           .Build(),
       BALLAST_V_DROP_FRAG6},
  };
  ExpectVerdicts(fx, cases, XDP_DROP);
}

TEST_CASE("A truncated Ethernet header cannot be fed through BPF_PROG_TEST_RUN",
          "[lb][malformed]") {
  // BALLAST_V_BAD_ETH is therefore not reachable from these tests; the
  // shortest frame the kernel accepts is a bare Ethernet header (below).
  // If a kernel ever accepts shorter frames, this fails and the case moves
  // into the table below.
  LbFixture fx;
  const Bytes f = Cut(FromClient4().Tcp(1, 80, tcp::kSyn).Build(), 13);
  auto r = pktgen::RunXdp(fx.dp().prog_fd(), f);
  CHECK_FALSE(r.ok());
}

TEST_CASE("Truncation at every layer has its own verdict", "[lb][malformed]") {
  LbFixture fx;
  SetUpLab(fx);
  const Bytes syn4 = FromClient4().Tcp(40000, 80, tcp::kSyn).Build();
  const Bytes syn6 = FromClient6().Tcp(40000, 443, tcp::kSyn).Build();
  Bytes ihl4 = syn4;
  ihl4[14] = 0x44;  // IHL 4 (16 bytes): invalid
  Bytes v5 = syn4;
  v5[14] = 0x55;  // version 5 under ethertype IPv4
  Bytes long4 = syn4;
  pktgen::PutBe16(&long4[16], 200);  // total length beyond the frame
  Bytes long6 = syn6;
  pktgen::PutBe16(&long6[18], 400);  // payload length beyond the frame
  Bytes v4in6 = syn6;
  v4in6[14] = 0x45;  // IPv4 version nibble under ethertype IPv6
  const Bytes vlan = FromClient4().Vlan(10).Tcp(40000, 80, tcp::kSyn).Build();
  const Bytes qinq = [] {
    Bytes f = FromClient4().Vlan(10).Tcp(40000, 80, tcp::kSyn).Build();
    const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x14};
    f.insert(f.begin() + 16, tag, tag + 4);  // a second 802.1Q tag
    return f;
  }();

  struct Case {
    const char* what;
    Bytes frame;
    ballast_verdict verdict;
    int action;
  };
  const std::vector<Case> cases = {
      {"Ethernet header only, IPv4 ethertype", Cut(syn4, 14), BALLAST_V_BAD_IP4, XDP_PASS},
      {"Ethernet header only, VLAN ethertype", Cut(vlan, 14), BALLAST_V_BAD_VLAN, XDP_PASS},
      {"VLAN: tag cut after 2 bytes", Cut(vlan, 16), BALLAST_V_BAD_VLAN, XDP_PASS},
      {"VLAN: tag cut after 3 bytes", Cut(vlan, 17), BALLAST_V_BAD_VLAN, XDP_PASS},
      {"VLAN: a second tag (QinQ)", qinq, BALLAST_V_BAD_VLAN, XDP_PASS},
      {"IPv4: 1 byte", Cut(syn4, 15), BALLAST_V_BAD_IP4, XDP_PASS},
      {"IPv4: 19 bytes", Cut(syn4, 14 + 19), BALLAST_V_BAD_IP4, XDP_PASS},
      {"IPv4: IHL 4", ihl4, BALLAST_V_BAD_IP4, XDP_PASS},
      {"IPv4: version 5", v5, BALLAST_V_BAD_IP4, XDP_PASS},
      {"IPv4: total length > frame", long4, BALLAST_V_BAD_IP4, XDP_PASS},
      {"IPv4: options cut (IHL 15, 24 bytes present)",
       Cut(FromClient4().Ip4Options(Bytes(40, 1)).Tcp(1, 80, tcp::kSyn).Build(), 14 + 24),
       BALLAST_V_BAD_IP4, XDP_PASS},
      {"IPv6: 39 bytes", Cut(syn6, 14 + 39), BALLAST_V_BAD_IP6, XDP_PASS},
      {"IPv6: payload length > frame", long6, BALLAST_V_BAD_IP6, XDP_PASS},
      {"IPv6: version 4", v4in6, BALLAST_V_BAD_IP6, XDP_PASS},
      {"TCP to a VIP: 3 bytes", FromClient4().Tcp(40000, 80, tcp::kSyn).CutL4(3).Build(),
       BALLAST_V_DROP_BAD_L4, XDP_DROP},
      {"TCP to a VIP: 19 bytes", FromClient4().Tcp(40000, 80, tcp::kSyn).CutL4(19).Build(),
       BALLAST_V_DROP_BAD_L4, XDP_DROP},
      {"TCP to a VIP: options cut",
       FromClient4().Tcp(40000, 80, tcp::kSyn).TcpOptions(Bytes(20, 1)).CutL4(30).Build(),
       BALLAST_V_DROP_BAD_L4, XDP_DROP},
      {"IPv6 TCP to a VIP: 12 bytes", FromClient6().Tcp(40000, 443, tcp::kSyn).CutL4(12).Build(),
       BALLAST_V_DROP_BAD_L4, XDP_DROP},
      {"UDP to a VIP: 7 bytes", FromClient4().Udp(5353, 53).CutL4(7).Build(), BALLAST_V_DROP_BAD_L4,
       XDP_DROP},
      {"UDP to a VIP: 2 bytes", FromClient4().Udp(5353, 53).CutL4(2).Build(), BALLAST_V_DROP_BAD_L4,
       XDP_DROP},
      {"ICMP to a VIP address: 2 bytes", FromClient4().Icmp(3, 4, 1400).CutL4(2).Build(),
       BALLAST_V_DROP_BAD_L4, XDP_DROP},
      {"ICMP to a VIP address: 6 bytes (header is 8)",
       FromClient4().Icmp(3, 4, 1400).CutL4(6).Build(), BALLAST_V_DROP_BAD_L4, XDP_DROP},
      {"ICMPv6 to a VIP address: 3 bytes", FromClient6().Icmp(2, 0, 1280).CutL4(3).Build(),
       BALLAST_V_DROP_BAD_L4, XDP_DROP},
      {"TCP to a non-VIP: 10 bytes",
       FromClient4(Addr::Parse("198.18.9.9")).Tcp(40000, 80, tcp::kSyn).CutL4(10).Build(),
       BALLAST_V_PASS_NOT_VIP, XDP_PASS},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const Outcome o = fx.Run(c.frame);
    CHECK(o.verdict == c.verdict);
    CHECK(o.action == c.action);
    if (c.action == XDP_PASS) CHECK(o.out == c.frame);
  }

  SECTION("with BALLAST_POLICY_DROP_MALFORMED, malformed L2/L3 is dropped, same verdict") {
    fx.SetPolicy(BALLAST_POLICY_DROP_MALFORMED | BALLAST_POLICY_ICMP_TOO_BIG);
    for (const Case& c : cases) {
      if (c.verdict != BALLAST_V_BAD_ETH && c.verdict != BALLAST_V_BAD_VLAN &&
          c.verdict != BALLAST_V_BAD_IP4 && c.verdict != BALLAST_V_BAD_IP6)
        continue;
      INFO(c.what);
      const Outcome o = fx.Run(c.frame);
      CHECK(o.verdict == c.verdict);
      CHECK(o.action == XDP_DROP);
    }
  }
}

}  // namespace
}  // namespace ballast::bpftest
