// Is the local data plane able to forward? The check lbagent's announcer runs
// before every announcement decision (docs/bgp.md, "Data plane health").
//
// Healthy means all of:
//   - the program pinned at <pin_dir>/prog_xdp_lb can be opened;
//   - `interface` exists and runs exactly that program (XDP query of the
//     device: a detached program, another program, or a replaced one fails);
//   - the pinned maps vips, backends, maglev_tables and settings can be
//     opened and read (one key walk each), and each is a map the attached
//     program uses (pins replaced behind the agent's back fail).
// Errors name what is wrong, e.g. "dev to-tor runs no XDP program".
//
// I/O: bpf() and netlink syscalls in the calling thread's network namespace.
// Thread-safe (no state).
#ifndef BALLAST_AGENT_BGP_DATAPLANE_PROBE_H_
#define BALLAST_AGENT_BGP_DATAPLANE_PROBE_H_

#include <string>

#include "agent/bgp/announce_policy.h"

namespace ballast::bgp {

DataplaneHealth ProbeDataplane(const std::string& pin_dir, const std::string& interface);

}  // namespace ballast::bgp

#endif  // BALLAST_AGENT_BGP_DATAPLANE_PROBE_H_
