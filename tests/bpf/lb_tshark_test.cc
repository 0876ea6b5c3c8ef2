// tshark, an independent dissector, reads what the lb program emits:
// every encapsulation, a forwarded ICMP error and both ICMP too-big answers.
#include <linux/bpf.h>
#include <netinet/in.h>

#include <cstring>

#include <catch2/catch.hpp>

#include "tests/bpf/lb_fixture.h"
#include "tests/bpf/tshark.h"

namespace ballast::bpftest {
namespace {

using pktgen::PacketBuilder;
namespace tcp = pktgen::tcp;

// A DNS query for example.com/A, so the UDP payload is well-formed for tshark.
Bytes DnsQuery() {
  Bytes q = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  for (const char* label : {"example", "com"}) {
    q.push_back(static_cast<uint8_t>(std::strlen(label)));
    q.insert(q.end(), label, label + std::strlen(label));
  }
  q.insert(q.end(), {0, 0, 1, 0, 1});
  return q;
}

TEST_CASE("tshark decodes every encapsulated output with good checksums", "[lb][tshark]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  fx.SetUniformTable(kVipTcp6, 11);
  fx.SetUniformTable(kVip4To6, 12);
  fx.SetUniformTable(kVipUdp4, 2);
  for (uint32_t id : {3u}) fx.SetNexthop(id, 1000);

  struct Case {
    const char* what;
    Bytes in;
    ballast_verdict verdict;
    std::string protocols;  // tshark frame.protocols
  };
  std::vector<Case> cases = {
      {"IPv4-in-IPv4 TCP",
       FromClient4().Tcp(44000, 80, tcp::kSyn).TcpOptions({2, 4, 5, 180}).Build(), BALLAST_V_TX,
       "eth:ethertype:ip:ip:tcp"},
      {"IPv4-in-IPv4 TCP with payload",
       FromClient4().Tcp(44000, 80, tcp::kAck | tcp::kPsh, 1, 1).PayloadSize(300).Build(),
       BALLAST_V_TX, "eth:ethertype:ip:ip:tcp"},
      {"IPv4-in-IPv4 UDP", FromClient4().Udp(44000, 53).Payload(DnsQuery()).Build(), BALLAST_V_TX,
       "eth:ethertype:ip:ip:udp:dns"},
      {"IPv6-in-IPv6 TCP", FromClient6().Tcp(44000, 443, tcp::kSyn).Build(), BALLAST_V_TX,
       "eth:ethertype:ipv6:ipv6:tcp"},
      {"IPv4-in-IPv6 TCP (VLAN-tagged input)",
       FromClient4().Vlan(9).Tcp(44000, 443, tcp::kSyn).Build(), BALLAST_V_TX,
       "eth:ethertype:ipv6:ip:tcp"},
      {"ICMP frag-needed forwarded",
       PacketBuilder()
           .Eth(Lab::TorMac(), Lab::RouterMac())
           .Ip4(Addr::Parse("198.18.200.1"), Lab::Vip4())
           .Icmp(3, 4, 1280)
           .Quote(PacketBuilder()
                      .Ip4(Lab::Vip4(), Lab::Client4())
                      .Tcp(80, 44000, tcp::kAck, 1, 1)
                      .PayloadSize(1400)
                      .BuildIp(),
                  28)
           .Build(),
       BALLAST_V_ICMP_FWD_TX, "eth:ethertype:ip:ip:icmp:ip:tcp"},
  };
  std::vector<Bytes> outs;
  for (const Case& c : cases) {
    INFO(c.what);
    const Outcome o = fx.Run(c.in);
    REQUIRE(o.verdict == c.verdict);
    outs.push_back(o.out);
  }
  // ICMP too-big answers (backend 3's next hop has MTU 1000).
  fx.SetUniformTable(kVipTcp4, 3);
  fx.SetNexthop(11, 1300);
  const Bytes big4 = FromClient4().Tcp(44001, 80, tcp::kAck, 1, 1).PayloadSize(1100).Build();
  const Bytes big6 = FromClient6().Tcp(44001, 443, tcp::kAck, 1, 1).PayloadSize(1300).Build();
  Outcome o = fx.Run(big4);
  REQUIRE(o.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
  outs.push_back(o.out);
  o = fx.Run(big6);
  REQUIRE(o.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
  outs.push_back(o.out);

  auto rows = Dissect(
      outs, {"frame.protocols", "ip.checksum.status", "tcp.checksum.status", "udp.checksum.status",
             "icmp.checksum.status", "icmpv6.checksum.status", "ip.src", "ip.dst", "ipv6.src",
             "ipv6.dst", "ip.proto", "ipv6.nxt", "icmp.type", "icmp.code", "icmp.mtu",
             "icmpv6.type", "icmpv6.mtu", "_ws.malformed"});
  INFO(rows.status().ToString());
  REQUIRE(rows.ok());
  for (size_t i = 0; i < rows->size(); ++i) {
    auto& r = (*rows)[i];
    std::string fields;
    for (const auto& [k, v] : r) fields += k + "=" + v + "\n";
    INFO("frame " << i << ":\n" << fields << pktgen::HexDump(outs[i]));
    CHECK(r["_ws.malformed"].empty());
    // No checksum tshark could verify is bad (0 = bad, 1 = good, 2 =
    // unverified). In an ICMP error (the last case and the too-big answers)
    // the TCP/UDP header is the quote of the client's packet, cut short, so
    // tshark computes its checksum over a fragment and calls it bad: there
    // only the IP header and ICMP checksums are checked.
    const bool icmp_error = i + 1 >= cases.size();
    for (const char* f : {"ip.checksum.status", "icmp.checksum.status", "icmpv6.checksum.status",
                          "tcp.checksum.status", "udp.checksum.status"}) {
      const std::string field = f;
      const auto values = SplitValues(r[field]);
      for (size_t k = 0; k < values.size(); ++k) {
        const bool quoted =
            icmp_error && (field.rfind("tcp", 0) == 0 || field.rfind("udp", 0) == 0);
        INFO(field << "[" << k << "]");
        if (!quoted) CHECK(values[k] != "0");
      }
    }
    if (i < cases.size()) {
      // Prefix: tshark may add a payload layer ("data", "http") after L4.
      CHECK(r["frame.protocols"].rfind(cases[i].protocols, 0) == 0);
    }
  }
  auto& v4 = (*rows)[0];
  CHECK(v4["ip.checksum.status"] == "1,1");
  CHECK(v4["tcp.checksum.status"] == "1");
  CHECK(v4["ip.src"] == "198.18.0.1,198.18.100.1");
  CHECK(v4["ip.dst"] == "198.18.1.1,198.18.0.10");
  CHECK(v4["ip.proto"] == "4,6");
  CHECK((*rows)[2]["udp.checksum.status"] == "1");
  auto& v6 = (*rows)[3];
  CHECK(v6["ipv6.src"] == "2001:db8::1,2001:db8:100::1");
  CHECK(v6["ipv6.dst"] == "2001:db8:1::1,2001:db8::10");
  CHECK(v6["ipv6.nxt"] == "41,6");
  CHECK(v6["tcp.checksum.status"] == "1");
  auto& v46 = (*rows)[4];
  CHECK(v46["ipv6.dst"] == "2001:db8:1::2");
  CHECK(v46["ipv6.nxt"] == "4");
  CHECK(v46["ip.checksum.status"] == "1");
  CHECK(v46["tcp.checksum.status"] == "1");
  auto& fwd = (*rows)[5];
  CHECK(fwd["icmp.checksum.status"] == "1");
  CHECK(fwd["ip.dst"] == "198.18.1.1,198.18.0.10,198.18.100.1");

  auto& tb4 = (*rows)[cases.size()];
  CHECK(tb4["frame.protocols"].rfind("eth:ethertype:ip:icmp:ip:tcp", 0) == 0);
  CHECK(tb4["icmp.type"] == "3");
  CHECK(tb4["icmp.code"] == "4");
  CHECK(tb4["icmp.mtu"] == "980");
  CHECK(tb4["icmp.checksum.status"] == "1");
  CHECK(SplitValues(tb4["ip.checksum.status"]).at(0) == "1");
  CHECK(SplitValues(tb4["ip.src"]).at(0) == "198.18.0.10");
  CHECK(SplitValues(tb4["ip.dst"]).at(0) == "198.18.100.1");
  auto& tb6 = (*rows)[cases.size() + 1];
  CHECK(tb6["frame.protocols"].rfind("eth:ethertype:ipv6:icmpv6:ipv6:tcp", 0) == 0);
  CHECK(tb6["icmpv6.type"] == "2");
  CHECK(tb6["icmpv6.mtu"] == "1280");
  CHECK(tb6["icmpv6.checksum.status"] == "1");
  CHECK(SplitValues(tb6["ipv6.src"]).at(0) == "2001:db8::10");
}

}  // namespace
}  // namespace ballast::bpftest
