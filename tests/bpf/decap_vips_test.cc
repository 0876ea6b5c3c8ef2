// xdp_decap's VIP check (bpf/lib/decap_vips.h): a tunnelled packet from a
// router to a VIP address passes only as what the routers send there: a
// served protocol and port (a port-0 VIP: every port of its protocol), an
// ICMP error quoting such a flow. Anything else to the address is dropped
// and counted as `unserved`. The packets that pass are the router's own
// output (xdp_lb encapsulating a client's packet); the others are forged
// the way the router would have encapsulated them, since it never sends
// them (it drops them as drop_vip_unserved, drop_icmp_*).
//
// PKTGEN  a client's frame (FromClient4/6), or an IP packet forged inside
//         the router's outer header (Tunnelled);
// SETUP   the lab router (SetUpLab) and a backend's decap copy taking only
//         the router's sources and the lab's VIPs by port, plus
//         198.18.0.11:0/tcp; second chance off, so that a served SYN with
//         no listener here is decapsulated rather than bounced;
// CHECK   the decap verdict: exactly one counter moved, and the action.
#include <linux/bpf.h>
#include <netinet/in.h>

#include <algorithm>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "agent/dataplane/decap.h"
#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

using pktgen::PacketBuilder;
namespace tcp = pktgen::tcp;
namespace proto = pktgen::proto;

const Addr kVipAnyTcp4 = Addr::Parse("198.18.0.11");  // 198.18.0.11:0/tcp, every TCP port
constexpr uint32_t kVipAnyTcp = 20;
const Addr kNotVip4 = Addr::Parse("198.18.0.99");

struct Verdict {
  int action;
  ballast_decap_verdict verdict;
};

// The backend side: a decap copy as ballast-backend sets it up from
// VIPS=<the lab's VIPs> 198.18.0.11:0/tcp.
class Backend {
 public:
  explicit Backend(bool whole_addresses = false) {
    if (whole_addresses) {  // a config from before ports: VIPS=198.18.0.10 2001:db8::10
      decap_ = LoadBackendDecap();
      REQUIRE(decap_->AddSource(Lab::Src4().ToString()).ok());
      REQUIRE(decap_->AddSource(Lab::Src6().ToString()).ok());
      REQUIRE(decap_->AddVipAddress(ToIpAddress(Lab::Vip4())).ok());
      REQUIRE(decap_->AddVipAddress(ToIpAddress(Lab::Vip6())).ok());
    } else {
      decap_ = LoadRouterOnlyDecap();
      REQUIRE(decap_->AddVip({ToIpAddress(kVipAnyTcp4), 0, IPPROTO_TCP}).ok());
    }
    REQUIRE(decap_->SetBounce(false).ok());
  }
  dataplane::Decap& decap() { return *decap_; }

  // One run; asserts that exactly one counter moved, by one.
  Verdict Run(const Bytes& frame) {
    const auto before = DecapStats(*decap_);
    const pktgen::XdpResult r = RunDecap(*decap_, frame);
    const auto after = DecapStats(*decap_);
    Verdict v{static_cast<int>(r.action), BALLAST_DECAP_V_MAX};
    int moved = 0;
    for (int i = 0; i < BALLAST_DECAP_V_MAX; ++i) {
      if (after[i] == before[i]) continue;
      CHECK(after[i] == before[i] + 1);
      v.verdict = static_cast<ballast_decap_verdict>(i);
      ++moved;
    }
    CHECK(moved == 1);
    return v;
  }

 private:
  std::unique_ptr<dataplane::Decap> decap_;
};

// The lab router, with 198.18.0.11:0/tcp beside SetUpLab's VIPs.
void SetUpRouter(LbFixture& fx) {
  SetUpLab(fx);
  fx.AddVip(kVipAnyTcp4, 0, IPPROTO_TCP, kVipAnyTcp);
  fx.SetTable(kVipAnyTcp, CyclingTable({1, 2, 3}));
}

// What the router sends for the client's `frame` (it must forward it).
Bytes Routed(LbFixture& fx, const Bytes& frame) {
  const Outcome o = fx.Run(frame);
  INFO(dataplane::VerdictName(o.verdict));
  REQUIRE(o.action == XDP_TX);
  return o.out;
}

// `inner` (an IP packet) in the router's outer header to backend 1 (IPv4
// in IPv4; with `outer6`, in IPv6), unmarked: what a router would send, were
// it to forward the packet.
Bytes Tunnelled(const Bytes& inner, bool outer6 = false) {
  const uint8_t inner_proto = (inner.at(0) >> 4) == 4 ? proto::kIpip : proto::kIpv6;
  PacketBuilder b;
  b.Eth(Lab::NexthopSmac(), Lab::NexthopDmac());
  if (outer6) {
    b.Ip6(Lab::Src6(), Lab::Backend6(1));
  } else {
    b.Ip4(Lab::Src4(), Lab::Backend4(1)).IpId(0);
  }
  return b.L4Proto(inner_proto).Payload(inner).Build();
}

// PKTGEN: the client's IP packet to `vip` (to be forged into the tunnel).
PacketBuilder Client4(const Addr& vip = Lab::Vip4()) {
  PacketBuilder b;
  b.Ip4(Lab::Client4(), vip);
  return b;
}
PacketBuilder Client6() {
  PacketBuilder b;
  b.Ip6(Lab::Client6(), Lab::Vip6());
  return b;
}

// An ICMP error to the VIP from a router on the client's path, quoting
// `quoted` (the VIP's reply, or what passes for it).
Bytes Error4(const Bytes& quoted, size_t quote_len = 28) {
  return PacketBuilder()
      .Ip4(Addr::Parse("198.18.200.1"), Lab::Vip4())
      .Icmp(3, 4, 1280)
      .Quote(quoted, quote_len)
      .BuildIp();
}
Bytes Error6(const Bytes& quoted) {
  return PacketBuilder()
      .Ip6(Addr::Parse("2001:db8:200::1"), Lab::Vip6())
      .Icmp(2, 0, 1280)
      .Quote(quoted, 48)
      .BuildIp();
}

constexpr Verdict kDecapped{XDP_PASS, BALLAST_DECAP_V_DECAPPED};
constexpr Verdict kUnserved{XDP_DROP, BALLAST_DECAP_V_UNSERVED};

void Expect(Backend& be, const char* what, const Bytes& frame, Verdict want) {
  INFO(what);
  const Verdict got = be.Run(frame);
  CHECK(got.action == want.action);
  CHECK(dataplane::DecapVerdictName(got.verdict) == dataplane::DecapVerdictName(want.verdict));
}

}  // namespace

TEST_CASE("A tunnelled packet to a VIP address passes only to a port a VIP serves there",
          "[decap][vips]") {
  LbFixture fx;
  SetUpRouter(fx);
  Backend be;

  // What the router sends: each of the lab's VIPs, IPv4 and IPv6 outer.
  Expect(be, "SYN to 198.18.0.10:80/tcp",
         Routed(fx, FromClient4().Tcp(42000, 80, tcp::kSyn).Build()), kDecapped);
  Expect(be, "ACK to [2001:db8::10]:443/tcp",
         Routed(fx, FromClient6().Tcp(42001, 443, tcp::kAck, 101, 5001).Build()), kDecapped);
  Expect(be, "SYN to 198.18.0.10:443/tcp (IPv6 backends: IPv4 in IPv6)",
         Routed(fx, FromClient4().Tcp(42002, 443, tcp::kSyn).Build()), kDecapped);
  Expect(be, "datagram to 198.18.0.10:53/udp",
         Routed(fx, FromClient4().Udp(42003, 53).PayloadSize(20).Build()), kDecapped);

  // What it never sends (it drops them as drop_vip_unserved): another port
  // or protocol of the VIP address, in either outer family.
  CHECK(fx.Run(FromClient4().Tcp(42004, 22, tcp::kSyn).Build()).verdict ==
        BALLAST_V_DROP_VIP_UNSERVED);
  Expect(be, "SYN to 198.18.0.10:22/tcp", Tunnelled(Client4().Tcp(42004, 22, tcp::kSyn).BuildIp()),
         kUnserved);
  Expect(be, "the same in IPv6", Tunnelled(Client4().Tcp(42004, 22, tcp::kSyn).BuildIp(), true),
         kUnserved);
  Expect(be, "UDP to 198.18.0.10:80 (a TCP port)",
         Tunnelled(Client4().Udp(42005, 80).PayloadSize(8).BuildIp()), kUnserved);
  Expect(be, "TCP to 198.18.0.10:53 (a UDP port)",
         Tunnelled(Client4().Tcp(42006, 53, tcp::kSyn).BuildIp()), kUnserved);
  Expect(be, "SYN to [2001:db8::10]:22/tcp",
         Tunnelled(Client6().Tcp(42007, 22, tcp::kSyn).BuildIp(), true), kUnserved);
  Expect(be, "GRE to 198.18.0.10", Tunnelled(Client4().L4Proto(47).PayloadSize(24).BuildIp()),
         kUnserved);
  // Not a VIP address at all: not_vip, as before.
  Expect(be, "SYN to 198.18.0.99:80",
         Tunnelled(Client4(kNotVip4).Tcp(42008, 80, tcp::kSyn).BuildIp()),
         {XDP_DROP, BALLAST_DECAP_V_NOT_VIP});
}

TEST_CASE("A port-0 VIP takes every port of its protocol, and nothing of another",
          "[decap][vips]") {
  LbFixture fx;
  SetUpRouter(fx);
  Backend be;
  for (const uint16_t port : {1, 22, 8443, 65535}) {
    INFO("port " << port);
    Expect(be, "SYN to 198.18.0.11 (0/tcp)",
           Routed(fx, FromClient4(kVipAnyTcp4).Tcp(42100, port, tcp::kSyn).Build()), kDecapped);
  }
  Expect(be, "UDP to 198.18.0.11:53",
         Tunnelled(Client4(kVipAnyTcp4).Udp(42101, 53).PayloadSize(8).BuildIp()), kUnserved);
  Expect(be, "echo request to 198.18.0.11",
         Tunnelled(Client4(kVipAnyTcp4).Icmp(8, 0, 0x00010001).PayloadSize(56).BuildIp()),
         kUnserved);
}

TEST_CASE("ICMP errors quoting a served flow pass; other ICMP to a VIP does not",
          "[decap][vips][icmp]") {
  LbFixture fx;
  SetUpRouter(fx);
  Backend be;
  // The router steers errors about a VIP flow to the flow's backend.
  const Bytes reply4 = PacketBuilder()
                           .Ip4(Lab::Vip4(), Lab::Client4())
                           .Tcp(80, 42200, tcp::kAck | tcp::kPsh, 5001, 101)
                           .PayloadSize(1400)
                           .BuildIp();
  const Bytes reply6 = PacketBuilder()
                           .Ip6(Lab::Vip6(), Lab::Client6())
                           .Tcp(443, 42201, tcp::kAck | tcp::kPsh, 5001, 101)
                           .PayloadSize(1400)
                           .BuildIp();
  const Bytes udp_reply =
      PacketBuilder().Ip4(Lab::Vip4(), Lab::Client4()).Udp(53, 42202).PayloadSize(600).BuildIp();
  const auto eth = [](const Bytes& ip) {
    PacketBuilder b;
    b.Eth(Lab::TorMac(), Lab::RouterMac()).EtherType(ip[0] >> 4 == 4 ? 0x0800 : 0x86dd);
    return b.Payload(ip).Build();
  };
  Routed(fx, FromClient4().Tcp(42200, 80, tcp::kSyn).Build());
  Routed(fx, FromClient6().Tcp(42201, 443, tcp::kSyn).Build());
  Expect(be, "frag needed about 198.18.0.10:80/tcp", Routed(fx, eth(Error4(reply4))), kDecapped);
  Expect(be, "the same quoting the whole headers", Routed(fx, eth(Error4(reply4, 548))), kDecapped);
  Expect(be, "too big about [2001:db8::10]:443/tcp", Routed(fx, eth(Error6(reply6))), kDecapped);
  Expect(be, "unreachable about 198.18.0.10:53/udp", Routed(fx, eth(Error4(udp_reply))), kDecapped);

  // Never sent by the router (drop_icmp_not_err, drop_icmp_unmatched).
  const Bytes reply22 =
      PacketBuilder().Ip4(Lab::Vip4(), Lab::Client4()).Tcp(22, 42203, tcp::kAck).BuildIp();
  const Bytes other_source =
      PacketBuilder().Ip4(kNotVip4, Lab::Client4()).Tcp(80, 42204, tcp::kAck).BuildIp();
  const Bytes reply6_22 =
      PacketBuilder().Ip6(Lab::Vip6(), Lab::Client6()).Tcp(22, 42205, tcp::kAck).BuildIp();
  Expect(be, "an error quoting 198.18.0.10:22/tcp", Tunnelled(Error4(reply22)), kUnserved);
  Expect(be, "an error quoting a packet from another address", Tunnelled(Error4(other_source)),
         kUnserved);
  Expect(be, "an ICMPv6 error quoting [2001:db8::10]:22/tcp", Tunnelled(Error6(reply6_22), true),
         kUnserved);
  Expect(be, "an error quoting ICMP",
         Tunnelled(Error4(PacketBuilder()
                              .Ip4(Lab::Vip4(), Lab::Client4())
                              .Icmp(0, 0, 0x00010001)
                              .PayloadSize(8)
                              .BuildIp())),
         kUnserved);
  Expect(be, "echo request to 198.18.0.10",
         Tunnelled(Client4().Icmp(8, 0, 0x00010001).PayloadSize(56).BuildIp()), kUnserved);
  Expect(be, "ICMPv6 echo request to 2001:db8::10",
         Tunnelled(Client6().Icmp(128, 0, 0x00010001).PayloadSize(56).BuildIp(), true), kUnserved);
  Expect(be, "an error whose quote stops inside the IP header", Tunnelled(Error4(reply4, 12)),
         {XDP_DROP, BALLAST_DECAP_V_BAD_INNER});
}

TEST_CASE("The router's marks open no port: probes and last hops go to served ports",
          "[decap][vips]") {
  LbFixture fx;
  SetUpRouter(fx);
  Backend be;
  // A synthetic probe (tc_probe) and a second-chance last hop carry the
  // last-hop mark; an adopted flow's packets the probe mark. To a served
  // port they pass; to any other port the mark changes nothing.
  const Bytes syn80 = Routed(fx, FromClient4().Tcp(42300, 80, tcp::kSyn).Build());
  Expect(be, "last-hop SYN to 198.18.0.10:80", WithOuterMark(syn80, BALLAST_ENCAP_ID_LAST),
         kDecapped);
  const Bytes syn22 = Tunnelled(Client4().Tcp(42301, 22, tcp::kSyn).BuildIp());
  Expect(be, "last-hop SYN to 198.18.0.10:22", WithOuterMark(syn22, BALLAST_ENCAP_ID_LAST),
         kUnserved);
  const Bytes ack22 = Tunnelled(Client4().Tcp(42301, 22, tcp::kAck, 101, 5001).BuildIp());
  Expect(be, "probe-marked ACK to 198.18.0.10:22", WithOuterMark(ack22, 0x1235), kUnserved);
  const Bytes syn6 = Tunnelled(Client6().Tcp(42302, 22, tcp::kSyn).BuildIp(), true);
  Expect(be, "last-hop SYN to [2001:db8::10]:22", WithOuterMark(syn6, BALLAST_FLOW_LABEL_LAST),
         kUnserved);
}

TEST_CASE("Inner headers are read as the router reads them; inner fragments never pass",
          "[decap][vips]") {
  LbFixture fx;
  SetUpRouter(fx);
  Backend be;
  // The router forwards these (it walks IPv4 options and up to four IPv6
  // extension headers); the backend must find the same port.
  Expect(be, "IPv4 options, 198.18.0.10:80",
         Routed(fx, FromClient4().Ip4Options({1, 1, 1, 1}).Tcp(42400, 80, tcp::kSyn).Build()),
         kDecapped);
  Expect(be, "IPv6 hop-by-hop and destination options, [2001:db8::10]:443",
         Routed(fx, FromClient6()
                        .Ip6Ext(proto::kHopByHop)
                        .Ip6Ext(proto::kDestOpts, 2)
                        .Tcp(42401, 443, tcp::kSyn)
                        .Build()),
         kDecapped);
  Expect(be, "IPv6 destination options, [2001:db8::10]:22",
         Tunnelled(Client6().Ip6Ext(proto::kDestOpts).Tcp(42402, 22, tcp::kSyn).BuildIp(), true),
         kUnserved);
  Expect(be, "five IPv6 extension headers, [2001:db8::10]:443",
         Tunnelled(Client6()
                       .Ip6Ext(proto::kHopByHop)
                       .Ip6Ext(proto::kDestOpts)
                       .Ip6Ext(proto::kRouting)
                       .Ip6Ext(proto::kDestOpts)
                       .Ip6Ext(proto::kDestOpts)
                       .Tcp(42403, 443, tcp::kSyn)
                       .BuildIp(),
                   true),
         kUnserved);
  // Fragments: the router drops them (drop_frag4/6); their ports cannot be
  // checked.
  Expect(be, "first IPv4 fragment to 198.18.0.10:80",
         Tunnelled(Client4().Ip4Fragment(0, true).Tcp(42404, 80, tcp::kSyn).BuildIp()), kUnserved);
  Expect(be, "later IPv4 fragment to 198.18.0.10",
         Tunnelled(Client4().Ip4Fragment(185, false).PayloadSize(64).BuildIp()), kUnserved);
  Expect(be, "IPv6 fragment to [2001:db8::10]:443",
         Tunnelled(Client6().Ip6Fragment(0, true).Tcp(42405, 443, tcp::kSyn).BuildIp(), true),
         kUnserved);
  Expect(be, "TCP cut inside its ports, to 198.18.0.10",
         Tunnelled(Client4().Tcp(42406, 80, tcp::kSyn).CutL4(2).BuildIp()),
         {XDP_DROP, BALLAST_DECAP_V_BAD_INNER});
}

TEST_CASE("A VIP address given alone takes everything to it, as configs before ports",
          "[decap][vips]") {
  Backend be(/*whole_addresses=*/true);
  Expect(be, "SYN to 198.18.0.10:22", Tunnelled(Client4().Tcp(42500, 22, tcp::kSyn).BuildIp()),
         kDecapped);
  Expect(be, "UDP to [2001:db8::10]:9",
         Tunnelled(Client6().Udp(42501, 9).PayloadSize(8).BuildIp(), true), kDecapped);
  Expect(be, "echo request to 198.18.0.10",
         Tunnelled(Client4().Icmp(8, 0, 0x00010001).PayloadSize(56).BuildIp()), kDecapped);
  Expect(be, "SYN to 198.18.0.99:80",
         Tunnelled(Client4(kNotVip4).Tcp(42502, 80, tcp::kSyn).BuildIp()),
         {XDP_DROP, BALLAST_DECAP_V_NOT_VIP});

  // An address is served whole or by ports, not both: refused, nothing added.
  const dataplane::VipKey vip80{ToIpAddress(Lab::Vip4()), 80, IPPROTO_TCP};
  CHECK(be.decap().AddVip(vip80).code() == absl::StatusCode::kInvalidArgument);
  auto vips = be.decap().Vips();
  REQUIRE(vips.ok());
  CHECK(*vips == std::vector<dataplane::VipKey>{{ToIpAddress(Lab::Vip4()), 0, 0},
                                                {ToIpAddress(Lab::Vip6()), 0, 0}});
  Backend ports;
  CHECK(ports.decap().AddVipAddress(ToIpAddress(kVipAnyTcp4)).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(ports.decap().AddVip({ToIpAddress(Lab::Vip4()), 80, IPPROTO_ICMP}).code() ==
        absl::StatusCode::kInvalidArgument);
  vips = ports.decap().Vips();
  REQUIRE(vips.ok());
  CHECK(vips->size() == 6);  // the lab's five and 198.18.0.11:0/tcp
  CHECK(std::find(vips->begin(), vips->end(),
                  dataplane::VipKey{ToIpAddress(kVipAnyTcp4), 0, IPPROTO_TCP}) != vips->end());
}

}  // namespace ballast::bpftest
