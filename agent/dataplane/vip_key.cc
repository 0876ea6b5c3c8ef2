#include <netinet/in.h>

#include <charconv>

#include "agent/base/strcat.h"
#include "agent/dataplane/vip_key.h"

namespace ballast::dataplane {
namespace {

using base::Cat;

std::string ProtoName(uint8_t proto) {
  if (proto == IPPROTO_TCP) return "tcp";
  if (proto == IPPROTO_UDP) return "udp";
  return Cat(proto);
}

}  // namespace

std::string VipKeyString(const VipKey& k) {
  const std::string addr = k.addr.is_v4() ? k.addr.ToString() : Cat("[", k.addr.ToString(), "]");
  return Cat(addr, ":", k.port, "/", ProtoName(k.proto));
}

absl::StatusOr<VipKey> ParseVipKey(std::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(Cat("VIP \"", text, "\": ", why,
                                          " (expected ADDR:PORT/PROTO, e.g. 198.18.0.10:80/tcp or "
                                          "[2001:db8::10]:443/udp; port 0 = every port)"));
  };
  const size_t slash = text.rfind('/');
  if (slash == std::string_view::npos) return bad("missing /tcp or /udp");
  const std::string_view proto = text.substr(slash + 1);
  VipKey k;
  if (proto == "tcp") {
    k.proto = IPPROTO_TCP;
  } else if (proto == "udp") {
    k.proto = IPPROTO_UDP;
  } else {
    return bad(Cat("protocol \"", proto, "\" is not tcp or udp"));
  }
  const std::string_view hostport = text.substr(0, slash);
  const size_t colon = hostport.rfind(':');
  if (colon == std::string_view::npos) return bad("missing :PORT");
  std::string_view host = hostport.substr(0, colon);
  const std::string_view port = hostport.substr(colon + 1);
  if (host.find(':') != std::string_view::npos &&
      (host.size() < 2 || host.front() != '[' || host.back() != ']')) {
    return bad("an IPv6 address must be written in brackets");
  }
  auto addr = IpAddress::Parse(host);
  if (!addr.ok()) return bad(addr.status().message());
  if (addr->is_unspecified()) return bad("the address is unspecified");
  k.addr = *addr;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return bad(Cat("port \"", port, "\" is not a number in 0..65535"));
  }
  k.port = static_cast<uint16_t>(value);
  return k;
}

}  // namespace ballast::dataplane
