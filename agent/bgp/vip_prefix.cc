#include "agent/bgp/vip_prefix.h"

#include "agent/base/ip_address.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ballast::bgp {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase is not canonical: such a name is not ours
}

}  // namespace

absl::StatusOr<VipPrefix> VipPrefix::Parse(absl::string_view text) {
  absl::string_view addr = text;
  std::optional<int> len;
  if (size_t slash = text.find('/'); slash != absl::string_view::npos) {
    addr = text.substr(0, slash);
    int l = 0;
    if (!absl::SimpleAtoi(text.substr(slash + 1), &l)) {
      return absl::InvalidArgumentError(absl::StrCat("VIP '", text, "': bad prefix length"));
    }
    len = l;
  }
  VipPrefix p;
  auto parsed = IpAddress::Parse(std::string_view(addr.data(), addr.size()));
  if (parsed.ok() && addr.find('[') == absl::string_view::npos) {
    p.v6_ = !parsed->is_v4();
    p.bytes_ = parsed->bytes();
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("VIP '", text, "': not an IPv4 or IPv6 address (e.g. 198.18.0.10/32)"));
  }
  const int host = p.v6_ ? 128 : 32;
  if (len && *len != host) {
    return absl::InvalidArgumentError(absl::StrCat("VIP '", text, "': prefix length must be /",
                                                   host, " (a VIP is announced as a host route)"));
  }
  return p;
}

std::optional<VipPrefix> VipPrefix::FromProtocolName(absl::string_view name) {
  if (!absl::StartsWith(name, kProtocolPrefix)) return std::nullopt;
  absl::string_view hex = name.substr(kProtocolPrefix.size());
  VipPrefix p;
  if (hex.size() == 8) {
    p.v6_ = false;
  } else if (hex.size() == 32) {
    p.v6_ = true;
  } else {
    return std::nullopt;
  }
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexValue(hex[i]), lo = HexValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    p.bytes_[i / 2] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return p;
}

std::string VipPrefix::Address() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6_ ? AF_INET6 : AF_INET, bytes_.data(), buf, sizeof(buf));
  return buf;
}

std::string VipPrefix::ToString() const { return absl::StrCat(Address(), v6_ ? "/128" : "/32"); }

std::string VipPrefix::ProtocolName() const {
  std::string out(kProtocolPrefix);
  const size_t n = v6_ ? 16 : 4;
  for (size_t i = 0; i < n; ++i) absl::StrAppendFormat(&out, "%02x", bytes_[i]);
  return out;
}

std::string VipPrefix::BirdStaticProtocol() const {
  return absl::StrCat("# ballast VIP ", ToString(), ": enabled and disabled by lbagent\n",
                      "protocol static ", ProtocolName(), " {\n  disabled yes;\n  ",
                      v6_ ? "ipv6" : "ipv4", ";\n  route ", ToString(), " blackhole;\n}\n");
}

}  // namespace ballast::bgp
