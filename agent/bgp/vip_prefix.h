// A VIP as BGP announces it (an IPv4 /32 or IPv6 /128 host route) and the
// name of the BIRD protocol that carries it.
//
// Naming: "ballast_vip_" + the address as lowercase hex, 8 digits for IPv4
// and 32 for IPv6 (so the two families never collide):
//   198.18.0.10/32       -> ballast_vip_c612000a
//   2001:db8:10::10/128  -> ballast_vip_20010db8001000000000000000000010
// BIRD symbols are case-sensitive and at most 64 characters; these are 20 and
// 44. Value type, thread-compatible.
#ifndef BALLAST_AGENT_BGP_VIP_PREFIX_H_
#define BALLAST_AGENT_BGP_VIP_PREFIX_H_

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ballast::bgp {

inline constexpr absl::string_view kProtocolPrefix = "ballast_vip_";

class VipPrefix {
 public:
  // "198.18.0.10", "198.18.0.10/32", "2001:db8::10", "2001:db8::10/128".
  // InvalidArgument for anything else (other prefix lengths included: a VIP
  // is announced as a host route).
  static absl::StatusOr<VipPrefix> Parse(absl::string_view text);
  // The VIP a protocol name stands for; nullopt when `name` is not one.
  static std::optional<VipPrefix> FromProtocolName(absl::string_view name);

  int family() const { return v6_ ? 6 : 4; }
  std::string Address() const;       // canonical: "198.18.0.10", "2001:db8:10::10"
  std::string ToString() const;      // "198.18.0.10/32", "2001:db8:10::10/128"
  std::string ProtocolName() const;  // see the header comment

  // BIRD config text of this VIP's protocol: a static route to a blackhole,
  // `disabled yes` so that BIRD announces nothing until the agent enables it
  // (after every BIRD start, and after every `configure`).
  std::string BirdStaticProtocol() const;

  friend auto operator<=>(const VipPrefix&, const VipPrefix&) = default;
  friend bool operator==(const VipPrefix&, const VipPrefix&) = default;

 private:
  bool v6_ = false;
  std::array<uint8_t, 16> bytes_{};  // IPv4 uses the first 4
};

}  // namespace ballast::bgp

#endif  // BALLAST_AGENT_BGP_VIP_PREFIX_H_
