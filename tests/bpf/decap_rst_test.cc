// tc_decap_rst (bpf/xdp_decap.bpf.c): the kernel's RST to a SYN that
// xdp_decap passed up because a listener would take it is dropped once, so
// a listener that went in between (a dying server closes it last) costs the
// client a retransmitted SYN, not a refused connection. The router makes
// the encapsulated SYNs (xdp_lb), the real decap program takes them, and
// the RSTs are the kernel's as tcp_v4_send_reset / tcp_v6_send_reset build
// them (RST and ACK, sequence 0, the SYN's ISN + 1 acknowledged).
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <memory>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "agent/dataplane/decap.h"
#include "tests/bpf/lb_fixture.h"
#include "tests/lib/netns.h"
#include "tests/lib/xdp_run.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

constexpr uint32_t kIsn = 7000;

// The router's encapsulated frame marked as the last hop (outer IPv4
// identification, its header checksum redone; outer IPv6 flow label).
Bytes LastHop(Bytes out) {
  REQUIRE(out.size() > 14 + 40);
  if (out[12] == 0x08 && out[13] == 0x00) {
    out[14 + 4] = static_cast<uint8_t>(BALLAST_ENCAP_ID_LAST >> 8);
    out[14 + 5] = static_cast<uint8_t>(BALLAST_ENCAP_ID_LAST);
    out[14 + 10] = out[14 + 11] = 0;
    uint32_t sum = 0;
    for (size_t i = 14; i < 34; i += 2) sum += (out[i] << 8) | out[i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    out[14 + 10] = static_cast<uint8_t>(~sum >> 8);
    out[14 + 11] = static_cast<uint8_t>(~sum);
  } else {
    out[14 + 1] = static_cast<uint8_t>((out[14 + 1] & 0xf0) | (BALLAST_FLOW_LABEL_LAST >> 16));
    out[14 + 2] = static_cast<uint8_t>(BALLAST_FLOW_LABEL_LAST >> 8);
    out[14 + 3] = static_cast<uint8_t>(BALLAST_FLOW_LABEL_LAST);
  }
  return out;
}

// The decap copy of the backend side, with the routers and VIPs set, in a
// namespace of its own (listeners are the test's sockets).
struct Backend {
  std::unique_ptr<dataplane::Decap> decap = LoadBackendDecap();

  Backend() {
    REQUIRE(decap->AddSource("198.18.0.1").ok());
    REQUIRE(decap->AddSource("2001:db8::1").ok());
    REQUIRE(decap->AddVip({ToIpAddress(Lab::Vip4()), 80, IPPROTO_TCP}).ok());
    REQUIRE(decap->AddVip({ToIpAddress(Lab::Vip6()), 443, IPPROTO_TCP}).ok());
    REQUIRE(decap->rst_prog_fd() >= 0);
  }
  int Decap(const Bytes& frame) {
    auto r = pktgen::RunXdp(decap->prog_fd(), frame);
    REQUIRE(r.ok());
    return r->action;
  }
  pktgen::TcResult EgressFrame(const Bytes& frame) {
    auto r = pktgen::RunTc(decap->rst_prog_fd(), frame);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    return *r;
  }
  int Egress(const Bytes& frame) { return EgressFrame(frame).action; }
  uint64_t Count(ballast_decap_verdict v) {
    auto s = decap->Stats();
    REQUIRE(s.ok());
    return (*s)[v];
  }
};

struct Family {
  bool v6;
  uint32_t vip_id;
  Addr client, vip;
  uint16_t dport;
};

Family Of(bool v6) {
  if (v6) return {true, kVipTcp6, Lab::Client6(), Lab::Vip6(), 443};
  return {false, kVipTcp4, Lab::Client4(), Lab::Vip4(), 80};
}

Bytes Syn(const Family& f, uint16_t port) {
  return (f.v6 ? FromClient6() : FromClient4()).Tcp(port, f.dport, tcp::kSyn, kIsn, 0).Build();
}

// What the backend's kernel sends back for the SYN of `port` (or a packet
// like it): from the VIP to the client.
Bytes FromVip(const Family& f, uint16_t port, uint8_t flags, uint32_t seq, uint32_t ack,
              const Addr* from = nullptr, const Bytes& payload = {}) {
  pktgen::PacketBuilder b;
  b.Eth(Lab::NexthopSmac(), Lab::NexthopDmac());
  const Addr& src = from != nullptr ? *from : f.vip;
  if (f.v6) {
    b.Ip6(src, f.client);
  } else {
    b.Ip4(src, f.client);
  }
  b.Tcp(f.dport, port, flags, seq, ack);
  if (!payload.empty()) b.Payload(payload);
  return b.Build();
}

Bytes Rst(const Family& f, uint16_t port) {
  return FromVip(f, port, tcp::kRst | tcp::kAck, 0, kIsn + 1);
}

// A network namespace of the test's own (the listeners are the test's
// sockets); with `on_lo`, the VIP and the lab's client address on its
// loopback (for ServerTimeWait).
std::unique_ptr<pktgen::ScopedNetns> OwnNetns(const std::string& name, bool on_lo = false) {
  std::vector<std::string> setup;
  if (on_lo) {
    setup = {"ip -n " + name + " link set lo up",
             "ip -n " + name + " addr add 198.18.0.10/32 dev lo",
             "ip -n " + name + " addr add 198.18.100.1/32 dev lo",
             "ip -n " + name + " addr add 2001:db8::10/128 dev lo",
             "ip -n " + name + " addr add 2001:db8:100::1/128 dev lo"};
  }
  auto ns = pktgen::ScopedNetns::Create(name, setup);
  INFO(ns.status().ToString());
  REQUIRE(ns.ok());
  return *std::move(ns);
}

TEST_CASE("tc_decap_rst holds the kernel's RST to a SYN passed up for a listener, once",
          "[decap][rst]") {
  auto ns = OwnNetns("ballast-bt-rst");
  LbFixture fx;
  SetUpLab(fx);
  Backend be;
  for (const bool v6 : {false, true}) {
    INFO((v6 ? "IPv6" : "IPv4"));
    const Family f = Of(v6);
    const uint16_t port = 41000;
    const uint64_t held = be.Count(BALLAST_DECAP_V_RST_HELD);
    {
      Listener l(v6 ? AF_INET6 : AF_INET, f.dport);
      REQUIRE(be.Decap(fx.Run(Syn(f, port)).out) == XDP_PASS);
    }
    // Packets like it leave: another client port, another ACK number, a
    // RST without ACK, an ACK without RST, a RST with SYN or FIN, a RST
    // from another address.
    const Addr other = v6 ? Addr::Parse("2001:db8::11") : Addr::Parse("198.18.0.11");
    CHECK(be.Egress(Rst(f, port + 1)) == TC_ACT_OK);
    CHECK(be.Egress(FromVip(f, port, tcp::kRst | tcp::kAck, 0, kIsn + 2)) == TC_ACT_OK);
    CHECK(be.Egress(FromVip(f, port, tcp::kRst | tcp::kAck, 0, kIsn)) == TC_ACT_OK);
    CHECK(be.Egress(FromVip(f, port, tcp::kRst, kIsn + 1, 0)) == TC_ACT_OK);
    CHECK(be.Egress(FromVip(f, port, tcp::kAck, 0, kIsn + 1)) == TC_ACT_OK);
    CHECK(be.Egress(FromVip(f, port, tcp::kSyn | tcp::kAck, 0, kIsn + 1)) == TC_ACT_OK);
    CHECK(be.Egress(FromVip(f, port, tcp::kRst | tcp::kAck | tcp::kFin, 0, kIsn + 1)) == TC_ACT_OK);
    CHECK(be.Egress(FromVip(f, port, tcp::kRst | tcp::kAck, 0, kIsn + 1, &other)) == TC_ACT_OK);
    CHECK(be.Count(BALLAST_DECAP_V_RST_HELD) == held);
    // The kernel's RST to it is held, once.
    CHECK(be.Egress(Rst(f, port)) == TC_ACT_SHOT);
    CHECK(be.Count(BALLAST_DECAP_V_RST_HELD) == held + 1);
    CHECK(be.Egress(Rst(f, port)) == TC_ACT_OK);
    CHECK(be.Count(BALLAST_DECAP_V_RST_HELD) == held + 1);
  }
  // Not IP at all, and a runt: left alone.
  CHECK(be.Egress(Bytes(14, 0)) == TC_ACT_OK);
}

TEST_CASE("No RST is held for a bounced SYN, a last-hop SYN, with second chance off, or late",
          "[decap][rst]") {
  auto ns = OwnNetns("ballast-bt-rst2");
  LbFixture fx;
  SetUpLab(fx);
  Backend be;
  const Family f4 = Of(false), f6 = Of(true);

  // No listener: the SYN goes back to the router, nothing is noted.
  REQUIRE(be.Decap(fx.Run(Syn(f4, 42000)).out) == XDP_TX);
  CHECK(be.Egress(Rst(f4, 42000)) == TC_ACT_OK);

  // The router's last hop (IPv6 outer flow label): passed up, and its
  // refusal, if any, is the client's answer.
  {
    Listener l(AF_INET6, f6.dport);
    REQUIRE(be.Decap(LastHop(fx.Run(Syn(f6, 42001)).out)) == XDP_PASS);
  }
  CHECK(be.Egress(Rst(f6, 42001)) == TC_ACT_OK);

  // Later than BALLAST_DECAP_RST_WINDOW_NS (the kernel answers a SYN at
  // once): not its answer.
  {
    Listener l(AF_INET, f4.dport);
    REQUIRE(be.Decap(fx.Run(Syn(f4, 42002)).out) == XDP_PASS);
  }
  std::this_thread::sleep_for(std::chrono::nanoseconds(BALLAST_DECAP_RST_WINDOW_NS) +
                              std::chrono::milliseconds(50));
  CHECK(be.Egress(Rst(f4, 42002)) == TC_ACT_OK);

  // Second chance off: nothing is noted.
  REQUIRE(be.decap->SetBounce(false).ok());
  {
    Listener l(AF_INET, f4.dport);
    REQUIRE(be.Decap(fx.Run(Syn(f4, 42003)).out) == XDP_PASS);
  }
  CHECK(be.Egress(Rst(f4, 42003)) == TC_ACT_OK);
  CHECK(be.Count(BALLAST_DECAP_V_RST_HELD) == 0);
}

// Makes the server's end of a connection from the lab's client address to
// the VIP's port (both on this namespace's loopback) of family `f` stay in
// TIME_WAIT (the server closes first) and closes the listener; returns the
// client's port.
// `a`:`port` as a socket address; its length.
socklen_t SockAddr(const Addr& a, uint16_t port, sockaddr_storage* out) {
  *out = {};
  if (a.family == 6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(out);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    std::memcpy(&s6->sin6_addr, a.b.data(), 16);
    return sizeof(sockaddr_in6);
  }
  auto* s4 = reinterpret_cast<sockaddr_in*>(out);
  s4->sin_family = AF_INET;
  s4->sin_port = htons(port);
  std::memcpy(&s4->sin_addr, a.b.data(), 4);
  return sizeof(sockaddr_in);
}

uint16_t ServerTimeWait(const Family& f) {
  const int af = f.v6 ? AF_INET6 : AF_INET;
  const int lfd = socket(af, SOCK_STREAM, 0);
  const int cfd = socket(af, SOCK_STREAM, 0);
  REQUIRE((lfd >= 0 && cfd >= 0));
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage vip, client;
  const socklen_t len = SockAddr(f.vip, f.dport, &vip);
  SockAddr(f.client, 0, &client);
  REQUIRE(bind(lfd, reinterpret_cast<sockaddr*>(&vip), len) == 0);
  REQUIRE(listen(lfd, 4) == 0);
  REQUIRE(bind(cfd, reinterpret_cast<sockaddr*>(&client), len) == 0);
  REQUIRE(connect(cfd, reinterpret_cast<sockaddr*>(&vip), len) == 0);
  const int afd = accept(lfd, nullptr, nullptr);
  REQUIRE(afd >= 0);
  socklen_t got = sizeof(client);
  REQUIRE(getsockname(cfd, reinterpret_cast<sockaddr*>(&client), &got) == 0);
  close(afd);  // the server's FIN first
  char byte;
  REQUIRE(recv(cfd, &byte, 1, 0) == 0);  // the client has it (end of stream)
  close(cfd);
  close(lfd);
  const uint16_t port = ntohs(f.v6 ? reinterpret_cast<sockaddr_in6*>(&client)->sin6_port
                                   : reinterpret_cast<sockaddr_in*>(&client)->sin_port);
  // The server's end is in TIME_WAIT (loopback delivers at once; waited for anyway).
  const std::string want =
      (f.v6 ? "[" + f.client.ToString() + "]" : f.client.ToString()) + ":" + std::to_string(port);
  const std::string cmd = "ss -Htan state time-wait 'sport = :" + std::to_string(f.dport) + "'";
  std::string out;
  for (int i = 0; i < 50 && out.find(want) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    out.clear();
    FILE* ss = popen(cmd.c_str(), "r");
    REQUIRE(ss != nullptr);
    char buf[512];
    while (fgets(buf, sizeof(buf), ss) != nullptr) out += buf;
    pclose(ss);
  }
  INFO(out);
  REQUIRE(out.find(want) != std::string::npos);
  return port;
}

TEST_CASE("A tuple in TIME_WAIT takes a SYN only with a listener: bounced without, noted with",
          "[decap][rst][bounce]") {
  auto ns = OwnNetns("ballast-bt-rst3", /*on_lo=*/true);
  LbFixture fx;
  SetUpLab(fx);
  Backend be;
  const Family f = Of(false);
  const uint16_t port = ServerTimeWait(f);
  INFO("client port " << port);
  // No listener: the kernel would answer the SYN with a RST (or an ACK of
  // the old connection), so it is bounced like any SYN nobody takes.
  CHECK(be.Decap(fx.Run(Syn(f, port)).out) == XDP_TX);
  CHECK(be.Egress(Rst(f, port)) == TC_ACT_OK);
  // With a listener the kernel makes the new connection: passed up, and a
  // RST to it (the listener gone in between) held.
  {
    Listener l(AF_INET, 80);
    CHECK(be.Decap(fx.Run(Syn(f, port)).out) == XDP_PASS);
  }
  CHECK(be.Egress(Rst(f, port)) == TC_ACT_SHOT);
}

TEST_CASE("At the last hop, a TIME_WAIT's answer to a SYN nobody takes becomes the RST meant",
          "[decap][rst]") {
  auto ns = OwnNetns("ballast-bt-rst4", /*on_lo=*/true);
  LbFixture fx;
  SetUpLab(fx);
  Backend be;
  for (const bool v6 : {false, true}) {
    INFO((v6 ? "IPv6" : "IPv4"));
    const Family f = Of(v6);
    const uint16_t port = ServerTimeWait(f);
    INFO("client port " << port);
    const uint64_t tw_refused = be.Count(BALLAST_DECAP_V_TW_REFUSED);
    const uint64_t refused = be.Count(BALLAST_DECAP_V_REFUSED);
    // The last hop, no listener: passed up to be refused. The kernel answers
    // from the TIME_WAIT with an ACK of the old connection instead (the
    // client would answer RST and send the SYN again, to the same TIME_WAIT).
    REQUIRE(be.Decap(LastHop(fx.Run(Syn(f, port)).out)) == XDP_PASS);
    CHECK(be.Count(BALLAST_DECAP_V_REFUSED) == refused + 1);
    // Not that answer: an ACK with data, an ACK with FIN, a RST (not held:
    // this SYN was not passed up for a listener).
    constexpr uint32_t kOldSeq = 900000, kOldAck = 500000;
    CHECK(be.Egress(FromVip(f, port, tcp::kAck, kOldSeq, kOldAck, nullptr, Bytes(10, 'x'))) ==
          TC_ACT_OK);
    CHECK(be.Egress(FromVip(f, port, tcp::kAck | tcp::kFin, kOldSeq, kOldAck)) == TC_ACT_OK);
    CHECK(be.Egress(Rst(f, port)) == TC_ACT_OK);
    CHECK(be.Count(BALLAST_DECAP_V_TW_REFUSED) == tw_refused);
    // The TIME_WAIT's ACK (with a timestamp echoing the old connection, as
    // the kernel sends it) leaves as the RST: sequence 0, the SYN's ISN + 1
    // acknowledged, window 0, the options NOPs (the client would drop a RST
    // whose timestamp echo is not its SYN's), its checksum right.
    pktgen::PacketBuilder b;
    b.Eth(Lab::NexthopSmac(), Lab::NexthopDmac());
    if (v6) {
      b.Ip6(f.vip, f.client);
    } else {
      b.Ip4(f.vip, f.client);
    }
    const Bytes tw_ack = b.Tcp(f.dport, port, tcp::kAck, kOldSeq, kOldAck)
                             .TcpOptions({1, 1, 8, 10, 0, 0, 1, 2, 0, 3, 4, 5})
                             .Build();
    const size_t th = 14 + (v6 ? 40 : 20);  // the TCP header's offset
    const pktgen::TcResult r = be.EgressFrame(tw_ack);
    CHECK(r.action == TC_ACT_OK);
    CHECK(be.Count(BALLAST_DECAP_V_TW_REFUSED) == tw_refused + 1);
    auto v = pktgen::ParseFrame(r.out);
    REQUIRE(v.ok());
    REQUIRE(v->ip.has_value());
    REQUIRE(v->ip->l4.has_value());
    CHECK(v->ip->l4->flags == (tcp::kRst | tcp::kAck));
    CHECK(v->ip->l4->seq == 0);
    CHECK(v->ip->l4->ack == kIsn + 1);
    CHECK(v->ip->l4->sport == f.dport);
    CHECK(v->ip->l4->dport == port);
    CHECK(r.out[th + 14] == 0);  // window
    CHECK(r.out[th + 15] == 0);
    CHECK(Bytes(r.out.begin() + static_cast<long>(th) + 20, r.out.end()) ==
          Bytes(12, 1));  // options: NOPs
    CHECK(pktgen::CheckChecksums(*v->ip).ok());
    CHECK(r.out.size() == tw_ack.size());
    // Once per SYN.
    CHECK(be.EgressFrame(tw_ack).out == tw_ack);
    CHECK(be.Count(BALLAST_DECAP_V_TW_REFUSED) == tw_refused + 1);
    // Not the last hop: the same SYN is bounced (above), nothing is noted.
    REQUIRE(be.Decap(fx.Run(Syn(f, port)).out) == XDP_TX);
    CHECK(be.EgressFrame(tw_ack).out == tw_ack);
    CHECK(be.Count(BALLAST_DECAP_V_TW_REFUSED) == tw_refused + 1);
  }
}

}  // namespace
}  // namespace ballast::bpftest
