// Per-flow IPv4 outer sources (global.source_v4_prefix): every IPv4 outer
// header's source is the address of the router's prefix that the flow's
// hash picks, the same for every packet of the flow, spread evenly over
// the prefix; a backend's bounce to any of them is the router's.
#include <linux/bpf.h>
#include <netinet/in.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include <catch2/catch.hpp>

#include "ballast_flow_hash.h"
#include "tests/bpf/lb_fixture.h"
#include "tests/bpf/tshark.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

constexpr char kPrefix[] = "198.18.0.32/27";

void SetPrefix(LbFixture& fx, const char* prefix) {
  dataplane::Settings s;
  s.src4 = ToIpAddress(Lab::Src4());
  s.src6 = ToIpAddress(Lab::Src6());
  s.policy = BALLAST_POLICY_ICMP_TOO_BIG;
  if (prefix != nullptr) s.src4_prefix = *IpPrefix::Parse(prefix);
  fx.SetSettings(s);
}

// The outer source the program must choose for `key`, written again from
// the ABI's description: the prefix's network with its host bits from
// ballast_flow_label().
Addr ExpectedSource(const ballast_flow_key& key, const IpPrefix& p) {
  const uint32_t mask = p.HostMask4();
  const auto& net = p.address().bytes();
  const uint32_t host = ballast_flow_label(&key) & mask;
  Addr a;
  a.family = 4;
  for (int i = 0; i < 4; ++i) {
    a.b[i] = static_cast<uint8_t>(net[i] | ((host >> (8 * (3 - i))) & 0xff));
  }
  return a;
}

TEST_CASE("IPv4 outer sources are chosen per flow from the router's prefix, stable per flow",
          "[lb][source]") {
  LbFixture fx;
  SetUpLab(fx);
  SetPrefix(fx, kPrefix);
  const IpPrefix p = *IpPrefix::Parse(kPrefix);
  auto got = fx.dp().GetSettings();
  REQUIRE(got.ok());
  REQUIRE(got->src4_prefix.has_value());
  CHECK(got->src4_prefix->ToString() == kPrefix);

  for (uint16_t sport = 41000; sport < 41016; ++sport) {
    const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), sport, 80, IPPROTO_TCP);
    const Addr want = ExpectedSource(key, p);
    INFO("sport " << sport << ", expected outer source " << want.ToString());
    // SYN, the completing ACK (inserts the flow), and data on the flow:
    // one outer source, and a valid IPv4 header checksum on each.
    const Bytes syn = FromClient4().Tcp(sport, 80, tcp::kSyn, 1000).Build();
    const Bytes ack = FromClient4().Tcp(sport, 80, tcp::kAck, 1001, 1).Build();
    const Bytes data =
        FromClient4().Tcp(sport, 80, tcp::kAck | tcp::kPsh, 1001, 1).PayloadSize(200).Build();
    for (const Bytes* in : {&syn, &ack, &data}) {
      const Outcome o = fx.Run(*in);
      REQUIRE(o.verdict == BALLAST_V_TX);
      CheckEncapsulated(o.out, {.outer_family = 4,
                                .outer_src = want,
                                .outer_dst = fx.BackendAddr(fx.Predict(kVipTcp4, key)),
                                .inner_ip = pktgen::IpPacketOf(*in)});
    }
    CHECK(fx.Flow(key).has_value());
  }

  // IPv6 outer headers keep the router's IPv6 source; with the prefix
  // removed, IPv4 outer headers have source_v4 again.
  const Bytes in6 = FromClient6().Tcp(41000, 443, tcp::kSyn).Build();
  const Outcome o6 = fx.Run(in6);
  REQUIRE(o6.verdict == BALLAST_V_TX);
  auto v6 = pktgen::ParseFrame(o6.out);
  REQUIRE(v6.ok());
  CHECK(v6->ip->src == Lab::Src6());
  SetPrefix(fx, nullptr);
  got = fx.dp().GetSettings();
  REQUIRE(got.ok());
  CHECK_FALSE(got->src4_prefix.has_value());
  const Bytes again = FromClient4().Tcp(41000, 80, tcp::kAck | tcp::kPsh, 1001, 1).Build();
  const Outcome o4 = fx.Run(again);
  REQUIRE(o4.verdict == BALLAST_V_TX);
  auto v4 = pktgen::ParseFrame(o4.out);
  REQUIRE(v4.ok());
  CHECK(v4->ip->src == Lab::Src4());
}

TEST_CASE("10,000 flows spread evenly over the prefix's outer sources", "[lb][source]") {
  LbFixture fx(16384);
  SetUpLab(fx);
  SetPrefix(fx, kPrefix);
  const IpPrefix p = *IpPrefix::Parse(kPrefix);
  std::map<std::string, int> count;
  int n = 0, mismatched = 0;
  ForEachSpreadFlow(fx, [&](const ballast_flow_key& key, const pktgen::IpView& outer) {
    REQUIRE(p.Contains(ToIpAddress(outer.src)));
    mismatched += !(outer.src == ExpectedSource(key, p));
    ++count[outer.src.ToString()];
    ++n;
  });
  CHECK(mismatched == 0);
  const int cells = 1 << (32 - p.length());
  const double expected = static_cast<double>(n) / cells;
  double chi2 = 0;
  int lo = n, hi = 0;
  for (const auto& [addr, k] : count) {
    chi2 += (k - expected) * (k - expected) / expected;
    lo = std::min(lo, k);
    hi = std::max(hi, k);
  }
  chi2 += (cells - static_cast<int>(count.size())) * expected;  // addresses never used
  std::printf(
      "per-flow outer sources: %d flows over %s: %zu of %d addresses used, %d..%d flows each "
      "(expected %.1f), chi-square %.1f (df %d; 61.1 is the 0.1%% critical value)\n",
      n, kPrefix, count.size(), cells, lo, hi, expected, chi2, cells - 1);
  CHECK(count.size() == static_cast<size_t>(cells));
  CHECK(chi2 < 61.1);
}

TEST_CASE("A bounce to any address of the prefix is the router's; the next SYN keeps the source",
          "[lb][source][bounce]") {
  LbFixture fx;
  SetUpLab(fx);
  SetPrefix(fx, kPrefix);
  const IpPrefix p = *IpPrefix::Parse(kPrefix);
  const uint16_t sport = 42000;
  const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), sport, 80, IPPROTO_TCP);
  const Addr src = ExpectedSource(key, p);
  REQUIRE_FALSE(src == Lab::Src4());
  const Bytes syn = FromClient4().Tcp(sport, 80, tcp::kSyn, 1000).Build();
  const Outcome o1 = fx.Run(syn);
  REQUIRE(o1.verdict == BALLAST_V_TX);
  const uint32_t first = BackendOf(fx, o1);

  // A bounce whose SYN does not carry the handshake's ISN is a stranger's
  // (the lb program does not check the inner TCP checksum).
  Bytes forged = Bounce(o1.out);
  forged[14 + 20 + 20 + 7] ^= 0x01;  // the inner SYN's sequence number, last byte
  CHECK(fx.Run(forged).verdict == BALLAST_V_DROP_BOUNCE_STRANGER);
  REQUIRE(fx.Handshake(key).has_value());
  CHECK(fx.Handshake(key)->backend_id == first);

  const Outcome o2 = fx.Run(Bounce(o1.out));
  REQUIRE(o2.verdict == BALLAST_V_BOUNCE_TX);
  const uint32_t second = BackendOf(fx, o2);
  CHECK(second != first);
  CheckEncapsulated(o2.out, {.outer_family = 4,
                             .outer_src = src,
                             .outer_dst = fx.BackendAddr(second),
                             .inner_ip = pktgen::IpPacketOf(syn)});
  // Without the prefix, the same bounce is not addressed to the router: the
  // kernel's (it owns the prefix on lo, see docs/dataplane.md).
  SetPrefix(fx, nullptr);
  CHECK(fx.Run(Bounce(o2.out)).verdict == BALLAST_V_PASS_NOT_VIP);
}

TEST_CASE("tshark decodes a per-flow-source IPv4-in-IPv4 packet with good checksums",
          "[lb][source][tshark]") {
  LbFixture fx;
  SetUpLab(fx);
  SetPrefix(fx, kPrefix);
  const auto key = FlowKey(Lab::Client4(), Lab::Vip4(), 44000, 80, IPPROTO_TCP);
  const Outcome o = fx.Run(FromClient4().Tcp(44000, 80, tcp::kSyn, 1).Build());
  REQUIRE(o.verdict == BALLAST_V_TX);
  auto rows = Dissect({o.out}, {"frame.protocols", "ip.checksum.status", "tcp.checksum.status",
                                "ip.src", "_ws.malformed"});
  INFO(rows.status().ToString());
  REQUIRE(rows.ok());
  auto& r = (*rows)[0];
  CHECK(r["frame.protocols"].rfind("eth:ethertype:ip:ip:tcp", 0) == 0);
  CHECK(r["ip.checksum.status"] == "1,1");
  CHECK(r["tcp.checksum.status"] == "1");
  CHECK(r["ip.src"] == ExpectedSource(key, *IpPrefix::Parse(kPrefix)).ToString() + "," +
                           Lab::Client4().ToString());
  CHECK(r["_ws.malformed"].empty());
}

}  // namespace
}  // namespace ballast::bpftest
