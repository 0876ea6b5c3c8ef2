// Just enough rtnetlink for the probe forwarder (policy rules that send
// marked packets to a routing table, and that table's default route) and
// for the agent's route lookups (which device reaches a backend).
//
// Each call opens its own NETLINK_ROUTE socket in the caller's network
// namespace, sends its request(s) and waits for the kernel's answer.
// Kernel errors come back as a Status with what was being done and
// strerror() of the errno. Stateless, thread-safe.
#ifndef BALLAST_AGENT_PROBES_RTNL_H_
#define BALLAST_AGENT_PROBES_RTNL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"

namespace ballast::probes::rtnl {

// Address family of rules and routes: AF_INET or AF_INET6.
//
// `ip rule add fwmark MARK/MASK lookup TABLE priority PRIO` (family).
// AlreadyExists if an identical rule exists.
absl::Status AddFwmarkRule(int family, uint32_t mark, uint32_t mask, uint32_t table,
                           uint32_t priority);
// The reverse; NotFound if there is no such rule.
absl::Status DeleteFwmarkRule(int family, uint32_t mark, uint32_t mask, uint32_t table,
                              uint32_t priority);

// `ip route replace default via GATEWAY dev OIF [onlink] [src PREFSRC] mtu
// MTU table TABLE`; without a gateway, `ip route replace unreachable default
// table TABLE` (so packets of that family fail at once instead of falling
// through to the main table). mtu 0 = none.
absl::Status ReplaceDefaultRoute(int family, uint32_t table,
                                 const std::optional<IpAddress>& gateway, int oif,
                                 const std::optional<IpAddress>& prefsrc, uint32_t mtu,
                                 bool onlink = false);

// `ip neigh replace ADDR lladdr MAC dev IFINDEX nud permanent`.
absl::Status ReplacePermanentNeighbour(int ifindex, const IpAddress& addr,
                                       const std::array<uint8_t, 6>& mac);
// `ip neigh del ADDR dev IFINDEX`; NotFound if absent.
absl::Status DeleteNeighbour(int ifindex, const IpAddress& addr);
// `ip route del default table TABLE` (family); NotFound if absent.
absl::Status DeleteDefaultRoute(int family, uint32_t table);

// The device through which this host sends to each address (its FIB, as
// `ip route get ADDR` answers: no source, no input device), in order: its
// name, or why there is none ("Network is unreachable", a blackhole, an
// address of this host). With a multipath route the kernel names one of
// its paths. One socket for the whole list, one request per address.
struct RouteDevice {
  std::string device;
  std::string error;  // set when `device` is empty
};
std::vector<RouteDevice> RouteDevices(const std::vector<IpAddress>& addrs);

// Interface index and MTU of a device in the current namespace.
absl::StatusOr<int> IfIndex(const std::string& ifname);
absl::StatusOr<uint32_t> DeviceMtu(const std::string& ifname);
absl::StatusOr<std::array<uint8_t, 6>> DeviceMac(const std::string& ifname);

}  // namespace ballast::probes::rtnl

#endif  // BALLAST_AGENT_PROBES_RTNL_H_
