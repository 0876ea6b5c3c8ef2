// A VIP's key as the data plane knows it (address, port, protocol), and
// its text form: the one typed VIP key. Parsed once at the edge (API
// request, config, CLI) and passed inward as a value; the engine's images
// and views are keyed by it. Values; thread-safe.
#ifndef BALLAST_AGENT_DATAPLANE_VIP_KEY_H_
#define BALLAST_AGENT_DATAPLANE_VIP_KEY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"

namespace ballast::dataplane {

struct VipKey {
  IpAddress addr;
  uint16_t port = 0;  // host order; 0 = every port
  uint8_t proto = 0;  // IPPROTO_TCP or IPPROTO_UDP
  bool operator==(const VipKey&) const = default;
  // By address (IPv4 first), then port, then protocol.
  auto operator<=>(const VipKey&) const = default;
};
// "198.18.0.10:80/tcp", "[2001:db8::10]:443/udp".
std::string VipKeyString(const VipKey& k);
// Parses the format VipKeyString produces, as operators write it (the
// protocol in any case, IPv6 in brackets); the one parser of VIP keys (the
// API's text form, lbctl, lbdp, the state's id keys). InvalidArgument that
// says what is wrong and shows the form.
absl::StatusOr<VipKey> ParseVipKey(std::string_view text);

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_VIP_KEY_H_
