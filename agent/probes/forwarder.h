// ProbeForwarder: sends probe sockets' packets to one chosen backend through
// the data plane's encapsulation (bpf/tc_probe.bpf.c, ballast_probe_abi.h).
//
// How a probe "via the VIP" travels (router side):
//   1. The probe socket connects to VIP:port with SO_MARK =
//      BALLAST_PROBE_MARK_BASE | backend_id (ProbeScheduler does this).
//   2. Policy rules (IPv4 and IPv6) `fwmark BASE/MASK lookup <table>` send
//      its packets to <table>, whose default route leads out of `device` via
//      a pseudo next hop (kNexthop4, kNexthop6) with a permanent neighbour
//      entry (the device's own MAC): the kernel hands the packet to the tc
//      hook without resolving anything, so no host's neighbour entry, and no
//      host's health, is on the path of every probe (a real host as the
//      gateway, as earlier builds had, failed every probe of every backend
//      when that one host went away). The route's preferred source is
//      src4/src6, so backends answer the router's source address, and its MTU
//      is the device's minus 48 (room for the outer headers: IPv6, and UDP
//      for GUE). A family without a source gets `unreachable default`: its
//      probes fail at once and never leak unencapsulated into the main table.
//   3. The tc egress program on `device` finds the mark in `probe_targets`,
//      encapsulates the packet to that backend (outer source src4/src6; in
//      GUE when the target's VIP is mode GUE, as its clients' packets go),
//      clears the mark and sends it to that backend's own next hop (kernel
//      FIB; possibly another device; bpf_redirect_neigh when its neighbour is
//      not resolved), so a probe's path depends on its backend alone. A
//      probe-marked packet without a target is dropped.
//   4. The backend decapsulates (VIP on loopback) and answers from the VIP
//      straight to the router's source address (DSR), arriving on whichever
//      backend-facing device; the router's rp_filter on those devices must be
//      0 or 2 (strict mode drops replies from a VIP source).
// Requirements: root (CAP_NET_ADMIN, CAP_BPF), an Ethernet `device`, IP
// forwarding on (the FIB lookup is a forwarding lookup, as in the lb
// program), src4/src6 configured on the router (e.g. on lo).
//
// Pinning and restarts (Options::pin_dir non-empty, default
// /sys/fs/bpf/ballast/probe): the maps probe_targets, probe_settings and
// probe_stats are pinned there; Open() reuses pinned maps (targets survive a
// restart) and pins missing ones. Attach() installs the tc filter with a
// fixed handle/priority and BPF_TC_F_REPLACE: a restarted agent swaps its
// freshly loaded program in atomically over the old one, which shared the
// same maps, so no probe packet is lost or leaks. Rules and routes are
// replaced idempotently. Detach() removes the filter, the rules and the
// routes, and unpins the maps; the clsact qdisc stays (other programs may
// use it). Destruction detaches nothing.
//
// Thread-safety: none for Open/Attach/Detach (one owner thread).
// SetTarget/RemoveTarget/Targets/Stats are single map operations and may be
// called from any thread once Open() returned.
#ifndef BALLAST_AGENT_PROBES_FORWARDER_H_
#define BALLAST_AGENT_PROBES_FORWARDER_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"
#include "ballast_probe_abi.h"

struct tc_probe;  // generated skeleton (tc_probe.skel.h)

namespace ballast::probes {

class ProbeForwarder {
 public:
  struct Options {
    std::string device;  // backend-facing device (tc egress + policy route)
    IpAddress src4;      // outer IPv4 source; 0.0.0.0 = none (IPv4 backends: dropped)
    IpAddress src6 = IpAddress::Zero6();                // outer IPv6 source; :: = none
    std::string pin_dir = "/sys/fs/bpf/ballast/probe";  // "" = no pins (tests)
    uint32_t table = 27746;          // routing table of probe packets ("lb" = 0x6c62)
    uint32_t rule_priority = 27746;  // before main (32766)
    bool manage_routing = true;      // false: the operator installs rules and routes
  };

  // Loads the program (reusing pinned maps) and writes probe_settings.
  static absl::StatusOr<std::unique_ptr<ProbeForwarder>> Open(const Options& options);
  ~ProbeForwarder();
  ProbeForwarder(const ProbeForwarder&) = delete;
  ProbeForwarder& operator=(const ProbeForwarder&) = delete;

  // tc egress filter on the device (replacing a previous ballast probe
  // program), then rules and routes (manage_routing).
  absl::Status Attach();
  // Filter, rules and routes off; maps unpinned. Each step is tried; the
  // first error is returned.
  absl::Status Detach();

  // The policy routes' pseudo next hops: never a host, never sent a packet
  // (their neighbour entries are permanent, written by Attach()).
  static IpAddress Nexthop4();  // 169.254.108.98 (link-local; "lb")
  static IpAddress Nexthop6();  // fe80::6c62

  // The mark a probe to `backend_id` carries.
  static uint32_t MarkOf(uint32_t backend_id) { return BALLAST_PROBE_MARK_BASE | backend_id; }
  // Where probes to one backend id go, and how.
  struct Target {
    IpAddress backend;      // encapsulation destination
    uint16_t gue_port = 0;  // the VIP is mode GUE: outer UDP to this port; 0 = IP-in-IP
    bool operator==(const Target&) const = default;
  };
  // Programs / forgets the encapsulation target of `backend_id`
  // (1..BALLAST_MAX_BACKENDS-1).
  absl::Status SetTarget(uint32_t backend_id, const Target& target);
  absl::Status RemoveTarget(uint32_t backend_id);
  absl::StatusOr<std::map<uint32_t, Target>> Targets() const;  // by backend id
  // Per-verdict packet counts summed over CPUs.
  absl::StatusOr<std::array<uint64_t, BALLAST_PROBE_V_MAX>> Stats() const;

  // The loaded tc program (owned by this object; for tests and tooling).
  int prog_fd() const;

 private:
  ProbeForwarder() = default;
  absl::Status InstallRouting(int ifindex);
  absl::Status RemoveRouting(int ifindex);  // 0: the device is gone

  Options options_;
  tc_probe* skel_ = nullptr;
};

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_FORWARDER_H_
