#include "agent/base/ip_prefix.h"

#include <array>
#include <cstdint>

#include "agent/base/strcat.h"

namespace ballast {
namespace {

// `a`'s bytes with every bit at or past `len` cleared.
std::array<uint8_t, 16> Masked(const IpAddress& a, int len) {
  std::array<uint8_t, 16> b = a.bytes();
  const int max = a.is_v4() ? 32 : 128;
  for (int bit = len; bit < max; ++bit) b[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  return b;
}

}  // namespace

absl::StatusOr<IpPrefix> IpPrefix::Parse(std::string_view text, bool strict) {
  std::string_view addr_text = text;
  int len = -1;
  if (size_t slash = text.find('/'); slash != std::string_view::npos) {
    addr_text = text.substr(0, slash);
    const std::string_view len_text = text.substr(slash + 1);
    if (len_text.empty() || len_text.size() > 3 ||
        len_text.find_first_not_of("0123456789") != std::string_view::npos) {
      return absl::InvalidArgumentError(
          base::Cat("prefix \"", text, "\": '", len_text, "' is not a prefix length"));
    }
    len = std::stoi(std::string(len_text));
  }
  auto addr = IpAddress::Parse(addr_text);
  if (!addr.ok()) {
    return absl::InvalidArgumentError(base::Cat(
        "prefix \"", text, "\" is not an address or prefix (e.g. 198.18.0.1, 198.18.0.0/24)"));
  }
  const int max = addr->is_v4() ? 32 : 128;
  if (len < 0) len = max;
  if (len > max) {
    return absl::InvalidArgumentError(
        base::Cat("prefix \"", text, "\": length ", len, " is over ", max));
  }
  const std::array<uint8_t, 16> net = Masked(*addr, len);
  if (strict && net != addr->bytes()) {
    IpPrefix p;
    p.address_ = addr->is_v4() ? IpAddress::V4(net.data()) : IpAddress::V6(net.data());
    p.length_ = len;
    return absl::InvalidArgumentError(
        base::Cat("prefix \"", text, "\" has host bits set (the network is ", p.ToString(), ")"));
  }
  IpPrefix p;
  p.address_ = addr->is_v4() ? IpAddress::V4(net.data()) : IpAddress::V6(net.data());
  p.length_ = len;
  return p;
}

bool IpPrefix::Contains(const IpAddress& a) const {
  return a.family() == address_.family() && Masked(a, length_) == address_.bytes();
}

uint32_t IpPrefix::HostMask4() const {
  if (!address_.is_v4() || length_ >= 32) return 0;
  return length_ <= 0 ? ~uint32_t{0} : (uint32_t{1} << (32 - length_)) - 1;
}

std::string IpPrefix::ToString() const { return base::Cat(address_.ToString(), "/", length_); }

}  // namespace ballast
