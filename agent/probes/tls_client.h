// Client-side TLS for the TLS and gRPC probes (OpenSSL): a context built
// from a probe spec (tls_ca_file or the system CAs, or no verification with
// tls_insecure; a client certificate with tls_cert_file/tls_key_file), and a
// handshake on a connected non-blocking socket against a deadline.
// Thread-safe: a context is configured once; SSL_new on it is thread-safe.
#ifndef BALLAST_AGENT_PROBES_TLS_CLIENT_H_
#define BALLAST_AGENT_PROBES_TLS_CLIENT_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/base/openssl_ptr.h"
#include "agent/probes/probe.h"
#include "ballast/v1/config.pb.h"

namespace ballast::probes {

using base::SslCtxPtr;
using base::SslPtr;

// OpenSSL's queued errors, joined ("handshake failed" when none).
std::string SslErrors();

// The context for `spec`; `alpn_h2` offers ALPN "h2" (gRPC). Errors name
// the file that cannot be loaded.
absl::StatusOr<SslCtxPtr> MakeClientContext(const v1::ProbeSpec& spec, bool alpn_h2);

// Handshakes on the connected non-blocking `fd` by `deadline`, sending SNI
// and checking `server_name` when set, else the endpoint's address (unless
// `insecure`). The error says why: "certificate verify failed: ...",
// "no complete handshake within N ms", "connection closed by the peer ...".
absl::StatusOr<SslPtr> TlsHandshake(SSL_CTX* ctx, int fd, const std::string& server_name,
                                    bool insecure, const Endpoint& ep, Clock::time_point start,
                                    Clock::time_point deadline);

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_TLS_CLIENT_H_
