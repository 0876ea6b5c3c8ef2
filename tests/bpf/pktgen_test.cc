// The test tools themselves: builder and parser agree with each other and
// with tshark, so a CHECK failure in the lb tests points at the program.
#include <catch2/catch.hpp>

#include "tests/bpf/lb_fixture.h"
#include "tests/bpf/tshark.h"
#include "tests/lib/checksum.h"
#include "tests/lib/parse.h"

namespace ballast::bpftest {
namespace {

using pktgen::PacketBuilder;
namespace tcp = pktgen::tcp;
namespace proto = pktgen::proto;

TEST_CASE("pktgen: IPv4 TCP SYN with options parses back with valid checksums", "[pktgen]") {
  const Bytes f = PacketBuilder()
                      .Eth(Lab::TorMac(), Lab::RouterMac())
                      .Ip4(Lab::Client4(), Lab::Vip4())
                      .Ip4Options({0x94, 0x04, 0x00, 0x00})  // router alert
                      .Tcp(40000, 80, tcp::kSyn, 77)
                      .TcpOptions({0x02, 0x04, 0x05, 0xb4})  // MSS 1460
                      .Build();
  auto v = pktgen::ParseFrame(f);
  REQUIRE(v.ok());
  REQUIRE(v->ip);
  CHECK(v->ip->header_len == 24);
  CHECK(v->ip->header_checksum_ok);
  CHECK(v->ip->src == Lab::Client4());
  REQUIRE(v->ip->l4);
  CHECK(v->ip->l4->sport == 40000);
  CHECK(v->ip->l4->dport == 80);
  CHECK(v->ip->l4->seq == 77);
  CHECK(v->ip->l4->flags == tcp::kSyn);
  CHECK(v->ip->l4->checksum_ok == true);
  CHECK(f.size() == 14 + 24 + 24);
}

TEST_CASE("pktgen: a corrupted byte is caught by the parser's checksums", "[pktgen]") {
  Bytes f = PacketBuilder()
                .Eth(Lab::TorMac(), Lab::RouterMac())
                .Ip4(Lab::Client4(), Lab::Vip4())
                .Udp(5000, 53)
                .PayloadSize(20)
                .Build();
  REQUIRE(pktgen::CheckChecksums(*pktgen::ParseFrame(f)->ip).ok());
  f.back() ^= 0x40;
  CHECK_FALSE(pktgen::CheckChecksums(*pktgen::ParseFrame(f)->ip).ok());
  f.back() ^= 0x40;
  f[14 + 8] ^= 1;  // TTL
  CHECK_FALSE(pktgen::CheckChecksums(*pktgen::ParseFrame(f)->ip).ok());
}

TEST_CASE("pktgen: IPv6 extension headers and fragment header", "[pktgen]") {
  const Bytes f = PacketBuilder()
                      .Eth(Lab::TorMac(), Lab::RouterMac())
                      .Ip6(Lab::Client6(), Lab::Vip6())
                      .Ip6Ext(proto::kHopByHop)
                      .Ip6Ext(proto::kDestOpts, 1)
                      .Tcp(40000, 443, tcp::kSyn)
                      .Build();
  auto v = pktgen::ParseFrame(f);
  REQUIRE(v.ok());
  CHECK(v->ip->ext_types == std::vector<uint8_t>{proto::kHopByHop, proto::kDestOpts});
  CHECK(v->ip->header_len == 40 + 8 + 16);
  CHECK(v->ip->proto == proto::kTcp);
  CHECK(v->ip->l4->checksum_ok == true);

  const Bytes frag = PacketBuilder()
                         .Eth(Lab::TorMac(), Lab::RouterMac())
                         .Ip6(Lab::Client6(), Lab::Vip6())
                         .Ip6Fragment(0, true)
                         .Udp(5000, 53)
                         .PayloadSize(64)
                         .Build();
  auto fv = pktgen::ParseFrame(frag);
  REQUIRE(fv.ok());
  CHECK(fv->ip->is_fragment);
  CHECK(fv->ip->mf);
  CHECK(fv->ip->proto == proto::kUdp);
}

TEST_CASE("pktgen: CutL4 keeps IP lengths consistent", "[pktgen]") {
  const Bytes f = PacketBuilder()
                      .Eth(Lab::TorMac(), Lab::RouterMac())
                      .Ip4(Lab::Client4(), Lab::Vip4())
                      .Tcp(1, 2, tcp::kAck)
                      .CutL4(10)
                      .Build();
  REQUIRE(f.size() == 14 + 20 + 10);
  auto v = pktgen::ParseFrame(f);
  REQUIRE(v.ok());
  CHECK(v->ip->total_len == 30);
  CHECK(v->ip->header_checksum_ok);
  REQUIRE(v->ip->l4);
  CHECK_FALSE(v->ip->l4->complete);
}

TEST_CASE("pktgen: ICMP errors quote the inner packet", "[pktgen]") {
  const Bytes reply = PacketBuilder()
                          .Ip4(Lab::Vip4(), Lab::Client4())
                          .Tcp(80, 40000, tcp::kAck, 5, 6)
                          .PayloadSize(1400)
                          .BuildIp();
  const Bytes f = PacketBuilder()
                      .Eth(Lab::TorMac(), Lab::RouterMac())
                      .Ip4(Addr::Parse("198.18.200.1"), Lab::Vip4())
                      .Icmp(3, 4, 1300)
                      .Quote(reply, 28)
                      .Build();
  auto v = pktgen::ParseFrame(f);
  REQUIRE(v.ok());
  REQUIRE(v->ip->l4);
  CHECK(v->ip->l4->icmp_type == 3);
  CHECK(v->ip->l4->icmp_code == 4);
  CHECK(v->ip->l4->icmp_rest == 1300);
  CHECK(v->ip->l4->checksum_ok == true);
  REQUIRE(v->ip->inner);
  CHECK(v->ip->inner->src == Lab::Vip4());
  CHECK(v->ip->inner->l4->sport == 80);
  CHECK(v->ip->inner->l4->dport == 40000);
}

TEST_CASE("pktgen: tshark decodes builder output with good checksums", "[pktgen][tshark]") {
  const Bytes reply6 = PacketBuilder()
                           .Ip6(Lab::Vip6(), Lab::Client6())
                           .Tcp(443, 40000, tcp::kAck)
                           .PayloadSize(1300)
                           .BuildIp();
  const std::vector<Bytes> frames = {
      PacketBuilder()
          .Eth(Lab::TorMac(), Lab::RouterMac())
          .Vlan(42)
          .Ip4(Lab::Client4(), Lab::Vip4())
          .Ip4Options({1, 1, 1, 1})
          .Tcp(40000, 80, tcp::kSyn)
          .Build(),
      PacketBuilder()
          .Eth(Lab::TorMac(), Lab::RouterMac())
          .Ip6(Lab::Client6(), Lab::Vip6())
          .Ip6Ext(proto::kDestOpts)
          .Udp(40000, 30000)
          .PayloadSize(33)
          .Build(),
      PacketBuilder()
          .Eth(Lab::TorMac(), Lab::RouterMac())
          .Ip6(Addr::Parse("2001:db8:200::1"), Lab::Vip6())
          .Icmp(2, 0, 1280)
          .Quote(reply6, 1232)
          .Build(),
  };
  auto rows =
      Dissect(frames, {"frame.protocols", "ip.checksum.status", "tcp.checksum.status",
                       "udp.checksum.status", "icmpv6.checksum.status", "vlan.id", "icmpv6.mtu"});
  INFO(rows.status().ToString());
  REQUIRE(rows.ok());
  CHECK((*rows)[0]["frame.protocols"] == "eth:ethertype:vlan:ethertype:ip:tcp");
  CHECK((*rows)[0]["vlan.id"] == "42");
  CHECK((*rows)[0]["ip.checksum.status"] == "1");
  CHECK((*rows)[0]["tcp.checksum.status"] == "1");
  CHECK((*rows)[1]["frame.protocols"] == "eth:ethertype:ipv6:ipv6.dstopts:udp:data");
  CHECK((*rows)[1]["udp.checksum.status"] == "1");
  CHECK((*rows)[2]["icmpv6.checksum.status"] == "1");
  CHECK((*rows)[2]["icmpv6.mtu"] == "1280");
}

}  // namespace
}  // namespace ballast::bpftest
