#include "agent/api/client_verifier.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/base/openssl_ptr.h"

namespace ballast::api {

using base::BioPtr;
using base::CrlPtr;
using base::OpensslFree;
using base::PkeyPtr;
using base::X509Ptr;
namespace {

// Every PEM block of type T in `pem` (blocks of other types are skipped).
// False if a block of type T is damaged.
template <typename T, typename Free>
bool ReadAll(absl::string_view pem, T* (*read)(BIO*, T**, pem_password_cb*, void*),
             std::vector<std::unique_ptr<T, Free>>* out) {
  ERR_clear_error();
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (T* x = read(bio.get(), nullptr, nullptr, nullptr)) out->emplace_back(x);
  const unsigned long err = ERR_peek_last_error();
  ERR_clear_error();
  return err == 0 || ERR_GET_REASON(err) == PEM_R_NO_START_LINE;
}

std::string FromBio(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

std::string NameOf(const X509_NAME* name) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253);
  return FromBio(bio.get());
}

std::string TimeOf(const ASN1_TIME* t) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  ASN1_TIME_print(bio.get(), t);
  return FromBio(bio.get());
}

std::string SerialOf(const X509* x) {
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), nullptr);
  if (bn == nullptr) return "?";
  char* hex = BN_bn2hex(bn);
  std::string s = absl::StrCat("0x", hex != nullptr ? hex : "?");
  OPENSSL_free(hex);
  BN_free(bn);
  return s;
}

}  // namespace

ClientVerifier::~ClientVerifier() { X509_STORE_free(store_); }

absl::StatusOr<std::shared_ptr<const ClientVerifier>> ClientVerifier::Create(
    const std::string& ca_pem, const std::optional<std::string>& crl_pem,
    const v1::AdminAccess& admin) {
  auto bad_ca = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("admin.tls_client_ca: ", admin.tls_client_ca(), " ", why));
  };
  std::vector<X509Ptr> cas;
  if (!ReadAll(ca_pem, PEM_read_bio_X509, &cas)) return bad_ca("has a damaged PEM certificate");
  if (cas.empty()) return bad_ca("contains no PEM certificate");

  std::shared_ptr<ClientVerifier> v(new ClientVerifier());
  v->store_ = X509_STORE_new();
  if (v->store_ == nullptr) return absl::ResourceExhaustedError("X509_STORE_new failed");
  X509_STORE_set_purpose(v->store_, X509_PURPOSE_SSL_CLIENT);  // as the handshake checks
  for (const X509Ptr& ca : cas) {
    if (X509_STORE_add_cert(v->store_, ca.get()) != 1) {
      ERR_clear_error();
      return bad_ca(absl::StrCat("has a certificate that cannot be used as a CA ('",
                                 NameOf(X509_get_subject_name(ca.get())), "')"));
    }
  }
  if (!crl_pem.has_value()) return std::shared_ptr<const ClientVerifier>(std::move(v));

  auto bad_crl = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("admin.tls_crl: ", admin.tls_crl(), " ", why));
  };
  std::vector<CrlPtr> crls;
  if (!ReadAll(*crl_pem, PEM_read_bio_X509_CRL, &crls)) return bad_crl("has a damaged PEM CRL");
  if (crls.empty()) return bad_crl("contains no PEM CRL (-----BEGIN X509 CRL-----)");
  std::vector<bool> covered(cas.size(), false);
  for (const CrlPtr& crl : crls) {
    const std::string issuer = NameOf(X509_CRL_get_issuer(crl.get()));
    bool named = false;
    size_t signer = cas.size();
    for (size_t i = 0; i < cas.size() && signer == cas.size(); ++i) {
      if (X509_NAME_cmp(X509_CRL_get_issuer(crl.get()), X509_get_subject_name(cas[i].get())) != 0) {
        continue;
      }
      named = true;
      if (X509_CRL_verify(crl.get(), X509_get0_pubkey(cas[i].get())) == 1) signer = i;
    }
    ERR_clear_error();
    if (!named) {
      return bad_crl(absl::StrCat("has a CRL issued by '", issuer,
                                  "', which is not a CA in admin.tls_client_ca (",
                                  admin.tls_client_ca(), ")"));
    }
    if (signer == cas.size()) {
      return bad_crl(absl::StrCat("has a CRL of '", issuer,
                                  "' that is not signed by that CA's key in admin.tls_client_ca (",
                                  admin.tls_client_ca(), ")"));
    }
    if (covered[signer]) {
      return bad_crl(absl::StrCat("has two CRLs of '", issuer, "'; keep only the newest"));
    }
    covered[signer] = true;
    const ASN1_TIME* last = X509_CRL_get0_lastUpdate(crl.get());
    if (last == nullptr || X509_cmp_current_time(last) >= 0) {
      return bad_crl(absl::StrCat("has a CRL of '", issuer, "' that is not valid yet (lastUpdate ",
                                  last != nullptr ? TimeOf(last) : "missing", ")"));
    }
    const ASN1_TIME* next = X509_CRL_get0_nextUpdate(crl.get());
    if (next != nullptr && X509_cmp_current_time(next) <= 0) {
      return bad_crl(absl::StrCat("has a CRL of '", issuer, "' that expired at ", TimeOf(next),
                                  " (nextUpdate); publish a fresh one"));
    }
    if (X509_STORE_add_crl(v->store_, crl.get()) != 1) {
      ERR_clear_error();
      return bad_crl(absl::StrCat("has a CRL of '", issuer, "' that OpenSSL refuses to use"));
    }
    const STACK_OF(X509_REVOKED)* revoked = X509_CRL_get_REVOKED(crl.get());
    v->revoked_count_ += revoked != nullptr ? sk_X509_REVOKED_num(revoked) : 0;
    ++v->crl_count_;
  }
  for (size_t i = 0; i < cas.size(); ++i) {
    if (covered[i]) continue;
    return bad_crl(absl::StrCat("has no CRL of '", NameOf(X509_get_subject_name(cas[i].get())),
                                "', a CA in admin.tls_client_ca: the certificates it issued "
                                "could not be checked and would all be refused"));
  }
  X509_STORE_set_flags(v->store_, X509_V_FLAG_CRL_CHECK);  // the leaf's issuer's CRL
  return std::shared_ptr<const ClientVerifier>(std::move(v));
}

absl::Status ClientVerifier::Verify(absl::string_view cert_pem, absl::string_view chain_pem) const {
  std::vector<X509Ptr> leaf;
  std::vector<X509Ptr> chain;
  if (!ReadAll(cert_pem, PEM_read_bio_X509, &leaf) || leaf.empty()) {
    return absl::UnauthenticatedError("the client certificate could not be read for verification");
  }
  ReadAll(chain_pem, PEM_read_bio_X509, &chain);  // a damaged chain just fails to verify
  std::unique_ptr<STACK_OF(X509), OpensslFree> untrusted(sk_X509_new_null());
  std::unique_ptr<X509_STORE_CTX, OpensslFree> ctx(X509_STORE_CTX_new());
  if (untrusted == nullptr || ctx == nullptr) {
    return absl::ResourceExhaustedError("out of memory verifying a client certificate");
  }
  for (X509Ptr& c : chain) {
    if (sk_X509_push(untrusted.get(), c.get()) > 0) c.release();
  }
  X509* x = leaf.front().get();
  int verified = 0;
  if (X509_STORE_CTX_init(ctx.get(), store_, x, untrusted.get()) == 1) {
    verified = X509_verify_cert(ctx.get());
  }
  const int err = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  if (verified == 1) return absl::OkStatus();
  const std::string who = absl::StrCat("client certificate '", NameOf(X509_get_subject_name(x)),
                                       "' (serial ", SerialOf(x), ")");
  if (err == X509_V_ERR_CERT_REVOKED) {
    return absl::UnauthenticatedError(absl::StrCat(who, " is revoked by admin.tls_crl"));
  }
  return absl::UnauthenticatedError(absl::StrCat(
      who, " does not verify against admin.tls_client_ca",
      crl_count_ > 0 ? " and admin.tls_crl" : "", ": ", X509_verify_cert_error_string(err)));
}

}  // namespace ballast::api
