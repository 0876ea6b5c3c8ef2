// TLS handshake probe (OpenSSL): connect, handshake with SNI, verify the
// chain against the CA file (or the system CAs) and the name, then close.
#include <poll.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "agent/dataplane/strcat.h"
#include "agent/probes/probers.h"
#include "agent/probes/socket.h"
#include "agent/probes/spec.h"

namespace ballast::probes {
namespace {

using dataplane::AV;
using dataplane::Cat;

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

struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};

class TlsProber : public Prober {
 public:
  TlsProber(std::unique_ptr<SSL_CTX, SslFree> ctx, std::string server_name, bool insecure)
      : ctx_(std::move(ctx)), server_name_(std::move(server_name)), insecure_(insecure) {}

  ProbeResult Run(const Endpoint& ep, Clock::time_point deadline) const override {
    const auto start = Clock::now();
    ProbeResult r;
    auto fail = [&](std::string why) {
      r.latency = Clock::now() - start;
      r.detail = Cat("TLS handshake with ", ep.description, ": ", why);
      return r;
    };
    auto fd = ConnectTcp(ep, deadline);
    if (!fd.ok()) return fail(std::string(fd.status().message()));
    ERR_clear_error();
    std::unique_ptr<SSL, SslFree> ssl(SSL_new(ctx_.get()));
    if (!ssl) return fail(SslErrors());
    SSL_set_fd(ssl.get(), fd->get());
    if (!server_name_.empty()) {
      SSL_set_tlsext_host_name(ssl.get(), server_name_.c_str());
      if (!insecure_) SSL_set1_host(ssl.get(), server_name_.c_str());
    } else if (!insecure_) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), ep.address.ToString().c_str());
    }
    for (;;) {
      const int rc = SSL_connect(ssl.get());
      if (rc == 1) break;
      const int err = SSL_get_error(ssl.get(), rc);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        if (!WaitFd(fd->get(), err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline).ok()) {
          return fail(Cat(
              "no complete handshake within ",
              std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(),
              " ms"));
        }
        continue;
      }
      const long verify = SSL_get_verify_result(ssl.get());
      if (verify != X509_V_OK) {
        return fail(Cat("certificate verify failed: ", X509_verify_cert_error_string(verify)));
      }
      if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN) {
        return fail("connection closed by the peer during the handshake");
      }
      return fail(SslErrors());
    }
    r.ok = true;
    r.latency = Clock::now() - start;
    std::string subject;
    if (X509* cert = SSL_get1_peer_certificate(ssl.get())) {
      char buf[256];
      X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
      subject = buf;
      X509_free(cert);
    }
    r.detail = Cat(SSL_get_version(ssl.get()), " handshake with ", ep.description, " in ",
                   FormatLatency(r.latency), subject.empty() ? "" : Cat(" (", subject, ")"),
                   insecure_ ? ", not verified (tls_insecure)" : "");
    SSL_shutdown(ssl.get());  // best effort close_notify; non-blocking
    return r;
  }

 private:
  std::unique_ptr<SSL_CTX, SslFree> ctx_;  // configured once; SSL_new is thread-safe
  const std::string server_name_;
  const bool insecure_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Prober>> MakeTlsProber(const v1::ProbeSpec& spec) {
  std::unique_ptr<SSL_CTX, SslFree> ctx(SSL_CTX_new(TLS_client_method()));
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
  return std::unique_ptr<Prober>(
      new TlsProber(std::move(ctx), spec.tls_server_name(), spec.tls_insecure()));
}

}  // namespace ballast::probes
