// An IPv4 or IPv6 prefix ("198.18.0.16/28"): an address and a length.
//
// Value type, immutable after construction, safe to share between threads.
// The address's host bits (past the length) are always zero.
#ifndef BALLAST_AGENT_BASE_IP_PREFIX_H_
#define BALLAST_AGENT_BASE_IP_PREFIX_H_

#include <compare>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"

namespace ballast {

class IpPrefix {
 public:
  // "ADDR/LEN" or a bare address (a host prefix, /32 or /128). Host bits
  // set past LEN are cleared when `strict` is false, refused when true
  // (198.18.0.17/28 names no network). InvalidArgument with the text.
  static absl::StatusOr<IpPrefix> Parse(std::string_view text, bool strict = false);

  const IpAddress& address() const { return address_; }
  int length() const { return length_; }
  int max_length() const { return address_.is_v4() ? 32 : 128; }
  bool Contains(const IpAddress& a) const;
  // IPv4 only: the host part's bits as a host-order mask (0 for a /32).
  uint32_t HostMask4() const;

  std::string ToString() const;  // canonical "ADDR/LEN"

  auto operator<=>(const IpPrefix&) const = default;

 private:
  IpAddress address_;
  int length_ = 32;
};

}  // namespace ballast

#endif  // BALLAST_AGENT_BASE_IP_PREFIX_H_
