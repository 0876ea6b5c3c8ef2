#include "agent/core/validate.h"

#include <net/if.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "agent/core/health_settings.h"
#include "agent/core/flow_hash_seed.h"
#include "agent/core/quic_ids.h"
#include "agent/core/names.h"
#include "agent/dataplane/types.h"
#include "agent/base/ip_address.h"
#include "agent/base/ip_prefix.h"
#include "agent/maglev/maglev.h"
#include "agent/probes/spec.h"
#include "absl/strings/string_view.h"

namespace ballast::core {
namespace {

std::string Range(uint64_t lo, uint64_t hi) { return absl::StrCat(lo, "..", hi); }

}  // namespace

absl::Status CheckRange(uint64_t v, uint64_t lo, uint64_t hi, const FieldPath& at) {
  if (v < lo || v > hi) return at.Invalid(absl::StrCat(v, " is out of range ", Range(lo, hi)));
  return absl::OkStatus();
}

absl::Status CheckOptionalRange(uint64_t v, uint64_t lo, uint64_t hi, uint64_t def,
                                const FieldPath& at) {
  if (v == 0) return absl::OkStatus();
  if (v < lo || v > hi) {
    return at.Invalid(
        absl::StrCat(v, " is out of range ", Range(lo, hi), " (0 = default ", def, ")"));
  }
  return absl::OkStatus();
}

namespace {

bool Printable(absl::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) return false;
  }
  return true;
}

absl::Status CheckSource(absl::string_view text, bool want_v4, const FieldPath& at) {
  if (text.empty()) return absl::OkStatus();
  auto a = IpAddress::Parse(std::string(text));
  if (!a.ok()) {
    return at.Invalid(
        absl::StrCat("\"", text, "\" is not an ", want_v4 ? "IPv4" : "IPv6", " address"));
  }
  if (a->is_v4() != want_v4) {
    return at.Invalid(absl::StrCat(text, " is not an ", want_v4 ? "IPv4" : "IPv6", " address"));
  }
  if (a->is_unspecified() || a->is_multicast()) {
    return at.Invalid(absl::StrCat(text,
                                   " cannot be an outer source address (unspecified or "
                                   "multicast)"));
  }
  return absl::OkStatus();
}

// global.source_v4_prefix on its own: an IPv4 network of a length the data
// plane takes, none of whose addresses can be a source.
absl::Status CheckSourcePrefix(const v1::Global& g, const FieldPath& at) {
  if (g.source_v4_prefix().empty()) return absl::OkStatus();
  auto p = IpPrefix::Parse(g.source_v4_prefix(), /*strict=*/true);
  if (!p.ok()) return at.Invalid(p.status().message());
  const IpAddress& a = p->address();
  if (!a.is_v4() || p->length() < dataplane::kMinSrc4PrefixLength ||
      p->length() > dataplane::kMaxSrc4PrefixLength) {
    return at.Invalid(absl::StrCat(g.source_v4_prefix(), " is not an IPv4 prefix of length ",
                                   dataplane::kMinSrc4PrefixLength, "..",
                                   dataplane::kMaxSrc4PrefixLength));
  }
  if (a.bytes()[0] == 0 || a.is_loopback() || a.bytes()[0] >= 0xE0) {
    return at.Invalid(absl::StrCat(g.source_v4_prefix(),
                                   " cannot hold outer source addresses (this network, loopback, "
                                   "multicast or reserved)"));
  }
  if (g.source_v4().empty()) return at.Invalid("set, but source_v4 is not (probes use it)");
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckAbsolutePath(absl::string_view path, const FieldPath& at) {
  if (path.empty()) return absl::OkStatus();
  if (path.front() != '/')
    return at.Invalid(absl::StrCat("\"", path, "\" is not an absolute path"));
  if (!Printable(path)) return at.Invalid("contains control characters");
  return absl::OkStatus();
}

// ---- FieldPath ------------------------------------------------------------------

FieldPath FieldPath::Child(absl::string_view field) const {
  FieldPath out = *this;
  out.path_ = path_.empty() ? std::string(field) : absl::StrCat(path_, ".", field);
  return out;
}

FieldPath FieldPath::Element(absl::string_view field, size_t i, absl::string_view name) const {
  FieldPath out = *this;
  if (style_ == Style::kIndex) {
    out.path_ = absl::StrCat(path_, path_.empty() ? "" : ".", field, "[", i, "]");
  } else {
    out.entity_ = entity_.empty() ? std::string(name) : absl::StrCat(entity_, " ", name);
    out.path_.clear();
  }
  return out;
}

std::string FieldPath::Describe(absl::string_view problem) const {
  if (style_ == Style::kIndex || entity_.empty()) {
    return path_.empty() ? std::string(problem) : absl::StrCat(path_, ": ", problem);
  }
  return path_.empty() ? absl::StrCat(entity_, ": ", problem)
                       : absl::StrCat(entity_, ": ", path_, " ", problem);
}

absl::Status FieldPath::Invalid(absl::string_view problem) const {
  return absl::InvalidArgumentError(Describe(problem));
}

// ---- single values ----------------------------------------------------------------

absl::Status ValidateWeight(uint32_t weight, const FieldPath& at) {
  return CheckRange(weight, 0, kMaxWeight, at);
}

absl::Status ValidateTableSize(uint32_t m, const FieldPath& at) {
  if (m == 0) return absl::OkStatus();
  if (m < kMinTableSize || m > kMaxTableSize) {
    return at.Invalid(absl::StrCat(m, " is out of range ", Range(kMinTableSize, kMaxTableSize),
                                   " (a prime; 0 = default ", kDefaultTableSize, ")"));
  }
  if (!maglev::IsPrime(m)) {
    return at.Invalid(absl::StrCat(m, " is not a prime (allowed: a prime in ",
                                   Range(kMinTableSize, kMaxTableSize), "; 0 = default ",
                                   kDefaultTableSize, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateDrainDeadline(uint32_t deadline_s, const FieldPath& at) {
  if (deadline_s > 86400) {
    return at.Invalid(absl::StrCat(deadline_s, " is out of range ", Range(1, 86400),
                                   " (0 = the global drain_timeout_s)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateAddress(absl::string_view address, const FieldPath& at) {
  if (address.empty()) return at.Invalid("required (an IPv4 or IPv6 address)");
  auto a = IpAddress::Parse(std::string(address));
  if (!a.ok()) {
    return at.Invalid(absl::StrCat("\"", address,
                                   "\" is not an IPv4 or IPv6 address (e.g. 198.18.0.10 or "
                                   "2001:db8::10)"));
  }
  if (a->is_unspecified()) return at.Invalid(absl::StrCat(address, " is the unspecified address"));
  if (a->is_v4_mapped()) {
    const auto& b = a->bytes();
    return at.Invalid(absl::StrCat(address, " is an IPv4-mapped IPv6 address: write it as ",
                                   IpAddress::V4(&b[12]).ToString()));
  }
  if (a->is_v4() && a->bytes()[0] == 255 && a->bytes()[1] == 255 && a->bytes()[2] == 255 &&
      a->bytes()[3] == 255) {
    return at.Invalid(absl::StrCat(address, " is the broadcast address"));
  }
  if (a->is_multicast()) return at.Invalid(absl::StrCat(address, " is a multicast address"));
  if (a->is_loopback()) return at.Invalid(absl::StrCat(address, " is a loopback address"));
  return absl::OkStatus();
}

// ---- messages --------------------------------------------------------------------

absl::Status ValidateVipKey(const v1::VipKey& key, const FieldPath& at) {
  if (auto s = ValidateAddress(key.address(), at.Child("address")); !s.ok()) return s;
  if (auto s = CheckRange(key.port(), 0, 65535, at.Child("port")); !s.ok()) return s;
  if (key.protocol() != v1::TCP && key.protocol() != v1::UDP) {
    if (key.protocol() == v1::PROTOCOL_UNSPECIFIED) {
      return at.Child("protocol").Invalid("required (TCP or UDP)");
    }
    return at.Child("protocol")
        .Invalid(absl::StrCat(static_cast<int>(key.protocol()), " is not TCP (1) or UDP (2)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateProbe(const v1::ProbeSpec& p, const FieldPath& at) {
  if (!v1::ProbeSpec::Kind_IsValid(p.kind())) {
    return at.Child("kind").Invalid(absl::StrCat(static_cast<int>(p.kind()),
                                                 " is not a probe kind (TCP, HTTP, HTTPS, GRPC, "
                                                 "TLS)"));
  }
  if (auto s = CheckOptionalRange(p.interval_ms(), 50, 60000, 1000, at.Child("interval_ms"));
      !s.ok()) {
    return s;
  }
  const uint32_t interval = ProbeIntervalOf(p);
  if (p.timeout_ms() != 0 && (p.timeout_ms() < 10 || p.timeout_ms() > interval)) {
    return at.Child("timeout_ms")
        .Invalid(absl::StrCat(p.timeout_ms(), " is out of range ", Range(10, interval),
                              " (10..interval_ms; 0 = default 500)"));
  }
  if (p.jitter_ms() > interval / 2) {
    return at.Child("jitter_ms")
        .Invalid(absl::StrCat(p.jitter_ms(), " is out of range ", Range(0, interval / 2),
                              " (0..interval_ms/2)"));
  }
  const bool http = p.kind() == v1::ProbeSpec::HTTP || p.kind() == v1::ProbeSpec::HTTPS;
  if (!p.http_path().empty()) {
    if (!http) return at.Child("http_path").Invalid("is only used by HTTP and HTTPS probes");
    if (p.http_path().front() != '/' || p.http_path().size() > 2048 ||
        p.http_path().find_first_of(" \t\r\n") != std::string::npos || !Printable(p.http_path())) {
      return at.Child("http_path")
          .Invalid(absl::StrCat("\"", p.http_path(),
                                "\" must start with / and contain no spaces or control "
                                "characters (at most 2048 bytes)"));
    }
  }
  if (!p.http_host().empty()) {
    if (!http) return at.Child("http_host").Invalid("is only used by HTTP and HTTPS probes");
    if (p.http_host().size() > 255 ||
        p.http_host().find_first_of(" \t\r\n/") != std::string::npos || !Printable(p.http_host())) {
      return at.Child("http_host")
          .Invalid(absl::StrCat("\"", p.http_host(), "\" is not a host name (at most 255 bytes)"));
    }
  }
  for (int i = 0; i < p.http_status_size(); ++i) {
    if (!http) return at.Child("http_status").Invalid("is only used by HTTP and HTTPS probes");
    if (auto s =
            CheckRange(p.http_status(i), 100, 599, at.Child(absl::StrCat("http_status[", i, "]")));
        !s.ok()) {
      return s;
    }
  }
  if (p.body_contains().size() > 4096) {
    return at.Child("body_contains")
        .Invalid(absl::StrCat("is ", p.body_contains().size(), " bytes, at most 4096"));
  }
  if (p.kind() == v1::ProbeSpec::GRPC) {
    const std::string& m = p.grpc_method();
    const size_t slash = m.rfind('/');
    if (m.empty())
      return at.Child("grpc_method").Invalid("required for GRPC probes (\"/pkg.Service/Method\")");
    if (m.front() != '/' || slash == 0 || slash + 1 >= m.size() ||
        m.find_first_of(" \t\r\n") != std::string::npos) {
      return at.Child("grpc_method")
          .Invalid(absl::StrCat("\"", m, "\" is not of the form \"/pkg.Service/Method\""));
    }
  } else if (!p.grpc_method().empty()) {
    return at.Child("grpc_method").Invalid("is only used by GRPC probes");
  }
  if (auto s = CheckRange(p.port(), 0, 65535, at.Child("port")); !s.ok()) return s;
  // The kind-specific fields (regex, TLS files, gRPC descriptor set, request
  // and assertions), checked by the probes themselves.
  std::string where = at.Describe("");
  if (absl::EndsWith(where, ": ")) where.resize(where.size() - 2);
  return probes::ValidateProbeSpec(p, where);
}

absl::Status ValidateBackend(const v1::Backend& b, const v1::VipKey& vip, const FieldPath& at) {
  if (auto s = ValidateAddress(b.address(), at.Child("address")); !s.ok()) return s;
  if (auto s = ValidateWeight(b.weight(), at.Child("weight")); !s.ok()) return s;
  auto vip_addr = IpAddress::Parse(vip.address());
  auto addr = IpAddress::Parse(b.address());
  if (vip_addr.ok() && !vip_addr->is_v4() && addr->is_v4()) {
    return at.Child("address").Invalid(absl::StrCat(
        b.address(), " is IPv4 but VIP ", VipKeyText(vip),
        " is IPv6: the data plane cannot carry IPv6 in IPv4 (use an IPv6 backend address)"));
  }
  if (vip_addr.ok() && addr.ok() && *vip_addr == *addr) {
    return at.Child("address").Invalid(
        absl::StrCat(b.address(), " is the VIP's own address: a backend is another host"));
  }
  if (b.has_probe()) return ValidateProbe(b.probe(), at.Child("probe"));
  return absl::OkStatus();
}

absl::Status ValidateVip(const v1::Vip& vip, const FieldPath& at) {
  if (auto s = ValidateVipKey(vip.key(), at.Child("key")); !s.ok()) return s;
  if (auto s = ValidateTableSize(vip.table_size(), at.Child("table_size")); !s.ok()) return s;
  if (!v1::ForwardingMode_IsValid(vip.mode())) {
    return at.Child("mode").Invalid(
        absl::StrCat(static_cast<int>(vip.mode()), " is not a forwarding mode (ENCAP or GUE)"));
  }
  if (!v1::VipOwnership_IsValid(vip.ownership())) {
    return at.Child("ownership")
        .Invalid(absl::StrCat(static_cast<int>(vip.ownership()),
                              " is not an ownership (OWNERSHIP_NONE, ACTIVE_STANDBY)"));
  }
  if (auto s = ValidateQuicLb(vip, at); !s.ok()) return s;
  if (vip.name().size() > kMaxNameBytes || !Printable(vip.name())) {
    return at.Child("name").Invalid(
        absl::StrCat("must be at most ", kMaxNameBytes, " bytes without control characters"));
  }
  if (static_cast<uint32_t>(vip.backends_size()) > kMaxBackendsPerVip) {
    return at.Child("backends")
        .Invalid(absl::StrCat(vip.backends_size(), " backends; at most ", kMaxBackendsPerVip,
                              " per VIP"));
  }
  std::map<std::string, int> seen;
  uint32_t positive = 0;
  for (int i = 0; i < vip.backends_size(); ++i) {
    const v1::Backend& b = vip.backends(i);
    const FieldPath bat = at.Element("backends", i, absl::StrCat("backend ", b.address()));
    if (auto s = ValidateBackend(b, vip.key(), bat); !s.ok()) return s;
    const auto [it, inserted] = seen.emplace(CanonicalAddress(b.address()), i);
    if (!inserted) {
      return bat.Child("address").Invalid(
          absl::StrCat(b.address(), " is a duplicate of backends[", it->second, "]"));
    }
    if (b.weight() > 0) ++positive;
  }
  const uint32_t m = EffectiveTableSize(vip);
  if (positive > m) {
    return at.Child("backends")
        .Invalid(absl::StrCat(positive, " backends with a positive weight but the table has only ",
                              m,
                              " slots (table_size must be at least the number of such backends)"));
  }
  return absl::OkStatus();
}

absl::Status CheckDeviceName(const std::string& n, const FieldPath& at) {
  if (n.empty() || n.size() >= IF_NAMESIZE || n == "." || n == ".." ||
      n.find_first_of("/: \t\r\n") != std::string::npos || !Printable(n)) {
    return at.Invalid(absl::StrCat("\"", n, "\" is not a network device name (1..", IF_NAMESIZE - 1,
                                   " characters, no '/', ':' or spaces)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateGlobal(const v1::Global& g, const FieldPath& at) {
  if (!g.interface().empty()) {
    if (auto s = CheckDeviceName(g.interface(), at.Child("interface")); !s.ok()) return s;
  }
  constexpr int kMaxExtraInterfaces = 16;
  if (g.extra_interfaces_size() > kMaxExtraInterfaces) {
    return at.Child("extra_interfaces")
        .Invalid(
            absl::StrCat(g.extra_interfaces_size(), " devices; at most ", kMaxExtraInterfaces));
  }
  std::set<std::string> extra;
  for (int i = 0; i < g.extra_interfaces_size(); ++i) {
    const std::string& n = g.extra_interfaces(i);
    const FieldPath here = at.Child(absl::StrCat("extra_interfaces[", i, "]"));
    if (auto s = CheckDeviceName(n, here); !s.ok()) return s;
    if (g.interface().empty()) return here.Invalid("set, but interface is not");
    if (n == g.interface()) return here.Invalid(absl::StrCat("\"", n, "\" is the interface"));
    if (!extra.insert(n).second) return here.Invalid(absl::StrCat("\"", n, "\" is listed twice"));
  }
  // Like extra_interfaces: without an interface the agent attaches nothing.
  if (g.no_auto_bounce_interfaces() && g.interface().empty()) {
    return at.Child("no_auto_bounce_interfaces").Invalid("set, but interface is not");
  }
  if (auto s = CheckSource(g.source_v4(), true, at.Child("source_v4")); !s.ok()) return s;
  if (auto s = CheckSource(g.source_v6(), false, at.Child("source_v6")); !s.ok()) return s;
  if (auto s = CheckSourcePrefix(g, at.Child("source_v4_prefix")); !s.ok()) return s;
  const v1::Timeouts& t = g.timeouts();
  const FieldPath tat = at.Child("timeouts");
  if (auto s = CheckOptionalRange(t.tcp_idle_s(), 1, 86400, 300, tat.Child("tcp_idle_s"));
      !s.ok()) {
    return s;
  }
  if (auto s = CheckOptionalRange(t.udp_idle_s(), 1, 86400, 30, tat.Child("udp_idle_s")); !s.ok()) {
    return s;
  }
  if (auto s = CheckOptionalRange(t.linger_s(), 1, 600, 10, tat.Child("linger_s")); !s.ok()) {
    return s;
  }
  if (auto s = CheckOptionalRange(t.syn_idle_s(), 1, 600, 5, tat.Child("syn_idle_s")); !s.ok()) {
    return s;
  }
  if (auto s = CheckOptionalRange(t.syn_retry_ms(), 10, 60000, 200, tat.Child("syn_retry_ms"));
      !s.ok()) {
    return s;
  }
  if (const EffectiveTimeouts e = TimeoutsOf(g); e.syn_retry_ms >= uint64_t{e.syn_idle_s} * 1000) {
    return tat.Child("syn_retry_ms")
        .Invalid(absl::StrCat(e.syn_retry_ms, " ms is not below syn_idle_s (", e.syn_idle_s,
                              " s): a handshake is forgotten before its SYN could be retried"));
  }
  if (auto s =
          CheckOptionalRange(t.syn_reuse_idle_s(), 1, 86400, 60, tat.Child("syn_reuse_idle_s"));
      !s.ok()) {
    return s;
  }
  if (const EffectiveTimeouts e = TimeoutsOf(g); e.syn_reuse_idle_s > e.tcp_idle_s) {
    return tat.Child("syn_reuse_idle_s")
        .Invalid(absl::StrCat(e.syn_reuse_idle_s, " s is above tcp_idle_s (", e.tcp_idle_s,
                              " s): an established flow is forgotten before it is that idle"));
  }
  if (auto s =
          CheckOptionalRange(t.adopted_bounce_ms(), 100, 60000, dataplane::kDefaultAdoptedBounceMs,
                             tat.Child("adopted_bounce_ms"));
      !s.ok()) {
    return s;
  }
  if (auto s = CheckOptionalRange(g.drain_timeout_s(), 1, 86400, 300, at.Child("drain_timeout_s"));
      !s.ok()) {
    return s;
  }
  if (auto s =
          CheckOptionalRange(g.icmp_too_big_per_s(), 1, dataplane::kMaxIcmpTooBigPerS,
                             dataplane::kDefaultIcmpTooBigPerS, at.Child("icmp_too_big_per_s"));
      !s.ok()) {
    return s;
  }
  if (const IcmpTooBigLimit l = IcmpTooBigLimitOf(g); l.burst > l.per_s) {
    return at.Child("icmp_too_big_burst")
        .Invalid(absl::StrCat(l.burst, " is out of range 1..", l.per_s,
                              " (at most icmp_too_big_per_s; 0 = default ",
                              dataplane::kDefaultIcmpTooBigBurst, ")"));
  }
  if (auto s = CheckOptionalRange(g.gue_port(), 1, 65535, BALLAST_GUE_PORT_DEFAULT,
                                  at.Child("gue_port"));
      !s.ok()) {
    return s;
  }
  if (g.has_health()) return ValidateHealthSettings(g.health(), at.Child("health"));
  return absl::OkStatus();
}

namespace {

absl::Status CheckTotals(const v1::Config& config, const FieldPath& at) {
  if (static_cast<uint32_t>(config.vips_size()) > kMaxVips) {
    return at.Child("vips").Invalid(absl::StrCat(config.vips_size(), " VIPs; at most ", kMaxVips));
  }
  // The data plane's `vips` map holds one entry per VIP and one address
  // marker per VIP address (BALLAST_MAX_VIPS in all).
  std::set<std::string> addresses;
  for (const v1::Vip& vip : config.vips()) addresses.insert(CanonicalAddress(vip.key().address()));
  if (config.vips_size() + addresses.size() > BALLAST_MAX_VIPS) {
    return at.Child("vips").Invalid(
        absl::StrCat(config.vips_size(), " VIPs on ", addresses.size(), " addresses need ",
                     config.vips_size() + addresses.size(),
                     " entries of the data plane's VIP map; it holds ", BALLAST_MAX_VIPS,
                     " (one per VIP and one per VIP address): fewer VIPs, or more of them "
                     "on one address"));
  }
  uint64_t total = 0;
  for (const v1::Vip& vip : config.vips()) total += static_cast<uint64_t>(vip.backends_size());
  if (total > kMaxBackendsTotal) {
    return at.Child("vips").Invalid(
        absl::StrCat(total, " backends in total; at most ", kMaxBackendsTotal, " across all VIPs"));
  }
  uint64_t slots = 0;
  for (const v1::Vip& vip : config.vips()) slots += EffectiveTableSize(vip);
  if (slots > kMaxTotalTableSlots) {
    return at.Child("vips").Invalid(
        absl::StrCat(slots, " Maglev table slots in total (", slots * 4 / (1024 * 1024),
                     " MiB in the kernel); at most ", kMaxTotalTableSlots,
                     " across all VIPs: give some VIPs a smaller table_size"));
  }
  return absl::OkStatus();
}

// The outer source addresses the backends of `vips` need.
absl::Status CheckSources(const v1::Config& config, absl::Span<const v1::Vip* const> vips,
                          const FieldPath& at) {
  const bool have4 = !config.global().source_v4().empty();
  const bool have6 = !config.global().source_v6().empty();
  // Validated by then (ValidateGlobal): a prefix, or none.
  const auto prefix = config.global().source_v4_prefix().empty()
                          ? std::nullopt
                          : std::optional(*IpPrefix::Parse(config.global().source_v4_prefix()));
  auto in_prefix = [&](const std::string& text) {
    auto a = IpAddress::Parse(text);
    return prefix && a.ok() && prefix->Contains(*a);
  };
  if (have4 && have6 && !prefix) return absl::OkStatus();
  for (const v1::Vip* vip : vips) {
    if (in_prefix(vip->key().address())) {
      return at.Child("global")
          .Child("source_v4_prefix")
          .Invalid(absl::StrCat("holds the address of vip ", VipKeyText(vip->key()),
                                ": the router's outer sources "
                                "and its VIPs must not overlap"));
    }
    for (const v1::Backend& b : vip->backends()) {
      if (in_prefix(b.address())) {
        return at.Child("global")
            .Child("source_v4_prefix")
            .Invalid(absl::StrCat("holds backend ", b.address(), " of vip ", VipKeyText(vip->key()),
                                  ": a backend cannot be one of the router's outer sources"));
      }
      const bool v4 = b.address().find(':') == std::string::npos;
      if (v4 && !have4) {
        return at.Child("global")
            .Child("source_v4")
            .Invalid(absl::StrCat(
                "required: backend ", b.address(), " of vip ", VipKeyText(vip->key()),
                " is IPv4, and IPv4 encapsulation needs an outer source address of this router"));
      }
      if (!v4 && !have6) {
        return at.Child("global")
            .Child("source_v6")
            .Invalid(absl::StrCat(
                "required: backend ", b.address(), " of vip ", VipKeyText(vip->key()),
                " is IPv6, and IPv6 encapsulation needs an outer source address of this router"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateConfig(const v1::Config& config, const FieldPath& at) {
  if (auto s = ValidateGlobal(config.global(), at.Child("global")); !s.ok()) return s;
  if (static_cast<uint32_t>(config.vips_size()) > kMaxVips) {
    return at.Child("vips").Invalid(absl::StrCat(config.vips_size(), " VIPs; at most ", kMaxVips));
  }
  std::map<std::string, int> seen;
  std::vector<const v1::Vip*> all;
  for (int i = 0; i < config.vips_size(); ++i) {
    const v1::Vip& vip = config.vips(i);
    const FieldPath vat = at.Element("vips", i, absl::StrCat("vip ", VipKeyText(vip.key())));
    if (auto s = ValidateVip(vip, vat); !s.ok()) return s;
    const auto [it, inserted] = seen.emplace(VipKeyText(vip.key()), i);
    if (!inserted) {
      return vat.Child("key").Invalid(
          absl::StrCat(VipKeyText(vip.key()), " is a duplicate of vips[", it->second, "]"));
    }
    all.push_back(&vip);
  }
  if (auto s = CheckTotals(config, at); !s.ok()) return s;
  return CheckSources(config, all, at);
}

absl::Status ValidateVipChange(const v1::Config& config, int vip_index, const FieldPath& at) {
  if (auto s = CheckTotals(config, at); !s.ok()) return s;
  if (vip_index < 0) return absl::OkStatus();
  const v1::Vip& vip = config.vips(vip_index);
  const FieldPath vat = at.Element("vips", static_cast<size_t>(vip_index),
                                   absl::StrCat("vip ", VipKeyText(vip.key())));
  if (auto s = ValidateVip(vip, vat); !s.ok()) return s;
  const v1::Vip* one[] = {&vip};
  return CheckSources(config, one, at);
}

absl::Status ValidateState(const v1::State& state) {
  const FieldPath root = FieldPath::Index("config");
  if (auto s = ValidateConfig(state.config(), root); !s.ok()) return s;
  if (auto s = ValidateFlowHashSeed(state.flow_hash_seed()); !s.ok()) return s;
  if (auto s = ValidateQuicState(state); !s.ok()) return s;
  std::set<std::string> backends;
  for (const v1::Vip& vip : state.config().vips()) {
    for (const v1::Backend& b : vip.backends())
      backends.insert(BackendIdKey(vip.key(), b.address()));
  }
  std::set<std::string> seen;
  for (int i = 0; i < state.overrides_size(); ++i) {
    const v1::BackendOverride& o = state.overrides(i);
    const std::string key = BackendIdKey(o.vip(), o.address());
    const FieldPath at = FieldPath::Index(absl::StrCat("overrides[", i, "]"));
    if (backends.count(key) == 0) {
      return at.Invalid(absl::StrCat("names ", key.substr(8), ", which is not in the config"));
    }
    if (!seen.insert(key).second)
      return at.Invalid(absl::StrCat("duplicate override of ", key.substr(8)));
    if (o.drain_deadline_unix_ms() < 0) {
      return at.Child("drain_deadline_unix_ms").Invalid("is negative");
    }
  }
  std::map<uint32_t, std::string> vip_ids;
  std::map<uint32_t, std::string> backend_ids;
  for (const auto& [key, id] : state.ids()) {
    const FieldPath at = FieldPath::Index(absl::StrCat("ids[\"", key, "\"]"));
    if (key.rfind("vip ", 0) == 0) {
      if (auto s = CheckRange(id, 1, kMaxVips, at); !s.ok()) return s;
      if (auto [it, ok] = vip_ids.emplace(id, key); !ok) {
        return at.Invalid(absl::StrCat("id ", id, " is also used by \"", it->second, "\""));
      }
    } else if (key.rfind("backend ", 0) == 0) {
      if (auto s = CheckRange(id, 1, kMaxBackendsTotal, at); !s.ok()) return s;
      if (auto [it, ok] = backend_ids.emplace(id, key); !ok) {
        return at.Invalid(absl::StrCat("id ", id, " is also used by \"", it->second, "\""));
      }
    } else if (key == "next vip") {
      if (auto s = CheckRange(id, 1, kMaxVips, at); !s.ok()) return s;
    } else if (key == "next backend") {
      if (auto s = CheckRange(id, 1, kMaxBackendsTotal, at); !s.ok()) return s;
    } else {
      return at.Invalid("unknown id key (expected \"vip ...\" or \"backend ...\")");
    }
  }
  for (const v1::Vip& vip : state.config().vips()) {
    if (state.ids().count(VipIdKey(vip.key())) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("ids: no id for ", VipIdKey(vip.key())));
    }
    for (const v1::Backend& b : vip.backends()) {
      if (state.ids().count(BackendIdKey(vip.key(), b.address())) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("ids: no id for ", BackendIdKey(vip.key(), b.address())));
      }
    }
  }
  return absl::OkStatus();
}

v1::Config CanonicalConfig(const v1::Config& config) {
  v1::Config out = config;
  if (!out.global().source_v4().empty()) {
    out.mutable_global()->set_source_v4(CanonicalAddress(out.global().source_v4()));
  }
  if (!out.global().source_v6().empty()) {
    out.mutable_global()->set_source_v6(CanonicalAddress(out.global().source_v6()));
  }
  if (auto p = IpPrefix::Parse(out.global().source_v4_prefix()); p.ok()) {
    out.mutable_global()->set_source_v4_prefix(p->ToString());
  }
  for (v1::Vip& vip : *out.mutable_vips()) {
    vip.mutable_key()->set_address(CanonicalAddress(vip.key().address()));
    for (v1::Backend& b : *vip.mutable_backends()) b.set_address(CanonicalAddress(b.address()));
  }
  return out;
}

}  // namespace ballast::core
