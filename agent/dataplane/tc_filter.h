// One of ballast's tc (clsact) filters on a device: a BPF program on the
// ingress or egress hook, known by a fixed handle and priority, so that a
// later process (or build) finds, replaces or removes it.
//
// Attach creates the device's clsact qdisc if needed and replaces a filter
// of the same identity atomically (BPF_TC_F_REPLACE); Detach removes only
// this filter (the qdisc stays: other programs may use it).
//
// Stateless; devices are looked up in the calling thread's network namespace.
#ifndef BALLAST_AGENT_DATAPLANE_TC_FILTER_H_
#define BALLAST_AGENT_DATAPLANE_TC_FILTER_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace ballast::dataplane {

struct TcFilter {
  bool egress = false;    // else ingress
  uint32_t handle = 0;    // also its priority
  std::string_view name;  // for messages: "tc_neigh", ...
};

absl::Status AttachTcFilter(const TcFilter& f, int prog_fd, int ifindex, std::string_view ifname);
// OK when there is none.
absl::Status DetachTcFilter(const TcFilter& f, int ifindex, std::string_view ifname);
bool TcFilterAttached(const TcFilter& f, int ifindex);

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_TC_FILTER_H_
