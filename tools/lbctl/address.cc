#include "tools/lbctl/address.h"

#include <arpa/inet.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ballast::lbctl {
namespace {

constexpr char kVipForm[] =
    "write ADDR:PORT/PROTO, e.g. 198.18.0.10:80/tcp, [2001:db8::10]:443/tcp, or "
    "198.18.0.10:0/udp for all ports";
constexpr char kBackendForm[] =
    "write ADDR or ADDR:WEIGHT, e.g. 198.18.1.10, 198.18.1.10:50, 2001:db8::1 or "
    "[2001:db8::1]:50";

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
  std::string s(text);
  char out[INET6_ADDRSTRLEN];
  unsigned char buf[16];
  if (s.find(':') == std::string::npos) {
    if (inet_pton(AF_INET, s.c_str(), buf) != 1) return std::nullopt;
    return std::string(inet_ntop(AF_INET, buf, out, sizeof(out)));
  }
  if (inet_pton(AF_INET6, s.c_str(), buf) != 1) return std::nullopt;
  return std::string(inet_ntop(AF_INET6, buf, out, sizeof(out)));
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
  size_t slash = text.rfind('/');
  if (slash == absl::string_view::npos) return Bad(text, "has no /PROTO", kVipForm);
  std::string proto = absl::AsciiStrToLower(text.substr(slash + 1));
  absl::string_view hostport = text.substr(0, slash);

  v1::VipKey key;
  if (proto == "tcp") {
    key.set_protocol(v1::TCP);
  } else if (proto == "udp") {
    key.set_protocol(v1::UDP);
  } else {
    return Bad(text, absl::StrCat("has protocol '", proto, "', not tcp or udp"), kVipForm);
  }

  absl::string_view host, port;
  if (!hostport.empty() && hostport.front() == '[') {
    size_t close = hostport.find(']');
    if (close == absl::string_view::npos) return Bad(text, "has '[' without ']'", kVipForm);
    host = hostport.substr(1, close - 1);
    absl::string_view rest = hostport.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return Bad(text, "has no :PORT", kVipForm);
    port = rest.substr(1);
  } else {
    size_t colon = hostport.rfind(':');
    if (colon == absl::string_view::npos) return Bad(text, "has no :PORT", kVipForm);
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
    if (host.find(':') != absl::string_view::npos) {
      return Bad(text, "has an IPv6 address without brackets", kVipForm);
    }
  }
  std::optional<std::string> addr = Canonical(host);
  if (host.empty() || !addr) {
    return Bad(text, absl::StrCat("has '", host, "', which is not an IPv4 or IPv6 address"),
               kVipForm);
  }
  if (hostport.front() == '[' && addr->find(':') == std::string::npos) {
    return Bad(text, "has an IPv4 address in brackets", kVipForm);
  }
  uint32_t p = 0;
  if (!AllDigits(port) || !absl::SimpleAtoi(port, &p) || p > 65535) {
    return Bad(text, absl::StrCat("has port '", port, "', not a number in 0..65535"), kVipForm);
  }
  key.set_address(*addr);
  key.set_port(p);
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
  absl::string_view host = text, weight;
  bool has_weight = false;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == absl::string_view::npos) return Bad(text, "has '[' without ']'", kBackendForm);
    host = text.substr(1, close - 1);
    absl::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return Bad(text, "has text after ']'", kBackendForm);
      weight = rest.substr(1);
      has_weight = true;
    }
  } else {
    size_t first = text.find(':');
    if (first != absl::string_view::npos && text.find(':', first + 1) == absl::string_view::npos) {
      // Exactly one colon: IPv4 with a weight.
      host = text.substr(0, first);
      weight = text.substr(first + 1);
      has_weight = true;
    }
    // Several colons: a bare IPv6 address without a weight.
  }
  std::optional<std::string> addr = Canonical(host);
  if (host.empty() || !addr) {
    return Bad(text, absl::StrCat("has '", host, "', which is not an IPv4 or IPv6 address"),
               kBackendForm);
  }
  if (!text.empty() && text.front() == '[' && addr->find(':') == std::string::npos) {
    return Bad(text, "has an IPv4 address in brackets", kBackendForm);
  }
  if (has_weight) {
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
