#include "agent/etcd/endpoint.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/base/ip_address.h"

namespace ballast::etcd {
namespace {

// "host:port" -> host (brackets of an IPv6 literal removed).
std::string HostOf(absl::string_view host_port) {
  absl::string_view h = host_port.substr(0, host_port.rfind(':'));
  if (absl::ConsumePrefix(&h, "[")) absl::ConsumeSuffix(&h, "]");
  return std::string(h);
}

}  // namespace

bool IsLoopbackHost(absl::string_view host) {
  absl::ConsumePrefix(&host, "[");
  absl::ConsumeSuffix(&host, "]");
  if (absl::EqualsIgnoreCase(host, "localhost")) return true;
  auto a = IpAddress::Parse(std::string_view(host.data(), host.size()));
  return a.ok() && a->is_loopback();
}

absl::StatusOr<EndpointTarget> ParseEndpoint(absl::string_view url, const TlsOptions& tls) {
  absl::string_view rest = url;
  EndpointTarget out;
  if (absl::ConsumePrefix(&rest, "https://")) {
    out.tls = true;
  } else if (absl::ConsumePrefix(&rest, "http://")) {
    out.tls = false;
  } else {
    out.tls = !tls.ca_file.empty();
  }
  while (absl::ConsumeSuffix(&rest, "/")) {
  }
  const size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 || colon + 1 == rest.size() ||
      rest.find_first_not_of("0123456789", colon + 1) != absl::string_view::npos ||
      rest.find_first_of("/ \t\r\n") != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", url,
        "\" is not an etcd endpoint (https://HOST:PORT, http://HOST:PORT or HOST:PORT)"));
  }
  out.host_port = std::string(rest);
  if (!out.tls && !tls.allow_plaintext_remote && !IsLoopbackHost(HostOf(out.host_port))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd endpoint \"", url,
        "\": plaintext to a host that is not loopback; anyone on the path could rewrite the "
        "cluster's state. Use https:// with a CA (etcd_ca_file), or allow it explicitly "
        "(etcd_allow_plaintext_remote) on a trusted network"));
  }
  return out;
}

}  // namespace ballast::etcd
