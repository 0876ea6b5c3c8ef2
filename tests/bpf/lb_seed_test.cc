// The flow hash seed (ballast_abi.h, struct ballast_flow_hash_seed): the
// program hashes flows with the cluster's secret seed, not the public one of
// earlier builds, and a rotation moves no connection, on a router that holds
// it or on one that sees it only after the rotation (established second
// chance walks to the pick under the previous seed: maglev_history_of).
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "ballast_flow_hash.h"
#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

constexpr dataplane::HashSeed kSeedA = {0x0a0a0001u, 0x0a0a0002u, 0x0a0a0003u};
constexpr dataplane::HashSeed kSeedB = {0x0b0b0001u, 0x0b0b0002u, 0x0b0b0003u};

ballast_flow_key Key(uint16_t port) {
  return FlowKey(Lab::Client4(), Lab::Vip4(), port, 80, IPPROTO_TCP);
}

Bytes Segment(uint16_t port, uint8_t flags, uint32_t seq, uint32_t ack, size_t payload = 0) {
  return FromClient4().Tcp(port, 80, flags, seq, ack).PayloadSize(payload).Build();
}

// The backend the lab's IPv4 TCP table (SetUpLab) gives `key` under `seed`.
uint32_t PickUnder(const dataplane::HashSeed& seed, const ballast_flow_key& key) {
  ballast_hash_seed s;
  std::copy(seed.begin(), seed.end(), s.w);
  const std::vector<uint32_t> t = CyclingTable({1, 2, 3});
  return t[ballast_flow_hash(&key, &s) % t.size()];
}

TEST_CASE("Flows hash with the cluster's seed: picks and handshake slots follow it", "[lb][seed]") {
  LbFixture fx;
  SetUpLab(fx);
  const ballast_hash_seed public_seed = BALLAST_PUBLIC_SEED_INIT;
  const dataplane::HashSeed public_words = std::to_array(public_seed.w);
  for (const dataplane::HashSeed& seed : {kSeedA, kSeedB}) {
    fx.SetFlowHashSeed({.current = seed});
    int unlike_public = 0;
    for (uint16_t port = 30000; port < 30064; ++port) {
      const ballast_flow_key key = Key(port);
      const Outcome o = fx.Run(Segment(port, tcp::kSyn, 100, 0));
      REQUIRE(o.verdict == BALLAST_V_TX);
      INFO("port " << port);
      CHECK(BackendOf(fx, o) == PickUnder(seed, key));
      // The handshake slot is in the set of the hash under the seed.
      REQUIRE(fx.Handshake(key).has_value());
      CHECK(fx.Handshake(key)->hash == fx.Hash(key));
      if (PickUnder(public_words, key) != PickUnder(seed, key)) ++unlike_public;
    }
    // A third of the picks agree by chance (three backends).
    CHECK(unlike_public >= 20);
  }
  // Without a seed in the map (a program over an earlier build's pins), the
  // public one.
  fx.SetFlowHashSeed({});
  for (uint16_t port = 31000; port < 31016; ++port) {
    const Outcome o = fx.Run(Segment(port, tcp::kSyn, 100, 0));
    CHECK(BackendOf(fx, o) == PickUnder(public_words, Key(port)));
  }
}

// Where the next packet of connection `port` ends up on `fx`: its backend,
// after at most the bounces of backends that do not hold it (those other
// than `holder`), as xdp_decap would send them back.
struct Delivery {
  uint32_t backend = 0;
  int bounces = 0;
};
Delivery Deliver(LbFixture& fx, uint16_t port, uint32_t seq, uint32_t holder) {
  Delivery d;
  Outcome o = fx.Run(Segment(port, tcp::kAck | tcp::kPsh, seq, 5001, 10));
  for (;;) {
    REQUIRE((o.verdict == BALLAST_V_TX || o.verdict == BALLAST_V_ESC_TX));
    d.backend = BackendOf(fx, o);
    if (d.backend == holder || d.bounces == BALLAST_ESC_HOPS_MAX) return d;
    ++d.bounces;
    o = fx.Run(Bounce(o.out));
    if (o.verdict != BALLAST_V_TX && o.verdict != BALLAST_V_ESC_TX) {
      d.backend = 0;  // dropped: nobody else to try
      return d;
    }
  }
}

TEST_CASE("A seed rotation moves no connection, here or on a router that joins after it",
          "[lb][seed][esc]") {
  PinnedToOneCpu pin;
  constexpr uint16_t kFirst = 42000;
  constexpr int kConns = 120;
  // Router 1 under seed A: 120 connections complete; the first 60 are
  // promoted into `flows`, the other 60 are still on probation when the
  // seed changes.
  LbFixture r1;
  SetUpLab(r1);
  r1.SetFlowHashSeed({.current = kSeedA});
  std::vector<uint32_t> holder(kConns);
  for (int i = 0; i < kConns; ++i) {
    const auto port = static_cast<uint16_t>(kFirst + i);
    holder[i] = BackendOf(r1, r1.Run(Segment(port, tcp::kSyn, 100, 0)));
    REQUIRE(BackendOf(r1, r1.Run(Segment(port, tcp::kAck, 101, 5001))) == holder[i]);
    REQUIRE(BackendOf(r1, r1.Run(Segment(port, tcp::kAck | tcp::kPsh, 101, 5001, 10))) ==
            holder[i]);
  }
  WaitOutProbation();
  for (int i = 0; i < kConns / 2; ++i) {
    const auto port = static_cast<uint16_t>(kFirst + i);
    REQUIRE(BackendOf(r1, r1.Run(Segment(port, tcp::kAck, 111, 5001))) == holder[i]);
    REQUIRE(r1.FlowMap(Key(port)) == "flows");
  }
  int moved_pick = 0;
  for (int i = 0; i < kConns; ++i) {
    if (PickUnder(kSeedB, Key(static_cast<uint16_t>(kFirst + i))) != holder[i]) ++moved_pick;
  }
  INFO(moved_pick << " of " << kConns << " connections pick another backend under seed B");
  REQUIRE(moved_pick >= kConns / 3);

  // The rotation: B, with A as the previous seed.
  const dataplane::FlowHashSeed rotated = {.current = kSeedB, .previous = kSeedA};
  r1.SetFlowHashSeed(rotated);
  int r1_bounces = 0;
  for (int i = 0; i < kConns; ++i) {
    INFO("router 1, connection " << i);
    const Delivery d = Deliver(r1, static_cast<uint16_t>(kFirst + i), 121, holder[i]);
    CHECK(d.backend == holder[i]);
    // A promoted connection is found by its tuple: no bounce.
    if (i < kConns / 2) CHECK(d.bounces == 0);
    r1_bounces += d.bounces;
  }

  // Router 2 joins after the rotation: it has seen none of them.
  LbFixture r2;
  SetUpLab(r2);
  r2.SetFlowHashSeed(rotated);
  int r2_bounces = 0;
  for (int i = 0; i < kConns; ++i) {
    INFO("router 2, connection " << i);
    const Delivery d = Deliver(r2, static_cast<uint16_t>(kFirst + i), 131, holder[i]);
    CHECK(d.backend == holder[i]);
    CHECK(d.bounces <= 1);
    r2_bounces += d.bounces;
  }
  CHECK(r2_bounces == moved_pick);
  INFO("bounces: router 1 " << r1_bounces << ", router 2 " << r2_bounces);

  // Without the previous seed (a rotation that forgot it), router 3 loses
  // every connection whose pick moved: nothing tells it where they are.
  LbFixture r3;
  SetUpLab(r3);
  r3.SetFlowHashSeed({.current = kSeedB});
  int lost = 0;
  for (int i = 0; i < kConns; ++i) {
    const Delivery d = Deliver(r3, static_cast<uint16_t>(kFirst + i), 131, holder[i]);
    if (d.backend != holder[i]) ++lost;
  }
  CHECK(lost == moved_pick);
}

}  // namespace
}  // namespace ballast::bpftest
