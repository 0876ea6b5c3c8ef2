#include "agent/probes/tls_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "agent/base/strcat.h"
#include "agent/probes/socket.h"

namespace ballast::probes {

absl::StatusOr<std::unique_ptr<TlsRelay>> TlsRelay::Start(dataplane::UniqueFd tcp, SslPtr ssl,
                                                          Clock::time_point deadline) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return absl::InternalError(base::Cat("socketpair: ", strerror(errno)));
  }
  dataplane::UniqueFd plain(sv[0]), inner(sv[1]);
  if (fcntl(inner.get(), F_SETFL, O_NONBLOCK) != 0) {
    return absl::InternalError(base::Cat("fcntl: ", strerror(errno)));
  }
  return std::unique_ptr<TlsRelay>(
      new TlsRelay(std::move(tcp), std::move(ssl), std::move(plain), std::move(inner), deadline));
}

TlsRelay::TlsRelay(dataplane::UniqueFd tcp, SslPtr ssl, dataplane::UniqueFd plain,
                   dataplane::UniqueFd inner, Clock::time_point deadline)
    : tcp_(std::move(tcp)),
      ssl_(std::move(ssl)),
      plain_(std::move(plain)),
      inner_(std::move(inner)),
      deadline_(deadline) {
  thread_ = std::thread([this] { Pump(); });
}

TlsRelay::~TlsRelay() {
  stop_ = true;
  // Wakes the pump's poll at once (POLLHUP on its end).
  shutdown(inner_.get(), SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  SSL_shutdown(ssl_.get());  // best effort close_notify; non-blocking
}

void TlsRelay::Pump() {
  std::string to_tls, to_plain;  // bytes read on one side, not yet written on the other
  bool plain_closed = false, tls_closed = false, want_write = false;
  char buf[16384];
  while (!stop_ && Clock::now() < deadline_) {
    // TLS -> plain: everything the session has decrypted.
    while (!tls_closed && to_plain.size() < sizeof(buf) * 4) {
      const int n = SSL_read(ssl_.get(), buf, sizeof(buf));
      if (n > 0) {
        to_plain.append(buf, static_cast<size_t>(n));
        continue;
      }
      const int err = SSL_get_error(ssl_.get(), n);
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) tls_closed = true;
      break;
    }
    while (!to_plain.empty()) {
      const ssize_t n = send(inner_.get(), to_plain.data(), to_plain.size(), MSG_NOSIGNAL);
      if (n > 0) {
        to_plain.erase(0, static_cast<size_t>(n));
      } else {
        if (n < 0 && errno != EAGAIN && errno != EINTR) plain_closed = true;
        break;
      }
    }
    // plain -> TLS
    if (!plain_closed && to_tls.empty()) {
      const ssize_t n = recv(inner_.get(), buf, sizeof(buf), 0);
      if (n > 0) {
        to_tls.assign(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        plain_closed = true;
      }
    }
    want_write = false;
    while (!to_tls.empty() && !tls_closed) {
      const int n = SSL_write(ssl_.get(), to_tls.data(), static_cast<int>(to_tls.size()));
      if (n > 0) {
        to_tls.erase(0, static_cast<size_t>(n));
        continue;
      }
      const int err = SSL_get_error(ssl_.get(), n);
      if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
        want_write = err == SSL_ERROR_WANT_WRITE;
      } else {
        tls_closed = true;
      }
      break;
    }
    if (plain_closed || (tls_closed && to_plain.empty())) break;
    if (SSL_pending(ssl_.get()) > 0) continue;
    pollfd p[2] = {
        {tcp_.get(), static_cast<short>(POLLIN | (want_write ? POLLOUT : 0)), 0},
        {inner_.get(),
         static_cast<short>((to_tls.empty() ? POLLIN : 0) | (to_plain.empty() ? 0 : POLLOUT)), 0}};
    poll(p, 2, static_cast<int>(MsLeft(deadline_)));
  }
  // Closing our end tells the plaintext side that the connection ended.
  shutdown(inner_.get(), SHUT_RDWR);
}

}  // namespace ballast::probes
