// Where and how the etcd client reaches a member: endpoint URLs, TLS options
// and the plaintext rule. Pure (no I/O): the agent's config validation uses
// it too.
//
// An endpoint is "https://host:port" (TLS), "http://host:port" (plaintext)
// or "host:port" (TLS when a CA file is configured, else plaintext).
// Plaintext is refused for a host that is not loopback (127.0.0.0/8, ::1,
// "localhost") unless TlsOptions::allow_plaintext_remote says so: anyone on
// the path of a plaintext connection can read and rewrite the cluster's
// state. TLS verifies the member's certificate against `ca_file` (the
// system's roots when empty) and the endpoint's host name, or `server_name`
// when set; `cert_file`/`key_file` are the client's certificate for etcd's
// --client-cert-auth (whose CN etcd takes as the user name when no password
// is configured).
#ifndef BALLAST_AGENT_ETCD_ENDPOINT_H_
#define BALLAST_AGENT_ETCD_ENDPOINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ballast::etcd {

struct TlsOptions {
  std::string ca_file;      // PEM bundle the members' certificates chain to
  std::string cert_file;    // client certificate (PEM); with key_file
  std::string key_file;     // its private key (PEM)
  std::string server_name;  // name checked in the members' certificates
  bool allow_plaintext_remote = false;
};

struct EndpointTarget {
  std::string host_port;  // "host:port", as gRPC's target and in errors
  bool tls = false;
};

// Parses one endpoint URL under the rules above (a numeric port, no path);
// the error quotes the URL.
absl::StatusOr<EndpointTarget> ParseEndpoint(absl::string_view url, const TlsOptions& tls);

// True for 127.0.0.0/8, ::1 and "localhost" ("[::1]" brackets allowed).
bool IsLoopbackHost(absl::string_view host);

}  // namespace ballast::etcd

#endif  // BALLAST_AGENT_ETCD_ENDPOINT_H_
