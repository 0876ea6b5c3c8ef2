// ICMP: errors about a VIP flow go to the flow's backend; oversize packets
// get ICMP too-big back (or a counted drop); other ICMP is the kernel's.
#include <linux/bpf.h>
#include <netinet/in.h>
#include <sched.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

using pktgen::PacketBuilder;
namespace tcp = pktgen::tcp;

const Addr kPathRouter4 = Addr::Parse("198.18.200.1");
const Addr kPathRouter6 = Addr::Parse("2001:db8:200::1");

// The backend's reply (VIP -> client, sent directly by the backend: DSR).
Bytes Reply4(uint16_t client_port, size_t payload) {
  return PacketBuilder()
      .Ip4(Lab::Vip4(), Lab::Client4())
      .Tcp(80, client_port, tcp::kAck | tcp::kPsh, 5001, 101)
      .PayloadSize(payload)
      .BuildIp();
}
// ICMP "fragmentation needed" (MTU 1280) from a router on the path to the
// VIP, quoting `quote_len` bytes of `original`.
Bytes FragNeeded4(const Bytes& original, size_t quote_len) {
  return PacketBuilder()
      .Eth(Lab::TorMac(), Lab::RouterMac())
      .Ip4(kPathRouter4, Lab::Vip4())
      .Icmp(3, 4, 1280)
      .Quote(original, quote_len)
      .Build();
}
Bytes Reply6(uint16_t client_port, size_t payload) {
  return PacketBuilder()
      .Ip6(Lab::Vip6(), Lab::Client6())
      .Tcp(443, client_port, tcp::kAck | tcp::kPsh, 5001, 101)
      .PayloadSize(payload)
      .BuildIp();
}

TEST_CASE("ICMP frag-needed about a VIP flow goes to the backend that owns the flow",
          "[lb][icmp]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 2);
  REQUIRE(fx.Run(FromClient4().Tcp(42000, 80, tcp::kSyn).Build()).verdict == BALLAST_V_TX);
  fx.Run(FromClient4().Tcp(42000, 80, tcp::kAck, 101, 5001).Build());
  fx.SetUniformTable(kVipTcp4, 3);  // the flow stays on 2; so must its ICMP

  const Bytes in = FragNeeded4(Reply4(42000, 1400), 28);
  const Outcome o = fx.Run(in);
  REQUIRE(o.action == XDP_TX);
  REQUIRE(o.verdict == BALLAST_V_ICMP_FWD_TX);
  const auto outer = CheckEncapsulated(o.out, {.outer_family = 4,
                                               .outer_src = Lab::Src4(),
                                               .outer_dst = Lab::Backend4(2),
                                               .inner_ip = pktgen::IpPacketOf(in)});
  REQUIRE(outer.inner->l4);
  CHECK(outer.inner->l4->icmp_type == 3);

  SECTION("a quote of a longer original (full IPv4 + TCP header) works too") {
    const Bytes in2 = FragNeeded4(Reply4(42000, 1400), 576 - 28);
    const Outcome o2 = fx.Run(in2);
    CHECK(o2.verdict == BALLAST_V_ICMP_FWD_TX);
    CheckEncapsulated(o2.out, {.outer_family = 4,
                               .outer_src = Lab::Src4(),
                               .outer_dst = Lab::Backend4(2),
                               .inner_ip = pktgen::IpPacketOf(in2)});
  }
}

TEST_CASE("ICMPv6 packet-too-big about a VIP flow goes to the flow's backend", "[lb][icmp]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp6, 12);
  REQUIRE(fx.Run(FromClient6().Tcp(42000, 443, tcp::kSyn).Build()).verdict == BALLAST_V_TX);
  fx.SetUniformTable(kVipTcp6, 13);
  fx.Run(FromClient6().Tcp(42000, 443, tcp::kAck, 101, 5001).Build());  // completes on 12

  const Bytes in = PacketBuilder()
                       .Eth(Lab::TorMac(), Lab::RouterMac())
                       .Ip6(kPathRouter6, Lab::Vip6())
                       .Icmp(2, 0, 1280)
                       .Quote(Reply6(42000, 1400), 1232)
                       .Build();
  const Outcome o = fx.Run(in);
  REQUIRE(o.action == XDP_TX);
  REQUIRE(o.verdict == BALLAST_V_ICMP_FWD_TX);
  CheckEncapsulated(o.out, {.outer_family = 6,
                            .outer_src = Lab::Src6(),
                            .outer_dst = Lab::Backend6(2),
                            .inner_ip = pktgen::IpPacketOf(in)});
}

TEST_CASE("ICMP frag-needed about a handshake under way goes to its SYN's backend",
          "[lb][icmp][handshake]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 2);
  // ISN 100: its ACK carries 101
  REQUIRE(fx.Run(FromClient4().Tcp(42000, 80, tcp::kSyn, 100).Build()).verdict == BALLAST_V_TX);
  fx.SetUniformTable(kVipTcp4, 3);  // the SYN's slot still names 2

  const Bytes in = FragNeeded4(Reply4(42000, 1400), 28);
  const Outcome o = fx.Run(in);
  REQUIRE(o.verdict == BALLAST_V_ICMP_FWD_TX);
  CheckEncapsulated(o.out, {.outer_family = 4,
                            .outer_src = Lab::Src4(),
                            .outer_dst = Lab::Backend4(2),
                            .inner_ip = pktgen::IpPacketOf(in)});
  // The error changed nothing: the handshake completes on 2.
  const Bytes ack = FromClient4().Tcp(42000, 80, tcp::kAck, 101, 5001).Build();
  CheckEncapsulated(fx.Run(ack).out, {.outer_family = 4,
                                      .outer_src = Lab::Src4(),
                                      .outer_dst = Lab::Backend4(2),
                                      .inner_ip = pktgen::IpPacketOf(ack)});
}

// Passed, the kernel would route them back out by its default route (it
// does not own the VIP address), to the ToR, which sends them to a router
// again until the TTL runs out.
TEST_CASE("Other ICMP to a VIP address is dropped, never passed to loop back out", "[lb][icmp]") {
  LbFixture fx;
  SetUpLab(fx);
  const std::vector<VerdictCase> cases = {
      {"echo request", FromClient4().Icmp(8, 0, 0x00010001).PayloadSize(56).Build(),
       BALLAST_V_DROP_ICMP_NOT_ERR},
      {"ICMPv6 echo request", FromClient6().Icmp(128, 0, 0x00010001).PayloadSize(56).Build(),
       BALLAST_V_DROP_ICMP_NOT_ERR},
      {"error quoting a packet from another source",
       FragNeeded4(PacketBuilder()
                       .Ip4(Addr::Parse("198.18.5.5"), Lab::Client4())
                       .Tcp(80, 1, tcp::kAck)
                       .BuildIp(),
                   28),
       BALLAST_V_DROP_ICMP_UNMATCHED},
      {"error quoting a VIP packet to a port without VIP",
       FragNeeded4(
           PacketBuilder().Ip4(Lab::Vip4(), Lab::Client4()).Tcp(8080, 1, tcp::kAck).BuildIp(), 28),
       BALLAST_V_DROP_ICMP_UNMATCHED},
      {"error with a quote cut inside the IP header", FragNeeded4(Reply4(42000, 100), 12),
       BALLAST_V_DROP_ICMP_UNMATCHED},
  };
  ExpectVerdicts(fx, cases, XDP_DROP);
}

// Checks an ICMP too-big answer to `in` (the client's oversize frame).
void CheckTooBig(const Bytes& out, const Bytes& in, uint32_t want_mtu) {
  auto v = pktgen::ParseFrame(out);
  INFO("output:\n" << pktgen::HexDump(out));
  INFO(v.status().ToString());
  REQUIRE(v.ok());
  const auto sent = pktgen::ParseFrame(in);
  // Back where it came from: MACs swapped, no VLAN.
  CHECK(v->src == sent->dst);
  CHECK(v->dst == sent->src);
  CHECK_FALSE(v->vlan.has_value());
  REQUIRE(v->ip);
  const pktgen::IpView& ip = *v->ip;
  CHECK(ip.family == sent->ip->family);
  CHECK(ip.src == sent->ip->dst);  // from the VIP
  CHECK(ip.dst == sent->ip->src);  // to the client
  CHECK(ip.ttl > 1);
  CHECK(out.size() == 14 + ip.total_len);
  REQUIRE(ip.l4);
  CHECK(ip.l4->complete);
  const absl::Status cs = pktgen::CheckChecksums(ip);
  INFO(cs.ToString());
  CHECK(cs.ok());
  CHECK(ip.l4->checksum_ok == true);
  if (ip.family == 4) {
    CHECK(ip.proto == pktgen::proto::kIcmp);
    CHECK(ip.l4->icmp_type == 3);
    CHECK(ip.l4->icmp_code == 4);
    CHECK((ip.l4->icmp_rest & 0xffff) == want_mtu);
    CHECK(ip.total_len <= 576);
  } else {
    CHECK(ip.proto == pktgen::proto::kIcmp6);
    CHECK(ip.l4->icmp_type == 2);
    CHECK(ip.l4->icmp_code == 0);
    CHECK(ip.l4->icmp_rest == want_mtu);
    CHECK(ip.total_len <= 1280);
  }
  // The quote is the start of the client's packet, byte for byte.
  const Bytes orig = pktgen::IpPacketOf(in);
  const Bytes& quote = ip.l4->payload;
  REQUIRE(quote.size() >= (ip.family == 4 ? 28u : 48u));
  REQUIRE(quote.size() <= orig.size());
  CHECK(Bytes(orig.begin(), orig.begin() + static_cast<long>(quote.size())) == quote);
}

TEST_CASE("Oversize once encapsulated: ICMP too-big back to the client, or a counted drop",
          "[lb][icmp]") {
  LbFixture fx;
  SetUpLab(fx);
  for (uint32_t id : {1u, 2u, 3u}) fx.SetNexthop(id, 1000);
  for (uint32_t id : {11u, 12u, 13u}) fx.SetNexthop(id, 1400);
  // IP lengths: 980 fits in 1000 once +20; 981 does not.
  const Bytes fits4 = FromClient4().Tcp(43000, 80, tcp::kAck, 1, 1).PayloadSize(980 - 40).Build();
  const Bytes big4 = FromClient4().Tcp(43000, 80, tcp::kAck, 1, 1).PayloadSize(981 - 40).Build();
  const Bytes big4vlan =
      FromClient4().Vlan(5).Tcp(43000, 80, tcp::kAck, 1, 1).PayloadSize(1200).Build();
  const Bytes fits6 = FromClient6().Tcp(43000, 443, tcp::kAck, 1, 1).PayloadSize(1360 - 60).Build();
  const Bytes big6 = FromClient6().Tcp(43000, 443, tcp::kAck, 1, 1).PayloadSize(1361 - 60).Build();

  SECTION("ICMP too-big policy") {
    CHECK(fx.Run(fits4).verdict == BALLAST_V_TX);
    Outcome o = fx.Run(big4);
    CHECK(o.action == XDP_TX);
    REQUIRE(o.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
    CheckTooBig(o.out, big4, 980);
    o = fx.Run(big4vlan);
    REQUIRE(o.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
    CheckTooBig(o.out, big4vlan, 980);

    CHECK(fx.Run(fits6).verdict == BALLAST_V_TX);
    o = fx.Run(big6);
    CHECK(o.action == XDP_TX);
    REQUIRE(o.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
    CheckTooBig(o.out, big6, 1360);
    CHECK(fx.VipStats(kVipTcp4).dropped == 2);
  }
  SECTION("drop policy") {
    fx.SetPolicy(0);
    CHECK(fx.Run(fits4).verdict == BALLAST_V_TX);
    Outcome o = fx.Run(big4);
    CHECK(o.action == XDP_DROP);
    CHECK(o.verdict == BALLAST_V_DROP_TOO_BIG);
    o = fx.Run(big6);
    CHECK(o.action == XDP_DROP);
    CHECK(o.verdict == BALLAST_V_DROP_TOO_BIG);
  }
}

TEST_CASE("ICMP too-big answers are rate limited per CPU; the rest are dropped and counted",
          "[lb][icmp]") {
  LbFixture fx;
  SetUpLab(fx);
  for (uint32_t id : {1u, 2u, 3u}) fx.SetNexthop(id, 1000);
  const Bytes big4 = FromClient4().Tcp(43000, 80, tcp::kAck, 1, 1).PayloadSize(1200).Build();
  PinnedToOneCpu pin;
  auto settings = [](uint32_t per_s, uint32_t burst) {
    dataplane::Settings s;
    s.src4 = ToIpAddress(Lab::Src4());
    s.src6 = ToIpAddress(Lab::Src6());
    s.icmp_too_big_per_s = per_s;
    s.icmp_too_big_burst = burst;
    return s;
  };
  auto limited = [&] {
    auto n = fx.dp().IcmpTooBigLimited();
    REQUIRE(n.ok());
    return *n;
  };

  SECTION("the defaults: 1000/s, burst 50") {
    auto got = fx.dp().GetSettings();
    REQUIRE(got.ok());
    CHECK(got->icmp_too_big_per_s == 1000);
    CHECK(got->icmp_too_big_burst == 50);
  }
  SECTION("a burst, then drops until the budget refills") {
    // One answer per 50 ms, at most 2 back to back.
    fx.SetSettings(settings(20, 2));
    auto got = fx.dp().GetSettings();
    REQUIRE(got.ok());
    CHECK(got->icmp_too_big_per_s == 20);
    CHECK(got->icmp_too_big_burst == 2);
    const auto t_burst = std::chrono::steady_clock::now();
    for (int i = 0; i < 2; ++i) {
      Outcome o = fx.Run(big4);
      CHECK(o.action == XDP_TX);
      CHECK(o.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
    }
    for (int i = 0; i < 5; ++i) {
      Outcome o = fx.Run(big4);
      CHECK(o.action == XDP_DROP);
      CHECK(o.verdict == BALLAST_V_DROP_TOO_BIG);
    }
    CHECK(limited() == 5);
    CHECK(fx.VipStats(kVipTcp4).dropped == 7);  // answered or not, none reached a backend
    // The budget refills at the rate: the next answer goes out once one
    // interval (50 ms) has passed since the burst began, not before. Polled
    // every 2 ms, up to 2 s.
    uint64_t refused = 0;
    bool answered = false;
    while (!answered && std::chrono::steady_clock::now() - t_burst < std::chrono::seconds(2)) {
      answered = fx.Run(big4).verdict == BALLAST_V_ICMP_TOO_BIG_SENT;
      if (!answered) {
        ++refused;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    const auto waited = std::chrono::steady_clock::now() - t_burst;
    REQUIRE(answered);
    CHECK(waited >= std::chrono::milliseconds(49));
    CHECK(limited() == 5 + refused);
    // Another setting changes; the budget and its count stay as they are.
    // (That the budget is then not rewritten at all, which is what keeps a
    // refusal counted during the change, cannot be observed here.)
    dataplane::Settings other = settings(20, 2);
    other.tcp_idle_ns *= 2;
    fx.SetSettings(other);
    CHECK(limited() == 5 + refused);
    auto kept = fx.dp().GetSettings();
    REQUIRE(kept.ok());
    CHECK(kept->icmp_too_big_per_s == 20);
    CHECK(kept->icmp_too_big_burst == 2);
  }
  SECTION("a packet too short to quote is dropped without spending the budget") {
    // Backend MTU 100: a 100-byte packet is oversize once encapsulated (+20)
    // but shorter than the 128-byte quote, so it cannot be answered.
    for (uint32_t id : {1u, 2u, 3u}) fx.SetNexthop(id, 100);
    const Bytes short4 = FromClient4().Tcp(43000, 80, tcp::kAck, 1, 1).PayloadSize(60).Build();
    fx.SetSettings(settings(20, 1));
    for (int i = 0; i < 3; ++i) {
      Outcome o = fx.Run(short4);
      CHECK(o.action == XDP_DROP);
      CHECK(o.verdict == BALLAST_V_DROP_TOO_BIG);
    }
    CHECK(limited() == 0);
    // The one token of the burst is still there for a packet it can answer.
    Outcome o = fx.Run(big4);
    CHECK(o.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
    CheckTooBig(o.out, big4, 80);
    CHECK(fx.Run(big4).verdict == BALLAST_V_DROP_TOO_BIG);
    CHECK(limited() == 1);
  }
  SECTION("rate 0: no limit") {
    fx.SetSettings(settings(0, 0));
    for (int i = 0; i < 200; ++i) REQUIRE(fx.Run(big4).verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
    CHECK(limited() == 0);
  }
  SECTION("a bad rate or burst is refused and changes nothing") {
    fx.SetSettings(settings(20, 2));
    for (auto [per_s, burst] :
         {std::pair<uint32_t, uint32_t>{20, 0}, {20, 21}, {dataplane::kMaxIcmpTooBigPerS + 1, 1}}) {
      dataplane::Settings s = settings(per_s, burst);
      s.tcp_idle_ns = 7'000'000'000ull;
      const absl::Status st = fx.dp().SetSettings(s);
      INFO(per_s << "/s burst " << burst << ": " << st.ToString());
      CHECK(st.code() == absl::StatusCode::kInvalidArgument);
      CHECK_THAT(std::string(st.message()), Catch::Contains("ICMP too-big"));
      auto got = fx.dp().GetSettings();
      REQUIRE(got.ok());
      CHECK(got->icmp_too_big_per_s == 20);
      CHECK(got->icmp_too_big_burst == 2);
      CHECK(got->tcp_idle_ns == dataplane::Settings{}.tcp_idle_ns);
    }
  }
}

}  // namespace
}  // namespace ballast::bpftest
