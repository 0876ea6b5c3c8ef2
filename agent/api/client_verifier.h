// Checks a TLS client's certificate on every call against the current
// admin.tls_client_ca and, when configured, admin.tls_crl.
//
// The TLS handshake already verified the chain against the CA that was
// current when the connection opened; checking again per call makes a
// reload (new CA, new CRL) apply to connections that are already open, and
// is where revocation is enforced.
//
// The CRL file holds one PEM CRL for each CA certificate in tls_client_ca
// (a client certificate whose issuer has no CRL could not be checked and
// would be refused). Each CRL must be signed by its CA and be current
// (nextUpdate in the future); a CRL that expires while loaded refuses every
// certificate of its CA until a fresh one is reloaded.
//
// Immutable after Create; Verify is safe from any thread.
#ifndef BALLAST_AGENT_API_CLIENT_VERIFIER_H_
#define BALLAST_AGENT_API_CLIENT_VERIFIER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ballast/v1/agent.pb.h"

struct x509_store_st;

namespace ballast::api {

class ClientVerifier {
 public:
  // ca_pem: the contents of admin.tls_client_ca (one or more certificates);
  // crl_pem: the contents of admin.tls_crl, nullopt for no revocation check.
  // Reads no file: `admin` only supplies the paths for messages.
  // INVALID_ARGUMENT naming admin.tls_client_ca or admin.tls_crl.
  static absl::StatusOr<std::shared_ptr<const ClientVerifier>> Create(
      const std::string& ca_pem, const std::optional<std::string>& crl_pem,
      const v1::AdminAccess& admin);

  ~ClientVerifier();
  ClientVerifier(const ClientVerifier&) = delete;
  ClientVerifier& operator=(const ClientVerifier&) = delete;

  // cert_pem: the client's certificate; chain_pem: the certificates the
  // client sent with it (may repeat the leaf, may be empty). OK, or
  // UNAUTHENTICATED saying which certificate and why (e.g. revoked).
  absl::Status Verify(absl::string_view cert_pem, absl::string_view chain_pem) const;

  int crl_count() const { return crl_count_; }
  int revoked_count() const { return revoked_count_; }

 private:
  ClientVerifier() = default;

  x509_store_st* store_ = nullptr;  // the CAs and CRLs; shared by concurrent calls
  int crl_count_ = 0;
  int revoked_count_ = 0;  // entries over all CRLs
};

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_CLIENT_VERIFIER_H_
