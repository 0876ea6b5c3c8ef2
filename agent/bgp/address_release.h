// When a retired VIP address may leave the data plane (docs/bgp.md,
// "Deleting a VIP").
//
// An address whose last VIP was deleted is *retired* (core::EngineOptions::
// retire_addresses): the data plane keeps its address marker, so the
// packets the ToR still sends here for it are dropped (drop_vip_unserved)
// instead of handed to the kernel, which would route them back to the ToR
// (a loop until the TTL runs out). The marker may go once the route is gone:
// BIRD shows the address's protocol down (or has none), without a break,
// for `grace` (the ToR's time to take the withdrawal into its forwarding
// table). Anything else holds it: announced, changing, BIRD unreachable
// (unknown), or a protocol of that name that is not ours (conflict).
//
// Pure: no I/O, no clock (now is an input). Thread-compatible.
#ifndef BALLAST_AGENT_BGP_ADDRESS_RELEASE_H_
#define BALLAST_AGENT_BGP_ADDRESS_RELEASE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/bgp/announcer.h"
#include "agent/bgp/vip_prefix.h"

namespace ballast::bgp {

// What the decision remembers from one pass to the next: since when each
// retired address's route has been seen gone, without a break
// (CLOCK_MONOTONIC ns).
struct ReleaseMemory {
  std::map<VipPrefix, uint64_t> gone_since_ns;
  friend bool operator==(const ReleaseMemory&, const ReleaseMemory&) = default;
};

struct ReleasePlan {
  std::vector<VipPrefix> release;         // the markers that may go now
  std::map<VipPrefix, std::string> held;  // the others, and why (for status)
  ReleaseMemory next;                     // the memory for the next pass
};

// `retired`: every retired address with BIRD's state of its protocol as
// observed this pass. Addresses no longer retired are forgotten.
ReleasePlan PlanAddressRelease(const ReleaseMemory& memory,
                               const std::map<VipPrefix, BirdVipState>& retired, uint64_t now_ns,
                               uint64_t grace_ns);

}  // namespace ballast::bgp

#endif  // BALLAST_AGENT_BGP_ADDRESS_RELEASE_H_
