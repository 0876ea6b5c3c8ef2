// Forwarding: VIP lookup, Maglev pick, encapsulation (IPv4-in-IPv4,
// IPv6-in-IPv6, IPv4-in-IPv6), and everything that is not for a VIP.
#include <linux/bpf.h>
#include <netinet/in.h>

#include <set>

#include <catch2/catch.hpp>

#include "agent/maglev/maglev.h"
#include "ballast_flow_hash.h"
#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

using pktgen::PacketBuilder;
namespace tcp = pktgen::tcp;
namespace proto = pktgen::proto;

TEST_CASE("IPv4 SYN to a VIP is IPv4-in-IPv4 encapsulated to the backend the table picks",
          "[lb][forward]") {
  // SETUP
  LbFixture fx;
  SetUpLab(fx);
  std::set<uint32_t> seen;
  for (uint16_t sport = 40000; sport < 40024; ++sport) {
    // PKTGEN
    const Bytes in =
        FromClient4().Tcp(sport, 80, tcp::kSyn, 1000).TcpOptions({2, 4, 5, 180}).Build();
    const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), sport, 80, IPPROTO_TCP);
    const uint32_t want = fx.Predict(kVipTcp4, key);
    // run
    const Outcome o = fx.Run(in);
    // CHECK
    INFO("sport " << sport << ", predicted backend " << want);
    REQUIRE(o.action == XDP_TX);
    REQUIRE(o.verdict == BALLAST_V_TX);
    const auto outer = CheckEncapsulated(o.out, {.outer_family = 4,
                                                 .outer_src = Lab::Src4(),
                                                 .outer_dst = fx.BackendAddr(want),
                                                 .inner_ip = pktgen::IpPacketOf(in)});
    CHECK(outer.df);            // the client's SYN had DF set
    CHECK_FALSE(fx.Flow(key));  // the SYN's handshake is in a slot until the ACK
    const auto slot = fx.Handshake(key);
    REQUIRE(slot.has_value());
    CHECK(slot->backend_id == want);
    seen.insert(want);
  }
  CHECK(seen.size() == 3);  // the hash spreads flows over the table
  uint64_t new_flows = 0, packets = 0;
  for (uint32_t id : {1u, 2u, 3u}) {
    new_flows += fx.BackendStats(id).new_flows;
    packets += fx.BackendStats(id).packets;
  }
  CHECK(new_flows == 0);  // a SYN counts once its client shows up (lb_conntrack_test)
  CHECK(packets == 24);
  const auto vs = fx.VipStats(kVipTcp4);
  CHECK(vs.packets == 24);
  CHECK(vs.bytes == 24 * (20 + 24));  // IP bytes
  CHECK(vs.dropped == 0);
}

TEST_CASE(
    "IPv6 SYN to a VIP is IPv6-in-IPv6 encapsulated; flow label from the 5-tuple after the SYN",
    "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  std::set<uint32_t> seen;
  for (uint16_t sport = 50000; sport < 50024; ++sport) {
    const Bytes in = FromClient6().Tos(0x28).Tcp(sport, 443, tcp::kSyn).Build();
    const auto key = FlowKey(Lab::Client6(), Lab::Vip6(), sport, 443, IPPROTO_TCP);
    const uint32_t want = fx.Predict(kVipTcp6, key);
    const Outcome o = fx.Run(in);
    INFO("sport " << sport << ", predicted backend " << want);
    REQUIRE(o.action == XDP_TX);
    REQUIRE(o.verdict == BALLAST_V_TX);
    const auto outer = CheckEncapsulated(o.out, {.outer_family = 6,
                                                 .outer_src = Lab::Src6(),
                                                 .outer_dst = fx.BackendAddr(want),
                                                 .inner_ip = pktgen::IpPacketOf(in),
                                                 .outer_tos = 0x28});
    // A SYN's label is its bounce tag (bpf/lib/mark.h), never the last-hop
    // mark.
    CHECK(outer.flow_label != BALLAST_FLOW_LABEL_LAST);
    CHECK(fx.Handshake(key).has_value());
    seen.insert(want);
    // Every packet of the flow after the SYN carries the same label (one
    // receive queue): the 5-tuple's, without the probe bit.
    const Bytes ack = FromClient6().Tcp(sport, 443, tcp::kAck, 1001, 5001).Build();
    const Outcome oa = fx.Run(ack);
    REQUIRE(oa.action == XDP_TX);
    const auto outer_ack = CheckEncapsulated(oa.out, {.outer_family = 6,
                                                      .outer_src = Lab::Src6(),
                                                      .outer_dst = fx.BackendAddr(want),
                                                      .inner_ip = pktgen::IpPacketOf(ack)});
    CHECK(outer_ack.flow_label == (ballast_flow_label(&key) & ~BALLAST_FLOW_LABEL_PROBE_BIT));
    // The next one is the probation probe (probation.h): the probe bit and
    // the flow's tag.
    const Bytes data = FromClient6().Tcp(sport, 443, tcp::kAck, 1001, 5001).PayloadSize(1).Build();
    const uint32_t probe = pktgen::ParseFrame(fx.Run(data).out)->ip->flow_label;
    CHECK((probe & BALLAST_FLOW_LABEL_PROBE_BIT) != 0);
    CHECK(probe != BALLAST_FLOW_LABEL_LAST);
  }
  CHECK(seen.size() == 3);
}

TEST_CASE("IPv4 client to an IPv6 backend is IPv4-in-IPv6", "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const Bytes in = FromClient4().Tcp(40001, 443, tcp::kSyn).Build();
  const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), 40001, 443, IPPROTO_TCP);
  const uint32_t want = fx.Predict(kVip4To6, key);
  const Outcome o = fx.Run(in);
  REQUIRE(o.action == XDP_TX);
  REQUIRE(o.verdict == BALLAST_V_TX);
  const auto outer = CheckEncapsulated(o.out, {.outer_family = 6,
                                               .outer_src = Lab::Src6(),
                                               .outer_dst = fx.BackendAddr(want),
                                               .inner_ip = pktgen::IpPacketOf(in)});
  CHECK(outer.proto == proto::kIpip);
  CHECK(outer.flow_label != BALLAST_FLOW_LABEL_LAST);  // the SYN's tag
  const Bytes ack = FromClient4().Tcp(40001, 443, tcp::kAck, 1001, 5001).Build();
  CHECK(pktgen::ParseFrame(fx.Run(ack).out)->ip->flow_label ==
        (ballast_flow_label(&key) & ~BALLAST_FLOW_LABEL_PROBE_BIT));
}

TEST_CASE("IPv6 client to an IPv4 backend is dropped and counted", "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const Outcome o = fx.Run(FromClient6().Tcp(40001, 80, tcp::kSyn).Build());
  CHECK(o.action == XDP_DROP);
  CHECK(o.verdict == BALLAST_V_DROP_FAMILY);
  CHECK(fx.VipStats(kVipMixed6).dropped == 1);
}

TEST_CASE("Maglev table from ballast_maglev: every flow goes where the table says",
          "[lb][forward][maglev]") {
  LbFixture fx;
  for (int i = 1; i <= 3; ++i) fx.AddBackend(static_cast<uint32_t>(i), Lab::Backend4(i));
  fx.AddVip(Lab::Vip4(), 80, IPPROTO_TCP, kVipTcp4);
  const std::vector<maglev::Backend> backends = {
      {1, Lab::Backend4(1).ToString(), 10},
      {2, Lab::Backend4(2).ToString(), 20},
      {3, Lab::Backend4(3).ToString(), 70},
  };
  auto table = maglev::BuildTable(backends, BALLAST_DEFAULT_TABLE_SIZE);
  INFO(table.status().ToString());
  REQUIRE(table.ok());
  fx.SetTable(kVipTcp4, *table);
  std::map<uint32_t, int> hits;
  for (uint16_t sport = 1024; sport < 1124; ++sport) {
    const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), sport, 80, IPPROTO_TCP);
    const Outcome o = fx.Run(FromClient4().Tcp(sport, 80, tcp::kSyn).Build());
    REQUIRE(o.verdict == BALLAST_V_TX);
    const auto v = pktgen::ParseFrame(o.out);
    REQUIRE(v.ok());
    const uint32_t got = fx.BackendAt(v->ip->dst);
    REQUIRE(got == fx.Predict(kVipTcp4, key));
    ++hits[got];
  }
  CHECK(hits.size() == 3);
  CHECK(hits[3] > hits[1]);  // weight 70 vs 10
}

TEST_CASE("Port-0 VIP takes every port; a port-specific VIP wins over it", "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const Addr any = Addr::Parse("198.18.0.20");
  fx.AddVip(any, 0, IPPROTO_TCP, 10);
  fx.SetUniformTable(10, 2);
  fx.AddVip(any, 22, IPPROTO_TCP, 11);
  fx.SetUniformTable(11, 3);
  for (uint16_t port : {1, 80, 8080, 65535}) {
    const Bytes in = FromClient4(any).Tcp(40000, port, tcp::kSyn).Build();
    const Outcome o = fx.Run(in);
    INFO("port " << port);
    REQUIRE(o.verdict == BALLAST_V_TX);
    CheckEncapsulated(o.out, {.outer_family = 4,
                              .outer_src = Lab::Src4(),
                              .outer_dst = Lab::Backend4(2),
                              .inner_ip = pktgen::IpPacketOf(in)});
  }
  const Bytes ssh = FromClient4(any).Tcp(40000, 22, tcp::kSyn).Build();
  const Outcome o = fx.Run(ssh);
  REQUIRE(o.verdict == BALLAST_V_TX);
  CheckEncapsulated(o.out, {.outer_family = 4,
                            .outer_src = Lab::Src4(),
                            .outer_dst = Lab::Backend4(3),
                            .inner_ip = pktgen::IpPacketOf(ssh)});
  // Port 0 of TCP says nothing about UDP: unserved, dropped.
  const Bytes udp = FromClient4(any).Udp(40000, 22).PayloadSize(10).Build();
  const Outcome u = fx.Run(udp);
  CHECK(u.action == XDP_DROP);
  CHECK(u.verdict == BALLAST_V_DROP_VIP_UNSERVED);
}

TEST_CASE("Traffic that is not for a VIP passes to the kernel byte for byte", "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const std::vector<VerdictCase> cases = {
      {"TCP to another address",
       FromClient4(Addr::Parse("198.18.0.99")).Tcp(1, 80, tcp::kSyn).Build(),
       BALLAST_V_PASS_NOT_VIP},
      {"IPv6 TCP to another address",
       FromClient6(Addr::Parse("2001:db8::99")).Tcp(1, 443, tcp::kSyn).Build(),
       BALLAST_V_PASS_NOT_VIP},
      {"ARP",
       PacketBuilder()
           .Eth(Lab::TorMac(), Lab::RouterMac())
           .EtherType(pktgen::kEthArp)
           .PayloadSize(28)
           .Build(),
       BALLAST_V_PASS_NOT_IP},
      {"LLDP",
       PacketBuilder()
           .Eth(Lab::TorMac(), Mac::Parse("01:80:c2:00:00:0e"))
           .EtherType(0x88cc)
           .PayloadSize(40)
           .Build(),
       BALLAST_V_PASS_NOT_IP},
      {"ICMP echo to another address",
       FromClient4(Addr::Parse("198.18.0.99")).Icmp(8, 0, 0x00010001).PayloadSize(56).Build(),
       BALLAST_V_PASS_NOT_VIP},
      {"IPv4 fragment to another address",
       FromClient4(Addr::Parse("198.18.0.99"))
           .Ip4Fragment(0, true)
           .Udp(1, 53)
           .PayloadSize(100)
           .Build(),
       BALLAST_V_PASS_NOT_VIP},
      {"VLAN-tagged TCP to another address",
       FromClient4(Addr::Parse("198.18.0.99")).Vlan(7).Tcp(1, 80, tcp::kAck).Build(),
       BALLAST_V_PASS_NOT_VIP},
  };
  ExpectVerdicts(fx, cases, XDP_PASS);
  for (uint32_t id : {1u, 2u, 3u, 11u, 12u, 13u}) CHECK(fx.BackendStats(id).packets == 0);
}

// The router does not own a VIP address: what it passed to its kernel for
// one would go back out by the default route, to the ToR, which sends it
// to a router again until the TTL runs out (the ECMP lab saw one SYN to an
// unused port cross the ToR 64 times).
TEST_CASE("A VIP address's unserved ports and protocols are dropped, never passed",
          "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const std::vector<VerdictCase> cases = {
      {"TCP to the VIP address, port without VIP", FromClient4().Tcp(1, 8080, tcp::kSyn).Build(),
       BALLAST_V_DROP_VIP_UNSERVED},
      {"TCP ACK to the VIP address, port without VIP", FromClient4().Tcp(1, 81, tcp::kAck).Build(),
       BALLAST_V_DROP_VIP_UNSERVED},
      {"UDP to a TCP-only VIP port", FromClient4().Udp(1, 80).PayloadSize(8).Build(),
       BALLAST_V_DROP_VIP_UNSERVED},
      {"GRE to the VIP address", FromClient4().L4Proto(47).PayloadSize(24).Build(),
       BALLAST_V_DROP_VIP_UNSERVED},
      {"IPv6 TCP to the VIP address, port without VIP",
       FromClient6().Tcp(1, 8080, tcp::kSyn).Build(), BALLAST_V_DROP_VIP_UNSERVED},
      {"IPv6 UDP to the VIP address", FromClient6().Udp(1, 53).PayloadSize(8).Build(),
       BALLAST_V_DROP_VIP_UNSERVED},
  };
  ExpectVerdicts(fx, cases, XDP_DROP);
  for (uint32_t id : {1u, 2u, 3u, 11u, 12u, 13u}) CHECK(fx.BackendStats(id).packets == 0);
}

TEST_CASE("VLAN-tagged SYN to a VIP: encapsulated, outer frame untagged", "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const Bytes in = FromClient4().Vlan(100, 3).Tcp(40000, 80, tcp::kSyn).Build();
  const uint32_t want =
      fx.Predict(kVipTcp4, FlowKey(Lab::Client4(), Lab::Vip4(), 40000, 80, IPPROTO_TCP));
  const Outcome o = fx.Run(in);
  REQUIRE(o.action == XDP_TX);
  REQUIRE(o.verdict == BALLAST_V_TX);
  CheckEncapsulated(o.out, {.outer_family = 4,
                            .outer_src = Lab::Src4(),
                            .outer_dst = fx.BackendAddr(want),
                            .inner_ip = pktgen::IpPacketOf(in)});

  const Bytes in6 = FromClient6().Vlan(100).Tcp(40000, 443, tcp::kSyn).Build();
  const uint32_t want6 =
      fx.Predict(kVipTcp6, FlowKey(Lab::Client6(), Lab::Vip6(), 40000, 443, IPPROTO_TCP));
  const Outcome o6 = fx.Run(in6);
  REQUIRE(o6.verdict == BALLAST_V_TX);
  CheckEncapsulated(o6.out, {.outer_family = 6,
                             .outer_src = Lab::Src6(),
                             .outer_dst = fx.BackendAddr(want6),
                             .inner_ip = pktgen::IpPacketOf(in6)});
}

TEST_CASE("IPv4 with options: the options travel untouched inside the tunnel", "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  for (const Bytes& opts : {Bytes{0x94, 0x04, 0, 0},                     // router alert
                            Bytes{1, 1, 1, 7, 11, 4, 0, 0, 0, 0, 0, 0},  // NOPs + record route
                            Bytes(40, 1)}) {                             // 40 bytes: the maximum
    const Bytes in = FromClient4().Ip4Options(opts).Tcp(40000, 80, tcp::kSyn).Build();
    const uint32_t want =
        fx.Predict(kVipTcp4, FlowKey(Lab::Client4(), Lab::Vip4(), 40000, 80, IPPROTO_TCP));
    const Outcome o = fx.Run(in);
    INFO(opts.size() << " bytes of options");
    REQUIRE(o.verdict == BALLAST_V_TX);
    CheckEncapsulated(o.out, {.outer_family = 4,
                              .outer_src = Lab::Src4(),
                              .outer_dst = fx.BackendAddr(want),
                              .inner_ip = pktgen::IpPacketOf(in)});
  }
}

TEST_CASE("IPv6 extension headers are walked; too many of them is its own verdict",
          "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const Bytes in = FromClient6()
                       .Ip6Ext(proto::kHopByHop)
                       .Ip6Ext(proto::kRouting, 1)
                       .Ip6Ext(proto::kDestOpts)
                       .Tcp(40000, 443, tcp::kSyn)
                       .Build();
  const uint32_t want =
      fx.Predict(kVipTcp6, FlowKey(Lab::Client6(), Lab::Vip6(), 40000, 443, IPPROTO_TCP));
  const Outcome o = fx.Run(in);
  REQUIRE(o.verdict == BALLAST_V_TX);
  CheckEncapsulated(o.out, {.outer_family = 6,
                            .outer_src = Lab::Src6(),
                            .outer_dst = fx.BackendAddr(want),
                            .inner_ip = pktgen::IpPacketOf(in)});

  PacketBuilder long_chain = FromClient6();
  for (int i = 0; i < 8; ++i) long_chain.Ip6Ext(proto::kDestOpts);
  const Bytes chain = long_chain.Tcp(40000, 443, tcp::kSyn).Build();
  const Outcome c = fx.Run(chain);
  // To a VIP address: dropped even under the pass policy (passed, the
  // kernel would route it back out to the ToR).
  CHECK(c.verdict == BALLAST_V_IP6_EXT);
  CHECK(c.action == XDP_DROP);

  const Bytes ah = FromClient6().L4Proto(51).PayloadSize(40).Build();  // AH: not balanced
  const Outcome a = fx.Run(ah);
  CHECK(a.verdict == BALLAST_V_IP6_EXT);
  CHECK(a.action == XDP_DROP);
}

TEST_CASE("UDP to a VIP: encapsulated, and the flow stays pinned across a table change",
          "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const Bytes in = FromClient4().Udp(5353, 53).PayloadSize(48).Build();
  const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), 5353, 53, IPPROTO_UDP);
  const uint32_t first = fx.Predict(kVipUdp4, key);
  Outcome o = fx.Run(in);
  REQUIRE(o.verdict == BALLAST_V_TX);
  CheckEncapsulated(o.out, {.outer_family = 4,
                            .outer_src = Lab::Src4(),
                            .outer_dst = fx.BackendAddr(first),
                            .inner_ip = pktgen::IpPacketOf(in)});
  auto flow = fx.Flow(key);
  REQUIRE(flow);
  CHECK(flow->state == BALLAST_FLOW_UDP);
  CHECK(fx.FlowMap(key) == "flows_udp");
  CHECK(fx.BackendStats(first).new_flows == 1);

  const uint32_t other = first == 1 ? 2 : 1;
  fx.SetUniformTable(kVipUdp4, other);
  o = fx.Run(in);
  REQUIRE(o.verdict == BALLAST_V_TX);
  CheckEncapsulated(o.out, {.outer_family = 4,
                            .outer_src = Lab::Src4(),
                            .outer_dst = fx.BackendAddr(first),
                            .inner_ip = pktgen::IpPacketOf(in)});
  // A new UDP flow follows the new table.
  const Bytes in2 = FromClient4().Udp(5354, 53).PayloadSize(48).Build();
  o = fx.Run(in2);
  REQUIRE(o.verdict == BALLAST_V_TX);
  CHECK(fx.BackendAt(pktgen::ParseFrame(o.out)->ip->dst) == other);
}

TEST_CASE("Outer IPv4 header copies the client's DF bit and TOS", "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const Bytes in = FromClient4().Df(false).Tos(0xb8).Tcp(40000, 80, tcp::kSyn).Build();
  const uint32_t want =
      fx.Predict(kVipTcp4, FlowKey(Lab::Client4(), Lab::Vip4(), 40000, 80, IPPROTO_TCP));
  const Outcome o = fx.Run(in);
  REQUIRE(o.verdict == BALLAST_V_TX);
  const auto outer = CheckEncapsulated(o.out, {.outer_family = 4,
                                               .outer_src = Lab::Src4(),
                                               .outer_dst = fx.BackendAddr(want),
                                               .inner_ip = pktgen::IpPacketOf(in),
                                               .outer_tos = 0xb8});
  CHECK_FALSE(outer.df);  // spec: DF copied from the client's packet
}

TEST_CASE("TTL / hop limit <= 1 goes to the kernel (time exceeded)", "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  for (uint8_t ttl : {0, 1}) {
    const Bytes in = FromClient4().Ttl(ttl).Tcp(40000, 80, tcp::kSyn).Build();
    const Outcome o = fx.Run(in);
    CHECK(o.action == XDP_PASS);
    CHECK(o.verdict == BALLAST_V_PASS_TTL);
    CHECK(o.out == in);
    const Bytes in6 = FromClient6().Ttl(ttl).Tcp(40000, 443, tcp::kSyn).Build();
    const Outcome o6 = fx.Run(in6);
    CHECK(o6.verdict == BALLAST_V_PASS_TTL);
    CHECK(o6.out == in6);
  }
  CHECK(fx.Run(FromClient4().Ttl(2).Tcp(40000, 80, tcp::kSyn).Build()).verdict == BALLAST_V_TX);
}

TEST_CASE("Next hop on another device: XDP_REDIRECT", "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  for (uint32_t id : {1u, 2u, 3u}) fx.SetNexthop(id, 1500, /*ifindex=*/4242);
  const Outcome o = fx.Run(FromClient4().Tcp(40000, 80, tcp::kSyn).Build());
  CHECK(o.action == XDP_REDIRECT);
  CHECK(o.verdict == BALLAST_V_REDIRECT);
}

TEST_CASE("VIP without a usable backend, without settings, or fenced: dropped and counted",
          "[lb][forward]") {
  LbFixture fx;
  SetUpLab(fx);
  const Bytes syn = FromClient4().Tcp(40000, 80, tcp::kSyn).Build();

  SECTION("table of empty slots") {
    fx.SetTable(kVipTcp4, std::vector<uint32_t>(13, 0));
    const Outcome o = fx.Run(syn);
    CHECK(o.action == XDP_DROP);
    CHECK(o.verdict == BALLAST_V_DROP_NO_BACKEND);
    CHECK(fx.VipStats(kVipTcp4).dropped == 1);
  }
  SECTION("VIP with no table") {
    fx.AddVip(Addr::Parse("198.18.0.30"), 80, IPPROTO_TCP, 20);
    const Outcome o = fx.Run(FromClient4(Addr::Parse("198.18.0.30")).Tcp(1, 80, tcp::kSyn).Build());
    CHECK(o.action == XDP_DROP);
    CHECK(o.verdict == BALLAST_V_DROP_NO_BACKEND);
  }
  SECTION("no outer source address") {
    dataplane::Settings s;  // src4 0.0.0.0, src6 ::
    fx.SetSettings(s);
    const Outcome o = fx.Run(syn);
    CHECK(o.action == XDP_DROP);
    CHECK(o.verdict == BALLAST_V_DROP_NO_SETTINGS);
  }
  SECTION("owned VIP past its owner deadline") {
    const uint64_t now = dataplane::Dataplane::MonotonicNowNs();
    fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, now - 1);
    Outcome o = fx.Run(syn);
    CHECK(o.action == XDP_DROP);
    CHECK(o.verdict == BALLAST_V_DROP_FENCED);
    fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, now + 3600ull * 1000000000ull);
    o = fx.Run(syn);
    CHECK(o.verdict == BALLAST_V_TX);
  }
}

}  // namespace
}  // namespace ballast::bpftest
