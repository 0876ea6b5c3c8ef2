#include "agent/probes/tls_client.h"

#include <poll.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "agent/base/strcat.h"
#include "agent/probes/socket.h"

namespace ballast::probes {

using base::Cat;

std::string SslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "handshake failed" : out;
}

absl::StatusOr<SslCtxPtr> MakeClientContext(const v1::ProbeSpec& spec, bool alpn_h2) {
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return absl::InternalError(Cat("creating the TLS context: ", SslErrors()));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (spec.tls_insecure()) {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    const int ok = spec.tls_ca_file().empty() ? SSL_CTX_set_default_verify_paths(ctx.get())
                                              : SSL_CTX_load_verify_locations(
                                                    ctx.get(), spec.tls_ca_file().c_str(), nullptr);
    if (ok != 1) {
      return absl::InvalidArgumentError(
          Cat("loading CA certificates ",
              spec.tls_ca_file().empty() ? std::string("(system default)") : spec.tls_ca_file(),
              ": ", SslErrors()));
    }
  }
  if (!spec.tls_cert_file().empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), spec.tls_cert_file().c_str()) != 1) {
      return absl::InvalidArgumentError(
          Cat("loading the client certificate ", spec.tls_cert_file(), ": ", SslErrors()));
    }
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), spec.tls_key_file().c_str(), SSL_FILETYPE_PEM) !=
            1 ||
        SSL_CTX_check_private_key(ctx.get()) != 1) {
      return absl::InvalidArgumentError(
          Cat("loading the client key ", spec.tls_key_file(), ": ", SslErrors()));
    }
  }
  if (alpn_h2) {
    static const unsigned char kH2[] = {2, 'h', '2'};
    SSL_CTX_set_alpn_protos(ctx.get(), kH2, sizeof(kH2));
  }
  return ctx;
}

absl::StatusOr<SslPtr> TlsHandshake(SSL_CTX* ctx, int fd, const std::string& server_name,
                                    bool insecure, const Endpoint& ep, Clock::time_point start,
                                    Clock::time_point deadline) {
  ERR_clear_error();
  SslPtr ssl(SSL_new(ctx));
  if (!ssl) return absl::InternalError(SslErrors());
  SSL_set_fd(ssl.get(), fd);
  if (!server_name.empty()) {
    SSL_set_tlsext_host_name(ssl.get(), server_name.c_str());
    if (!insecure) SSL_set1_host(ssl.get(), server_name.c_str());
  } else if (!insecure) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), ep.address.ToString().c_str());
  }
  for (;;) {
    const int rc = SSL_connect(ssl.get());
    if (rc == 1) return ssl;
    const int err = SSL_get_error(ssl.get(), rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      if (!WaitFd(fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline).ok()) {
        return absl::DeadlineExceededError(
            Cat("no complete handshake within ",
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(),
                " ms"));
      }
      continue;
    }
    const long verify = SSL_get_verify_result(ssl.get());
    if (verify != X509_V_OK) {
      return absl::UnavailableError(
          Cat("certificate verify failed: ", X509_verify_cert_error_string(verify)));
    }
    if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN) {
      return absl::UnavailableError("connection closed by the peer during the handshake");
    }
    return absl::UnavailableError(SslErrors());
  }
}

}  // namespace ballast::probes
