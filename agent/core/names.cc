#include "agent/core/names.h"

#include <netinet/in.h>

#include "absl/strings/str_cat.h"
#include "agent/base/ip_address.h"
#include "absl/strings/string_view.h"

namespace ballast::core {
namespace {

// IPPROTO_TCP or IPPROTO_UDP; -1 for any other protocol.
int IpProtocolOf(v1::Protocol p) {
  switch (p) {
    case v1::TCP:
      return IPPROTO_TCP;
    case v1::UDP:
      return IPPROTO_UDP;
    default:
      return -1;
  }
}

}  // namespace

std::string ProtocolName(v1::Protocol p) {
  switch (p) {
    case v1::TCP:
      return "tcp";
    case v1::UDP:
      return "udp";
    default:
      return absl::StrCat("proto", static_cast<int>(p));
  }
}

std::string CanonicalAddress(absl::string_view text) {
  auto a = IpAddress::Parse(std::string(text));
  if (!a.ok()) return std::string(text);
  // Dotted-quad text that parses is already canonical (inet_pton rejects
  // leading zeros and other spellings); skip the formatting.
  if (a->is_v4() && text.find_first_not_of("0123456789.") == absl::string_view::npos) {
    return std::string(text);
  }
  return a->ToString();
}

std::string VipKeyText(const v1::VipKey& key) {
  std::string addr = CanonicalAddress(key.address());
  if (addr.find(':') != std::string::npos) addr = absl::StrCat("[", addr, "]");
  return absl::StrCat(addr, ":", key.port(), "/", ProtocolName(key.protocol()));
}

absl::StatusOr<v1::VipKey> ParseVipKeyText(absl::string_view text) {
  auto k = dataplane::ParseVipKey(std::string(text));
  if (!k.ok()) return k.status();
  v1::VipKey out;
  out.set_address(k->addr.ToString());
  out.set_port(k->port);
  out.set_protocol(k->proto == IPPROTO_TCP ? v1::TCP : v1::UDP);
  return out;
}

absl::StatusOr<dataplane::VipKey> ToDataplaneKey(const v1::VipKey& key) {
  auto addr = IpAddress::Parse(key.address());
  if (!addr.ok()) return addr.status();
  if (key.port() > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("VIP ", VipKeyText(key), ": port ", key.port(), " is out of range 0..65535"));
  }
  const int proto = IpProtocolOf(key.protocol());
  if (proto < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("VIP ", VipKeyText(key), ": protocol must be TCP or UDP"));
  }
  dataplane::VipKey out;
  out.addr = *addr;
  out.port = static_cast<uint16_t>(key.port());
  out.proto = static_cast<uint8_t>(proto);
  return out;
}

bool SameVip(const v1::VipKey& stored, const dataplane::VipKey& key) {
  if (stored.port() != key.port || IpProtocolOf(stored.protocol()) != key.proto) return false;
  auto addr = IpAddress::Parse(stored.address());
  return addr.ok() && *addr == key.addr;
}

v1::VipKey CanonicalVipKey(const v1::VipKey& key) {
  v1::VipKey out = key;
  out.set_address(CanonicalAddress(key.address()));
  return out;
}

std::string VipIdKey(const v1::VipKey& key) { return absl::StrCat("vip ", VipKeyText(key)); }

std::string BackendIdKey(const v1::VipKey& vip, absl::string_view address) {
  return absl::StrCat("backend ", VipKeyText(vip), " ", CanonicalAddress(address));
}

}  // namespace ballast::core
