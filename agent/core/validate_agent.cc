// lbagent's own config (AgentConfig, agent/core/agent_config.h): its
// listeners, paths, limits, and the sections it hands on (initial,
// cluster). Split from validate.cc, which validates the declarative config.
#include <net/if.h>

#include <charconv>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/base/ip_address.h"
#include "agent/core/validate.h"
#include "ballast_abi.h"

namespace ballast::core {

absl::Status ValidateLoopbackListen(absl::string_view listen, const FieldPath& at) {
  const size_t colon = listen.rfind(':');
  if (colon == absl::string_view::npos) {
    return at.Invalid(absl::StrCat("\"", listen, "\" is not HOST:PORT (e.g. 127.0.0.1:9580)"));
  }
  absl::string_view host = listen.substr(0, colon);
  const absl::string_view port = listen.substr(colon + 1);
  unsigned p = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p == 0 ||
      p > 65535) {
    return at.Invalid(absl::StrCat("port \"", port, "\" is not a number in 1..65535"));
  }
  if (host == "localhost") return absl::OkStatus();
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != absl::string_view::npos) {
    return at.Invalid("an IPv6 host must be written in brackets, e.g. [::1]:9580");
  }
  auto a = IpAddress::Parse(std::string(host));
  if (!a.ok()) return at.Invalid(absl::StrCat("\"", host, "\" is not an IP address"));
  if (!a->is_loopback()) {
    return at.Invalid(absl::StrCat(listen,
                                   " is not a loopback address (127.0.0.0/8 or [::1]); "
                                   "metrics are served on loopback only"));
  }
  return absl::OkStatus();
}

absl::Status ValidateAgentConfig(const v1::AgentConfig& c) {
  const FieldPath root = FieldPath::Index();
  if (!c.flow_hash_seed_file().empty()) {
    if (c.has_cluster()) {
      return root.Child("flow_hash_seed_file")
          .Invalid("not with cluster: a cluster's flow hash seed is in its replicated state");
    }
    if (auto s = CheckAbsolutePath(c.flow_hash_seed_file(), root.Child("flow_hash_seed_file"));
        !s.ok()) {
      return s;
    }
  }
  const v1::AdminAccess& a = c.admin();
  const FieldPath admin = root.Child("admin");
  if (auto s = CheckAbsolutePath(a.socket_path(), admin.Child("socket_path")); !s.ok()) return s;
  if (!a.socket_group().empty() &&
      (a.socket_group().size() > 32 ||
       a.socket_group().find_first_of(" :/\t\r\n") != std::string::npos)) {
    return admin.Child("socket_group")
        .Invalid(absl::StrCat("\"", a.socket_group(), "\" is not a group name"));
  }
  if (!a.tcp_listen().empty()) {
    if (a.tcp_listen().rfind(':') == std::string::npos) {
      return admin.Child("tcp_listen")
          .Invalid(absl::StrCat("\"", a.tcp_listen(), "\" is not HOST:PORT"));
    }
    if (a.tls_cert().empty())
      return admin.Child("tls_cert").Invalid("required with tcp_listen (mutual TLS only)");
    if (a.tls_key().empty())
      return admin.Child("tls_key").Invalid("required with tcp_listen (mutual TLS only)");
    if (a.tls_client_ca().empty()) {
      return admin.Child("tls_client_ca").Invalid("required with tcp_listen (mutual TLS only)");
    }
    if (a.identities_size() == 0) {
      return admin.Child("identities")
          .Invalid("required with tcp_listen: the allow-list of client identities");
    }
  }
  for (int i = 0; i < a.identities_size(); ++i) {
    if (a.identities(i).name().empty()) {
      return admin.Child(absl::StrCat("identities[", i, "]")).Child("name").Invalid("required");
    }
  }
  for (const auto& [field, path] :
       {std::pair{"tls_cert", &a.tls_cert()}, std::pair{"tls_key", &a.tls_key()},
        std::pair{"tls_client_ca", &a.tls_client_ca()}, std::pair{"tls_crl", &a.tls_crl()}}) {
    if (auto s = CheckAbsolutePath(*path, admin.Child(field)); !s.ok()) return s;
  }
  if (!c.metrics_listen().empty()) {
    if (auto s = ValidateLoopbackListen(c.metrics_listen(), root.Child("metrics_listen"));
        !s.ok()) {
      return s;
    }
  }
  if (auto s = CheckAbsolutePath(c.state_file(), root.Child("state_file")); !s.ok()) return s;
  if (auto s = CheckAbsolutePath(c.pin_dir(), root.Child("pin_dir")); !s.ok()) return s;
  if (auto s = CheckAbsolutePath(c.audit_log(), root.Child("audit_log")); !s.ok()) return s;
  const std::string& m = c.attach_mode();
  if (!m.empty() && m != "native" && m != "generic" && m != "auto") {
    return root.Child("attach_mode")
        .Invalid(absl::StrCat("\"", m, "\" is not native, generic or auto"));
  }
  if (auto s = CheckOptionalRange(c.flow_capacity(), 1024, 1u << 26, BALLAST_DEFAULT_FLOWS,
                                  root.Child("flow_capacity"));
      !s.ok()) {
    return s;
  }
  if (auto s = CheckOptionalRange(c.audit_retention_days(), 1, 3650, 90,
                                  root.Child("audit_retention_days"));
      !s.ok()) {
    return s;
  }
  if (auto s = CheckOptionalRange(c.audit_max_mb(), 1, 4096, 64, root.Child("audit_max_mb"));
      !s.ok()) {
    return s;
  }
  if (c.has_cluster()) {
    if (auto s = ValidateCluster(c.cluster(), root.Child("cluster")); !s.ok()) return s;
  }
  if (c.has_bgp()) {
    const v1::Bgp& b = c.bgp();
    const FieldPath at = root.Child("bgp");
    if (b.bird_socket().empty()) {
      return at.Child("bird_socket")
          .Invalid("BIRD's control socket is required with bgp { } (e.g. \"/run/bird/bird.ctl\")");
    }
    if (auto s = CheckAbsolutePath(b.bird_socket(), at.Child("bird_socket")); !s.ok()) return s;
    if (b.interval_ms() != 0) {
      if (auto s = CheckRange(b.interval_ms(), 50, 10000, at.Child("interval_ms")); !s.ok())
        return s;
    }
    if (b.bird_timeout_ms() != 0) {
      if (auto s = CheckRange(b.bird_timeout_ms(), 100, 30000, at.Child("bird_timeout_ms"));
          !s.ok()) {
        return s;
      }
    }
    if (auto s = CheckAbsolutePath(b.hold_file(), at.Child("hold_file")); !s.ok()) return s;
    if (auto s = CheckOptionalRange(b.withdraw_grace_ms(), kMinWithdrawGraceMs, kMaxWithdrawGraceMs,
                                    kDefaultWithdrawGraceMs, at.Child("withdraw_grace_ms"));
        !s.ok()) {
      return s;
    }
  }
  if (c.has_probe_forwarding()) {
    const v1::ProbeForwarding& f = c.probe_forwarding();
    const FieldPath at = root.Child("probe_forwarding");
    if (f.device().empty() || f.device().size() >= IF_NAMESIZE ||
        f.device().find_first_of("/: \t\r\n") != std::string::npos) {
      return at.Child("device").Invalid(absl::StrCat("\"", f.device(),
                                                     "\" is not a network device name (1..",
                                                     IF_NAMESIZE - 1, " characters)"));
    }
    const std::pair<const std::string*, bool> gws[] = {{&f.gateway4(), true},
                                                       {&f.gateway6(), false}};
    for (const auto& [gw, v4] : gws) {
      if (gw->empty()) continue;
      const FieldPath g = at.Child(v4 ? "gateway4" : "gateway6");
      auto a = IpAddress::Parse(*gw);
      if (!a.ok() || a->is_v4() != v4) {
        return g.Invalid(absl::StrCat("\"", *gw, "\" is not an IPv", v4 ? "4" : "6", " address"));
      }
    }
  }
  return ValidateConfig(c.initial(), root.Child("initial"));
}

}  // namespace ballast::core
