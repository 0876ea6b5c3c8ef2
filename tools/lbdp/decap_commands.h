// lbdp's backend-side commands: `decap check|attach|detach|stats`.
// CheckDecapLists() is pure (no kernel): ballast-backend's `check` uses it
// through `lbdp decap check`, so backends and routers parse addresses one way.
#ifndef BALLAST_TOOLS_LBDP_DECAP_COMMANDS_H_
#define BALLAST_TOOLS_LBDP_DECAP_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"
#include "tools/lbdp/cli.h"

namespace ballast::lbdp {

struct DecapAttachArgs {
  std::vector<std::string> addrs;    // local addresses packets are encapsulated to
  std::vector<std::string> sources;  // --from: router sources, or "any"
  std::vector<std::string> vips;     // --vip: inner destinations, or "any"
  std::string mode = "auto";
  bool no_bounce = false;  // --no-bounce: second chance off
  uint16_t gue_port = 0;   // --gue-port: accept GUE on this UDP port (0 = no GUE)
};

// The lists of DecapAttachArgs, checked.
struct DecapLists {
  std::vector<IpAddress> addrs;
  bool any_source = false;  // --from any: no source check
  bool any_vip = false;     // --vip any: no inner-destination check
  std::vector<IpAddress> vips;
};

// Every --addr and --vip a unicast address (not unspecified, multicast,
// broadcast or loopback; ::ffff:a.b.c.d refused: write a.b.c.d), every
// --from an address or prefix, 'any' only alone, no --vip that is also an
// --addr (compared as addresses, not text). InvalidArgument naming the flag
// first ("--vip: '224.0.0.5' is not a unicast address (multicast)").
absl::StatusOr<DecapLists> CheckDecapLists(const DecapAttachArgs& a);

int CmdDecapCheck(const DecapAttachArgs& a);
int CmdDecapAttach(const Global& g, const std::string& dev, const DecapAttachArgs& a);
int CmdDecapDetach(const Global& g, const std::string& dev);
int CmdDecapStats(const Global& g, const std::string& dev);

}  // namespace ballast::lbdp

#endif  // BALLAST_TOOLS_LBDP_DECAP_COMMANDS_H_
