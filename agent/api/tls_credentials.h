// The TCP admin listener's server credentials, whose certificate, key and
// client CA can be replaced while the server runs.
//
// gRPC 1.51's C++ SslServerCredentials are fixed at build time, so this uses
// the C core's certificate config fetcher
// (grpc_ssl_server_credentials_create_options_using_config_fetcher): gRPC
// asks it for the current material before each new handshake. After
// Update() returns, the next connection uses the new material; connections
// already open keep theirs (AccessPolicy re-checks their certificates per
// call against the new CA and CRL).
//
// Lifetime: gRPC keeps a pointer to this object; it must outlive the
// grpc::Server built with credentials(). Thread-safe.
#ifndef BALLAST_AGENT_API_TLS_CREDENTIALS_H_
#define BALLAST_AGENT_API_TLS_CREDENTIALS_H_

#include <grpc/grpc_security.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "agent/api/tls_material.h"

namespace grpc {
class ServerCredentials;
}

namespace ballast::api {

class ReloadableTlsCredentials {
 public:
  // `m` must have been checked by LoadTlsMaterial.
  explicit ReloadableTlsCredentials(const TlsMaterial& m);
  ReloadableTlsCredentials(const ReloadableTlsCredentials&) = delete;
  ReloadableTlsCredentials& operator=(const ReloadableTlsCredentials&) = delete;

  // Requires and verifies a client certificate. For one listening port.
  std::shared_ptr<grpc::ServerCredentials> credentials();

  // New handshakes use `m` from now on.
  void Update(const TlsMaterial& m);

 private:
  static grpc_ssl_certificate_config_reload_status Fetch(
      void* self, grpc_ssl_server_certificate_config** config);

  std::mutex mu_;
  std::string cert_pem_, key_pem_, client_ca_pem_;  // guarded by mu_
  uint64_t generation_ = 1;                         // guarded by mu_
  uint64_t fetched_ = 0;                            // the generation gRPC has; guarded by mu_
};

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_TLS_CREDENTIALS_H_
