#include "agent/base/ip_address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "agent/base/strcat.h"
#include "ballast_abi.h"

namespace ballast {

static_assert(BALLAST_FAMILY_V4 == 4 && BALLAST_FAMILY_V6 == 6,
              "IpAddress's default family assumes BALLAST_FAMILY_V4 == 4");

absl::StatusOr<IpAddress> IpAddress::Parse(std::string_view text) {
  std::string_view t = text;
  bool bracketed = false;
  if (!t.empty() && t.front() == '[') {
    if (t.size() < 2 || t.back() != ']') {
      return absl::InvalidArgumentError(
          base::Cat("address \"", text, "\": unbalanced '[' (expected [IPv6])"));
    }
    t = t.substr(1, t.size() - 2);
    bracketed = true;
  }
  if (t.empty() || t.size() >= INET6_ADDRSTRLEN) {
    return absl::InvalidArgumentError(
        base::Cat("address \"", text, "\" is not an IPv4 or IPv6 address"));
  }
  std::string s(t);  // inet_pton needs a NUL-terminated string
  IpAddress a;
  if (!bracketed && inet_pton(AF_INET, s.c_str(), a.bytes_.data()) == 1) {
    a.family_ = BALLAST_FAMILY_V4;
    return a;
  }
  if (inet_pton(AF_INET6, s.c_str(), a.bytes_.data()) == 1) {
    a.family_ = BALLAST_FAMILY_V6;
    return a;
  }
  return absl::InvalidArgumentError(
      base::Cat("address \"", text, "\" is not an IPv4 or IPv6 address"));
}

IpAddress IpAddress::V4(const uint8_t b[4]) {
  IpAddress a;
  a.family_ = BALLAST_FAMILY_V4;
  std::copy(b, b + 4, a.bytes_.begin());
  return a;
}

IpAddress IpAddress::V6(const uint8_t b[16]) {
  IpAddress a;
  a.family_ = BALLAST_FAMILY_V6;
  std::copy(b, b + 16, a.bytes_.begin());
  return a;
}

IpAddress IpAddress::Zero6() {
  IpAddress a;
  a.family_ = BALLAST_FAMILY_V6;
  return a;
}

absl::StatusOr<IpAddress> IpAddress::FromAbi(const uint8_t addr[16], uint8_t family) {
  if (family == BALLAST_FAMILY_V4) return V4(addr);
  if (family == BALLAST_FAMILY_V6) return V6(addr);
  return absl::InvalidArgumentError(base::Cat("address family ", family, " is neither 4 nor 6"));
}

bool IpAddress::is_v4() const { return family_ == BALLAST_FAMILY_V4; }

bool IpAddress::is_unspecified() const {
  return std::all_of(bytes_.begin(), bytes_.end(), [](uint8_t b) { return b == 0; });
}

bool IpAddress::is_multicast() const {
  return is_v4() ? (bytes_[0] & 0xF0) == 0xE0 : bytes_[0] == 0xFF;
}

bool IpAddress::is_loopback() const {
  if (is_v4()) return bytes_[0] == 127;
  return std::all_of(bytes_.begin(), bytes_.begin() + 15, [](uint8_t b) { return b == 0; }) &&
         bytes_[15] == 1;
}

bool IpAddress::is_v4_mapped() const {
  return !is_v4() &&
         std::all_of(bytes_.begin(), bytes_.begin() + 10, [](uint8_t b) { return b == 0; }) &&
         bytes_[10] == 0xff && bytes_[11] == 0xff;
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  const int af = is_v4() ? AF_INET : AF_INET6;
  if (inet_ntop(af, bytes_.data(), buf, sizeof(buf)) == nullptr) return "?";
  return buf;
}

}  // namespace ballast
