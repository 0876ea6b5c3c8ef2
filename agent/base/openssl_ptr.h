// Owning pointers for OpenSSL objects: the admin API's certificates, keys
// and CRLs, and the probes' TLS sessions. Header-only.
#ifndef BALLAST_AGENT_BASE_OPENSSL_PTR_H_
#define BALLAST_AGENT_BASE_OPENSSL_PTR_H_

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <memory>

namespace ballast::base {

struct OpensslFree {
  void operator()(BIO* b) const { BIO_free(b); }
  void operator()(X509* x) const { X509_free(x); }
  void operator()(X509_CRL* c) const { X509_CRL_free(c); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
  void operator()(SSL* s) const { SSL_free(s); }
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using BioPtr = std::unique_ptr<BIO, OpensslFree>;
using X509Ptr = std::unique_ptr<X509, OpensslFree>;
using CrlPtr = std::unique_ptr<X509_CRL, OpensslFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpensslFree>;
using SslPtr = std::unique_ptr<SSL, OpensslFree>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpensslFree>;

}  // namespace ballast::base

#endif  // BALLAST_AGENT_BASE_OPENSSL_PTR_H_
