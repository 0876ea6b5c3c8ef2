// Tests of the decap program (agent/dataplane/decap.h) against the real
// kernel: BPF_PROG_TEST_RUN on crafted frames, attach and detach, and real
// encapsulated packets in a network namespace. Needs root; without it every
// test fails with the reason.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <array>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <string>
#include <vector>

#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/decap.h"
#include "agent/base/ip_address.h"
#include "agent/dataplane/verdict.h"
#include "agent/dataplane/xdp_attach.h"
#include "agent/dataplane/tests/test_util.h"
#include "tests/lib/netns.h"

using ballast::IpAddress;
using namespace ballast::dataplane;
using namespace ballast::dataplane::testing;

namespace {

uint16_t Checksum(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += (p[i] << 8) | p[i + 1];
  if (n & 1) sum += p[n - 1] << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

void PutBe16(std::vector<uint8_t>& p, size_t at, uint16_t v) {
  p[at] = static_cast<uint8_t>(v >> 8);
  p[at + 1] = static_cast<uint8_t>(v & 0xff);
}

// An IPv4 header without options, with its checksum.
void PutIp4(std::vector<uint8_t>& p, uint8_t proto, const char* src, const char* dst,
            size_t payload) {
  const size_t off = p.size();
  p.resize(off + 20);
  p[off] = 0x45;
  const uint16_t len = htons(static_cast<uint16_t>(20 + payload));
  std::memcpy(&p[off + 2], &len, 2);
  p[off + 8] = 64;
  p[off + 9] = proto;
  inet_pton(AF_INET, src, &p[off + 12]);
  inet_pton(AF_INET, dst, &p[off + 16]);
  PutBe16(p, off + 10, Checksum(&p[off], 20));
}

void PutIp6(std::vector<uint8_t>& p, uint8_t next, const char* src, const char* dst,
            size_t payload) {
  const size_t off = p.size();
  p.resize(off + 40);
  p[off] = 0x60;
  const uint16_t len = htons(static_cast<uint16_t>(payload));
  std::memcpy(&p[off + 4], &len, 2);
  p[off + 6] = next;
  p[off + 7] = 64;
  inet_pton(AF_INET6, src, &p[off + 8]);
  inet_pton(AF_INET6, dst, &p[off + 24]);
}

std::vector<uint8_t> Eth(uint16_t proto, bool vlan) {
  std::vector<uint8_t> p = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01};
  if (vlan) {
    p.push_back(0x81);
    p.push_back(0x00);
    p.push_back(0x00);
    p.push_back(0x07);  // VLAN 7
  }
  p.push_back(static_cast<uint8_t>(proto >> 8));
  p.push_back(static_cast<uint8_t>(proto & 0xff));
  return p;
}

struct RunResult {
  uint32_t action;
  std::vector<uint8_t> out;
};

RunResult RunProg(int prog_fd, const std::vector<uint8_t>& in) {
  std::vector<uint8_t> out(in.size() + 256);
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  opts.data_in = in.data();
  opts.data_size_in = static_cast<uint32_t>(in.size());
  opts.data_out = out.data();
  opts.data_size_out = static_cast<uint32_t>(out.size());
  opts.repeat = 1;
  REQUIRE(bpf_prog_test_run_opts(prog_fd, &opts) == 0);
  out.resize(opts.data_size_out);
  return {opts.retval, out};
}

}  // namespace

TEST_CASE("decap strips the outer header of packets for local addresses", "[dataplane][bpf]") {
  RequireRoot();
  auto d = Decap::Load();
  INFO(d.status().ToString());
  REQUIRE(d.ok());
  REQUIRE((*d)->AddAddress(Ip("198.18.1.10")).ok());
  REQUIRE((*d)->AddAddress(Ip("2001:db8:1::10")).ok());
  auto addrs = (*d)->Addresses();
  REQUIRE(addrs.ok());
  CHECK(addrs->size() == 2);
  const int fd = (*d)->prog_fd();
  const std::vector<uint8_t> tcp(20, 0xab);  // opaque inner L4 bytes

  for (bool vlan : {false, true}) {
    INFO("vlan " << vlan);
    // IPv4 in IPv4.
    auto inner4 = std::vector<uint8_t>();
    PutIp4(inner4, IPPROTO_TCP, "198.18.0.100", "198.18.0.10", tcp.size());
    inner4.insert(inner4.end(), tcp.begin(), tcp.end());
    auto pkt = Eth(ETH_P_IP, vlan);
    const size_t l2 = pkt.size();
    PutIp4(pkt, IPPROTO_IPIP, "198.18.0.1", "198.18.1.10", inner4.size());
    pkt.insert(pkt.end(), inner4.begin(), inner4.end());
    auto r = RunProg(fd, pkt);
    CHECK(r.action == XDP_PASS);
    REQUIRE(r.out.size() == l2 + inner4.size());
    CHECK(std::equal(r.out.begin(), r.out.begin() + 12, pkt.begin()));  // same MACs
    CHECK(r.out[l2 - 2] == 0x08);
    CHECK(r.out[l2 - 1] == 0x00);
    if (vlan) CHECK(r.out[15] == 0x07);
    CHECK(std::equal(inner4.begin(), inner4.end(), r.out.begin() + l2));

    // IPv6 in IPv6 and IPv4 in IPv6.
    auto inner6 = std::vector<uint8_t>();
    PutIp6(inner6, IPPROTO_TCP, "2001:db8::100", "2001:db8::10", tcp.size());
    inner6.insert(inner6.end(), tcp.begin(), tcp.end());
    for (const auto* inner : {&inner6, &inner4}) {
      const bool is6 = inner == &inner6;
      auto p6 = Eth(ETH_P_IPV6, vlan);
      PutIp6(p6, is6 ? IPPROTO_IPV6 : IPPROTO_IPIP, "2001:db8::1", "2001:db8:1::10", inner->size());
      p6.insert(p6.end(), inner->begin(), inner->end());
      auto r6 = RunProg(fd, p6);
      CHECK(r6.action == XDP_PASS);
      REQUIRE(r6.out.size() == l2 + inner->size());
      CHECK(r6.out[l2 - 2] == (is6 ? 0x86 : 0x08));
      CHECK(r6.out[l2 - 1] == (is6 ? 0xdd : 0x00));
      CHECK(std::equal(inner->begin(), inner->end(), r6.out.begin() + l2));
    }

    // Not for us: untouched.
    auto other = Eth(ETH_P_IP, vlan);
    PutIp4(other, IPPROTO_IPIP, "198.18.0.1", "198.18.1.11", inner4.size());
    other.insert(other.end(), inner4.begin(), inner4.end());
    r = RunProg(fd, other);
    CHECK(r.action == XDP_PASS);
    CHECK(r.out == other);
    // Not encapsulated: untouched.
    auto plain = Eth(ETH_P_IP, vlan);
    plain.insert(plain.end(), inner4.begin(), inner4.end());
    r = RunProg(fd, plain);
    CHECK(r.action == XDP_PASS);
    CHECK(r.out == plain);
    // Encapsulated for us, inner header truncated: dropped.
    auto trunc = Eth(ETH_P_IP, vlan);
    PutIp4(trunc, IPPROTO_IPIP, "198.18.0.1", "198.18.1.10", 10);
    trunc.insert(trunc.end(), inner4.begin(), inner4.begin() + 10);
    r = RunProg(fd, trunc);
    CHECK(r.action == XDP_DROP);
    // Wrong inner version: dropped.
    auto badver = pkt;
    badver[l2 + 20] = 0x65;
    CHECK(RunProg(fd, badver).action == XDP_DROP);
    // Outer IPv4 header for us with a wrong checksum, or a total length
    // beyond the frame: dropped as the kernel would (bad_outer).
    auto badsum = pkt;
    badsum[l2 + 8] = 63;  // TTL changed, checksum not
    r = RunProg(fd, badsum);
    CHECK(r.action == XDP_DROP);
    auto longer = Eth(ETH_P_IP, vlan);
    PutIp4(longer, IPPROTO_IPIP, "198.18.0.1", "198.18.1.10", inner4.size() + 1);
    longer.insert(longer.end(), inner4.begin(), inner4.end());
    CHECK(RunProg(fd, longer).action == XDP_DROP);
    // Outer options (ihl 6) with a right checksum: stripped with them.
    auto opts = Eth(ETH_P_IP, vlan);
    PutIp4(opts, IPPROTO_IPIP, "198.18.0.1", "198.18.1.10", inner4.size());
    opts.insert(opts.begin() + static_cast<long>(l2) + 20, {1, 1, 1, 0});  // NOP NOP NOP EOL
    opts[l2] = 0x46;
    PutBe16(opts, l2 + 2, static_cast<uint16_t>(24 + inner4.size()));  // total length
    PutBe16(opts, l2 + 10, 0);
    PutBe16(opts, l2 + 10, Checksum(&opts[l2], 24));
    opts.insert(opts.end(), inner4.begin(), inner4.end());
    r = RunProg(fd, opts);
    CHECK(r.action == XDP_PASS);
    REQUIRE(r.out.size() == l2 + inner4.size());
    CHECK(std::equal(inner4.begin(), inner4.end(), r.out.begin() + l2));
    // An outer fragment of a tunnelled packet for us: never the router's,
    // dropped (frag) rather than left to the kernel's reassembly and
    // decapsulation past the checks; not for us: untouched.
    for (const uint16_t frag_off : {0x2000 /* MF */, 0x0003 /* offset 24 */}) {
      auto frag = pkt;
      PutBe16(frag, l2 + 6, frag_off);
      PutBe16(frag, l2 + 10, 0);
      PutBe16(frag, l2 + 10, Checksum(&frag[l2], 20));
      CHECK(RunProg(fd, frag).action == XDP_DROP);
      auto frag_other = other;
      PutBe16(frag_other, l2 + 6, frag_off);
      CHECK(RunProg(fd, frag_other).action == XDP_PASS);
    }
    // IPv6: a fragment header in front of IPv6-in-IPv6.
    {
      auto f6 = Eth(ETH_P_IPV6, vlan);
      PutIp6(f6, IPPROTO_FRAGMENT, "2001:db8::1", "2001:db8:1::10", 8 + inner4.size());
      f6.insert(f6.end(), {IPPROTO_IPIP, 0, 0, 1, 0, 0, 0x12, 0x34});  // offset 0, MF
      f6.insert(f6.end(), inner4.begin(), inner4.end());
      CHECK(RunProg(fd, f6).action == XDP_DROP);
    }
    // Not for us, wrong checksum: the kernel's to judge (untouched).
    auto other_bad = other;
    other_bad[l2 + 8] = 63;
    r = RunProg(fd, other_bad);
    CHECK(r.action == XDP_PASS);
    CHECK(r.out == other_bad);
  }
  auto stats = (*d)->Stats();
  REQUIRE(stats.ok());
  CHECK((*stats)[BALLAST_DECAP_V_DECAPPED] == 8);
  CHECK((*stats)[BALLAST_DECAP_V_PASS] == 10);  // 4 of them fragments not for us
  CHECK((*stats)[BALLAST_DECAP_V_BAD_INNER] == 4);
  CHECK((*stats)[BALLAST_DECAP_V_BAD_OUTER] == 4);
  CHECK((*stats)[BALLAST_DECAP_V_FRAG] == 6);
  REQUIRE((*d)->RemoveAddress(Ip("198.18.1.10")).ok());
  CHECK((*d)->RemoveAddress(Ip("198.18.1.10")).code() == absl::StatusCode::kNotFound);
}

TEST_CASE("decap with sources and VIPs: only the routers, only to the VIPs", "[dataplane][bpf]") {
  RequireRoot();
  auto d = Decap::Load();
  INFO(d.status().ToString());
  REQUIRE(d.ok());
  REQUIRE((*d)->AddAddress(Ip("198.18.1.10")).ok());
  REQUIRE((*d)->AddAddress(Ip("2001:db8:1::10")).ok());
  const int fd = (*d)->prog_fd();
  const std::vector<uint8_t> tcp(20, 0xab);
  // An IPv4-in-IPv4 (v6: IPv6-in-IPv6) frame to this host from `src` whose
  // inner packet goes to `inner_dst`.
  auto frame = [&](bool v6, const char* src, const char* inner_dst) {
    auto put = v6 ? PutIp6 : PutIp4;
    auto inner = std::vector<uint8_t>();
    put(inner, IPPROTO_TCP, v6 ? "2001:db8::100" : "198.18.0.100", inner_dst, tcp.size());
    inner.insert(inner.end(), tcp.begin(), tcp.end());
    auto p = Eth(v6 ? ETH_P_IPV6 : ETH_P_IP, false);
    put(p, v6 ? IPPROTO_IPV6 : IPPROTO_IPIP, src, v6 ? "2001:db8:1::10" : "198.18.1.10",
        inner.size());
    p.insert(p.end(), inner.begin(), inner.end());
    return p;
  };
  auto frame4 = [&](const char* src, const char* dst) { return frame(false, src, dst); };
  auto frame6 = [&](const char* src, const char* dst) { return frame(true, src, dst); };
  // Before any is given: an open tunnel, as before.
  CHECK(RunProg(fd, frame4("203.0.113.9", "198.18.1.10")).action == XDP_PASS);

  REQUIRE((*d)->AddSource("198.18.0.0/24").ok());
  REQUIRE((*d)->AddSource("2001:db8::1").ok());
  REQUIRE((*d)->AddVip({Ip("198.18.0.10"), 0, IPPROTO_TCP}).ok());
  REQUIRE((*d)->AddVip({Ip("2001:db8:10::10"), 0, IPPROTO_TCP}).ok());
  CHECK((*d)->AddSource("198.18.0.300").code() == absl::StatusCode::kInvalidArgument);
  CHECK((*d)->AddSource("198.18.0.0/33").code() == absl::StatusCode::kInvalidArgument);

  auto before = (*d)->Stats();
  REQUIRE(before.ok());
  // A router, to a VIP: stripped.
  auto r = RunProg(fd, frame4("198.18.0.1", "198.18.0.10"));
  CHECK(r.action == XDP_PASS);
  CHECK(r.out.size() == 14 + 20 + tcp.size());
  CHECK(RunProg(fd, frame4("198.18.0.77", "198.18.0.10")).out.size() == 14 + 20 + tcp.size());
  CHECK(RunProg(fd, frame6("2001:db8::1", "2001:db8:10::10")).out.size() == 14 + 40 + tcp.size());
  // A spoofer outside the routers' prefixes: dropped, whatever it carries.
  CHECK(RunProg(fd, frame4("198.18.1.99", "198.18.0.10")).action == XDP_DROP);
  CHECK(RunProg(fd, frame6("2001:db8::2", "2001:db8:10::10")).action == XDP_DROP);
  // A router's source, but the inner packet is for the host itself (port
  // 22 of its own address, say) or another host: dropped.
  CHECK(RunProg(fd, frame4("198.18.0.1", "198.18.1.10")).action == XDP_DROP);
  CHECK(RunProg(fd, frame6("2001:db8::1", "2001:db8:1::10")).action == XDP_DROP);
  auto after = (*d)->Stats();
  REQUIRE(after.ok());
  CHECK((*after)[BALLAST_DECAP_V_DECAPPED] - (*before)[BALLAST_DECAP_V_DECAPPED] == 3);
  CHECK((*after)[BALLAST_DECAP_V_BAD_SOURCE] - (*before)[BALLAST_DECAP_V_BAD_SOURCE] == 2);
  CHECK((*after)[BALLAST_DECAP_V_NOT_VIP] - (*before)[BALLAST_DECAP_V_NOT_VIP] == 2);
  // Not encapsulated: untouched, checks or not.
  auto plain = Eth(ETH_P_IP, false);
  PutIp4(plain, IPPROTO_TCP, "203.0.113.9", "198.18.1.10", tcp.size());
  plain.insert(plain.end(), tcp.begin(), tcp.end());
  CHECK(RunProg(fd, plain).action == XDP_PASS);
}

TEST_CASE("decap VIP set: by protocol and port, or an address alone; a full set refused",
          "[dataplane][bpf]") {
  RequireRoot();
  auto d = Decap::Load();
  REQUIRE(d.ok());
  // A copy with no VIP yet lists none (no check: any inner destination).
  auto vips = (*d)->Vips();
  REQUIRE(vips.ok());
  CHECK(vips->empty());
  REQUIRE((*d)->AddVip({Ip("198.18.0.10"), 80, IPPROTO_TCP}).ok());
  REQUIRE((*d)->AddVip({Ip("198.18.0.10"), 80, IPPROTO_TCP}).ok());  // again: one entry
  REQUIRE((*d)->AddVip({Ip("2001:db8::10"), 0, IPPROTO_UDP}).ok());
  REQUIRE((*d)->AddVipAddress(Ip("198.18.0.11")).ok());
  CHECK((*d)->AddVip({Ip("0.0.0.0"), 80, IPPROTO_TCP}).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK((*d)->AddVip({Ip("198.18.0.10"), 80, IPPROTO_ICMP}).code() ==
        absl::StatusCode::kInvalidArgument);
  const absl::Status both = (*d)->AddVip({Ip("198.18.0.11"), 80, IPPROTO_TCP});
  CHECK(both.code() == absl::StatusCode::kInvalidArgument);
  CHECK(both.message() ==
        "decap VIP 198.18.0.11:80/tcp: 198.18.0.11 was given alone (every port); give its "
        "ports, or the address alone");
  CHECK((*d)->AddVipAddress(Ip("198.18.0.10")).code() == absl::StatusCode::kInvalidArgument);
  vips = (*d)->Vips();
  REQUIRE(vips.ok());
  CHECK(*vips == std::vector<VipKey>{{Ip("198.18.0.10"), 80, IPPROTO_TCP},
                                     {Ip("198.18.0.11"), 0, 0},
                                     {Ip("2001:db8::10"), 0, IPPROTO_UDP}});
  // 5 entries so far (3 address entries, 2 ports); 198.18.0.12's address
  // entry and 4,090 ports fill the set, and one port more is refused.
  for (uint16_t port = 1; port <= BALLAST_DECAP_MAX_VIPS - 6; ++port) {
    REQUIRE((*d)->AddVip({Ip("198.18.0.12"), port, IPPROTO_TCP}).ok());
  }
  const absl::Status full = (*d)->AddVip({Ip("198.18.0.12"), 5000, IPPROTO_TCP});
  CHECK(full.code() == absl::StatusCode::kResourceExhausted);
  CHECK(full.message().find("the VIP set is full (4096 entries") != std::string_view::npos);
}

TEST_CASE("decap attaches, is found again on its device, and detaches", "[dataplane][bpf][netns]") {
  RequireRoot();
  TestNetns ns;
  auto d = Decap::Load();
  REQUIRE(d.ok());
  REQUIRE((*d)->AddAddress(Ip("198.18.1.10")).ok());
  auto mode = (*d)->Attach("dpt1", AttachMode::kNative);
  INFO(mode.status().ToString());
  REQUIRE(mode.ok());
  CHECK(*mode == AttachMode::kNative);
  CHECK(AttachedId("dpt1") == ProgId((*d)->prog_fd()));
  CHECK(Decap::HoldsRsts("dpt1").value_or(false));  // tc_decap_rst on its egress
  CHECK_FALSE(Decap::HoldsRsts("dpt0").value_or(true));
  d->reset();  // the attachment keeps program and maps alive

  auto found = Decap::FromDevice("dpt1");
  INFO(found.status().ToString());
  REQUIRE(found.ok());
  auto addrs = (*found)->Addresses();
  REQUIRE(addrs.ok());
  REQUIRE(addrs->size() == 1);
  CHECK((*addrs)[0] == Ip("198.18.1.10"));
  // A second load replaces the first atomically.
  auto again = Decap::Load();
  REQUIRE(again.ok());
  REQUIRE((*again)->Attach("dpt1", AttachMode::kNative).ok());
  CHECK(AttachedId("dpt1") == ProgId((*again)->prog_fd()));
  CHECK(Decap::FromDevice("dpt0").status().code() == absl::StatusCode::kNotFound);
  REQUIRE(Decap::DetachFrom("dpt1").ok());
  CHECK(AttachedId("dpt1") == 0);
  CHECK_FALSE(Decap::HoldsRsts("dpt1").value_or(true));
  CHECK(Decap::DetachFrom("dpt1").code() == absl::StatusCode::kNotFound);
  // A copy found on a device cannot be attached elsewhere (its tc program
  // is not at hand).
  REQUIRE((*again)->Attach("dpt1", AttachMode::kNative).ok());
  auto found2 = Decap::FromDevice("dpt1");
  REQUIRE(found2.ok());
  CHECK((*found2)->Attach("dpt0", AttachMode::kNative).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(AttachedId("dpt0") == 0);
  REQUIRE(Decap::DetachFrom("dpt1").ok());
}

namespace {

// An ICMP(v6) echo request inside its IP header, with valid checksums.
std::vector<uint8_t> Echo4(const char* src, const char* dst) {
  std::vector<uint8_t> p;
  const std::vector<uint8_t> icmp = {8, 0, 0, 0, 0x12, 0x34, 0, 1, 'b', 'a', 'l', 'l'};
  PutIp4(p, IPPROTO_ICMP, src, dst, icmp.size());
  p.insert(p.end(), icmp.begin(), icmp.end());
  PutBe16(p, 22, Checksum(p.data() + 20, icmp.size()));
  return p;
}

std::vector<uint8_t> Echo6(const char* src, const char* dst) {
  std::vector<uint8_t> p;
  const std::vector<uint8_t> icmp = {128, 0, 0, 0, 0x12, 0x34, 0, 1, 'b', 'a', 'l', 'l'};
  PutIp6(p, IPPROTO_ICMPV6, src, dst, icmp.size());
  p.insert(p.end(), icmp.begin(), icmp.end());
  uint32_t sum = 0;  // pseudo header: addresses, length, next header
  for (size_t i = 8; i < 40; i += 2) sum += (p[i] << 8) | p[i + 1];
  sum += static_cast<uint32_t>(icmp.size()) + IPPROTO_ICMPV6;
  PutBe16(p, 42, Checksum(p.data() + 40, icmp.size(), sum));
  return p;
}

// A counter from /proc/net/snmp or /proc/net/snmp6 of the current netns.
uint64_t SnmpCounter(const std::string& file, const std::string& group, const std::string& name) {
  std::ifstream in("/proc/self/net/" + file);
  std::string line;
  if (file == "snmp6") {
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string key;
      uint64_t value = 0;
      if (ls >> key >> value && key == name) return value;
    }
    return 0;
  }
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tag;
    ls >> tag;
    if (tag != group + ":") continue;
    std::vector<std::string> fields;
    for (std::string f; ls >> f;) fields.push_back(f);
    if (header.empty()) {
      header = fields;
      continue;
    }
    for (size_t i = 0; i < header.size() && i < fields.size(); ++i) {
      if (header[i] == name) return std::stoull(fields[i]);
    }
  }
  return 0;
}

std::array<uint8_t, 6> Mac(const char* dev) {
  std::array<uint8_t, 6> mac{};
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr = {};
  std::snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
  if (fd >= 0 && ioctl(fd, SIOCGIFHWADDR, &ifr) == 0) {
    std::memcpy(mac.data(), ifr.ifr_hwaddr.sa_data, 6);
  }
  if (fd >= 0) close(fd);
  return mac;
}

// Sends one Ethernet frame out of `dev` (AF_PACKET).
void SendFrame(const char* dev, const std::vector<uint8_t>& frame) {
  UniqueFd fd(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  REQUIRE(fd);
  sockaddr_ll sll = {};
  sll.sll_family = AF_PACKET;
  sll.sll_ifindex = static_cast<int>(if_nametoindex(dev));
  sll.sll_halen = 6;
  std::memcpy(sll.sll_addr, frame.data(), 6);
  REQUIRE(sendto(fd.get(), frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&sll),
                 sizeof(sll)) == static_cast<ssize_t>(frame.size()));
}

}  // namespace

TEST_CASE("decap in native mode hands real encapsulated packets to the stack",
          "[dataplane][bpf][netns]") {
  RequireRoot();
  TestNetns ns;
  // dpt1 is the "backend": its address is the decap address and the inner
  // destination, so the kernel answers the inner echo requests itself.
  for (const char* cmd :
       {"ip addr add 198.18.1.10/24 dev dpt1", "ip addr add 2001:db8:1::10/64 dev dpt1 nodad",
        "ip route add 198.18.0.0/24 dev dpt1", "ip route add 2001:db8::/64 dev dpt1"}) {
    INFO(cmd);
    REQUIRE(Run(cmd).empty());
  }
  auto d = Decap::Load();
  REQUIRE(d.ok());
  REQUIRE((*d)->AddAddress(Ip("198.18.1.10")).ok());
  REQUIRE((*d)->AddAddress(Ip("2001:db8:1::10")).ok());
  auto mode = (*d)->Attach("dpt1", AttachMode::kNative);
  REQUIRE(mode.ok());
  REQUIRE(*mode == AttachMode::kNative);

  const auto dst_mac = Mac("dpt1");
  const auto src_mac = Mac("dpt0");
  auto frame = [&](uint16_t proto) {
    std::vector<uint8_t> f(dst_mac.begin(), dst_mac.end());
    f.insert(f.end(), src_mac.begin(), src_mac.end());
    f.push_back(static_cast<uint8_t>(proto >> 8));
    f.push_back(static_cast<uint8_t>(proto & 0xff));
    return f;
  };
  const uint64_t echos4 = SnmpCounter("snmp", "Icmp", "InEchos");
  const uint64_t echos6 = SnmpCounter("snmp6", "", "Icmp6InEchos");

  // IPv4 echo in IPv4.
  const auto inner4 = Echo4("198.18.0.100", "198.18.1.10");
  auto f4 = frame(ETH_P_IP);
  PutIp4(f4, IPPROTO_IPIP, "198.18.0.1", "198.18.1.10", inner4.size());
  f4.insert(f4.end(), inner4.begin(), inner4.end());
  SendFrame("dpt0", f4);
  // IPv6 echo in IPv6.
  const auto inner6 = Echo6("2001:db8::100", "2001:db8:1::10");
  auto f6 = frame(ETH_P_IPV6);
  PutIp6(f6, IPPROTO_IPV6, "2001:db8::1", "2001:db8:1::10", inner6.size());
  f6.insert(f6.end(), inner6.begin(), inner6.end());
  SendFrame("dpt0", f6);
  // IPv4 echo in IPv6.
  auto f46 = frame(ETH_P_IPV6);
  PutIp6(f46, IPPROTO_IPIP, "2001:db8::1", "2001:db8:1::10", inner4.size());
  f46.insert(f46.end(), inner4.begin(), inner4.end());
  SendFrame("dpt0", f46);

  uint64_t got4 = 0, got6 = 0;
  for (int i = 0; i < 50; ++i) {  // up to 1 s for the stack to count
    got4 = SnmpCounter("snmp", "Icmp", "InEchos") - echos4;
    got6 = SnmpCounter("snmp6", "", "Icmp6InEchos") - echos6;
    if (got4 >= 2 && got6 >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto stats = (*d)->Stats();
  REQUIRE(stats.ok());
  CHECK((*stats)[BALLAST_DECAP_V_DECAPPED] == 3);
  CHECK((*stats)[BALLAST_DECAP_V_BAD_INNER] == 0);
  CHECK(got4 == 2);  // the kernel accepted both decapsulated IPv4 echo requests
  CHECK(got6 == 1);
}
