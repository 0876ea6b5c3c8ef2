// The SETUP half of the lb program's BPF tests, and the CHECK helpers.
//
// A test reads as PKTGEN / SETUP / CHECK:
//   PKTGEN  build a frame with pktgen::PacketBuilder;
//   SETUP   LbFixture: load the real xdp_lb object through the data-plane
//           library (nothing pinned), write settings, VIPs, backends with a
//           pre-filled next hop (ifindex 1 = the test run's ingress device, so
//           forwarding is XDP_TX and independent of the host's routes),
//           Maglev tables; then Run() jumps into the program;
//   CHECK   Run() itself asserts that exactly one verdict counter moved, by
//           one, and returns it with the action and output frame; the
//           Check* helpers parse the output with the independent parser.
//
// Each LbFixture owns a freshly loaded program and fresh maps, so counters
// start at zero. Not thread-safe. Failures are Catch2 assertions.
#ifndef BALLAST_TESTS_BPF_LB_FIXTURE_H_
#define BALLAST_TESTS_BPF_LB_FIXTURE_H_

#include <sched.h>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/decap.h"
#include "agent/dataplane/verdict.h"
#include "ballast_abi.h"
#include "tests/lib/xdp_run.h"
#include "tests/lib/packet.h"
#include "tests/lib/parse.h"

namespace ballast::bpftest {

using pktgen::Addr;
using pktgen::Bytes;
using pktgen::Mac;

// Lab addresses (198.18.0.0/15, 2001:db8::/32), used by every test.
struct Lab {
  static Addr Vip4() { return Addr::Parse("198.18.0.10"); }
  static Addr Vip6() { return Addr::Parse("2001:db8::10"); }
  static Addr Client4() { return Addr::Parse("198.18.100.1"); }
  static Addr Client6() { return Addr::Parse("2001:db8:100::1"); }
  static Addr Src4() { return Addr::Parse("198.18.0.1"); }  // router's outer source
  static Addr Src6() { return Addr::Parse("2001:db8::1"); }
  static Addr Backend4(int i) { return Addr::Parse("198.18.1." + std::to_string(i)); }
  static Addr Backend6(int i) { return Addr::Parse("2001:db8:1::" + std::to_string(i)); }
  static Mac TorMac() { return Mac::Parse("02:00:00:00:00:aa"); }     // client side peer
  static Mac RouterMac() { return Mac::Parse("02:00:00:00:00:01"); }  // our NIC
  static Mac NexthopSmac() { return Mac::Parse("02:00:00:00:01:01"); }
  static Mac NexthopDmac() { return Mac::Parse("02:00:00:00:02:02"); }
};

// Flow key as the program builds it (client -> VIP).
ballast_flow_key FlowKey(const Addr& client, const Addr& vip, uint16_t sport, uint16_t dport,
                         uint8_t proto);

// The flow hash seed every fixture's program starts with (LbFixture::Hash).
inline constexpr dataplane::HashSeed kTestSeed = {0x5eed0001u, 0x5eed0002u, 0x5eed0003u};

struct Outcome {
  int action = -1;
  ballast_verdict verdict = BALLAST_V_MAX;
  Bytes out;
  Bytes meta;  // XDP metadata in front of `out`
};

class LbFixture {
 public:
  // Loads the program with a connection table of `flow_capacity` entries and
  // writes default settings (src4/src6 above, ICMP too-big policy).
  explicit LbFixture(uint32_t flow_capacity = 4096, uint32_t handshake_sets = 0);
  ~LbFixture();

  dataplane::Dataplane& dp() { return *dp_; }

  // ---- SETUP ----
  void SetPolicy(uint32_t policy);
  void SetSettings(const dataplane::Settings& s);
  // VIP (addr, port, proto) -> vip_id (UpsertVip: an existing VIP keeps its
  // owner deadline).
  void AddVip(const Addr& addr, uint16_t port, uint8_t proto, uint32_t vip_id,
              const dataplane::VipOptions& options = {});
  // SetVipOwnerDeadline: owned with this CLOCK_MONOTONIC deadline, or not
  // owned (nullopt).
  void SetOwnerDeadline(const Addr& addr, uint16_t port, uint8_t proto,
                        std::optional<uint64_t> deadline_ns);
  // Backend `id` at `addr` in `state`, with a next hop on ifindex 1 whose
  // MTU is `mtu` (valid for an hour).
  void AddBackend(uint32_t id, const Addr& addr,
                  ballast_backend_state state = BALLAST_BACKEND_ACTIVE,
                  uint64_t drain_deadline_ns = 0, uint32_t mtu = 1500);
  void SetBackendState(uint32_t id, ballast_backend_state state, uint64_t drain_deadline_ns = 0);
  void SetNexthop(uint32_t id, uint32_t mtu, uint32_t ifindex = 1);
  // Empties backend `id`'s cached next hop: the program asks the kernel's FIB.
  void ClearNexthop(uint32_t id);
  // Publishes `table` (M = table.size(), prime) for vip_id.
  void SetTable(uint32_t vip_id, const std::vector<uint32_t>& table);
  // A table of M = 13 slots all pointing at `backend_id`.
  void SetUniformTable(uint32_t vip_id, uint32_t backend_id);

  // ---- run ----
  // One BPF_PROG_TEST_RUN; asserts exactly one verdict counter moved by one.
  Outcome Run(const Bytes& frame, uint32_t ingress_ifindex = 1);
  uint64_t runs() const { return runs_; }

  // ---- CHECK ----
  // ballast_flow_hash of `key` under the seed the program uses now (the
  // fixture sets kTestSeed: not the public one, so that nothing here or in
  // the program can lean on it).
  uint32_t Hash(const ballast_flow_key& key) const;
  // Writes the `flow_hash_seed` map (with the other settings as they are).
  void SetFlowHashSeed(const dataplane::FlowHashSeed& seed);
  // The backend the table of vip_id picks for `key` (Hash % M).
  uint32_t Predict(uint32_t vip_id, const ballast_flow_key& key) const;
  // Where a retransmitted SYN goes after `last`, the table's pick being
  // `first` (maglev_next_choice, written again from its comment): the
  // second and third choices are the first two backends over choice seeds
  // 1..BALLAST_CHOICE_SEEDS not in `unusable` and other than `first`;
  // after `first` the second, after the second the third, else `first`.
  uint32_t PredictNext(uint32_t vip_id, const ballast_flow_key& key, uint32_t first, uint32_t last,
                       const std::set<uint32_t>& unusable = {}) const;
  // Backend id whose address is `outer_dst` (0 if none).
  uint32_t BackendAt(const Addr& outer_dst) const;
  // The flow of `key` in whichever of the three flow maps holds it
  // (kFlowMaps order), and that map's name ("" if none).
  std::optional<ballast_flow> Flow(const ballast_flow_key& key) const;
  std::string FlowMap(const ballast_flow_key& key) const;
  // Overwrites the flow of `key` in the map that holds it (`flows` if none;
  // tests of ageing).
  void SetFlow(const ballast_flow_key& key, const ballast_flow& f);
  // The `handshakes` set `key` hashes to, and the slot of it that holds
  // `key` (its 32-bit hash matches, whatever its age), if any.
  ballast_handshake_set HandshakeSet(const ballast_flow_key& key) const;
  std::optional<ballast_handshake> Handshake(const ballast_flow_key& key) const;
  // Overwrites the set `key` hashes to (tests of ageing and of full sets).
  void SetHandshakeSet(const ballast_flow_key& key, const ballast_handshake_set& set);
  ballast_backend_stats BackendStats(uint32_t id) const;
  ballast_vip_stats VipStats(uint32_t vip_id) const;
  std::array<uint64_t, BALLAST_V_MAX> Verdicts() const;
  const Addr& BackendAddr(uint32_t id) const { return backend_addrs_.at(id); }

 private:
  std::unique_ptr<dataplane::Dataplane> dp_;
  std::map<uint32_t, std::vector<uint32_t>> tables_;
  std::map<uint32_t, Addr> backend_addrs_;
  uint64_t runs_ = 0;
};

// The backend an encapsulated output went to (by its outer destination).
uint32_t BackendOf(const LbFixture& fx, const Bytes& out);
uint32_t BackendOf(const LbFixture& fx, const Outcome& o);

// What an encapsulated output must look like.
struct EncapExpect {
  int outer_family = 4;  // 4: IPv4 outer, 6: IPv6 outer
  Addr outer_src;
  Addr outer_dst;
  Bytes inner_ip;  // the original IP packet, byte for byte
  uint8_t outer_tos = 0;
  // GUE (a VIP with BALLAST_VIP_F_GUE): a UDP header between the two, from
  // this source port to gue_dport, checksum 0. Unset: IP-in-IP.
  std::optional<uint16_t> gue_sport;
  uint16_t gue_dport = BALLAST_GUE_PORT_DEFAULT;
  Mac src = Lab::NexthopSmac();  // Ethernet addresses
  Mac dst = Lab::NexthopDmac();
};

// Asserts Ethernet (expect.src/dst, no VLAN), the outer header (version,
// protocol 4/41, or 17 and the UDP header for GUE; addresses, TTL 64,
// lengths, IPv4 header checksum) and that the inner packet is `inner_ip`
// unchanged with valid checksums. Returns the parsed outer view.
pktgen::IpView CheckEncapsulated(const Bytes& out, const EncapExpect& expect);

// A copy of xdp_decap (not attached) for the lab's backends' addresses
// (Backend4/Backend6 1..3), nothing else set.
std::unique_ptr<dataplane::Decap> LoadBackendDecap();
// The same, taking packets only from the lab router's sources (Src4, Src6)
// and only for its VIPs (SetUpLab's, by protocol and port), as lbdp decap
// attach --from --vip.
std::unique_ptr<dataplane::Decap> LoadRouterOnlyDecap();

// One run of a backend's decap program on `frame` (REQUIREs it ran), and
// its counters.
pktgen::XdpResult RunDecap(const dataplane::Decap& decap, const Bytes& frame);
std::array<uint64_t, BALLAST_DECAP_V_MAX> DecapStats(const dataplane::Decap& decap);

// What a backend's decap program sends back for an encapsulated frame
// (second chance): MACs and outer addresses swapped, TTL 64 (the router's
// was 64: the IPv4 checksum is unchanged). Written independently of
// xdp_decap; the chained tests check that the program does the same.
Bytes Bounce(const Bytes& encapsulated);

// Bounce() as if sent from `from` instead of the backend (a stranger's).
Bytes BounceFrom(const Bytes& encapsulated, const Addr& from);

// Runs this thread on one CPU (the one it is on) until destroyed:
// BPF_PROG_TEST_RUN runs on the caller's CPU, and per-CPU state (the ICMP
// budget, the LRU hash's free nodes) then stays on one.
class PinnedToOneCpu {
 public:
  PinnedToOneCpu();
  ~PinnedToOneCpu() { sched_setaffinity(0, sizeof(saved_), &saved_); }
  PinnedToOneCpu(const PinnedToOneCpu&) = delete;
  PinnedToOneCpu& operator=(const PinnedToOneCpu&) = delete;

 private:
  cpu_set_t saved_;
};

// Sleeps past BALLAST_PROBATION_WAIT (probation.h): a connection whose
// probe was sent before it is promoted into `flows` by its next packet.
void WaitOutProbation();

// `frame` (Ethernet + IPv4, or + IPv6) with its outer IPv4 identification,
// or IPv6 flow label, set to `value` (the IPv4 checksum mended): where the
// router's mark and bounce tag travel (bpf/lib/mark.h).
Bytes WithOuterMark(const Bytes& frame, uint32_t value);
// The outer IPv4 identification or IPv6 flow label of `frame`.
uint32_t OuterMarkOf(const Bytes& frame);

// An independent dissector (tshark) reads `bounced`, one IPv4 bounce and
// one IPv6 bounce of xdp_decap: outer destination the router, the inner
// packet intact to the VIP with `tcp_field` equal to `value`, every
// checksum good, nothing malformed.
void CheckBouncesDissected(const std::vector<Bytes>& bounced, const std::string& tcp_field,
                           const std::string& value);

// 10,000 UDP flows to the IPv4 UDP VIP (100 clients 198.18.100.1..100, 100
// source ports each), each run once; every one must be forwarded. `seen`
// gets each flow's key and its output's outer header.
void ForEachSpreadFlow(
    LbFixture& fx, const std::function<void(const ballast_flow_key&, const pktgen::IpView&)>& seen);

// Converts a pktgen address to the data-plane library's type.
IpAddress ToIpAddress(const Addr& a);

// A listening TCP socket on `port` of every address (the test's network
// namespace), closed when it goes.
class Listener {
 public:
  Listener(int family, uint16_t port);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  // The next connection of its queue (blocking), or -1.
  int Accept();

 private:
  int fd_ = -1;
};

// ---- the standard lab SETUP used by most tests ----
inline constexpr uint32_t kVipTcp4 = 1;    // 198.18.0.10:80/tcp -> IPv4 backends 1,2,3
inline constexpr uint32_t kVipTcp6 = 2;    // [2001:db8::10]:443/tcp -> IPv6 backends 11,12,13
inline constexpr uint32_t kVip4To6 = 3;    // 198.18.0.10:443/tcp -> IPv6 backends 11,12,13
inline constexpr uint32_t kVipUdp4 = 4;    // 198.18.0.10:53/udp -> IPv4 backends 1,2,3
inline constexpr uint32_t kVipMixed6 = 5;  // [2001:db8::10]:80/tcp -> IPv4 backend 1
// Tables are 13 slots cycling through the backends (1,2,3,1,2,3,...), so
// different flows really land on different backends.
std::vector<uint32_t> CyclingTable(const std::vector<uint32_t>& ids, size_t m = 13);
void SetUpLab(LbFixture& fx);

// PKTGEN shorthands: Ethernet from the ToR to the router, client -> VIP.
pktgen::PacketBuilder FromClient4(const Addr& vip = Lab::Vip4());
pktgen::PacketBuilder FromClient6(const Addr& vip = Lab::Vip6());

// A table-driven case: a packet and the verdict it must get.
struct VerdictCase {
  const char* what;
  pktgen::Bytes frame;
  ballast_verdict verdict;
};

// Runs every case; each must end in `action` with its verdict, and a packet
// that is passed must reach the kernel byte for byte unchanged.
void ExpectVerdicts(LbFixture& fx, const std::vector<VerdictCase>& cases, int action);

}  // namespace ballast::bpftest

// Assertion messages show verdict names ("pass_not_vip"), not numbers.
namespace Catch {
template <>
struct StringMaker<ballast_verdict> {
  static std::string convert(ballast_verdict v) {
    return std::string(ballast::dataplane::VerdictName(v));
  }
};
}  // namespace Catch

#endif  // BALLAST_TESTS_BPF_LB_FIXTURE_H_
