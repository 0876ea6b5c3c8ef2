// A next hop without a resolved neighbour entry: the packet is encapsulated
// all the same and handed, with a struct ballast_neigh_meta in front (or,
// where XDP programs may not write metadata, in this CPU's `neigh_handoff`
// slot), to tc_neigh (which has the kernel resolve the neighbour and send it). Runs
// in a network namespace of its own, where the FIB has routes to the
// backends and, at first, no neighbours.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/bpf/lb_fixture.h"
#include "tests/lib/netns.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

// n0 (the router's backend-facing device) has 198.18.1.254/24 and
// 198.18.9.254/24: backends 198.18.1.x are on its link, except
// 198.18.1.3, which a /32 route sends via the gateway 198.18.9.1; the same
// for IPv6 (2001:db8:1::/64 on the link, 2001:db8:1::3 via 2001:db8:9::1).
std::unique_ptr<pktgen::ScopedNetns> BackendNetns() {
  const std::string ns = "ballast-bpfneigh-" + std::to_string(getpid());
  const std::string n = "ip -n " + ns + " ";
  auto made = pktgen::ScopedNetns::Create(
      ns, {n + "link set lo up", n + "link add n0 type veth peer name n1", n + "link set n0 up",
           n + "link set n1 up", n + "addr add 198.18.1.254/24 dev n0",
           n + "addr add 198.18.9.254/24 dev n0", n + "addr add 2001:db8:1::fe/64 dev n0 nodad",
           n + "addr add 2001:db8:9::fe/64 dev n0 nodad",
           n + "route add 198.18.1.3/32 via 198.18.9.1 dev n0",
           n + "route add 2001:db8:1::3/128 via 2001:db8:9::1 dev n0",
           "ip netns exec " + ns +
               " sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv6.conf.all.forwarding=1"});
  INFO(made.status().ToString());
  REQUIRE(made.ok());
  return std::move(*made);
}

// The hand-off tc_neigh gets: the XDP metadata in front of the frame, or,
// on a kernel that refuses bpf_xdp_adjust_meta to XDP programs, the
// `neigh_handoff` slot of the CPU the test ran on, whose outer header must
// be the frame's (and which is emptied for the next case).
ballast_neigh_meta MetaOf(LbFixture& fx, const Outcome& o) {
  ballast_neigh_meta m{};
  INFO("metadata:\n" << pktgen::HexDump(o.meta));
  if (!o.meta.empty()) {
    REQUIRE(o.meta.size() == sizeof m);
    std::memcpy(&m, o.meta.data(), sizeof m);
    CHECK(m.magic == BALLAST_NEIGH_META_MAGIC);
    return m;
  }
  // A per-CPU value is read as one 8-byte-aligned copy per CPU.
  static_assert(sizeof(ballast_neigh_handoff) % 8 == 0);
  const int fd = fx.dp().map_fd("neigh_handoff");
  REQUIRE(fd >= 0);
  const int cpus = libbpf_num_possible_cpus();
  REQUIRE(cpus > 0);
  std::vector<ballast_neigh_handoff> slots(cpus);
  const uint32_t zero = 0;
  REQUIRE(bpf_map_lookup_elem(fd, &zero, slots.data()) == 0);
  int found = 0;
  for (const ballast_neigh_handoff& h : slots) {
    if (h.meta.magic != BALLAST_NEIGH_META_MAGIC) continue;
    ++found;
    m = h.meta;
    REQUIRE(o.out.size() >= 14 + h.outer_len);
    CHECK(Bytes(h.outer, h.outer + h.outer_len) ==
          Bytes(o.out.begin() + 14, o.out.begin() + 14 + h.outer_len));
  }
  CHECK(found == 1);
  std::vector<ballast_neigh_handoff> empty(cpus);
  REQUIRE(bpf_map_update_elem(fd, &zero, empty.data(), BPF_ANY) == 0);
  return m;
}

void CheckNexthop(const ballast_neigh_meta& m, const Addr& nh) {
  Addr got;
  got.family = m.family == BALLAST_FAMILY_V4 ? 4 : 6;
  std::memcpy(got.b.data(), m.nh, got.size());
  CHECK(got == nh);
}

// The device's own MAC (the source of frames to its neighbours), asked of
// a socket in this thread's namespace (/sys shows the host's devices).
pktgen::Mac DeviceMac(const char* dev) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, dev, IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFHWADDR, &ifr);
  close(fd);
  REQUIRE(rc == 0);
  pktgen::Mac m;
  std::memcpy(m.b.data(), ifr.ifr_hwaddr.sa_data, 6);
  return m;
}

TEST_CASE("Next hop unresolved: encapsulated and handed to tc_neigh with its next hop",
          "[lb][neigh]") {
  auto ns = BackendNetns();
  const uint32_t n0 = if_nametoindex("n0");
  REQUIRE(n0 != 0);
  LbFixture fx;
  SetUpLab(fx);
  for (uint32_t id : {1u, 3u, 11u, 13u}) fx.ClearNexthop(id);

  struct Case {
    const char* what;
    Bytes in;
    uint32_t vip_id, backend;
    Addr nh;
  };
  const Case cases[] = {
      {"IPv4, backend on the link", FromClient4().Tcp(40000, 80, tcp::kSyn).Build(), kVipTcp4, 1,
       Lab::Backend4(1)},
      {"IPv4, backend behind a gateway", FromClient4().Tcp(40001, 80, tcp::kSyn).Build(), kVipTcp4,
       3, Addr::Parse("198.18.9.1")},
      {"IPv6, backend on the link", FromClient6().Tcp(40002, 443, tcp::kSyn).Build(), kVipTcp6, 11,
       Lab::Backend6(1)},
      {"IPv6, backend behind a gateway", FromClient6().Tcp(40003, 443, tcp::kSyn).Build(), kVipTcp6,
       13, Addr::Parse("2001:db8:9::1")},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    fx.SetUniformTable(c.vip_id, c.backend);
    const Outcome o = fx.Run(c.in);
    CHECK(o.action == XDP_PASS);
    REQUIRE(o.verdict == BALLAST_V_PASS_FIB_NO_NEIGH);
    // Encapsulated whole; the frame keeps the MACs it arrived with (the
    // kernel writes the real ones when the neighbour resolves).
    CheckEncapsulated(o.out, {.outer_family = c.in[12] == 0x08 ? 4 : 6,
                              .outer_src = c.in[12] == 0x08 ? Lab::Src4() : Lab::Src6(),
                              .outer_dst = fx.BackendAddr(c.backend),
                              .inner_ip = pktgen::IpPacketOf(c.in),
                              .src = Lab::TorMac(),
                              .dst = Lab::RouterMac()});
    const ballast_neigh_meta m = MetaOf(fx, o);
    CHECK(m.ifindex == n0);
    CheckNexthop(m, c.nh);
    CHECK(fx.BackendStats(c.backend).packets == 1);
  }

  // Once the neighbour is known, the next packet takes the fast path with
  // its MACs, and carries no metadata.
  REQUIRE(pktgen::RunCommand("ip neigh replace 198.18.1.1 lladdr 02:00:00:00:02:02 dev n0 "
                             "nud permanent")
              .empty());
  fx.SetUniformTable(kVipTcp4, 1);
  const Bytes syn = FromClient4().Tcp(40010, 80, tcp::kSyn).Build();
  const Outcome o = fx.Run(syn);
  CHECK(o.verdict == BALLAST_V_REDIRECT);
  CHECK(o.meta.empty());
  CheckEncapsulated(o.out, {.outer_family = 4,
                            .outer_src = Lab::Src4(),
                            .outer_dst = Lab::Backend4(1),
                            .inner_ip = pktgen::IpPacketOf(syn),
                            .src = DeviceMac("n0"),
                            .dst = pktgen::Mac::Parse("02:00:00:00:02:02")});
}

TEST_CASE("Next hop unresolved: an oversize packet is still answered with ICMP too-big",
          "[lb][neigh][mtu]") {
  auto ns = BackendNetns();
  REQUIRE(pktgen::RunCommand("ip link set n0 mtu 1400").empty());
  LbFixture fx;
  SetUpLab(fx);
  for (uint32_t id : {1u, 11u}) fx.ClearNexthop(id);
  fx.SetUniformTable(kVipTcp4, 1);
  fx.SetUniformTable(kVipTcp6, 11);
  // 1400 bytes of IP + 20 (IPv4 outer) or 40 (IPv6 outer) > 1400.
  const Bytes big4 =
      FromClient4().Tcp(40100, 80, tcp::kAck, 5000, 1).PayloadSize(1400 - 40).Build();
  const Bytes big6 =
      FromClient6().Tcp(40101, 443, tcp::kAck, 5000, 1).PayloadSize(1400 - 60).Build();
  const Outcome o4 = fx.Run(big4);
  CHECK(o4.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
  CHECK(o4.action == XDP_TX);
  const Outcome o6 = fx.Run(big6);
  CHECK(o6.verdict == BALLAST_V_ICMP_TOO_BIG_SENT);
  // The answers advertise the device's MTU less the outer header.
  auto v4 = pktgen::ParseFrame(o4.out);
  REQUIRE(v4.ok());
  REQUIRE(v4->ip.has_value());
  REQUIRE(o4.out.size() >= 14 + 20 + 8);
  CHECK(pktgen::GetBe16(&o4.out[14 + 20 + 6]) == 1400 - 20);
  // A packet that fits still goes to tc_neigh.
  const Bytes fits = FromClient4().Tcp(40102, 80, tcp::kAck, 5000, 1).PayloadSize(100).Build();
  CHECK(fx.Run(fits).verdict == BALLAST_V_PASS_FIB_NO_NEIGH);
}

}  // namespace
}  // namespace ballast::bpftest
