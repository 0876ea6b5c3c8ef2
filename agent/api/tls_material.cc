#include "agent/api/tls_material.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/base/openssl_ptr.h"

namespace ballast::api {

using base::BioPtr;
using base::CrlPtr;
using base::OpensslFree;
using base::PkeyPtr;
using base::X509Ptr;
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

BioPtr MemBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

X509Ptr FirstCert(const std::string& pem) {
  BioPtr bio = MemBio(pem);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

absl::Status CheckListenAddress(const std::string& addr) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("admin.tcp_listen: '", addr, "' ", why,
                                                   "; write it as 127.0.0.1:7443 or [::1]:7443"));
  };
  size_t colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("has no host:port form");
  std::string host = addr.substr(0, colon);
  if (host.find(':') != std::string::npos && (host.front() != '[' || host.back() != ']')) {
    return bad("is an IPv6 address without brackets");
  }
  uint32_t port = 0;
  if (!absl::SimpleAtoi(addr.substr(colon + 1), &port) || port > 65535) {
    return bad("has no valid port (0..65535)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TlsMaterial> LoadTlsMaterial(const v1::AdminAccess& admin) {
  if (absl::Status s = CheckListenAddress(admin.tcp_listen()); !s.ok()) return s;
  const struct {
    const std::string& value;
    const char* field;
  } required[] = {{admin.tls_cert(), "admin.tls_cert"},
                  {admin.tls_key(), "admin.tls_key"},
                  {admin.tls_client_ca(), "admin.tls_client_ca"}};
  for (const auto& r : required) {
    if (r.value.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "admin.tcp_listen is set but ", r.field,
          " is empty: the TCP admin listener only runs with mutual TLS (tls_cert, tls_key, "
          "tls_client_ca)"));
    }
  }
  if (admin.identities_size() == 0) {
    return absl::InvalidArgumentError(
        "admin.tcp_listen is set but admin.identities is empty: list the client certificate "
        "names (DNS/URI SAN, or the CN of a certificate without SAN) allowed to connect");
  }

  TlsMaterial m;
  absl::StatusOr<std::string> cert = ReadFile(admin.tls_cert(), "admin.tls_cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(admin.tls_key(), "admin.tls_key");
  if (!key.ok()) return key.status();
  absl::StatusOr<std::string> ca = ReadFile(admin.tls_client_ca(), "admin.tls_client_ca");
  if (!ca.ok()) return ca.status();
  m.cert_pem = std::move(*cert);
  m.key_pem = std::move(*key);
  m.client_ca_pem = std::move(*ca);

  X509Ptr x509 = FirstCert(m.cert_pem);
  if (x509 == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("admin.tls_cert: ", admin.tls_cert(), " contains no PEM certificate"));
  }
  BioPtr key_bio = MemBio(m.key_pem);
  PkeyPtr pkey(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (pkey == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("admin.tls_key: ", admin.tls_key(),
                                                   " contains no unencrypted PEM private key"));
  }
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("admin.tls_key: ", admin.tls_key(),
                                                   " does not match the certificate in "
                                                   "admin.tls_cert (",
                                                   admin.tls_cert(), ")"));
  }
  std::optional<std::string> crl_pem;
  if (!admin.tls_crl().empty()) {
    absl::StatusOr<std::string> crl = ReadFile(admin.tls_crl(), "admin.tls_crl");
    if (!crl.ok()) return crl.status();
    crl_pem = std::move(*crl);
  }
  absl::StatusOr<std::shared_ptr<const ClientVerifier>> verifier =
      ClientVerifier::Create(m.client_ca_pem, crl_pem, admin);
  if (!verifier.ok()) return verifier.status();
  m.verifier = std::move(*verifier);
  struct stat st;
  if (stat(admin.tls_key().c_str(), &st) == 0 && (st.st_mode & S_IROTH)) {
    m.warnings.push_back(absl::StrCat("admin.tls_key: ", admin.tls_key(),
                                      " is readable by every user; chmod 0600 it"));
  }
  return m;
}

}  // namespace ballast::api
