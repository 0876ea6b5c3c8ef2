#include "tools/lbctl/address.h"

#include <netinet/in.h>

#include "agent/base/ip_address.h"
#include "agent/dataplane/vip_key.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ballast::lbctl {
namespace {

constexpr char kBackendForm[] =
    "write ADDR or ADDR,weight=N, e.g. 198.18.1.10, 198.18.1.10,weight=50, 2001:db8::1 or "
    "2001:db8::1,weight=50";

absl::Status Bad(absl::string_view text, absl::string_view why, absl::string_view form) {
  return absl::InvalidArgumentError(absl::StrCat("'", text, "' ", why, ": ", form));
}

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Canonical text of a bare IPv4 or IPv6 address, or nullopt.
std::optional<std::string> Canonical(absl::string_view text) {
  if (text.empty() || text.front() == '[') return std::nullopt;  // bare addresses only
  auto a = IpAddress::Parse(std::string_view(text.data(), text.size()));
  if (!a.ok()) return std::nullopt;
  return a->ToString();
}

}  // namespace

absl::StatusOr<std::string> ParseIp(absl::string_view text) {
  absl::string_view t = text;
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  std::optional<std::string> c = Canonical(t);
  if (!c) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not an IPv4 or IPv6 address (e.g. 198.18.1.10 or 2001:db8::1)"));
  }
  return *c;
}

absl::StatusOr<v1::VipKey> ParseVipKey(absl::string_view text) {
  auto k = dataplane::ParseVipKey(std::string_view(text.data(), text.size()));
  if (!k.ok()) return k.status();
  v1::VipKey key;
  key.set_address(k->addr.ToString());
  key.set_port(k->port);
  key.set_protocol(k->proto == IPPROTO_TCP ? v1::TCP : v1::UDP);
  return key;
}

std::string FormatVipKey(const v1::VipKey& key) {
  const bool v6 = key.address().find(':') != std::string::npos;
  absl::string_view proto = key.protocol() == v1::TCP   ? "tcp"
                            : key.protocol() == v1::UDP ? "udp"
                                                        : "?";
  return v6 ? absl::StrCat("[", key.address(), "]:", key.port(), "/", proto)
            : absl::StrCat(key.address(), ":", key.port(), "/", proto);
}

absl::StatusOr<BackendSpec> ParseBackendSpec(absl::string_view text) {
  BackendSpec spec;
  absl::string_view host = text, options;
  if (size_t comma = text.find(','); comma != absl::string_view::npos) {
    host = text.substr(0, comma);
    options = text.substr(comma + 1);
  }
  absl::string_view bare = host;
  if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  std::optional<std::string> addr = Canonical(bare);
  if (!addr) {
    // ADDR:N meant weight N until 0.1; everywhere else (ipvsadm, HAProxy,
    // Katran's tools) it is a port, and a backend here has no port.
    size_t colon = host.rfind(':');
    const bool v6_port = !host.empty() && host.front() == '[' && colon != absl::string_view::npos &&
                         colon > 0 && host[colon - 1] == ']';
    const bool v4_port = host.find(':') == colon && colon != absl::string_view::npos;
    if ((v4_port || v6_port) && AllDigits(host.substr(colon + 1))) {
      absl::string_view a = host.substr(0, colon);
      if (v6_port) a = a.substr(1, a.size() - 2);
      if (Canonical(a)) {
        const absl::string_view n = host.substr(colon + 1);
        return Bad(text,
                   absl::StrCat("has ':", n,
                                "', which reads as a port, and a backend has no port of its own "
                                "(it serves the VIP's); for weight ",
                                n, " write ", a, ",weight=", n,
                                " (earlier lbctl read ADDR:N as the weight)"),
                   kBackendForm);
      }
    }
    return Bad(text, absl::StrCat("has '", host, "', which is not an IPv4 or IPv6 address"),
               kBackendForm);
  }
  if (host.front() == '[' && addr->find(':') == std::string::npos) {
    return Bad(text, "has an IPv4 address in brackets", kBackendForm);
  }
  if (text.find(',') != absl::string_view::npos) {
    constexpr absl::string_view kWeight = "weight=";
    if (options.substr(0, kWeight.size()) != kWeight) {
      return Bad(text, absl::StrCat("has option '", options, "'; the only one is weight=N"),
                 kBackendForm);
    }
    absl::string_view weight = options.substr(kWeight.size());
    uint32_t w = 0;
    if (!AllDigits(weight) || !absl::SimpleAtoi(weight, &w)) {
      return Bad(text, absl::StrCat("has weight '", weight, "', not a whole number"), kBackendForm);
    }
    spec.weight = w;
  }
  spec.address = *addr;
  return spec;
}

}  // namespace ballast::lbctl
