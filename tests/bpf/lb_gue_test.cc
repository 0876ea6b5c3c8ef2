// GUE (a VIP with BALLAST_VIP_F_GUE): the outer header is IP + UDP, to the
// GUE port, from a source port the flow's hash picks, with the client's IP
// packet right after the UDP header; a backend's bounce of it is the
// router's; xdp_decap takes it off.
#include <linux/bpf.h>
#include <netinet/in.h>

#include <cstdio>
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "agent/dataplane/decap.h"
#include "ballast_flow_hash.h"
#include "tests/bpf/lb_fixture.h"
#include "tests/bpf/tshark.h"
#include "tests/lib/netns.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

void SetGuePort(LbFixture& fx, uint16_t port) {
  dataplane::Settings s;
  s.src4 = ToIpAddress(Lab::Src4());
  s.src6 = ToIpAddress(Lab::Src6());
  s.policy = BALLAST_POLICY_ICMP_TOO_BIG;
  s.gue_port = port;
  fx.SetSettings(s);
}

// The lab's VIPs with GUE on (or off again).
void SetGue(LbFixture& fx, bool on) {
  const dataplane::VipOptions o{.gue = on};
  fx.AddVip(Lab::Vip4(), 80, IPPROTO_TCP, kVipTcp4, o);
  fx.AddVip(Lab::Vip6(), 443, IPPROTO_TCP, kVipTcp6, o);
  fx.AddVip(Lab::Vip4(), 443, IPPROTO_TCP, kVip4To6, o);
  fx.AddVip(Lab::Vip4(), 53, IPPROTO_UDP, kVipUdp4, o);
}

// The source port the program must choose, written again from the ABI.
uint16_t ExpectedPort(const ballast_flow_key& key) {
  return static_cast<uint16_t>(0xC000 | (ballast_flow_label(&key) & 0x3FFF));
}

Addr OuterDst(const Bytes& out) {
  auto f = pktgen::ParseFrame(out);
  REQUIRE(f.ok());
  return f->ip->dst;
}

TEST_CASE("A GUE VIP's packets are IP + UDP + the client's packet, one source port per flow",
          "[lb][gue]") {
  LbFixture fx;
  SetUpLab(fx);
  SetGue(fx, true);

  for (uint16_t sport = 41000; sport < 41008; ++sport) {
    const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), sport, 80, IPPROTO_TCP);
    INFO("sport " << sport);
    const Bytes syn = FromClient4().Tcp(sport, 80, tcp::kSyn, 1000).Build();
    const Bytes ack = FromClient4().Tcp(sport, 80, tcp::kAck, 1001, 1).Build();
    const Bytes data =
        FromClient4().Tcp(sport, 80, tcp::kAck | tcp::kPsh, 1001, 1).PayloadSize(200).Build();
    for (const Bytes* in : {&syn, &ack, &data}) {
      const Outcome o = fx.Run(*in);
      REQUIRE(o.verdict == BALLAST_V_TX);
      CheckEncapsulated(o.out, {.outer_family = 4,
                                .outer_src = Lab::Src4(),
                                .outer_dst = fx.BackendAddr(fx.Predict(kVipTcp4, key)),
                                .inner_ip = pktgen::IpPacketOf(*in),
                                .gue_sport = ExpectedPort(key)});
    }
    CHECK(fx.Flow(key).has_value());
  }

  // IPv6 in IPv6, IPv4 in IPv6, UDP in IPv4: the same UDP header.
  {
    const Bytes in = FromClient6().Tcp(41000, 443, tcp::kSyn, 7).Build();
    const auto key = FlowKey(Lab::Client6(), Lab::Vip6(), 41000, 443, IPPROTO_TCP);
    const Outcome o = fx.Run(in);
    REQUIRE(o.verdict == BALLAST_V_TX);
    CheckEncapsulated(o.out, {.outer_family = 6,
                              .outer_src = Lab::Src6(),
                              .outer_dst = fx.BackendAddr(fx.Predict(kVipTcp6, key)),
                              .inner_ip = pktgen::IpPacketOf(in),
                              .gue_sport = ExpectedPort(key)});
    auto f = pktgen::ParseFrame(o.out);
    REQUIRE(f.ok());
    CHECK(f->ip->flow_label != BALLAST_FLOW_LABEL_LAST);  // the SYN's bounce tag
  }
  {
    const Bytes in = FromClient4().Tcp(41000, 443, tcp::kSyn, 7).Build();
    const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), 41000, 443, IPPROTO_TCP);
    const Outcome o = fx.Run(in);
    REQUIRE(o.verdict == BALLAST_V_TX);
    CheckEncapsulated(o.out, {.outer_family = 6,
                              .outer_src = Lab::Src6(),
                              .outer_dst = fx.BackendAddr(fx.Predict(kVip4To6, key)),
                              .inner_ip = pktgen::IpPacketOf(in),
                              .gue_sport = ExpectedPort(key)});
  }
  {
    const Bytes in = FromClient4().Udp(5353, 53).PayloadSize(32).Build();
    const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), 5353, 53, IPPROTO_UDP);
    const Outcome o = fx.Run(in);
    REQUIRE(o.verdict == BALLAST_V_TX);
    CheckEncapsulated(o.out, {.outer_family = 4,
                              .outer_src = Lab::Src4(),
                              .outer_dst = fx.BackendAddr(fx.Predict(kVipUdp4, key)),
                              .inner_ip = pktgen::IpPacketOf(in),
                              .gue_sport = ExpectedPort(key)});
  }

  // Another port from the settings; GUE off again: IP-in-IP, the flow kept.
  SetGuePort(fx, 5555);
  const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), 41000, 80, IPPROTO_TCP);
  const Bytes more =
      FromClient4().Tcp(41000, 80, tcp::kAck | tcp::kPsh, 1201, 1).PayloadSize(10).Build();
  Outcome o = fx.Run(more);
  REQUIRE(o.verdict == BALLAST_V_TX);
  CheckEncapsulated(o.out, {.outer_family = 4,
                            .outer_src = Lab::Src4(),
                            .outer_dst = fx.BackendAddr(fx.Predict(kVipTcp4, key)),
                            .inner_ip = pktgen::IpPacketOf(more),
                            .gue_sport = ExpectedPort(key),
                            .gue_dport = 5555});
  SetGue(fx, false);
  o = fx.Run(more);
  REQUIRE(o.verdict == BALLAST_V_TX);
  CheckEncapsulated(o.out, {.outer_family = 4,
                            .outer_src = Lab::Src4(),
                            .outer_dst = fx.BackendAddr(fx.Predict(kVipTcp4, key)),
                            .inner_ip = pktgen::IpPacketOf(more)});
}

TEST_CASE("GUE's 8 bytes count against the next hop's MTU", "[lb][gue]") {
  LbFixture fx;
  SetUpLab(fx);
  SetGue(fx, true);
  // 1,472 bytes of IP fit in 1,500 with IPv4 + UDP around them; 1,473 do not.
  const Bytes fits = FromClient4().Tcp(42000, 80, tcp::kAck, 1, 1).PayloadSize(1472 - 40).Build();
  CHECK(fx.Run(fits).verdict == BALLAST_V_TX);
  const Bytes big = FromClient4().Tcp(42001, 80, tcp::kAck, 1, 1).PayloadSize(1473 - 40).Build();
  const Outcome o = fx.Run(big);
  REQUIRE(o.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
  auto f = pktgen::ParseFrame(o.out);
  REQUIRE(f.ok());
  REQUIRE(f->ip->l4.has_value());
  CHECK(f->ip->l4->icmp_type == 3);
  CHECK(f->ip->l4->icmp_code == 4);
  CHECK((f->ip->l4->icmp_rest & 0xffff) == 1472);  // the MTU the client may use
}

TEST_CASE("10,000 flows spread evenly over GUE source ports", "[lb][gue]") {
  LbFixture fx(16384);
  SetUpLab(fx);
  SetGue(fx, true);
  constexpr int kCells = 64;  // the ports' low 6 bits
  std::map<int, int> count;
  std::set<uint16_t> ports;
  int n = 0, mismatched = 0;
  ForEachSpreadFlow(fx, [&](const ballast_flow_key& key, const pktgen::IpView& outer) {
    REQUIRE(outer.l4.has_value());
    const uint16_t port = outer.l4->sport;
    mismatched += port != ExpectedPort(key);
    CHECK(port >= 0xC000);
    ports.insert(port);
    ++count[port % kCells];
    ++n;
  });
  CHECK(mismatched == 0);
  const double expected = static_cast<double>(n) / kCells;
  double chi2 = 0;
  int lo = n, hi = 0;
  for (int cell = 0; cell < kCells; ++cell) {
    const int k = count[cell];
    chi2 += (k - expected) * (k - expected) / expected;
    lo = std::min(lo, k);
    hi = std::max(hi, k);
  }
  std::printf(
      "GUE source ports: %d flows, %zu distinct ports of 16384; by the low 6 bits %d..%d flows "
      "each (expected %.1f), chi-square %.1f (df %d; 103.4 is the 0.1%% critical value)\n",
      n, ports.size(), lo, hi, expected, chi2, kCells - 1);
  CHECK(ports.size() > 7000);  // 10,000 draws from 16,384: about 7,300 distinct
  CHECK(chi2 < 103.4);
}

// A backend's decap bounce of a GUE frame: MACs and outer addresses
// swapped, the UDP ports kept.
Bytes Bounce(const Bytes& gue, int outer_family) {
  Bytes b = gue;
  for (int i = 0; i < 6; ++i) std::swap(b[i], b[6 + i]);
  if (outer_family == 4) {
    for (size_t i = 0; i < 4; ++i) std::swap(b[14 + 12 + i], b[14 + 16 + i]);
  } else {
    for (size_t i = 0; i < 16; ++i) std::swap(b[14 + 8 + i], b[14 + 24 + i]);
  }
  return b;
}

TEST_CASE("A GUE bounce to the router's GUE port goes to the next choice, as GUE",
          "[lb][gue][bounce]") {
  LbFixture fx;
  SetUpLab(fx);
  SetGue(fx, true);
  for (const bool v6 : {false, true}) {
    INFO((v6 ? "IPv6" : "IPv4"));
    const uint16_t sport = 43000, dport = v6 ? 443 : 80;
    const auto key = FlowKey(v6 ? Lab::Client6() : Lab::Client4(), v6 ? Lab::Vip6() : Lab::Vip4(),
                             sport, dport, IPPROTO_TCP);
    const Bytes syn = (v6 ? FromClient6() : FromClient4()).Tcp(sport, dport, tcp::kSyn, 9).Build();
    const Outcome o1 = fx.Run(syn);
    REQUIRE(o1.verdict == BALLAST_V_TX);
    const uint32_t first = fx.BackendAt(OuterDst(o1.out));
    REQUIRE(first != 0);

    // To another UDP port of the router: not a bounce (the kernel's).
    Bytes other = Bounce(o1.out, v6 ? 6 : 4);
    const size_t udp = 14 + (v6 ? 40 : 20);
    other[udp + 3] ^= 1;  // destination port 6081
    CHECK(fx.Run(other).verdict == BALLAST_V_PASS_NOT_VIP);
    REQUIRE(fx.Handshake(key)->backend_id == first);

    const Outcome o2 = fx.Run(Bounce(o1.out, v6 ? 6 : 4));
    REQUIRE(o2.verdict == BALLAST_V_BOUNCE_TX);
    const uint32_t second = fx.BackendAt(OuterDst(o2.out));
    CHECK(second != first);
    CHECK(second == fx.PredictNext(v6 ? kVipTcp6 : kVipTcp4, key,
                                   fx.Predict(v6 ? kVipTcp6 : kVipTcp4, key), first));
    CheckEncapsulated(o2.out, {.outer_family = v6 ? 6 : 4,
                               .outer_src = v6 ? Lab::Src6() : Lab::Src4(),
                               .outer_dst = fx.BackendAddr(second),
                               .inner_ip = pktgen::IpPacketOf(syn),
                               .gue_sport = ExpectedPort(key)});
    // The client's ACK follows the bounce.
    const Outcome ack =
        fx.Run((v6 ? FromClient6() : FromClient4()).Tcp(sport, dport, tcp::kAck, 10, 1).Build());
    REQUIRE(ack.verdict == BALLAST_V_TX);
    CHECK(fx.BackendAt(OuterDst(ack.out)) == second);
  }
  // A GUE packet of an IPv6 client inside IPv4 is not something the router
  // sends: dropped, counted.
  const Bytes in6 = FromClient6().Tcp(43001, 443, tcp::kSyn, 9).Build();
  const Bytes inner6 = pktgen::IpPacketOf(in6);
  pktgen::PacketBuilder b;
  b.Eth(Lab::NexthopDmac(), Lab::RouterMac()).Ip4(Lab::Backend4(1), Lab::Src4());
  Bytes forged = b.Udp(0xC123, BALLAST_GUE_PORT_DEFAULT).Payload(inner6).Build();
  CHECK(fx.Run(forged).verdict == BALLAST_V_DROP_BOUNCE_BAD);
}

TEST_CASE("xdp_decap takes GUE off on its port only, and bounces it with its ports",
          "[lb][gue][decap]") {
  auto ns = pktgen::ScopedNetns::Create("ballast-bt-gue", {});
  INFO(ns.status().ToString());
  REQUIRE(ns.ok());
  LbFixture fx;
  SetUpLab(fx);
  SetGue(fx, true);
  const std::unique_ptr<dataplane::Decap> decap = LoadBackendDecap();
  const auto run_decap = [&](const Bytes& frame) { return RunDecap(*decap, frame); };
  const auto stats = [&] { return DecapStats(*decap); };
  const Bytes ack4 = FromClient4().Tcp(44000, 80, tcp::kAck, 5, 1).PayloadSize(20).Build();
  const Bytes ack6 = FromClient6().Tcp(44000, 443, tcp::kAck, 5, 1).PayloadSize(20).Build();
  const Bytes ack4in6 = FromClient4().Tcp(44000, 443, tcp::kAck, 5, 1).Build();
  const Outcome o4 = fx.Run(ack4), o6 = fx.Run(ack6), o46 = fx.Run(ack4in6);
  REQUIRE(o4.verdict == BALLAST_V_TX);
  REQUIRE(o6.verdict == BALLAST_V_TX);
  REQUIRE(o46.verdict == BALLAST_V_TX);

  // GUE not accepted yet: the kernel's (a UDP packet like any other).
  CHECK(run_decap(o4.out).out == o4.out);
  REQUIRE(decap->SetGuePort(BALLAST_GUE_PORT_DEFAULT).ok());
  const auto before = stats();
  for (const auto* pair : {&o4, &o6, &o46}) {
    const Bytes& in = pair == &o4 ? ack4 : pair == &o6 ? ack6 : ack4in6;
    // without the probation probe's mark: never looked up
    const auto r = run_decap(WithOuterMark(pair->out, 0));
    CHECK(r.action == XDP_PASS);
    CHECK(Bytes(r.out.begin() + 14, r.out.end()) == pktgen::IpPacketOf(in));
    CHECK(((r.out[12] << 8) | r.out[13]) ==
          (pktgen::IpPacketOf(in)[0] >> 4 == 4 ? 0x0800 : 0x86DD));
  }
  CHECK(stats()[BALLAST_DECAP_V_DECAPPED_GUE] - before[BALLAST_DECAP_V_DECAPPED_GUE] == 3);
  CHECK(stats()[BALLAST_DECAP_V_DECAPPED] == before[BALLAST_DECAP_V_DECAPPED]);

  // A UDP length that does not match the outer header's, or an inner packet
  // that is not IP: dropped, counted.
  Bytes bad_len = o4.out;
  bad_len[14 + 20 + 5] ^= 1;
  Bytes not_ip = o4.out;
  not_ip[14 + 20 + 8] = 0x15;
  for (const Bytes* b : {&bad_len, &not_ip}) {
    const auto r = run_decap(*b);
    CHECK(r.action == XDP_DROP);
  }
  CHECK(stats()[BALLAST_DECAP_V_BAD_OUTER] - before[BALLAST_DECAP_V_BAD_OUTER] == 2);
  // Another port: untouched.
  Bytes other = o4.out;
  other[14 + 20 + 3] ^= 1;
  const auto r = run_decap(other);
  CHECK(r.action == XDP_PASS);
  CHECK(r.out == other);

  // Second chance: no listener for a SYN, the frame goes back with its
  // ports, and the router takes it.
  const Bytes syn = FromClient4().Tcp(44100, 80, tcp::kSyn, 100, 0).Build();
  const Outcome s1 = fx.Run(syn);
  REQUIRE(s1.verdict == BALLAST_V_TX);
  const auto b1 = run_decap(s1.out);
  REQUIRE(b1.action == XDP_TX);
  CHECK(b1.out == Bounce(s1.out, 4));
  const Outcome s2 = fx.Run(b1.out);
  CHECK(s2.verdict == BALLAST_V_BOUNCE_TX);

  // tshark reads the GUE packets as IP inside UDP with good checksums.
  auto rows = Dissect({o4.out, o6.out},
                      {"frame.protocols", "ip.checksum.status", "tcp.checksum.status",
                       "udp.dstport", "_ws.malformed"},
                      "-d udp.port==6080,ip");
  INFO(rows.status().ToString());
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0]["frame.protocols"].rfind("eth:ethertype:ip:udp:ip:tcp", 0) == 0);
  CHECK((*rows)[0]["ip.checksum.status"] == "1,1");
  CHECK((*rows)[0]["tcp.checksum.status"] == "1");
  CHECK((*rows)[0]["udp.dstport"] == "6080");
  CHECK((*rows)[0]["_ws.malformed"].empty());
  // tshark's "ip" hands a version-6 packet to its IPv6 dissector
  CHECK((*rows)[1]["frame.protocols"].rfind("eth:ethertype:ipv6:udp:ip:ipv6:tcp", 0) == 0);
  CHECK((*rows)[1]["tcp.checksum.status"] == "1");
  CHECK((*rows)[1]["_ws.malformed"].empty());
}

}  // namespace
}  // namespace ballast::bpftest
