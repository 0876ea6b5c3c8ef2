// The TCP admin listener's TLS material, read and checked before the
// listener starts (and before a reload replaces it) so that a bad file is
// reported by field and path ("admin.tls_key: /etc/ballast/admin.key does
// not match the certificate in admin.tls_cert") instead of as a failed
// handshake later.
#ifndef BALLAST_AGENT_API_TLS_MATERIAL_H_
#define BALLAST_AGENT_API_TLS_MATERIAL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/api/client_verifier.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::api {

struct TlsMaterial {
  std::string cert_pem;               // server certificate chain
  std::string key_pem;                // server private key
  std::string client_ca_pem;          // CA(s) client certificates must chain to
  std::vector<std::string> warnings;  // e.g. key readable by everyone
  // Checks client certificates per call: client_ca_pem and admin.tls_crl.
  std::shared_ptr<const ClientVerifier> verifier;
};

// Requires admin.tcp_listen to be a "host:port" or "[v6]:port" address and
// tls_cert, tls_key, tls_client_ca and identities to be set. Checks that
// each file parses as PEM, that the key matches the certificate and, with
// admin.tls_crl, that the CRLs fit the client CA (client_verifier.h).
// INVALID_ARGUMENT naming the field otherwise.
absl::StatusOr<TlsMaterial> LoadTlsMaterial(const v1::AdminAccess& admin);

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_TLS_MATERIAL_H_
