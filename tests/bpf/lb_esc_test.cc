// Established second chance: a connection adopted mid-stream (ECMP moved it
// here) on a Maglev slot whose backend changed since it began goes to the
// slot's current backend marked as a probe; a backend without its socket
// sends it back (xdp_decap), and the router walks the slot's history
// (maglev_history) to the backend that holds it (bpf/lib/bounce.h,
// bpf/lib/esc.h). The real programs, chained frame by frame where the
// backend's half matters.
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <utility>
#include <vector>

#include <cstring>

#include <catch2/catch.hpp>

#include "agent/dataplane/decap.h"
#include "tests/bpf/lb_fixture.h"
#include "tests/bpf/tshark.h"
#include "tests/lib/netns.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

constexpr size_t kM = 13;  // the lab's table size

// The router's mark in an encapsulated output, as a backend's decap program
// reads it for a packet other than a SYN (bpf/lib/mark.h): the probe mark
// is any IPv4 identification but 0 and the last-hop mark, or an IPv6 flow
// label with the probe bit.
uint32_t MarkOf(const Bytes& out) {
  auto v = pktgen::ParseFrame(out);
  REQUIRE(v.ok());
  REQUIRE(v->ip.has_value());
  if (v->ip->family == 4) {
    if (v->ip->id == BALLAST_ENCAP_ID_LAST) return BALLAST_ENCAP_ID_LAST;
    return v->ip->id != 0 ? BALLAST_ENCAP_ID_PROBE : 0;
  }
  if (v->ip->flow_label == BALLAST_FLOW_LABEL_LAST) return BALLAST_ENCAP_ID_LAST;
  return (v->ip->flow_label & BALLAST_FLOW_LABEL_PROBE_BIT) != 0 ? BALLAST_ENCAP_ID_PROBE : 0;
}

// Whether the flow of `o`'s packet walks its slot's history (established
// second chance), rather than being on probation (its probe carries the
// same mark: probation.h).
bool Walks(const LbFixture& fx, const Outcome& o) {
  auto v = pktgen::ParseFrame(o.out);
  REQUIRE(v.ok());
  REQUIRE(v->ip->inner);
  const pktgen::IpView& in = *v->ip->inner;
  REQUIRE(in.l4);
  const auto f = fx.Flow(FlowKey(in.src, in.dst, in.l4->sport, in.l4->dport, in.proto));
  REQUIRE(f);
  return (f->flags & BALLAST_FLOW_F_HISTORY) != 0;
}

// One history word: `ids` most recent first.
uint64_t Word(std::initializer_list<uint32_t> ids) {
  uint64_t w = 0;
  int i = 0;
  for (uint32_t id : ids) w |= uint64_t{id} << (16 * i++);
  return w;
}

ballast_esc_stats Esc(LbFixture& fx) {
  auto s = fx.dp().EscStats();
  REQUIRE(s.ok());
  return *s;
}

struct Family {
  bool v6;
  uint32_t vip_id;
  uint32_t cur, prev1, prev2;  // the slot's backend now, and before
  uint16_t dport;
};
const Family kFamilies[] = {{false, kVipTcp4, 1, 2, 3, 80}, {true, kVipTcp6, 11, 12, 13, 443}};

pktgen::PacketBuilder From(const Family& f) { return f.v6 ? FromClient6() : FromClient4(); }

// SETUP: the VIP's table all on f.cur, every slot's history [prev1, prev2].
void TableWithHistory(LbFixture& fx, const Family& f) {
  fx.SetUniformTable(f.vip_id, f.cur);
  REQUIRE(fx.dp().SetHistory(f.vip_id, std::vector<uint64_t>(kM, Word({f.prev1, f.prev2}))).ok());
}

TEST_CASE("An adopted flow walks its slot's history to the backend that holds it", "[lb][esc]") {
  for (const Family& f : kFamilies) {
    INFO((f.v6 ? "IPv6" : "IPv4"));
    LbFixture fx;
    SetUpLab(fx);
    TableWithHistory(fx, f);
    const ballast_esc_stats e0 = Esc(fx);
    const uint16_t port = 41000;
    const ballast_flow_key key =
        FlowKey(f.v6 ? Lab::Client6() : Lab::Client4(), f.v6 ? Lab::Vip6() : Lab::Vip4(), port,
                f.dport, IPPROTO_TCP);

    // The first packet of a connection ECMP moved here: adopted on the
    // table's pick, with the probe mark.
    const Outcome a = fx.Run(From(f).Tcp(port, f.dport, tcp::kAck, 5000, 1).Build());
    REQUIRE(a.verdict == BALLAST_V_TX);
    CHECK(BackendOf(fx, a) == f.cur);
    CHECK(MarkOf(a.out) == BALLAST_ENCAP_ID_PROBE);
    REQUIRE(fx.Flow(key).has_value());
    CHECK((fx.Flow(key)->flags & BALLAST_FLOW_F_HISTORY) != 0);
    CHECK(fx.FlowMap(key) == "adopted_flows");

    // The current backend has no socket for it: to the previous one, marked.
    const Outcome b1 = fx.Run(Bounce(a.out));
    REQUIRE(b1.verdict == BALLAST_V_ESC_TX);
    CHECK(BackendOf(fx, b1) == f.prev1);
    CHECK(MarkOf(b1.out) == BALLAST_ENCAP_ID_PROBE);
    CHECK(fx.Flow(key)->backend_id == f.prev1);
    // The inner packet is the client's, unchanged.
    CheckEncapsulated(
        b1.out,
        {.outer_family = f.v6 ? 6 : 4,
         .outer_src = f.v6 ? Lab::Src6() : Lab::Src4(),
         .outer_dst = fx.BackendAddr(f.prev1),
         .inner_ip = pktgen::IpPacketOf(From(f).Tcp(port, f.dport, tcp::kAck, 5000, 1).Build())});

    // The flow's next packets go straight there, still marked.
    const Outcome n = fx.Run(From(f).Tcp(port, f.dport, tcp::kAck, 5100, 1).Build());
    CHECK(BackendOf(fx, n) == f.prev1);
    CHECK(MarkOf(n.out) == BALLAST_ENCAP_ID_PROBE);

    // Not there either: the one before.
    const Outcome b2 = fx.Run(Bounce(n.out));
    REQUIRE(b2.verdict == BALLAST_V_ESC_TX);
    CHECK(BackendOf(fx, b2) == f.prev2);

    // Nobody in the history holds it (a late packet of a closed connection):
    // back to the table's pick without the mark; its kernel answers RST, as
    // without this path. The flow stops probing.
    const Outcome b3 = fx.Run(Bounce(b2.out));
    REQUIRE(b3.verdict == BALLAST_V_ESC_TX);
    CHECK(BackendOf(fx, b3) == f.cur);
    CHECK(MarkOf(b3.out) == 0);
    CHECK((fx.Flow(key)->flags & BALLAST_FLOW_F_HISTORY) == 0);
    const Outcome last = fx.Run(From(f).Tcp(port, f.dport, tcp::kAck, 5200, 1).Build());
    CHECK(BackendOf(fx, last) == f.cur);
    CHECK(MarkOf(last.out) == 0);
    // The hop budget is spent: one more bounce is dropped, counted.
    CHECK(fx.Run(Bounce(last.out)).verdict == BALLAST_V_DROP_BOUNCE_STRANGER);

    const ballast_esc_stats e1 = Esc(fx);
    CHECK(e1.adopted - e0.adopted == 1);
    CHECK(e1.adopted_changed - e0.adopted_changed == 1);
    CHECK(e1.moved - e0.moved == 2);
    CHECK(e1.returned - e0.returned == 1);
    CHECK(e1.stranger - e0.stranger == 1);
  }
}

TEST_CASE("Packets in flight to a backend the flow left follow the flow", "[lb][esc]") {
  const Family& f = kFamilies[0];
  LbFixture fx;
  SetUpLab(fx);
  TableWithHistory(fx, f);
  const uint16_t port = 41100;
  // Three packets sent before the first bounce came back.
  const Outcome p1 = fx.Run(From(f).Tcp(port, f.dport, tcp::kAck, 7000, 1).Build());
  const Outcome p2 = fx.Run(From(f).Tcp(port, f.dport, tcp::kAck, 7100, 1).Build());
  REQUIRE(BackendOf(fx, p2) == f.cur);
  REQUIRE(fx.Run(Bounce(p1.out)).verdict == BALLAST_V_ESC_TX);  // flow -> prev1
  const ballast_esc_stats e0 = Esc(fx);
  const Outcome r2 = fx.Run(Bounce(p2.out));
  REQUIRE(r2.verdict == BALLAST_V_ESC_TX);
  CHECK(BackendOf(fx, r2) == f.prev1);
  CHECK(MarkOf(r2.out) == BALLAST_ENCAP_ID_PROBE);
  CHECK(Esc(fx).forwarded - e0.forwarded == 1);
  CHECK(Esc(fx).moved == e0.moved);  // the flow did not move again
}

TEST_CASE("Only usable previous backends: drained until its deadline, never evicted", "[lb][esc]") {
  const Family& f = kFamilies[0];
  LbFixture fx;
  SetUpLab(fx);
  TableWithHistory(fx, f);
  // prev1 evicted: skipped; prev2 draining (no deadline yet): taken.
  fx.SetBackendState(f.prev1, BALLAST_BACKEND_EVICTED);
  fx.SetBackendState(f.prev2, BALLAST_BACKEND_DRAINING);
  const ballast_esc_stats e0 = Esc(fx);
  const Outcome a = fx.Run(From(f).Tcp(41200, f.dport, tcp::kAck, 9000, 1).Build());
  const Outcome b = fx.Run(Bounce(a.out));
  REQUIRE(b.verdict == BALLAST_V_ESC_TX);
  CHECK(BackendOf(fx, b) == f.prev2);
  CHECK(Esc(fx).skipped_unusable - e0.skipped_unusable == 1);
  // A drain deadline in the past: not taken either; back to the table's pick.
  fx.SetBackendState(f.prev2, BALLAST_BACKEND_DRAINING, 1);
  const Outcome a2 = fx.Run(From(f).Tcp(41201, f.dport, tcp::kAck, 9000, 1).Build());
  const Outcome b2 = fx.Run(Bounce(a2.out));
  REQUIRE(b2.verdict == BALLAST_V_ESC_TX);
  CHECK(BackendOf(fx, b2) == f.cur);
  CHECK(MarkOf(b2.out) == 0);
}

TEST_CASE("No history, a history of another size, or the window off: no history to walk",
          "[lb][esc]") {
  const Family& f = kFamilies[0];
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(f.vip_id, f.cur);
  // No history at all.
  Outcome o = fx.Run(From(f).Tcp(41300, f.dport, tcp::kAck, 1000, 1).Build());
  CHECK_FALSE(Walks(fx, o));
  // A history naming only the current backend.
  REQUIRE(fx.dp().SetHistory(f.vip_id, std::vector<uint64_t>(kM, Word({f.cur}))).ok());
  o = fx.Run(From(f).Tcp(41301, f.dport, tcp::kAck, 1000, 1).Build());
  CHECK_FALSE(Walks(fx, o));
  // A history built for a table of another size.
  REQUIRE(fx.dp().SetHistory(f.vip_id, std::vector<uint64_t>(17, Word({f.prev1}))).ok());
  o = fx.Run(From(f).Tcp(41302, f.dport, tcp::kAck, 1000, 1).Build());
  CHECK_FALSE(Walks(fx, o));
  // Established second chance off.
  REQUIRE(fx.dp().SetHistory(f.vip_id, std::vector<uint64_t>(kM, Word({f.prev1}))).ok());
  auto s = fx.dp().GetSettings();
  REQUIRE(s.ok());
  s->adopted_bounce_ms = 0;
  fx.SetSettings(*s);
  o = fx.Run(From(f).Tcp(41303, f.dport, tcp::kAck, 1000, 1).Build());
  CHECK_FALSE(Walks(fx, o));
  // A flow whose handshake this router saw has no history to walk: its
  // completing ACK is not marked (its probation probe, the next packet, is:
  // probation.h).
  s->adopted_bounce_ms = 2000;
  fx.SetSettings(*s);
  fx.Run(From(f).Tcp(41304, f.dport, tcp::kSyn, 1000, 0).Build());
  o = fx.Run(From(f).Tcp(41304, f.dport, tcp::kAck, 1001, 1).Build());
  const auto seen = fx.Flow(FlowKey(Lab::Client4(), Lab::Vip4(), 41304, f.dport, IPPROTO_TCP));
  REQUIRE(seen);
  CHECK((seen->flags & BALLAST_FLOW_F_HISTORY) == 0);
  CHECK((seen->flags & BALLAST_FLOW_F_PROBATION) != 0);
  CHECK(MarkOf(o.out) == 0);
  // With the window on, an adopted flow is marked.
  o = fx.Run(From(f).Tcp(41305, f.dport, tcp::kAck, 1000, 1).Build());
  CHECK(MarkOf(o.out) == BALLAST_ENCAP_ID_PROBE);
}

TEST_CASE("Forged or stray established bounces are dropped, counted, and move nothing",
          "[lb][esc]") {
  const Family& f = kFamilies[0];
  LbFixture fx;
  SetUpLab(fx);
  TableWithHistory(fx, f);
  const uint16_t port = 41400;
  const ballast_flow_key key = FlowKey(Lab::Client4(), Lab::Vip4(), port, f.dport, IPPROTO_TCP);
  const Outcome a = fx.Run(From(f).Tcp(port, f.dport, tcp::kAck, 20000, 1).Build());
  REQUIRE(MarkOf(a.out) == BALLAST_ENCAP_ID_PROBE);
  const ballast_flow before = *fx.Flow(key);
  // The genuine bounce's frame with one thing changed.
  const auto bounced_inner = [&](uint32_t seq) {
    return pktgen::PacketBuilder()
        .Ip4(Lab::Client4(), Lab::Vip4())
        .Tcp(port, f.dport, tcp::kAck, seq, 1)
        .BuildIp();
  };
  const auto forged = [&](const Addr& from, uint32_t seq, uint16_t id) {
    return pktgen::PacketBuilder()
        .Eth(Lab::NexthopDmac(), Lab::RouterMac())
        .Ip4(from, Lab::Src4())
        .IpId(id)
        .L4Proto(IPPROTO_IPIP)
        .Payload(bounced_inner(seq))
        .Build();
  };
  const Addr cur = fx.BackendAddr(f.cur), other = fx.BackendAddr(f.prev2);
  ExpectVerdicts(fx,
                 {
                     {"from a backend the flow never went to",
                      forged(other, 20000, BALLAST_ENCAP_ID_PROBE), BALLAST_V_DROP_BOUNCE_STRANGER},
                     {"from an address that is no backend",
                      forged(Lab::Backend4(99), 20000, BALLAST_ENCAP_ID_PROBE),
                      BALLAST_V_DROP_BOUNCE_STRANGER},
                     {"a sequence number outside the flow's window",
                      forged(cur, 20000 + 3 * BALLAST_SEQ_WINDOW, BALLAST_ENCAP_ID_PROBE),
                      BALLAST_V_DROP_BOUNCE_STRANGER},
                 },
                 XDP_DROP);
  const ballast_flow after = *fx.Flow(key);
  CHECK(after.backend_id == before.backend_id);
  CHECK(after.reserved == before.reserved);
  // The genuine one still works.
  const Outcome b = fx.Run(Bounce(a.out));
  REQUIRE(b.verdict == BALLAST_V_ESC_TX);
  CHECK(BackendOf(fx, b) == f.prev1);

  SECTION("without the router's tag: forged, and the flow probes no more") {
    // From the flow's backend now (prev1), in its window, but without the
    // tag of the packet the router sent there (one guess per flow).
    const Outcome c = fx.Run(From(f).Tcp(port, f.dport, tcp::kAck, 20000, 1).Build());
    REQUIRE(MarkOf(c.out) == BALLAST_ENCAP_ID_PROBE);
    for (const uint32_t id :
         {0u, BALLAST_ENCAP_ID_LAST, BALLAST_ENCAP_ID_PROBE, OuterMarkOf(c.out) ^ 0x10u}) {
      INFO("outer identification " << id);
      LbFixture fx2;  // a fresh flow for each guess
      SetUpLab(fx2);
      TableWithHistory(fx2, f);
      const Outcome a2 = fx2.Run(From(f).Tcp(port, f.dport, tcp::kAck, 20000, 1).Build());
      REQUIRE(MarkOf(a2.out) == BALLAST_ENCAP_ID_PROBE);
      if (id == (OuterMarkOf(a2.out) & 0xffff)) continue;
      const Outcome g = fx2.Run(WithOuterMark(Bounce(a2.out), id));
      CHECK(g.verdict == BALLAST_V_DROP_BOUNCE_FORGED);
      CHECK(fx2.Flow(key)->backend_id == f.cur);
      CHECK((fx2.Flow(key)->flags & BALLAST_FLOW_F_HISTORY) == 0);
      // The genuine bounce after it is not taken, and the flow's packets
      // go unmarked to its backend, as before second chance.
      CHECK(fx2.Run(Bounce(a2.out)).verdict == BALLAST_V_DROP_BOUNCE_STRANGER);
      const Outcome next = fx2.Run(From(f).Tcp(port, f.dport, tcp::kAck, 20000, 1).Build());
      CHECK(BackendOf(fx2, next) == f.cur);
      CHECK(MarkOf(next.out) == 0);
    }
  }
}

// ---- the backend's half, chained with the router ----------------------------

// A connection from the lab's client address to the VIP's `dport` in the
// test's namespace (both addresses on its lo): the client socket's fd and
// its port. The server side is in the listener's queue.
std::pair<int, uint16_t> ConnectFromClient(bool v6, uint16_t dport) {
  const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_storage src = {}, dst = {};
  socklen_t len = 0;
  const Addr client = v6 ? Lab::Client6() : Lab::Client4(), vip = v6 ? Lab::Vip6() : Lab::Vip4();
  if (!v6) {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&src);
    auto* d4 = reinterpret_cast<sockaddr_in*>(&dst);
    s4->sin_family = d4->sin_family = AF_INET;
    std::memcpy(&s4->sin_addr, client.b.data(), 4);
    std::memcpy(&d4->sin_addr, vip.b.data(), 4);
    d4->sin_port = htons(dport);
    len = sizeof(sockaddr_in);
  } else {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&src);
    auto* d6 = reinterpret_cast<sockaddr_in6*>(&dst);
    s6->sin6_family = d6->sin6_family = AF_INET6;
    std::memcpy(&s6->sin6_addr, client.b.data(), 16);
    std::memcpy(&d6->sin6_addr, vip.b.data(), 16);
    d6->sin6_port = htons(dport);
    len = sizeof(sockaddr_in6);
  }
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&src), len) == 0);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&dst), len) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&src), &len) == 0);
  const uint16_t port = v6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&src)->sin6_port)
                           : ntohs(reinterpret_cast<sockaddr_in*>(&src)->sin_port);
  return {fd, port};
}

TEST_CASE("xdp_decap bounces a marked packet no socket holds, and passes the rest",
          "[lb][esc][decap]") {
  const std::string name = "ballast-bt-esc";
  const std::string n = "ip -n " + name + " ";
  auto ns = pktgen::ScopedNetns::Create(
      name, {n + "link set lo up", n + "addr add 198.18.0.10/32 dev lo",
             n + "addr add 198.18.100.1/32 dev lo", n + "addr add 2001:db8::10/128 dev lo nodad",
             n + "addr add 2001:db8:100::1/128 dev lo nodad"});
  INFO(ns.status().ToString());
  REQUIRE(ns.ok());
  LbFixture fx;
  SetUpLab(fx);
  const std::unique_ptr<dataplane::Decap> decap = LoadRouterOnlyDecap();
  const auto run_decap = [&](const Bytes& frame) { return RunDecap(*decap, frame); };
  const auto stats = [&] { return DecapStats(*decap); };
  std::vector<Bytes> bounced;
  for (const Family& f : kFamilies) {
    INFO((f.v6 ? "IPv6" : "IPv4"));
    TableWithHistory(fx, f);
    // A real connection client -> VIP:dport in this namespace: the server
    // side's socket is the one a backend holds for the flow.
    Listener l(f.v6 ? AF_INET6 : AF_INET, f.dport);
    const auto [c, held_port] = ConnectFromClient(f.v6, f.dport);
    const auto before = stats();
    // Marked, and this host holds the connection: passed up.
    const Outcome held = fx.Run(From(f).Tcp(held_port, f.dport, tcp::kAck, 1, 1).Build());
    REQUIRE(MarkOf(held.out) == BALLAST_ENCAP_ID_PROBE);
    CHECK(run_decap(held.out).action == XDP_PASS);
    // Marked, no socket of that tuple here (a listener on the port does not
    // count): back to the router, which takes it.
    const uint16_t stray = held_port == 50000 ? 50001 : 50000;
    const Outcome o = fx.Run(From(f).Tcp(stray, f.dport, tcp::kAck, 1, 1).Build());
    REQUIRE(MarkOf(o.out) == BALLAST_ENCAP_ID_PROBE);
    const auto r = run_decap(o.out);
    REQUIRE(r.action == XDP_TX);
    CHECK(r.out == Bounce(o.out));
    bounced.push_back(r.out);
    const Outcome back = fx.Run(r.out);
    CHECK(back.verdict == BALLAST_V_ESC_TX);
    CHECK(BackendOf(fx, back) == f.prev1);
    // A TIME_WAIT of the tuple here (that connection ended; the client
    // reused its port and its live connection is elsewhere): back too.
    {
      const auto [tc, tw_port] = ConnectFromClient(f.v6, f.dport);
      // Accepted in order: the held connection's server side, then this
      // one's, which closes first and so goes to TIME_WAIT.
      const int held_srv = l.Accept();
      const int srv = l.Accept();
      REQUIRE(held_srv >= 0);
      REQUIRE(srv >= 0);
      close(srv);
      usleep(20000);
      close(tc);
      usleep(20000);
      const Outcome t = fx.Run(From(f).Tcp(tw_port, f.dport, tcp::kAck, 1, 1).Build());
      REQUIRE(MarkOf(t.out) == BALLAST_ENCAP_ID_PROBE);
      CHECK(run_decap(t.out).action == XDP_TX);
      close(held_srv);
    }
    // Not marked (a flow whose handshake the router saw): never asked.
    fx.Run(From(f).Tcp(stray + 2, f.dport, tcp::kSyn, 1, 0).Build());
    const Outcome seen = fx.Run(From(f).Tcp(stray + 2, f.dport, tcp::kAck, 2, 1).Build());
    REQUIRE(MarkOf(seen.out) == 0);
    CHECK(run_decap(seen.out).action == XDP_PASS);
    const auto after = stats();
    CHECK(after[BALLAST_DECAP_V_BOUNCED_EST] - before[BALLAST_DECAP_V_BOUNCED_EST] == 2);
    CHECK(after[BALLAST_DECAP_V_BOUNCED] == before[BALLAST_DECAP_V_BOUNCED]);
    close(c);
  }

  // An independent dissector reads the bounces: outer addresses swapped,
  // the inner ACK intact, every checksum good.
  CheckBouncesDissected(bounced, "tcp.flags.ack", "1");
}

}  // namespace
}  // namespace ballast::bpftest
