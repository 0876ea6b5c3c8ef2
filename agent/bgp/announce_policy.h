// Which VIP addresses lbagent announces over BGP, and why: a pure function
// of the agent's situation (docs/bgp.md, "What withdraws a VIP").
//
// A VIP is (address, port, protocol); BGP carries the address as a host route
// (vip_prefix.h), so the decision is per address. For each address:
//   1. shutting down (SIGTERM/SIGINT)              -> withdraw
//   2. operator hold (the hold file exists)        -> withdraw
//   3. the local data plane is unhealthy           -> withdraw
//   4. otherwise announce if any VIP on the address may be forwarded here:
//      - an ordinary VIP (ownership NONE, or standalone mode): always;
//      - an ACTIVE_STANDBY VIP in cluster mode: only while this node holds
//        its lease (owner) and the data-plane owner deadline is in the future
//        (a lost lease or a fence sets it to the past at once).
// A retired address (no VIP uses it any more; the data plane still drops
// its packets, address_release.h) is withdrawn, and decided like the others
// so that BIRD's state of it is followed until its marker goes.
// A VIP whose backends are all down stays announced: every router holds the
// same backends, so withdrawing it everywhere would turn "no backend" into
// "no route" and couple routing to health-check churn (docs/bgp.md: moving
// traffic cannot help when the problem is downstream of all routers).
//
// "Any VIP on the address" (rather than "every"): two VIPs that share an
// address but have different owners cannot be steered apart by a host route;
// announcing from both owners keeps each VIP reachable through its owner
// (the other router drops the other VIP's packets at its fence). Give an
// active/standby VIP an address of its own.
//
// Pure: no I/O, no clock (now is an input). Thread-compatible.
#ifndef BALLAST_AGENT_BGP_ANNOUNCE_POLICY_H_
#define BALLAST_AGENT_BGP_ANNOUNCE_POLICY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/bgp/vip_prefix.h"

namespace ballast::bgp {

struct DataplaneHealth {
  bool healthy = false;
  std::string problem;  // why not, for people ("" when healthy)
};

// One configured VIP as the policy needs it.
struct VipInput {
  std::string key;      // "198.18.0.10:80/tcp", for reasons
  std::string address;  // "198.18.0.10" or "2001:db8::10"
  bool active_standby = false;
  bool owner = false;                   // this node holds the VIP's lease
  std::optional<uint64_t> deadline_ns;  // data-plane owner deadline (CLOCK_MONOTONIC)
};

struct PolicyInput {
  std::string shutdown;  // non-empty: shutting down, for this reason ("SIGTERM")
  std::string hold;      // non-empty: operator hold, for this reason
  DataplaneHealth dataplane;
  bool cluster_mode = false;  // ACTIVE_STANDBY applies only in cluster mode
  uint64_t now_ns = 0;        // CLOCK_MONOTONIC, the clock of the deadlines
  std::vector<VipInput> vips;
  // Retired VIP addresses ("198.18.0.10"): no VIP in `vips` should use
  // them; one that does is decided by its VIPs.
  std::vector<std::string> retired;
};

struct AnnounceDecision {
  bool announce = false;
  std::string reason;
  friend bool operator==(const AnnounceDecision&, const AnnounceDecision&) = default;
};

// The desired state of every VIP address in `in.vips` and `in.retired`.
// Addresses that do not parse are left out and named in `*errors` (when
// given).
std::map<VipPrefix, AnnounceDecision> DecideAnnouncements(
    const PolicyInput& in, std::vector<std::string>* errors = nullptr);

}  // namespace ballast::bgp

#endif  // BALLAST_AGENT_BGP_ANNOUNCE_POLICY_H_
