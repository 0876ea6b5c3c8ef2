// TLS handshake probe (OpenSSL): connect, handshake with SNI, verify the
// chain against the CA file (or the system CAs) and the name, then close.
#include <openssl/ssl.h>

#include "agent/base/strcat.h"
#include "agent/probes/probers.h"
#include "agent/probes/socket.h"
#include "agent/probes/tls_client.h"

namespace ballast::probes {
namespace {

using base::Cat;

class TlsProber : public Prober {
 public:
  TlsProber(SslCtxPtr ctx, std::string server_name, bool insecure)
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
    auto ssl = TlsHandshake(ctx_.get(), fd->get(), server_name_, insecure_, ep, start, deadline);
    if (!ssl.ok()) return fail(std::string(ssl.status().message()));
    r.ok = true;
    r.latency = Clock::now() - start;
    std::string subject;
    if (X509* cert = SSL_get1_peer_certificate(ssl->get())) {
      char buf[256];
      X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
      subject = buf;
      X509_free(cert);
    }
    r.detail = Cat(SSL_get_version(ssl->get()), " handshake with ", ep.description, " in ",
                   FormatLatency(r.latency), subject.empty() ? "" : Cat(" (", subject, ")"),
                   insecure_ ? ", not verified (tls_insecure)" : "");
    SSL_shutdown(ssl->get());  // best effort close_notify; non-blocking
    return r;
  }

 private:
  SslCtxPtr ctx_;  // configured once; SSL_new is thread-safe
  const std::string server_name_;
  const bool insecure_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Prober>> MakeTlsProber(const v1::ProbeSpec& spec) {
  auto ctx = MakeClientContext(spec, /*alpn_h2=*/false);
  if (!ctx.ok()) return ctx.status();
  return std::unique_ptr<Prober>(
      new TlsProber(*std::move(ctx), spec.tls_server_name(), spec.tls_insecure()));
}

}  // namespace ballast::probes
