// Second chance: a backend with no listener bounces the client's SYN back
// (xdp_decap), and the router sends it to the flow's next choice (xdp_lb,
// bpf/lib/bounce.h). Both real programs, chained frame by frame: the
// router's output is the decap program's input and the other way round.
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include <catch2/catch.hpp>

#include "agent/dataplane/decap.h"
#include "tests/bpf/lb_fixture.h"
#include "tests/bpf/tshark.h"
#include "tests/lib/netns.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

// A client port of `vip_id` whose flow has three distinct choices; sets
// first, second, third.
uint16_t ThreeChoices(const LbFixture& fx, uint32_t vip_id, const Addr& client, const Addr& vip,
                      uint16_t dport, uint32_t* first, uint32_t* second, uint32_t* third) {
  for (uint16_t port = 43000; port < 43100; ++port) {
    const ballast_flow_key key = FlowKey(client, vip, port, dport, IPPROTO_TCP);
    *first = fx.Predict(vip_id, key);
    *second = fx.PredictNext(vip_id, key, *first, *first);
    *third = fx.PredictNext(vip_id, key, *first, *second);
    if (*second != *first && *third != *first && *third != *second) return port;
  }
  FAIL("no client port with three distinct choices");
  return 0;
}

ballast_backend_bounces Bounces(LbFixture& fx, uint32_t id) {
  auto b = fx.dp().BackendBounces(id);
  REQUIRE(b.ok());
  return *b;
}

uint16_t OuterId(const Bytes& out) {
  auto v = pktgen::ParseFrame(out);
  REQUIRE(v.ok());
  return v->ip->id;
}

// SETUP shared by the IPv4 tests: the lab, a client port whose flow has
// three distinct choices, and its SYN sent (to the first choice).
struct FirstSyn {
  uint32_t first = 0, second = 0, third = 0;
  uint16_t port = 0;
  ballast_flow_key key{};
  Bytes syn;
  Outcome out;  // the SYN as the router sent it
};

// The connection of SendFirstSyn() completed on `first` and past its
// probation (probation.h): in `flows`.
void PastProbation(LbFixture& fx, uint16_t port, uint32_t first) {
  const Bytes ack = FromClient4().Tcp(port, 80, tcp::kAck, 101, 5001).Build();
  REQUIRE(BackendOf(fx, fx.Run(ack)) == first);
  REQUIRE(BackendOf(fx, fx.Run(ack)) == first);  // the probe
  WaitOutProbation();
  REQUIRE(BackendOf(fx, fx.Run(ack)) == first);
}

FirstSyn SendFirstSyn(LbFixture& fx) {
  SetUpLab(fx);
  FirstSyn f;
  f.port =
      ThreeChoices(fx, kVipTcp4, Lab::Client4(), Lab::Vip4(), 80, &f.first, &f.second, &f.third);
  f.key = FlowKey(Lab::Client4(), Lab::Vip4(), f.port, 80, IPPROTO_TCP);
  f.syn = FromClient4().Tcp(f.port, 80, tcp::kSyn, 100, 0).Build();
  f.out = fx.Run(f.syn);
  REQUIRE(BackendOf(fx, f.out) == f.first);
  return f;
}

TEST_CASE("A bounced SYN goes to the next choice, twice at most, and the ACK follows",
          "[lb][bounce]") {
  LbFixture fx;
  const FirstSyn setup = SendFirstSyn(fx);
  const auto& [first, second, third, port, key, syn, o1] = setup;
  CHECK(OuterId(o1.out) != BALLAST_ENCAP_ID_LAST);  // the SYN's tag (mark.h)

  // The first backend has no listener: its bounce goes to the second.
  const Outcome o2 = fx.Run(Bounce(o1.out));
  REQUIRE(o2.verdict == BALLAST_V_BOUNCE_TX);
  CheckEncapsulated(o2.out, {.outer_family = 4,
                             .outer_src = Lab::Src4(),
                             .outer_dst = fx.BackendAddr(second),
                             .inner_ip = pktgen::IpPacketOf(syn)});
  CHECK(OuterId(o2.out) != BALLAST_ENCAP_ID_LAST);
  CHECK(OuterId(o2.out) != OuterId(o1.out));  // a tag of its own for that backend
  REQUIRE(fx.Handshake(key));
  CHECK(fx.Handshake(key)->backend_id == second);
  CHECK(fx.Handshake(key)->bounces == 1);
  CHECK(Bounces(fx, first).refused == 0);  // counted once another backend takes it
  CHECK(Bounces(fx, second).received == 1);
  CHECK(fx.BackendStats(second).packets == 1);

  // The second bounces too: the third, marked as the last hop.
  const Outcome o3 = fx.Run(Bounce(o2.out));
  REQUIRE(o3.verdict == BALLAST_V_BOUNCE_TX);
  CHECK(BackendOf(fx, o3) == third);
  CHECK(OuterId(o3.out) == BALLAST_ENCAP_ID_LAST);
  CHECK(fx.Handshake(key)->backend_id == third);
  CHECK(fx.Handshake(key)->bounces == BALLAST_BOUNCES_MAX);

  // A third bounce (a backend that ignores the mark) is past the budget.
  const Outcome o4 = fx.Run(Bounce(o3.out));
  CHECK(o4.verdict == BALLAST_V_DROP_BOUNCE_BUDGET);
  CHECK(o4.action == XDP_DROP);
  CHECK(fx.Handshake(key)->backend_id == third);
  CHECK(Bounces(fx, third).refused == 0);

  // The client's ACK follows the SYN to the third, and only now are the
  // two refusals evidence against the first and the second.
  CHECK(Bounces(fx, first).refused == 0);
  CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kAck, 101, 5001).Build())) == third);
  const auto f = fx.Flow(key);
  REQUIRE(f);
  CHECK(f->backend_id == third);
  CHECK(Bounces(fx, first).refused == 1);
  CHECK(Bounces(fx, second).refused == 1);
  CHECK(Bounces(fx, third).refused == 0);

  // Established: a bounce can no longer do anything.
  const Outcome late = fx.Run(Bounce(o3.out));
  CHECK(late.verdict == BALLAST_V_DROP_BOUNCE_STRANGER);
  CHECK(fx.Flow(key)->backend_id == third);
}

// The lab's finding (#41): on a port-0 VIP, SYNs to a port no backend
// serves were bounced by every backend and counted as refusals against
// each, and the health checks froze and unfroze the pool. A refusal is
// evidence only when another backend then takes the connection.
TEST_CASE("SYNs to a port no backend serves are no evidence against any backend", "[lb][bounce]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetTable(kVipTcp4, CyclingTable({1, 2, 3}));
  for (uint16_t port = 42000; port < 42030; ++port) {
    Outcome o = fx.Run(FromClient4().Tcp(port, 80, tcp::kSyn, 100, 0).Build());
    REQUIRE(o.verdict == BALLAST_V_TX);
    // Every backend bounces it until the last hop, whose kernel answers RST.
    for (int hop = 0; hop < BALLAST_BOUNCES_MAX; ++hop) {
      o = fx.Run(Bounce(o.out));
      REQUIRE(o.verdict == BALLAST_V_BOUNCE_TX);
    }
    REQUIRE(OuterId(o.out) == BALLAST_ENCAP_ID_LAST);
    // The client's RST to the backend's... nothing completes.
  }
  for (uint32_t id : {1u, 2u, 3u}) CHECK(Bounces(fx, id).refused == 0);
}

// A client reuses the port of a connection its backend ended (the router
// never saw a close: the flow is ESTABLISHED and recent), and that backend
// no longer listens: the SYN goes to the flow's backend (lb_spoof_test),
// which bounces it. The bounce sends it on to the next choice but neither
// ends the flow nor counts against the backend; the new connection's ACK
// moves the flow, and only then is the refusal evidence (another backend
// took the connection).
TEST_CASE("A SYN on an active flow that its backend bounces: the new connection's ACK moves it",
          "[lb][bounce]") {
  LbFixture fx;
  const FirstSyn setup = SendFirstSyn(fx);
  const auto& [first, second, third, port, key, syn, o1] = setup;
  PastProbation(fx, port, first);
  REQUIRE(fx.FlowMap(key) == "flows");

  const Outcome o2 = fx.Run(FromClient4().Tcp(port, 80, tcp::kSyn, 777000, 0).Build());
  REQUIRE(o2.verdict == BALLAST_V_GUARDED_TX);
  REQUIRE(BackendOf(fx, o2) == first);
  REQUIRE(fx.Flow(key));
  // A bounce from another backend is a stranger's and ends nothing.
  CHECK(fx.Run(BounceFrom(o2.out, fx.BackendAddr(second))).verdict ==
        BALLAST_V_DROP_BOUNCE_STRANGER);
  REQUIRE(fx.Flow(key));
  CHECK(fx.Flow(key)->backend_id == first);

  const Outcome o3 = fx.Run(Bounce(o2.out));
  REQUIRE(o3.verdict == BALLAST_V_BOUNCE_TX);
  CHECK(BackendOf(fx, o3) == second);
  REQUIRE(fx.Flow(key));
  CHECK(fx.Flow(key)->backend_id == first);
  CHECK(Bounces(fx, first).refused == 0);

  SECTION("the new connection's ACK moves the flow") {
    CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kAck, 777001, 1).Build())) ==
          second);
    REQUIRE(fx.Flow(key));
    CHECK(fx.Flow(key)->backend_id == second);
    CHECK(fx.Flow(key)->seq_next == 777001);
    CHECK(Bounces(fx, first).refused == 1);
    CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kAck, 777001, 1).Build())) ==
          second);
  }
  SECTION("the old connection going on keeps it where it was") {
    CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kAck, 101, 5001).Build())) ==
          first);
    CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kAck, 777001, 1).Build())) ==
          first);
    CHECK(fx.Flow(key)->backend_id == first);
    CHECK(Bounces(fx, first).refused == 0);
  }
}

// A bounce must echo the tag the router put in the outer header of the
// packet it sent (bpf/lib/mark.h): a stranger who forges one from the
// backend's address, with the handshake's ISN (its own spoofed SYN's),
// must guess it, once per handshake.
TEST_CASE("A bounce without the router's tag is forged: dropped, one guess per handshake",
          "[lb][bounce]") {
  for (const bool on_flow : {false, true}) {
    INFO((on_flow ? "a SYN guarded on a live flow" : "a new connection's SYN"));
    LbFixture fx;
    const FirstSyn setup = SendFirstSyn(fx);
    const auto& [first, second, third, port, key, syn, o1] = setup;
    Bytes sent = o1.out;
    if (on_flow) {
      PastProbation(fx, port, first);
      // The spoofer's SYN on the live tuple, with its own ISN.
      const Outcome g = fx.Run(FromClient4().Tcp(port, 80, tcp::kSyn, 555000, 0).Build());
      REQUIRE(g.verdict == BALLAST_V_GUARDED_TX);
      sent = g.out;
    }
    const Outcome f = fx.Run(WithOuterMark(Bounce(sent), OuterMarkOf(sent) ^ 0x100));  // a bit off
    CHECK(f.verdict == BALLAST_V_DROP_BOUNCE_FORGED);
    CHECK(f.action == XDP_DROP);
    CHECK(Bounces(fx, first).refused == 0);
    CHECK(fx.BackendStats(second).packets == 0);
    // The genuine bounce after a wrong guess is not taken either.
    CHECK(fx.Run(Bounce(sent)).verdict == BALLAST_V_DROP_BOUNCE_BUDGET);
    if (on_flow) {
      REQUIRE(fx.Flow(key));
      CHECK(fx.Flow(key)->backend_id == first);
      CHECK(BackendOf(fx, fx.Run(FromClient4().Tcp(port, 80, tcp::kAck, 555001, 1).Build())) ==
            first);
    }
  }
}

TEST_CASE("IPv6 and IPv4-in-IPv6 bounces; the last hop is marked in the flow label",
          "[lb][bounce]") {
  LbFixture fx;
  SetUpLab(fx);
  for (const bool v4_client : {false, true}) {
    const uint32_t vip_id = v4_client ? kVip4To6 : kVipTcp6;
    const Addr client = v4_client ? Lab::Client4() : Lab::Client6();
    const Addr vip = v4_client ? Lab::Vip4() : Lab::Vip6();
    const uint16_t dport = 443;
    uint32_t first = 0, second = 0, third = 0;
    const uint16_t port = ThreeChoices(fx, vip_id, client, vip, dport, &first, &second, &third);
    INFO((v4_client ? "IPv4 client" : "IPv6 client") << ", port " << port);
    const Bytes syn = (v4_client ? FromClient4(vip) : FromClient6(vip))
                          .Tcp(port, dport, tcp::kSyn, 100, 0)
                          .Build();
    const Outcome o1 = fx.Run(syn);
    REQUIRE(BackendOf(fx, o1) == first);
    const Outcome o2 = fx.Run(Bounce(o1.out));
    REQUIRE(o2.verdict == BALLAST_V_BOUNCE_TX);
    CheckEncapsulated(o2.out, {.outer_family = 6,
                               .outer_src = Lab::Src6(),
                               .outer_dst = fx.BackendAddr(second),
                               .inner_ip = pktgen::IpPacketOf(syn)});
    CHECK(pktgen::ParseFrame(o2.out)->ip->flow_label != BALLAST_FLOW_LABEL_LAST);
    const Outcome o3 = fx.Run(Bounce(o2.out));
    REQUIRE(o3.verdict == BALLAST_V_BOUNCE_TX);
    CHECK(BackendOf(fx, o3) == third);
    CHECK(pktgen::ParseFrame(o3.out)->ip->flow_label == BALLAST_FLOW_LABEL_LAST);
  }
}

TEST_CASE("With no other backend the bounce returns to the one that refused, as its last hop",
          "[lb][bounce]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 2);
  const Bytes syn = FromClient4().Tcp(44000, 80, tcp::kSyn, 100, 0).Build();
  const Outcome o1 = fx.Run(syn);
  REQUIRE(BackendOf(fx, o1) == 2);
  const Outcome o2 = fx.Run(Bounce(o1.out));
  REQUIRE(o2.verdict == BALLAST_V_BOUNCE_TX);
  CHECK(BackendOf(fx, o2) == 2);
  CHECK(OuterId(o2.out) == BALLAST_ENCAP_ID_LAST);
  // Its kernel answers with a RST; another bounce would be dropped.
  CHECK(fx.Run(Bounce(o2.out)).verdict == BALLAST_V_DROP_BOUNCE_BUDGET);
}

// A bounce that does not match a handshake under way, from the backend its
// SYN went to, is dropped and counted and changes nothing.
TEST_CASE("Hostile or stray bounces are dropped, counted, and move nothing", "[lb][bounce]") {
  LbFixture fx;
  const FirstSyn setup = SendFirstSyn(fx);
  const auto& [first, second, third, port, key, syn, o1] = setup;
  const ballast_handshake_set before = fx.HandshakeSet(key);
  // An encapsulated frame to the router carrying `inner` (an IP packet),
  // from `from`.
  const auto to_router = [](const Addr& from, const Bytes& inner, uint8_t proto = IPPROTO_IPIP) {
    return pktgen::PacketBuilder()
        .Eth(Lab::NexthopDmac(), Lab::RouterMac())
        .Ip4(from, Lab::Src4())
        .L4Proto(proto)
        .Payload(inner)
        .Build();
  };
  const auto inner = [&](uint16_t sport, uint8_t flags, const Addr& dst = Lab::Vip4()) {
    return pktgen::PacketBuilder().Ip4(Lab::Client4(), dst).Tcp(sport, 80, flags).BuildIp();
  };
  const Addr a_first = fx.BackendAddr(first), a_second = fx.BackendAddr(second);
  const Bytes syn_ip = inner(port, tcp::kSyn);
  ExpectVerdicts(
      fx,
      {
          {"from an address that is no backend", BounceFrom(o1.out, Lab::Backend4(99)),
           BALLAST_V_DROP_BOUNCE_STRANGER},
          {"from a backend of the VIP the SYN did not go to", BounceFrom(o1.out, a_second),
           BALLAST_V_DROP_BOUNCE_STRANGER},
          {"a tuple with no handshake under way", to_router(a_first, inner(port + 1, tcp::kSyn)),
           BALLAST_V_DROP_BOUNCE_STRANGER},
          {"not a pure SYN (SYN-ACK)", to_router(a_first, inner(port, tcp::kSyn | tcp::kAck)),
           BALLAST_V_DROP_BOUNCE_BAD},
          // (an established second chance bounce, but of no adopted flow)
          {"an ACK", to_router(a_first, inner(port, tcp::kAck)), BALLAST_V_DROP_BOUNCE_STRANGER},
          {"to an address that is no VIP",
           to_router(a_first, inner(port, tcp::kSyn, Lab::Backend4(2))), BALLAST_V_DROP_BOUNCE_BAD},
          {"a truncated inner packet",
           to_router(a_first, Bytes(syn_ip.begin(), syn_ip.begin() + 30)),
           BALLAST_V_DROP_BOUNCE_BAD},
          {"UDP inside",
           to_router(
               a_first,
               pktgen::PacketBuilder().Ip4(Lab::Client4(), Lab::Vip4()).Udp(port, 53).BuildIp()),
           BALLAST_V_DROP_BOUNCE_BAD},
          {"an IPv4 fragment of an encapsulated packet",
           pktgen::PacketBuilder()
               .Eth(Lab::NexthopDmac(), Lab::RouterMac())
               .Ip4(a_first, Lab::Src4())
               .Ip4Fragment(0, true)
               .L4Proto(IPPROTO_IPIP)
               .Payload(syn_ip)
               .Build(),
           BALLAST_V_DROP_BOUNCE_BAD},
          {"IPv6 inside IPv4",
           to_router(a_first,
                     pktgen::PacketBuilder()
                         .Ip6(Lab::Client6(), Lab::Vip6())
                         .Tcp(port, 443, tcp::kSyn)
                         .BuildIp(),
                     IPPROTO_IPV6),
           BALLAST_V_DROP_BOUNCE_BAD},
      },
      XDP_DROP);
  const ballast_handshake_set after = fx.HandshakeSet(key);
  CHECK(std::memcmp(&before, &after, sizeof(before)) == 0);
  CHECK(Bounces(fx, first).refused == 0);
  CHECK(Bounces(fx, second).received == 0);
  // The real one still works afterwards.
  CHECK(fx.Run(Bounce(o1.out)).verdict == BALLAST_V_BOUNCE_TX);
  // An encapsulated packet to another address of the router's is not a
  // bounce: the kernel's, as before.
  const Bytes elsewhere = pktgen::PacketBuilder()
                              .Eth(Lab::NexthopDmac(), Lab::RouterMac())
                              .Ip4(a_first, Lab::Backend4(200))
                              .L4Proto(IPPROTO_IPIP)
                              .Payload(inner(port, tcp::kSyn))
                              .Build();
  CHECK(fx.Run(elsewhere).verdict == BALLAST_V_PASS_NOT_VIP);
}

TEST_CASE("A bounce never goes to a drained or evicted backend", "[lb][bounce]") {
  LbFixture fx;
  const FirstSyn setup = SendFirstSyn(fx);
  const auto& [first, second, third, port, key, syn, o1] = setup;
  for (const auto state : {BALLAST_BACKEND_EVICTED, BALLAST_BACKEND_DRAINING}) {
    fx.SetBackendState(second, state);
    const uint32_t want = fx.PredictNext(kVipTcp4, key, first, first, {second});
    REQUIRE(want != second);
    const Outcome o = fx.Run(Bounce(o1.out));
    CHECK(o.verdict == BALLAST_V_BOUNCE_TX);
    CHECK(BackendOf(fx, o) == want);
    fx.SetBackendState(second, BALLAST_BACKEND_ACTIVE);
    // again from the first
    fx.Run(FromClient4().Tcp(port, 80, tcp::kSyn, 100, 0).Build());
  }
  // Nothing else usable: the only other choice is the one that refused.
  fx.SetBackendState(second, BALLAST_BACKEND_DRAINING);
  fx.SetBackendState(third, BALLAST_BACKEND_EVICTED);
  const Outcome last = fx.Run(Bounce(o1.out));
  CHECK(last.verdict == BALLAST_V_BOUNCE_TX);
  CHECK(BackendOf(fx, last) == first);
  CHECK(OuterId(last.out) == BALLAST_ENCAP_ID_LAST);
}

// ---- the backend's half, chained with the router ----------------------------

TEST_CASE("xdp_decap bounces a SYN nobody listens for, and the router takes it",
          "[lb][bounce][decap]") {
  auto ns = pktgen::ScopedNetns::Create("ballast-bt-bounce", {});
  INFO(ns.status().ToString());
  REQUIRE(ns.ok());
  LbFixture fx;
  SetUpLab(fx);
  const std::unique_ptr<dataplane::Decap> decap = LoadRouterOnlyDecap();
  const auto run_decap = [&](const Bytes& frame) { return RunDecap(*decap, frame); };
  const auto stats = [&] { return DecapStats(*decap); };

  std::vector<Bytes> bounced;  // the decap program's bounces, for tshark
  for (const bool v6 : {false, true}) {
    INFO((v6 ? "IPv6" : "IPv4"));
    const uint32_t vip_id = v6 ? kVipTcp6 : kVipTcp4;
    const Addr client = v6 ? Lab::Client6() : Lab::Client4();
    const Addr vip = v6 ? Lab::Vip6() : Lab::Vip4();
    const uint16_t dport = v6 ? 443 : 80;
    uint32_t first = 0, second = 0, third = 0;
    const uint16_t port = ThreeChoices(fx, vip_id, client, vip, dport, &first, &second, &third);
    const Bytes syn =
        (v6 ? FromClient6() : FromClient4()).Tcp(port, dport, tcp::kSyn, 100, 0).Build();
    const auto before = stats();

    // No listener on the first: the decap program sends the frame back.
    const Outcome o1 = fx.Run(syn);
    REQUIRE(BackendOf(fx, o1) == first);
    const auto b1 = run_decap(o1.out);
    REQUIRE(b1.action == XDP_TX);
    CHECK(b1.out == Bounce(o1.out));  // outer header and checksums as the router needs them
    bounced.push_back(b1.out);
    {
      auto v = pktgen::ParseFrame(b1.out);
      REQUIRE(v.ok());
      CHECK(v->ip->header_checksum_ok);
      CHECK(pktgen::CheckChecksums(*v->ip).ok());
    }
    // A frame that crossed routers (outer TTL 61): the bounce leaves with a
    // fresh TTL and an IPv4 header checksum updated for it.
    {
      Bytes aged = o1.out;
      if (!v6) {
        aged[14 + 8] = 61;
        aged[14 + 10] = aged[14 + 11] = 0;
        uint32_t sum = 0;
        for (size_t i = 14; i < 34; i += 2) sum += (aged[i] << 8) | aged[i + 1];
        while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
        aged[14 + 10] = static_cast<uint8_t>(~sum >> 8);
        aged[14 + 11] = static_cast<uint8_t>(~sum);
      } else {
        aged[14 + 7] = 61;
      }
      const auto b = run_decap(aged);
      REQUIRE(b.action == XDP_TX);
      auto v = pktgen::ParseFrame(b.out);
      REQUIRE(v.ok());
      CHECK(v->ip->ttl == 64);
      CHECK(v->ip->header_checksum_ok);
      CHECK(b.out == Bounce(o1.out));
    }
    // ... the router sends it to the second, which has no listener either.
    const Outcome o2 = fx.Run(b1.out);
    REQUIRE(o2.verdict == BALLAST_V_BOUNCE_TX);
    REQUIRE(BackendOf(fx, o2) == second);
    const auto b2 = run_decap(o2.out);
    REQUIRE(b2.action == XDP_TX);
    // The third gets it marked as the last hop: passed up unencapsulated
    // (its kernel answers RST), not bounced.
    const Outcome o3 = fx.Run(b2.out);
    REQUIRE(BackendOf(fx, o3) == third);
    const auto b3 = run_decap(o3.out);
    CHECK(b3.action == XDP_PASS);
    CHECK(Bytes(b3.out.begin() + 14, b3.out.end()) == pktgen::IpPacketOf(syn));
    const auto after = stats();
    CHECK(after[BALLAST_DECAP_V_BOUNCED] - before[BALLAST_DECAP_V_BOUNCED] == 3);
    CHECK(after[BALLAST_DECAP_V_REFUSED] - before[BALLAST_DECAP_V_REFUSED] == 1);

    // With a listener on VIP:port the SYN goes up the stack as usual.
    {
      Listener l(v6 ? AF_INET6 : AF_INET, dport);
      const Bytes syn2 =
          (v6 ? FromClient6() : FromClient4()).Tcp(port + 1, dport, tcp::kSyn, 100, 0).Build();
      const auto r = run_decap(fx.Run(syn2).out);
      CHECK(r.action == XDP_PASS);
      CHECK(Bytes(r.out.begin() + 14, r.out.end()) == pktgen::IpPacketOf(syn2));
    }
    // Not a SYN: without the probe mark never asked, stripped.
    const Outcome ack = fx.Run(
        (v6 ? FromClient6() : FromClient4()).Tcp(port + 2, dport, tcp::kAck, 100, 1).Build());
    CHECK(run_decap(WithOuterMark(ack.out, 0)).action == XDP_PASS);
    // With it (the flow was adopted: its probation probe), asked: no socket
    // here holds it, so it goes back, and the router ends the probation.
    const auto probe = run_decap(ack.out);
    CHECK(probe.action == XDP_TX);
    CHECK(fx.Run(probe.out).verdict == BALLAST_V_DROP_PROBATION_REFUTED);
  }

  // An independent dissector reads the bounces: outer addresses swapped,
  // the inner SYN intact, every checksum good.
  CheckBouncesDissected(bounced, "tcp.flags.syn", "1");

  // Second chance off: passed up, the kernel answers.
  REQUIRE(decap->SetBounce(false).ok());
  const Outcome o = fx.Run(FromClient4().Tcp(45000, 80, tcp::kSyn, 100, 0).Build());
  const auto r = run_decap(o.out);
  CHECK(r.action == XDP_PASS);
  CHECK(r.out.size() == o.out.size() - 20);
}

}  // namespace
}  // namespace ballast::bpftest
