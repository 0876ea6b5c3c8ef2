#include <netinet/in.h>

#include <cctype>
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
  const auto bad = [text](std::string_view why) {
    return absl::InvalidArgumentError(
        Cat("'", text, "' ", why,
            ": write ADDR:PORT/PROTO, e.g. 198.18.0.10:80/tcp, [2001:db8::10]:443/tcp, or "
            "198.18.0.10:0/udp for all ports"));
  };
  const size_t slash = text.rfind('/');
  if (slash == std::string_view::npos) return bad("has no /PROTO");
  std::string proto(text.substr(slash + 1));
  for (char& c : proto) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  VipKey k;
  if (proto == "tcp") {
    k.proto = IPPROTO_TCP;
  } else if (proto == "udp") {
    k.proto = IPPROTO_UDP;
  } else {
    return bad(Cat("has protocol '", proto, "', not tcp or udp"));
  }
  const std::string_view hostport = text.substr(0, slash);
  std::string_view host, port;
  const bool bracketed = !hostport.empty() && hostport.front() == '[';
  if (bracketed) {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) return bad("has '[' without ']'");
    host = hostport.substr(1, close - 1);
    const std::string_view rest = hostport.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return bad("has no :PORT");
    port = rest.substr(1);
  } else {
    const size_t colon = hostport.rfind(':');
    if (colon == std::string_view::npos) return bad("has no :PORT");
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return bad("has an IPv6 address without brackets");
    }
  }
  auto addr = host.empty() ? absl::InvalidArgumentError("empty") : IpAddress::Parse(host);
  if (!addr.ok()) return bad(Cat("has '", host, "', which is not an IPv4 or IPv6 address"));
  if (bracketed && addr->is_v4()) return bad("has an IPv4 address in brackets");
  if (addr->is_unspecified()) return bad(Cat("has the unspecified address ", addr->ToString()));
  k.addr = *addr;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return bad(Cat("has port '", port, "', not a number in 0..65535"));
  }
  k.port = static_cast<uint16_t>(value);
  return k;
}

}  // namespace ballast::dataplane
