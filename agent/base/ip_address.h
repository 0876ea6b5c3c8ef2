// An IPv4 or IPv6 address as the data plane stores it.
//
// Value type, cheap to copy, immutable after construction, safe to share
// between threads. The 16 bytes are in network byte order; an IPv4 address
// occupies bytes 0..3 and bytes 4..15 are zero, exactly the layout of the
// address fields of ballast_abi.h, so bytes() can be copied into a key.
#ifndef BALLAST_AGENT_BASE_IP_ADDRESS_H_
#define BALLAST_AGENT_BASE_IP_ADDRESS_H_

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ballast {

class IpAddress {
 public:
  // The default value is the IPv4 address 0.0.0.0 ("unspecified").
  IpAddress() = default;

  // Parses dotted-quad IPv4 ("198.18.0.1") or IPv6 text ("2001:db8::1",
  // also "[2001:db8::1]"). No zone ids, prefixes or surrounding spaces.
  // InvalidArgument with the offending text otherwise.
  static absl::StatusOr<IpAddress> Parse(std::string_view text);

  static IpAddress V4(const uint8_t b[4]);
  static IpAddress V6(const uint8_t b[16]);
  // The IPv6 unspecified address "::" (the default value is IPv4 0.0.0.0).
  static IpAddress Zero6();
  // From the (addr[16], family) pair of an ABI struct. InvalidArgument if the
  // family is neither BALLAST_FAMILY_V4 nor BALLAST_FAMILY_V6.
  static absl::StatusOr<IpAddress> FromAbi(const uint8_t addr[16], uint8_t family);

  uint8_t family() const { return family_; }  // BALLAST_FAMILY_V4 / _V6
  bool is_v4() const;
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }
  // True for 0.0.0.0 and ::.
  bool is_unspecified() const;
  // 224.0.0.0/4 and ff00::/8.
  bool is_multicast() const;
  // 127.0.0.0/8 and ::1.
  bool is_loopback() const;
  // ::ffff:a.b.c.d: an IPv4 address written as IPv6 (a second spelling of
  // a.b.c.d, which callers refuse rather than take for an IPv6 address).
  bool is_v4_mapped() const;

  // Canonical text: dotted quad, or RFC 5952 IPv6 (inet_ntop).
  std::string ToString() const;

  // Orders by family first (IPv4 before IPv6), then bytes.
  auto operator<=>(const IpAddress&) const = default;

 private:
  uint8_t family_ = 4;  // BALLAST_FAMILY_V4 (ABI header is C; value checked in .cc)
  std::array<uint8_t, 16> bytes_{};
};

}  // namespace ballast

#endif  // BALLAST_AGENT_BASE_IP_ADDRESS_H_
