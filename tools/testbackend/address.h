// Listen/connect addresses of the test backend: "IP:PORT" text <-> sockaddr.
//
// Accepted forms: "127.0.0.1:80", "0.0.0.0:80", "[::1]:9000", "[::]:80".
// Port 0 is allowed (the kernel picks one; read it back with BoundAddress).
// "[::]" binds dual-stack (IPv6 socket with IPV6_V6ONLY off), so one listener
// serves IPv4 and IPv6 clients. Pure functions, thread-safe.
#ifndef BALLAST_TOOLS_TESTBACKEND_ADDRESS_H_
#define BALLAST_TOOLS_TESTBACKEND_ADDRESS_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace ballast::testbackend {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
  // True for "[::]": the listener also accepts IPv4 (v4-mapped).
  bool IsIpv6Any() const;
  void set_port(uint16_t port);
};

// Parses "IP:PORT" or "[IPv6]:PORT". Errors name the text and the expected form.
absl::StatusOr<SocketAddress> ParseSocketAddress(absl::string_view text);

// "1.2.3.4:80" or "[::1]:80".
std::string FormatSocketAddress(const SocketAddress& address);

// Opens a listening TCP socket (SO_REUSEADDR, CLOEXEC, backlog `backlog`) bound
// to `address`; returns the descriptor, owned by the caller. "[::]" listens
// dual-stack, other IPv6 addresses IPv6-only.
absl::StatusOr<int> Listen(const SocketAddress& address, int backlog);

// The address a socket is bound to (after Listen with port 0, the real port).
absl::StatusOr<SocketAddress> BoundAddress(int fd);

}  // namespace ballast::testbackend

#endif  // BALLAST_TOOLS_TESTBACKEND_ADDRESS_H_
