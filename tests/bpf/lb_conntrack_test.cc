// The connection table: established flows stay, unfinished handshakes
// follow the table, backend states, passive signals.
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <netinet/in.h>

#include <cstring>

#include <catch2/catch.hpp>

#include "ballast_flow_hash.h"
#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

constexpr uint16_t kPort = 41000;

Bytes Segment(uint8_t flags, uint32_t seq, uint32_t ack, size_t payload = 0) {
  return FromClient4().Tcp(kPort, 80, flags, seq, ack).PayloadSize(payload).Build();
}

const ballast_flow_key kKey = FlowKey(Lab::Client4(), Lab::Vip4(), kPort, 80, IPPROTO_TCP);

// SETUP + handshake: SYN and the client's ACK on backend 1, then past its
// probation (probation.h: a probed ACK, and one after the wait): in `flows`.
void Establish(LbFixture& fx) {
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 100, 0))) == 1);
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001))) == 1);
  REQUIRE(fx.FlowMap(kKey) == "adopted_flows");
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001))) == 1);
  WaitOutProbation();
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001))) == 1);
  REQUIRE(fx.FlowMap(kKey) == "flows");
  const auto f = fx.Flow(kKey);
  REQUIRE(f);
  REQUIRE(f->state == BALLAST_FLOW_ESTABLISHED);
}

TEST_CASE("An established flow keeps its backend after a table change", "[lb][conntrack]") {
  LbFixture fx;
  Establish(fx);
  CHECK(fx.BackendStats(1).handshake_count == 1);
  fx.SetUniformTable(kVipTcp4, 2);
  for (int i = 0; i < 3; ++i) {
    const Bytes in = Segment(tcp::kAck | tcp::kPsh, 101 + 10 * i, 5001, 10);
    const Outcome o = fx.Run(in);
    REQUIRE(o.verdict == BALLAST_V_TX);
    CheckEncapsulated(o.out, {.outer_family = 4,
                              .outer_src = Lab::Src4(),
                              .outer_dst = Lab::Backend4(1),
                              .inner_ip = pktgen::IpPacketOf(in)});
  }
  // A new connection follows the new table.
  const Outcome n = fx.Run(FromClient4().Tcp(kPort + 1, 80, tcp::kSyn).Build());
  CHECK(BackendOf(fx, n) == 2);
  CHECK(fx.BackendStats(1).packets == 7);  // Establish() sends 4
  // A SYN alone is no new flow yet: it counts once its client shows up.
  CHECK(fx.BackendStats(2).new_flows == 0);
  CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(kPort + 1, 80, tcp::kAck, 1001, 1).Build())) == 2);
  CHECK(fx.BackendStats(2).new_flows == 1);
}

TEST_CASE("An unfinished handshake follows the table: the retransmitted SYN is re-steered",
          "[lb][conntrack]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 100, 0))) == 1);
  CHECK_FALSE(fx.Flow(kKey));  // a SYN writes a handshake slot, not a flow
  REQUIRE(fx.Handshake(kKey));
  CHECK(fx.Handshake(kKey)->backend_id == 1);
  // Not a new flow yet: a SYN counts once its client shows up (a
  // retransmission, or the completing ACK), so a SYN flood counts nothing.
  CHECK(fx.BackendStats(1).new_flows == 0);
  {
    auto hs = fx.dp().Handshakes();  // what `lbdp handshakes` reads
    REQUIRE(hs.ok());
    REQUIRE(hs->live.size() == 1);
    CHECK(hs->live[0].backend_id == 1);
    CHECK(hs->full_sets == 0);
  }

  fx.SetUniformTable(kVipTcp4, 2);  // backend 1 never answered; the agent moved on
  const Outcome o = fx.Run(Segment(tcp::kSyn, 100, 0));
  REQUIRE(o.verdict == BALLAST_V_TX);
  CHECK(BackendOf(fx, o) == 2);
  CHECK(fx.BackendStats(1).syn_retransmits == 1);
  CHECK(fx.BackendStats(1).new_flows == 1);  // its client retransmitted: counted now
  CHECK(fx.BackendStats(2).new_flows == 1);
  CHECK_FALSE(fx.Flow(kKey));
  REQUIRE(fx.Handshake(kKey));
  CHECK(fx.Handshake(kKey)->backend_id == 2);

  // A retransmission without a table change stays and is counted.
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 100, 0))) == 2);
  CHECK(fx.BackendStats(2).syn_retransmits == 1);
  CHECK(fx.BackendStats(2).new_flows == 1);

  // The completing ACK stays with the backend the SYN went to, creates the
  // flow and frees the slot.
  fx.SetUniformTable(kVipTcp4, 3);
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 7001))) == 2);
  auto f = fx.Flow(kKey);
  REQUIRE(f);
  CHECK(f->state == BALLAST_FLOW_ESTABLISHED);
  CHECK(f->backend_id == 2);
  CHECK_FALSE(fx.Handshake(kKey));
  CHECK(fx.dp().Handshakes()->live.empty());
  CHECK(fx.BackendStats(2).handshake_count == 1);
  CHECK(fx.BackendStats(3).new_flows == 0);
  // From here on the flow is pinned.
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck | tcp::kPsh, 101, 7001, 10))) == 2);
}

TEST_CASE("The handshake slots grow with the flow table, or as set", "[lb][conntrack]") {
  CHECK(dataplane::HandshakeSetsFor(4096) == BALLAST_HANDSHAKE_SETS);
  CHECK(dataplane::HandshakeSetsFor(BALLAST_DEFAULT_FLOWS) == BALLAST_HANDSHAKE_SETS);
  CHECK(dataplane::HandshakeSetsFor(1u << 21) == BALLAST_HANDSHAKE_SETS);
  CHECK(dataplane::HandshakeSetsFor((1u << 21) + 1) == 2 * BALLAST_HANDSHAKE_SETS);
  CHECK(dataplane::HandshakeSetsFor(1u << 22) == 32768);
  CHECK(dataplane::HandshakeSetsFor(1u << 26) == 1u << 19);
  CHECK(dataplane::HandshakeSetsFor(~0u) == 1u << 25);

  // 32,768 sets (what 4,194,304 flows get; set directly here, on a small flow
  // table). A client port whose flow hash picks a set past the first 16,384,
  // so a program still indexing the default size would write elsewhere.
  LbFixture fx(4096, 32768);
  REQUIRE(fx.dp().handshake_sets() == 32768);
  {
    bpf_map_info info = {};
    uint32_t len = sizeof info;
    REQUIRE(bpf_obj_get_info_by_fd(fx.dp().map_fd("handshakes"), &info, &len) == 0);
    CHECK(info.max_entries == 32768);
  }
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  uint16_t port = 40000;
  ballast_flow_key key = FlowKey(Lab::Client4(), Lab::Vip4(), port, 80, IPPROTO_TCP);
  while ((fx.Hash(key) & 32767) < BALLAST_HANDSHAKE_SETS) {
    key = FlowKey(Lab::Client4(), Lab::Vip4(), ++port, 80, IPPROTO_TCP);
  }
  INFO("client port " << port);
  REQUIRE(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kSyn, 100, 0).Build())) == 1);
  REQUIRE(fx.Handshake(key));  // in set hash & 32767
  CHECK(fx.Handshake(key)->backend_id == 1);
  auto hs = fx.dp().Handshakes();
  REQUIRE(hs.ok());
  CHECK(hs->live.size() == 1);
  // The completing ACK finds it there.
  CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kAck, 101, 5001).Build())) == 1);
  CHECK_FALSE(fx.Handshake(key));
  CHECK(fx.BackendStats(1).handshake_count == 1);
}

// The common case behind this rule: a backend reset the connection (or died)
// and its RST went straight to the client, so the flow here is still
// ESTABLISHED when the client reuses the port. Left in place, the flow would
// send the new connection's ACK to the old backend (the health e2e tests
// fail: failed connections after a kill, SYNs that never complete). A flow
// that saw a packet within syn_reuse_idle keeps its SYNs instead
// (lb_spoof_test: a blind spoofer's SYN); that backend's listener, or its
// bounce, serves a reused port then.
TEST_CASE("A SYN on a tuple with an idle flow is a new connection: the flow is replaced",
          "[lb][conntrack][handshake]") {
  LbFixture fx;
  Establish(fx);
  ballast_flow aged = *fx.Flow(kKey);
  aged.last_seen_ns = dataplane::Dataplane::MonotonicNowNs() -
                      dataplane::Settings{}.syn_reuse_idle_ns - 1'000'000'000ull;
  fx.SetFlow(kKey, aged);
  fx.SetUniformTable(kVipTcp4, 2);
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 7000, 0))) == 2);
  CHECK_FALSE(fx.Flow(kKey));
  REQUIRE(fx.Handshake(kKey));
  CHECK(fx.Handshake(kKey)->backend_id == 2);
  CHECK(fx.BackendStats(1).syn_retransmits == 0);
  CHECK(fx.BackendStats(2).new_flows == 0);
  fx.SetUniformTable(kVipTcp4, 3);
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 7001, 100))) == 2);
  CHECK(fx.Flow(kKey)->backend_id == 2);
  CHECK(fx.BackendStats(2).new_flows == 1);  // counted as it completes
}

// Ages the SYN in `key`'s slot by `ns` (as if it had been sent that long
// before the last one).
void AgeHandshake(LbFixture& fx, const ballast_flow_key& key, uint64_t ns) {
  ballast_handshake_set set = fx.HandshakeSet(key);
  bool found = false;
  for (ballast_handshake& h : set.way) {
    if (h.backend_id != BALLAST_INVALID_ID && h.hash == fx.Hash(key)) {
      h.syn_time -= static_cast<uint32_t>(ns >> BALLAST_HANDSHAKE_TIME_SHIFT);
      found = true;
    }
  }
  REQUIRE(found);
  fx.SetHandshakeSet(key, set);
}

// The client got no SYN-ACK and retransmitted: after syn_retry_ns (200 ms
// by default, below Linux's 1 s initial RTO), the repeated SYN goes to the
// flow's next choice, not to the backend that did not answer. A repeat
// sooner is a duplicate and stays. The choices are the same on every
// router (the table and ballast_choice_hash), never an unusable backend.
TEST_CASE("A retransmitted SYN goes to the flow's next choice", "[lb][conntrack][retry]") {
  LbFixture fx;
  SetUpLab(fx);  // kVipTcp4: a cycling table over backends 1, 2, 3
  const uint64_t retry_ns = dataplane::Settings{}.syn_retry_ns;
  REQUIRE(retry_ns == 200'000'000ull);
  // A client port whose flow has three distinct choices (most have).
  uint16_t port = 42000;
  ballast_flow_key key;
  uint32_t first = 0, second = 0, third = 0;
  for (; port < 42100; ++port) {
    key = FlowKey(Lab::Client4(), Lab::Vip4(), port, 80, IPPROTO_TCP);
    first = fx.Predict(kVipTcp4, key);
    second = fx.PredictNext(kVipTcp4, key, first, first);
    third = fx.PredictNext(kVipTcp4, key, first, second);
    if (second != first && third != first && third != second) break;
  }
  INFO("port " << port << ": choices " << first << ", " << second << ", " << third);
  REQUIRE(port < 42050);
  const auto seg = [&](uint8_t flags, uint32_t seq, uint32_t ack) {
    return FromClient4().Tcp(port, 80, flags, seq, ack).Build();
  };

  REQUIRE(BackendOf(fx, fx.Run(seg(tcp::kSyn, 100, 0))) == first);
  SECTION("a repeat under the retry age is a duplicate: same backend") {
    // 20 ms under it: the time this test itself takes between the two SYNs
    // adds to the age.
    AgeHandshake(fx, key, retry_ns - 20'000'000ull);
    CHECK(BackendOf(fx, fx.Run(seg(tcp::kSyn, 100, 0))) == first);
    CHECK(fx.BackendStats(first).syn_retransmits == 1);
    CHECK(fx.Handshake(key)->backend_id == first);
  }
  SECTION("at the retry age: the next choice, and the ACK follows it") {
    AgeHandshake(fx, key, retry_ns);
    const Outcome o = fx.Run(seg(tcp::kSyn, 100, 0));
    REQUIRE(o.verdict == BALLAST_V_TX);
    CHECK(BackendOf(fx, o) == second);
    CHECK(fx.BackendStats(first).syn_retransmits == 1);  // counted on the one that was silent
    CHECK(fx.BackendStats(second).new_flows == 1);
    CHECK(fx.Handshake(key)->backend_id == second);
    // A third SYN a retry age later: neither the first nor the second; a
    // fourth: the first again.
    AgeHandshake(fx, key, retry_ns);
    CHECK(BackendOf(fx, fx.Run(seg(tcp::kSyn, 100, 0))) == third);
    CHECK(fx.BackendStats(second).syn_retransmits == 1);
    CHECK(fx.PredictNext(kVipTcp4, key, first, third) == first);
    CHECK(BackendOf(fx, fx.Run(seg(tcp::kAck, 101, 5001))) == third);
    const auto f = fx.Flow(key);
    REQUIRE(f);
    CHECK(f->backend_id == third);
    CHECK(fx.BackendStats(third).handshake_count == 1);
  }
  SECTION("a SYN with another ISN is not the retransmission: it moves nothing") {
    // The client's retransmission went to the second choice; then a SYN on
    // the tuple with an ISN of its own (a blind spoofer, or a tuple whose
    // hash collides) a retry age later. Taken for a retransmission it would
    // move the slot to the third choice and the client's ACK, no longer
    // matching the slot, would be adopted on the first: not where its
    // connection is.
    AgeHandshake(fx, key, retry_ns);
    REQUIRE(BackendOf(fx, fx.Run(seg(tcp::kSyn, 100, 0))) == second);
    AgeHandshake(fx, key, retry_ns);
    CHECK(BackendOf(fx, fx.Run(seg(tcp::kSyn, 777777, 0))) == first);  // the table's pick
    CHECK(fx.BackendStats(second).syn_retransmits == 0);
    // The client's first SYN, counted at its retransmission; the other
    // ISN's SYN is not counted (nothing followed it).
    CHECK(fx.BackendStats(first).new_flows == 1);
    CHECK(fx.BackendStats(third).new_flows == 0);
    CHECK(BackendOf(fx, fx.Run(seg(tcp::kAck, 101, 5001))) == second);
    const auto f = fx.Flow(key);
    REQUIRE(f);
    CHECK(f->backend_id == second);
    CHECK(fx.BackendStats(second).handshake_count == 1);
  }
  SECTION("an unusable next choice is skipped") {
    fx.SetBackendState(second, BALLAST_BACKEND_EVICTED);
    AgeHandshake(fx, key, retry_ns);
    const uint32_t want = fx.PredictNext(kVipTcp4, key, first, first, {second});
    CHECK(want != second);
    CHECK(BackendOf(fx, fx.Run(seg(tcp::kSyn, 100, 0))) == want);
  }
  SECTION("the table moved the flow off the silent backend: its new pick") {
    // (health checking demoted it between the two SYNs)
    std::vector<uint32_t> others;
    for (uint32_t id : {1u, 2u, 3u}) {
      if (id != first) others.push_back(id);
    }
    fx.SetTable(kVipTcp4, CyclingTable(others));
    const uint32_t now_first = fx.Predict(kVipTcp4, key);
    REQUIRE(now_first != first);
    AgeHandshake(fx, key, retry_ns);
    CHECK(BackendOf(fx, fx.Run(seg(tcp::kSyn, 100, 0))) == now_first);
  }
  SECTION("no other backend: the SYN stays where it was") {
    fx.SetUniformTable(kVipTcp4, first);
    AgeHandshake(fx, key, retry_ns);
    CHECK(BackendOf(fx, fx.Run(seg(tcp::kSyn, 100, 0))) == first);
  }
  SECTION("syn_retry_ns 0 turns it off") {
    dataplane::Settings s = *fx.dp().GetSettings();
    s.syn_retry_ns = 0;
    fx.SetSettings(s);
    AgeHandshake(fx, key, retry_ns * 2);
    CHECK(BackendOf(fx, fx.Run(seg(tcp::kSyn, 100, 0))) == first);
  }
}

TEST_CASE("Handshake slots: expiry, client RST, unusable backend, full sets",
          "[lb][conntrack][handshake]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  const uint64_t now = dataplane::Dataplane::MonotonicNowNs();
  const uint32_t hash = fx.Hash(kKey);
  const uint32_t isn = 100;  // the client SYN's sequence number: its ACK carries 101
  const uint64_t idle_ns = dataplane::Settings{}.syn_idle_ns;
  const auto at = [](uint64_t ns) {
    return static_cast<uint32_t>(ns >> BALLAST_HANDSHAKE_TIME_SHIFT);
  };

  SECTION("a SYN older than syn_idle is forgotten: its repeat is a new connection") {
    fx.SetHandshakeSet(kKey, {{{hash, 2, 0, 0, isn, at(now - idle_ns - 1000000000ull)}}});
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 100, 0))) == 1);
    CHECK(fx.BackendStats(2).syn_retransmits == 0);
    CHECK(fx.BackendStats(1).new_flows == 0);  // a new connection: counted when it completes
    CHECK(fx.Handshake(kKey)->backend_id == 1);
  }
  SECTION("an ACK whose handshake slot expired is adopted from the table") {
    fx.SetHandshakeSet(kKey, {{{hash, 2, 0, 0, isn, at(now - idle_ns - 1000000000ull)}}});
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001))) == 1);
    CHECK(fx.BackendStats(2).handshake_count == 0);
    CHECK(fx.BackendStats(1).handshake_count == 0);
    CHECK(fx.Flow(kKey)->backend_id == 1);
    CHECK(fx.FlowMap(kKey) == "adopted_flows");
  }
  SECTION("a client RST that ends the handshake goes to the SYN's backend, uncounted") {
    // (a SYN and a RST are two packets a blind spoofer sends for any tuple:
    // until 2026-12-07 each pair counted as a client reset of the backend)
    fx.SetHandshakeSet(kKey, {{{hash, 2, 0, 0, isn, at(now)}}});
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kRst, 101, 0))) == 2);
    CHECK(fx.BackendStats(2).client_rsts == 0);
    CHECK(fx.BackendStats(2).handshake_count == 0);
    CHECK(fx.Flow(kKey)->state == BALLAST_FLOW_CLOSING);
    CHECK(fx.FlowMap(kKey) == "adopted_flows");  // on probation
    CHECK_FALSE(fx.Handshake(kKey));
  }
  SECTION("the completing ACK leaves a SYN's backend that was evicted meanwhile") {
    fx.SetHandshakeSet(kKey, {{{hash, 2, 0, 0, isn, at(now)}}});
    fx.SetBackendState(2, BALLAST_BACKEND_EVICTED);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001))) == 1);
    CHECK(fx.Flow(kKey)->backend_id == 1);
    CHECK_FALSE(fx.Handshake(kKey));
  }
  SECTION("the first payload in the completing ACK starts the first-response sample") {
    fx.SetHandshakeSet(kKey, {{{hash, 1, 0, 0, isn, at(now)}}});
    fx.Run(Segment(tcp::kAck | tcp::kPsh, 101, 5001, 100));
    auto f = fx.Flow(kKey);
    REQUIRE(f);
    CHECK((f->flags & BALLAST_FLOW_F_PAYLOAD_SEEN) != 0);
    CHECK(f->payload_ack == 5001);
    CHECK(fx.BackendStats(1).handshake_count == 1);
    fx.Run(Segment(tcp::kAck, 201, 6001));
    CHECK(fx.BackendStats(1).first_response_count == 1);
  }
  SECTION("the handshake and first-response samples land in their latency buckets") {
    // 40 ms old: bucket 10, [2^25, 2^26) ns = [33.6 ms, 67.1 ms), with 27 ms to spare.
    fx.SetHandshakeSet(kKey, {{{hash, 1, 0, 0, isn, at(now - 40000000ull)}}});
    fx.Run(Segment(tcp::kAck | tcp::kPsh, 101, 5001, 100));
    REQUIRE(fx.BackendStats(1).handshake_count == 1);
    auto lat = fx.dp().BackendLatency(1);
    REQUIRE(lat.ok());
    for (int i = 0; i < BALLAST_LATENCY_BUCKETS; ++i) {
      INFO("handshake bucket " << i);
      CHECK(lat->handshake[i] == (i == 10 ? 1u : 0u));
    }
    fx.Run(Segment(tcp::kAck, 201, 6001));
    REQUIRE(fx.BackendStats(1).first_response_count == 1);
    lat = fx.dp().BackendLatency(1);
    REQUIRE(lat.ok());
    uint64_t first = 0;
    for (uint64_t n : lat->first_response) first += n;
    CHECK(first == 1);
    // Clearing the backend clears its histograms with its other counters.
    REQUIRE(fx.dp().ClearBackend(1).ok());
    lat = fx.dp().BackendLatency(1);
    REQUIRE(lat.ok());
    for (int i = 0; i < BALLAST_LATENCY_BUCKETS; ++i) CHECK(lat->handshake[i] == 0);
  }
  SECTION("a full set gives its oldest slot to a new handshake; the others stay") {
    // Three other fresh handshakes and one older one in the set kKey uses.
    const ballast_handshake_set others = {{{hash ^ 1u, 3, 0, 0, isn, at(now - 3000)},
                                           {hash ^ 2u, 3, 0, 0, isn, at(now - 2000000000ull)},
                                           {hash ^ 3u, 3, 0, 0, isn, at(now - 5000)},
                                           {hash ^ 4u, 3, 0, 0, isn, at(now - 7000)}}};
    fx.SetHandshakeSet(kKey, others);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 100, 0))) == 1);
    const ballast_handshake_set set = fx.HandshakeSet(kKey);
    CHECK(set.way[0].hash == others.way[0].hash);
    CHECK(set.way[1].hash == hash);  // the oldest was replaced
    CHECK(set.way[1].backend_id == 1);
    CHECK(set.way[2].hash == others.way[2].hash);
    CHECK(set.way[3].hash == others.way[3].hash);
    auto hs = fx.dp().Handshakes();
    REQUIRE(hs.ok());
    CHECK(hs->live.size() == 4);
    CHECK(hs->full_sets == 1);
  }
  SECTION("an expired slot is taken before the oldest live one") {
    const ballast_handshake_set others = {{{hash ^ 1u, 3, 0, 0, isn, at(now - 3000)},
                                           {hash ^ 2u, 3, 0, 0, isn, at(now - 2000000000ull)},
                                           {hash ^ 3u, 3, 0, 0, isn, at(now - idle_ns - 1000)},
                                           {hash ^ 4u, 0, 0, 0}}};
    fx.SetHandshakeSet(kKey, others);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 100, 0))) == 1);
    const ballast_handshake_set set = fx.HandshakeSet(kKey);
    CHECK(set.way[1].hash == others.way[1].hash);
    CHECK(set.way[2].hash == hash);
  }
}

// A slot's syn_time wraps every 2^32 * 256 ns (18 minutes): one abandoned
// that long would look fresh to a repeat of its tuple. The agent frees the
// expired ones every minute (Dataplane::ExpireHandshakes), so none lives
// long enough to wrap.
TEST_CASE("Expired handshake slots are freed before their time can wrap",
          "[lb][conntrack][handshake]") {
  LbFixture fx;
  SetUpLab(fx);
  const uint64_t now = dataplane::Dataplane::MonotonicNowNs();
  const uint64_t idle_ns = dataplane::Settings{}.syn_idle_ns;
  const auto at = [](uint64_t ns) {
    return static_cast<uint32_t>(ns >> BALLAST_HANDSHAKE_TIME_SHIFT);
  };
  const uint32_t hash = fx.Hash(kKey);
  const uint32_t isn = 100;  // the client SYN's sequence number: its ACK carries 101
  // fresh, expired, long expired (10 minutes), empty
  fx.SetHandshakeSet(kKey, {{{hash, 2, 0, 0, isn, at(now - 1000000000ull)},
                             {hash ^ 1u, 3, 1, 0, isn, at(now - idle_ns - 1000000000ull)},
                             {hash ^ 2u, 1, 0, 0, isn, at(now - 600000000000ull)},
                             {0, 0, 0, 0, 0, 0}}});
  auto n = fx.dp().ExpireHandshakes();
  REQUIRE(n.ok());
  CHECK(*n == 2);
  const ballast_handshake_set set = fx.HandshakeSet(kKey);
  CHECK(set.way[0].backend_id == 2);  // the live one is kept, whole
  CHECK(set.way[0].hash == hash);
  CHECK(set.way[1].backend_id == BALLAST_INVALID_ID);
  CHECK(set.way[1].bounces == 0);
  CHECK(set.way[2].backend_id == BALLAST_INVALID_ID);
  CHECK(set.way[3].backend_id == BALLAST_INVALID_ID);
  auto again = fx.dp().ExpireHandshakes();
  REQUIRE(again.ok());
  CHECK(*again == 0);
  // The live handshake still completes on its backend.
  fx.SetUniformTable(kVipTcp4, 1);
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001))) == 2);
}

TEST_CASE("Draining backend keeps its flows until the deadline; evicted ones move",
          "[lb][conntrack]") {
  LbFixture fx;
  Establish(fx);
  const uint64_t now = dataplane::Dataplane::MonotonicNowNs();
  fx.SetUniformTable(kVipTcp4, 2);  // the agent took backend 1 out of the table

  SECTION("draining, deadline ahead: existing flow stays, new flows elsewhere") {
    fx.SetBackendState(1, BALLAST_BACKEND_DRAINING, now + 3600ull * 1000000000ull);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001, 20))) == 1);
    CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(kPort + 1, 80, tcp::kSyn).Build())) == 2);
    CHECK(fx.BackendStats(1).resteered_away == 0);
  }
  SECTION("draining without a deadline: existing flow stays") {
    fx.SetBackendState(1, BALLAST_BACKEND_DRAINING, 0);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001, 20))) == 1);
  }
  SECTION("draining, deadline passed: re-steered on the next packet") {
    fx.SetBackendState(1, BALLAST_BACKEND_DRAINING, now - 1);
    const Bytes in = Segment(tcp::kAck, 101, 5001, 20);
    const Outcome o = fx.Run(in);
    REQUIRE(o.verdict == BALLAST_V_TX);
    CheckEncapsulated(o.out, {.outer_family = 4,
                              .outer_src = Lab::Src4(),
                              .outer_dst = Lab::Backend4(2),
                              .inner_ip = pktgen::IpPacketOf(in)});
    CHECK(fx.BackendStats(1).resteered_away == 1);
    CHECK(fx.Flow(kKey)->backend_id == 2);
  }
  SECTION("evicted: re-steered on the next packet, and stays on the new backend") {
    fx.SetBackendState(1, BALLAST_BACKEND_EVICTED);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001, 20))) == 2);
    CHECK(fx.BackendStats(1).resteered_away == 1);
    auto f = fx.Flow(kKey);
    REQUIRE(f);
    CHECK(f->backend_id == 2);
    CHECK(f->state == BALLAST_FLOW_ESTABLISHED);
    fx.SetUniformTable(kVipTcp4, 3);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 121, 5001, 20))) == 2);
    CHECK(fx.BackendStats(1).resteered_away == 1);
  }
  SECTION("backend slot cleared (UNUSED): re-steered") {
    REQUIRE(fx.dp().ClearBackend(1).ok());
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001, 20))) == 2);
    CHECK(fx.Flow(kKey)->backend_id == 2);
  }
}

// The established-flow shortcut (vip_refs): a known flow's packets skip the
// `vips` lookup, yet every VIP change is seen on the flow's next packet.
TEST_CASE("A known flow's VIP shortcut follows VIP changes", "[lb][conntrack][vip_refs]") {
  LbFixture fx;
  Establish(fx);
  const Bytes ack = Segment(tcp::kAck, 101, 5001);
  auto f = fx.Flow(kKey);
  REQUIRE(f);
  CHECK(f->vip_id == kVipTcp4);  // recorded, so the next packets take the shortcut
  const uint64_t vip_packets = fx.VipStats(kVipTcp4).packets;
  CHECK(fx.Run(ack).verdict == BALLAST_V_TX);
  CHECK(fx.VipStats(kVipTcp4).packets == vip_packets + 1);

  SECTION("owner fence set on the VIP applies to the flow at once") {
    const uint64_t now = dataplane::Dataplane::MonotonicNowNs();
    fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, now - 1);
    CHECK(fx.Run(ack).verdict == BALLAST_V_DROP_FENCED);
    fx.SetOwnerDeadline(Lab::Vip4(), 80, IPPROTO_TCP, now + 3600ull * 1000000000ull);
    CHECK(fx.Run(ack).verdict == BALLAST_V_TX);
    CHECK(fx.Flow(kKey)->vip_gen == f->vip_gen);  // a deadline change keeps the shortcut
  }
  SECTION("VIP deleted: the flow's packets are not VIP traffic any more") {
    // The address still has other VIPs, so they are dropped, not passed.
    REQUIRE(fx.dp().DeleteVip({ToIpAddress(Lab::Vip4()), 80, IPPROTO_TCP}).ok());
    CHECK(fx.Run(ack).verdict == BALLAST_V_DROP_VIP_UNSERVED);
  }
  SECTION("VIP deleted and its id given to another VIP: the old flow does not follow the id") {
    REQUIRE(fx.dp().DeleteVip({ToIpAddress(Lab::Vip4()), 80, IPPROTO_TCP}).ok());
    fx.AddVip(Lab::Vip4(), 8080, IPPROTO_TCP, kVipTcp4);
    CHECK(fx.Run(ack).verdict == BALLAST_V_DROP_VIP_UNSERVED);
  }
  SECTION("VIP key moved to another id: the flow keeps its backend, counted on the new id") {
    fx.AddVip(Lab::Vip4(), 80, IPPROTO_TCP, 9);
    fx.SetUniformTable(9, 2);
    CHECK(BackendOf(fx, fx.Run(ack)) == 1);
    CHECK(fx.VipStats(9).packets == 1);
    CHECK(fx.Flow(kKey)->vip_id == 9);
  }
}

TEST_CASE("A one-port VIP added beside a port-0 VIP takes over that port's known flows",
          "[lb][conntrack][vip_refs]") {
  LbFixture fx;
  SetUpLab(fx);
  const Addr vip = Addr::Parse("198.18.0.20");
  fx.AddVip(vip, 0, IPPROTO_TCP, 7);
  fx.SetUniformTable(7, 1);
  const ballast_flow_key key = FlowKey(Lab::Client4(), vip, kPort, 80, IPPROTO_TCP);
  auto seg = [&](uint8_t flags, uint32_t seq) {
    return FromClient4(vip).Tcp(kPort, 80, flags, seq, 5001).Build();
  };
  REQUIRE(BackendOf(fx, fx.Run(seg(tcp::kSyn, 100))) == 1);
  REQUIRE(BackendOf(fx, fx.Run(seg(tcp::kAck, 101))) == 1);
  REQUIRE(fx.Flow(key)->vip_id == 7);
  CHECK(fx.VipStats(7).packets == 2);

  fx.AddVip(vip, 80, IPPROTO_TCP, 8);
  fx.SetUniformTable(8, 2);
  CHECK(BackendOf(fx, fx.Run(seg(tcp::kAck, 101))) == 1);  // established: keeps its backend
  CHECK(fx.VipStats(8).packets == 1);                      // but belongs to the new VIP
  CHECK(fx.VipStats(7).packets == 2);
  CHECK(fx.Flow(key)->vip_id == 8);

  // Deleting the one-port VIP hands the flow back to the port-0 VIP.
  REQUIRE(fx.dp().DeleteVip({ToIpAddress(vip), 80, IPPROTO_TCP}).ok());
  CHECK(BackendOf(fx, fx.Run(seg(tcp::kAck, 101))) == 1);
  CHECK(fx.VipStats(7).packets == 3);
  CHECK(fx.Flow(key)->vip_id == 7);
}

TEST_CASE("A mid-stream packet without a flow is adopted as established", "[lb][conntrack]") {
  LbFixture fx;
  SetUpLab(fx);
  const uint32_t want = fx.Predict(kVipTcp4, kKey);
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck | tcp::kPsh, 9000, 100, 30))) == want);
  auto f = fx.Flow(kKey);
  REQUIRE(f);
  CHECK(f->state == BALLAST_FLOW_ESTABLISHED);
  CHECK(f->backend_id == want);
  CHECK(fx.FlowMap(kKey) == "adopted_flows");  // apart from flows whose handshake was seen
  const uint32_t other = want == 1 ? 2 : 1;
  fx.SetUniformTable(kVipTcp4, other);
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 9030, 100))) == want);
}

TEST_CASE("FIN and RST: the flow lingers on its backend; client RSTs are counted",
          "[lb][conntrack]") {
  LbFixture fx;
  Establish(fx);
  SECTION("FIN") {
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kFin | tcp::kAck, 101, 5001))) == 1);
    CHECK(fx.Flow(kKey)->state == BALLAST_FLOW_CLOSING);
    fx.SetUniformTable(kVipTcp4, 2);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 102, 5002))) == 1);
    CHECK(fx.BackendStats(1).client_rsts == 0);
  }
  SECTION("RST") {
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kRst, 101, 0))) == 1);
    CHECK(fx.Flow(kKey)->state == BALLAST_FLOW_CLOSING);
    CHECK(fx.BackendStats(1).client_rsts == 1);
    fx.SetUniformTable(kVipTcp4, 2);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kRst, 101, 0))) == 1);
    CHECK(fx.BackendStats(1).client_rsts == 1);  // a flow's reset counts once
  }
  SECTION("a thousand RSTs on one flow count as one") {
    for (int i = 0; i < 1000; ++i) {
      REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kRst, 101 + static_cast<uint32_t>(i), 0))) == 1);
    }
    CHECK(fx.BackendStats(1).client_rsts == 1);
  }
  SECTION("RSTs on a flow adopted mid-stream (no handshake seen) are not counted") {
    fx.SetUniformTable(kVipTcp4, 2);
    const uint16_t port = kPort + 1;
    const ballast_flow_key other = FlowKey(Lab::Client4(), Lab::Vip4(), port, 80, IPPROTO_TCP);
    // A spoofer's ACK adopts a flow from the table, then its RST.
    CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kAck, 7000, 1).Build())) == 2);
    REQUIRE(fx.Flow(other));
    CHECK((fx.Flow(other)->flags & BALLAST_FLOW_F_HANDSHAKE_SEEN) == 0);
    CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kRst, 7001, 0).Build())) == 2);
    CHECK(fx.BackendStats(2).client_rsts == 0);
    CHECK(fx.Flow(kKey)->flags & BALLAST_FLOW_F_HANDSHAKE_SEEN);  // the real one has it
  }
  SECTION("a new SYN on the closed tuple reopens it on its backend while it lingers") {
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kRst, 101, 0))) == 1);
    fx.SetUniformTable(kVipTcp4, 3);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 900, 0))) == 1);
    CHECK(fx.Handshake(kKey)->backend_id == 1);
    CHECK(fx.BackendStats(1).syn_retransmits == 0);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 901, 100))) == 1);
    CHECK(fx.Flow(kKey)->state == BALLAST_FLOW_ESTABLISHED);
  }
}

TEST_CASE("Handshake time and first-response time are recorded once per flow", "[lb][conntrack]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  fx.Run(Segment(tcp::kSyn, 100, 0));
  CHECK(fx.BackendStats(1).handshake_count == 0);
  fx.Run(Segment(tcp::kAck, 101, 5001));  // completes the handshake
  auto s = fx.BackendStats(1);
  CHECK(s.handshake_count == 1);
  CHECK(s.handshake_ns_sum > 0);
  CHECK(s.first_response_count == 0);

  fx.Run(Segment(tcp::kAck | tcp::kPsh, 101, 5001, 100));  // request
  auto f = fx.Flow(kKey);
  REQUIRE(f);
  CHECK((f->flags & BALLAST_FLOW_F_PAYLOAD_SEEN) != 0);
  CHECK(f->payload_ack == 5001);
  fx.Run(Segment(tcp::kAck, 201, 5001));  // nothing new from the server yet
  CHECK(fx.BackendStats(1).first_response_count == 0);
  fx.Run(Segment(tcp::kAck, 201, 6461));  // acknowledges the response
  s = fx.BackendStats(1);
  CHECK(s.first_response_count == 1);
  CHECK(s.first_response_ns_sum > 0);
  fx.Run(Segment(tcp::kAck | tcp::kPsh, 201, 7921, 50));
  fx.Run(Segment(tcp::kAck, 251, 9000));
  CHECK(fx.BackendStats(1).first_response_count == 1);
  CHECK(fx.BackendStats(1).handshake_count == 1);
  CHECK(fx.BackendStats(1).new_flows == 1);
  CHECK(fx.BackendStats(1).packets == 7);
}

TEST_CASE("Every packet increments exactly one verdict counter", "[lb][conntrack]") {
  LbFixture fx;
  SetUpLab(fx);
  // A mixed stream: forwarded, passed, dropped, malformed.
  std::vector<Bytes> frames;
  for (uint16_t p = 1; p <= 20; ++p) {
    frames.push_back(FromClient4().Tcp(p, 80, tcp::kSyn).Build());
    frames.push_back(FromClient6().Tcp(p, 443, tcp::kSyn).Build());
    frames.push_back(FromClient4().Udp(p, 53).PayloadSize(p).Build());
    frames.push_back(FromClient4(Addr::Parse("198.18.9.9")).Tcp(p, 80, tcp::kSyn).Build());
    frames.push_back(FromClient4().Ip4Fragment(p, false).PayloadSize(64).Build());
    frames.push_back(FromClient4().Tcp(p, 80, tcp::kAck).CutL4(p % 4 + 4).Build());
    Bytes shortip = FromClient4().Tcp(p, 80, tcp::kSyn).Build();
    shortip.resize(14 + p % 19);
    frames.push_back(shortip);
  }
  for (const Bytes& f : frames) fx.Run(f);  // Run() checks one counter per packet
  const auto v = fx.Verdicts();
  uint64_t sum = 0;
  for (uint64_t c : v) sum += c;
  CHECK(sum == fx.runs());
  CHECK(sum == frames.size());
  CHECK(v[BALLAST_V_TX] == 60);
  CHECK(v[BALLAST_V_PASS_NOT_VIP] == 20);
  CHECK(v[BALLAST_V_DROP_FRAG4] == 20);
  CHECK(v[BALLAST_V_DROP_BAD_L4] == 20);
  CHECK(v[BALLAST_V_BAD_IP4] == 20);
}

}  // namespace
}  // namespace ballast::bpftest
