// Floods cannot evict established flows: connections whose backend showed
// it holds them (`flows`, after probation), TCP flows adopted mid-stream or
// on probation (`adopted_flows`) and UDP flows (`flows_udp`) live in three
// maps, so a flood of spoofed ACKs, of spoofed SYN+ACK pairs or of UDP
// tuples evicts only its own class, and a RST on a tuple with no state is
// not adopted at all.
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <sched.h>

#include <map>
#include <string>

#include <catch2/catch.hpp>

#include "tests/bpf/lb_fixture.h"
#include "tests/lib/xdp_run.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

constexpr uint32_t kCapacity = 16384;  // each of the three maps
constexpr uint32_t kEstablished = 10000;
constexpr uint32_t kFlood = 1000000;
constexpr uint32_t kPairs = 300000;

// Client 198.18.<hi>.<lo> (inside the lab's 198.18.0.0/15).
Addr Client(uint8_t hi, uint8_t lo) {
  return Addr::Parse("198.18." + std::to_string(hi) + "." + std::to_string(lo));
}

// Runs `frame` (IPv4, no options, from a client) `n` times, each with a new
// client: the address's last two bytes from `hi0` up and the source port,
// so n distinct tuples. Returns how many the program forwarded (XDP_TX).
uint32_t Flood(LbFixture& fx, Bytes frame, uint8_t hi0, uint32_t n) {
  constexpr size_t kSrcHi = 14 + 14, kSrcLo = 14 + 15, kPortHi = 14 + 20, kPortLo = 14 + 21;
  uint32_t tx = 0, failed = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t port = 1024 + i % 64000, client = i / 64000;
    frame[kSrcHi] = static_cast<uint8_t>(hi0 + client / 256);
    frame[kSrcLo] = static_cast<uint8_t>(client % 256);
    frame[kPortHi] = static_cast<uint8_t>(port >> 8);
    frame[kPortLo] = static_cast<uint8_t>(port & 0xff);
    auto r = pktgen::RunXdp(fx.dp().prog_fd(), frame);
    if (!r.ok()) {
      ++failed;
      continue;
    }
    if (r->action == XDP_TX) ++tx;
  }
  REQUIRE(failed == 0);
  return tx;
}

// Flows in the map `name` (one of dataplane::kFlowMaps).
size_t Entries(LbFixture& fx, const char* name) {
  auto n =
      fx.dp().ForEachFlowIn(name, SIZE_MAX, [](const ballast_flow_key&, const ballast_flow&) {});
  REQUIRE(n.ok());
  return *n;
}

// Runs a spoofed handshake for each of `n` new tuples (as Flood()): `syn`,
// then `ack` (the SYN's ISN + 1: all a blind spoofer needs for the router
// to see a handshake complete). Returns how many ACKs were forwarded.
uint32_t FloodPairs(LbFixture& fx, Bytes syn, Bytes ack, uint8_t hi0, uint32_t n) {
  constexpr size_t kSrcHi = 14 + 14, kSrcLo = 14 + 15, kPortHi = 14 + 20, kPortLo = 14 + 21;
  uint32_t tx = 0, failed = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t port = 1024 + i % 64000, client = i / 64000;
    for (Bytes* frame : {&syn, &ack}) {
      (*frame)[kSrcHi] = static_cast<uint8_t>(hi0 + client / 256);
      (*frame)[kSrcLo] = static_cast<uint8_t>(client % 256);
      (*frame)[kPortHi] = static_cast<uint8_t>(port >> 8);
      (*frame)[kPortLo] = static_cast<uint8_t>(port & 0xff);
    }
    auto rs = pktgen::RunXdp(fx.dp().prog_fd(), syn);
    auto ra = pktgen::RunXdp(fx.dp().prog_fd(), ack);
    if (!rs.ok() || !ra.ok()) {
      ++failed;
      continue;
    }
    if (ra->action == XDP_TX) ++tx;
  }
  REQUIRE(failed == 0);
  return tx;
}

// On one CPU: the kernel's LRU hash keeps free nodes per CPU, and a thread
// that wakes up on the other CPU after a sleep (WaitOutProbation) evicts
// from a map that is not yet full.
TEST_CASE("Floods of spoofed ACKs, SYN+ACK pairs and UDP tuples cannot evict established flows",
          "[lb][flood]") {
  const PinnedToOneCpu pinned;
  LbFixture fx(kCapacity);
  SetUpLab(fx);
  fx.SetTable(kVipTcp4, CyclingTable({1, 2, 3}));

  // 10,000 connections with a handshake, on 100 clients x 100 ports, each
  // with a packet after the handshake (the probe no backend bounced) and
  // one after the probation's wait (probation.h): in `flows`.
  std::map<std::pair<int, int>, uint32_t> backend_of;
  const auto seg = [&](int lo, int port, uint8_t flags, uint32_t seq) {
    return pktgen::PacketBuilder()
        .Eth(Lab::TorMac(), Lab::RouterMac())
        .Ip4(Client(50, static_cast<uint8_t>(lo)), Lab::Vip4())
        .Tcp(static_cast<uint16_t>(port), 80, flags, seq, 1)
        .Build();
  };
  // (A connection that other connections pushed out of its set while on
  // probation is adopted again on its next packet, and promoted after
  // another wait: the fifth round.)
  for (int round = 0; round < 5; ++round) {
    if (round >= 3) WaitOutProbation();
    for (uint32_t i = 0; i < kEstablished; ++i) {
      const int lo = static_cast<int>(i / 100), port = 20000 + static_cast<int>(i % 100);
      const Outcome o = fx.Run(seg(lo, port, round == 0 ? tcp::kSyn : tcp::kAck, 100 + !!round));
      REQUIRE(o.verdict == BALLAST_V_TX);
      if (round == 0) backend_of[{lo, port}] = BackendOf(fx, o.out);
      REQUIRE(BackendOf(fx, o.out) == backend_of[{lo, port}]);
    }
  }
  REQUIRE(Entries(fx, "flows") == kEstablished);

  // 1,000,000 spoofed ACKs, each a new tuple (adopted), and 1,000,000 UDP
  // tuples: each class fills its own map many times over.
  const Bytes ack = pktgen::PacketBuilder()
                        .Eth(Lab::TorMac(), Lab::RouterMac())
                        .Ip4(Client(60, 0), Lab::Vip4())
                        .Tcp(1024, 80, tcp::kAck, 5000, 1)
                        .Build();
  const Bytes udp = pktgen::PacketBuilder()
                        .Eth(Lab::TorMac(), Lab::RouterMac())
                        .Ip4(Client(100, 0), Lab::Vip4())
                        .Udp(1024, 53)
                        .PayloadSize(32)
                        .Build();
  CHECK(Flood(fx, ack, 60, kFlood) == kFlood);
  CHECK(Flood(fx, udp, 100, kFlood) == kFlood);
  // 300,000 spoofed handshakes: a SYN and its ACK each (until 2026-12-07
  // each pair took a place in `flows`, and this flood evicted the 10,000).
  const auto spoofed = [](uint8_t flags, uint32_t seq) {
    return pktgen::PacketBuilder()
        .Eth(Lab::TorMac(), Lab::RouterMac())
        .Ip4(Client(120, 0), Lab::Vip4())
        .Tcp(1024, 80, flags, seq, flags == tcp::kSyn ? 0 : 1)
        .Build();
  };
  CHECK(FloodPairs(fx, spoofed(tcp::kSyn, 7000), spoofed(tcp::kAck, 7001), 120, kPairs) == kPairs);

  // The table changes: every established flow still goes where it went.
  fx.SetTable(kVipTcp4, CyclingTable({2, 3, 1}));
  uint32_t kept = 0, in_flows = 0;
  for (const auto& [client, backend] : backend_of) {
    const auto [lo, port] = client;
    const Bytes data = pktgen::PacketBuilder()
                           .Eth(Lab::TorMac(), Lab::RouterMac())
                           .Ip4(Client(50, static_cast<uint8_t>(lo)), Lab::Vip4())
                           .Tcp(static_cast<uint16_t>(port), 80, tcp::kAck | tcp::kPsh, 101, 1)
                           .PayloadSize(20)
                           .Build();
    const Outcome o = fx.Run(data);
    REQUIRE(o.verdict == BALLAST_V_TX);
    if (BackendOf(fx, o.out) == backend) ++kept;
    const ballast_flow_key key = FlowKey(Client(50, static_cast<uint8_t>(lo)), Lab::Vip4(),
                                         static_cast<uint16_t>(port), 80, IPPROTO_TCP);
    if (fx.FlowMap(key) == "flows") ++in_flows;
  }
  INFO(kept << " of " << kEstablished << " kept their backend; " << in_flows
            << " still in `flows`");
  CHECK(kept >= kEstablished * 99 / 100);
  CHECK(in_flows >= kEstablished * 99 / 100);
  // The floods are where they belong: each map full, `flows` holding the
  // connections only.
  CHECK(Entries(fx, "flows") == kEstablished);
  CHECK(Entries(fx, dataplane::kAdoptedFlowsMap) > kCapacity * 9 / 10);
  CHECK(Entries(fx, "flows_udp") > kCapacity * 9 / 10);
}

TEST_CASE("A flood of spoofed RSTs adopts nothing and displaces no adopted flow", "[lb][flood]") {
  constexpr uint32_t kAdopted = 2000, kRsts = 200000;
  LbFixture fx(kCapacity);
  SetUpLab(fx);
  fx.SetTable(kVipTcp4, CyclingTable({1, 2, 3}));

  // 2,000 connections adopted mid-stream (ECMP moved them here): 20 clients
  // x 100 ports. The few that a set with a fifth flow gave up are left out.
  const auto key = [](int lo, int port) {
    return FlowKey(Client(70, static_cast<uint8_t>(lo)), Lab::Vip4(), static_cast<uint16_t>(port),
                   80, IPPROTO_TCP);
  };
  const auto data = [](int lo, int port) {
    return pktgen::PacketBuilder()
        .Eth(Lab::TorMac(), Lab::RouterMac())
        .Ip4(Client(70, static_cast<uint8_t>(lo)), Lab::Vip4())
        .Tcp(static_cast<uint16_t>(port), 80, tcp::kAck | tcp::kPsh, 7000, 1)
        .PayloadSize(20)
        .Build();
  };
  std::map<std::pair<int, int>, uint32_t> backend_of;
  for (uint32_t i = 0; i < kAdopted; ++i) {
    const int lo = static_cast<int>(i / 100), port = 30000 + static_cast<int>(i % 100);
    const Outcome o = fx.Run(data(lo, port));
    REQUIRE(o.verdict == BALLAST_V_TX);
    backend_of[{lo, port}] = BackendOf(fx, o.out);
  }
  std::erase_if(backend_of, [&](const auto& kv) {
    return fx.FlowMap(key(kv.first.first, kv.first.second)) != dataplane::kAdoptedFlowsMap;
  });
  const size_t adopted = backend_of.size();
  REQUIRE(adopted >= kAdopted - 10);
  REQUIRE(Entries(fx, dataplane::kAdoptedFlowsMap) == adopted);

  // 200,000 RSTs, each on a tuple the router has no state for: each goes by
  // the table, and none is adopted.
  const Bytes rst = pktgen::PacketBuilder()
                        .Eth(Lab::TorMac(), Lab::RouterMac())
                        .Ip4(Client(80, 0), Lab::Vip4())
                        .Tcp(1024, 80, tcp::kRst | tcp::kAck, 9000, 1)
                        .Build();
  CHECK(Flood(fx, rst, 80, kRsts) == kRsts);
  CHECK(Entries(fx, dataplane::kAdoptedFlowsMap) == adopted);
  CHECK(Entries(fx, "flows") == 0);

  // After a table change (every slot's backend moves) each adopted
  // connection still reaches its backend.
  fx.SetTable(kVipTcp4, CyclingTable({2, 3, 1}));
  uint32_t kept = 0;
  for (const auto& [client, backend] : backend_of) {
    const Outcome o = fx.Run(data(client.first, client.second));
    REQUIRE(o.verdict == BALLAST_V_TX);
    if (BackendOf(fx, o.out) == backend) ++kept;
  }
  CHECK(kept == adopted);
}

}  // namespace
}  // namespace ballast::bpftest
