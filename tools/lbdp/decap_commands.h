// lbdp's backend-side commands: `decap check|attach|detach|stats`.
// CheckDecapLists() is pure (no kernel): ballast-backend's `check` uses it
// through `lbdp decap check`, so backends and routers parse addresses and
// VIP keys one way.
#ifndef BALLAST_TOOLS_LBDP_DECAP_COMMANDS_H_
#define BALLAST_TOOLS_LBDP_DECAP_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"
#include "agent/dataplane/vip_key.h"
#include "tools/lbdp/cli.h"

namespace ballast::lbdp {

struct DecapAttachArgs {
  std::vector<std::string> addrs;    // local addresses packets are encapsulated to
  std::vector<std::string> sources;  // --from: router sources, or "any"
  std::vector<std::string> vips;     // --vip: ADDR:PORT/PROTO, an address alone, or "any"
  std::string mode = "auto";
  bool no_bounce = false;  // --no-bounce: second chance off
  uint16_t gue_port = 0;   // --gue-port: accept GUE on this UDP port (0 = no GUE)
};

// The lists of DecapAttachArgs, checked.
struct DecapLists {
  std::vector<IpAddress> addrs;
  bool any_source = false;  // --from any: no source check
  bool any_vip = false;     // --vip any: no inner-destination check
  // --vip ADDR:PORT/PROTO: served protocol and port (0 = every port); once each.
  std::vector<dataplane::VipKey> vips;
  // --vip ADDR: every packet to the address (a config from before ports).
  std::vector<IpAddress> whole_vips;
  // Every VIP address, both kinds, once each in the order given (for lo).
  std::vector<IpAddress> vip_addresses;
  // For the operator, each naming its flag ("--vip: ..."): lists that are
  // valid but looser than they need be.
  std::vector<std::string> warnings;
};

// Every --addr and --vip address unicast (not unspecified, multicast,
// broadcast or loopback; ::ffff:a.b.c.d refused: write a.b.c.d), every
// --from an address or prefix, 'any' only alone, no --vip address that is
// also an --addr (compared as addresses, not text). A --vip is a VIP key
// (dataplane::ParseVipKey: 198.18.0.10:80/tcp, [2001:db8::10]:0/udp for
// every port) or, as configs before ports had it, an address alone: every
// port and protocol of it (a warning says so); an address given both ways
// is refused, and at most BALLAST_DECAP_MAX_VIPS entries (one per address,
// one per port). InvalidArgument naming the flag first ("--vip: '224.0.0.5'
// is not a unicast address (multicast)").
absl::StatusOr<DecapLists> CheckDecapLists(const DecapAttachArgs& a);

// `print_vip_addresses`: only the VIP addresses on stdout, one a line
// (ballast-backend puts them on lo).
int CmdDecapCheck(const DecapAttachArgs& a, bool print_vip_addresses);
int CmdDecapAttach(const Global& g, const std::string& dev, const DecapAttachArgs& a);
int CmdDecapDetach(const Global& g, const std::string& dev);
int CmdDecapStats(const Global& g, const std::string& dev);

}  // namespace ballast::lbdp

#endif  // BALLAST_TOOLS_LBDP_DECAP_COMMANDS_H_
