#include "tools/testbackend/address.h"

#include <cstring>

#include "agent/base/ip_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ballast::testbackend {
namespace {

absl::Status BadAddress(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("'", text, "' is not a socket address (", why,
                   "); expected IP:PORT, e.g. 127.0.0.1:8080, [::1]:8080 or [::]:80"));
}

}  // namespace

bool SocketAddress::IsIpv6Any() const {
  if (family() != AF_INET6) return false;
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
  return IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
}

void SocketAddress::set_port(uint16_t port) {
  if (family() == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  }
}

absl::StatusOr<SocketAddress> ParseSocketAddress(absl::string_view text) {
  absl::string_view host;
  absl::string_view port_text;
  bool bracketed = false;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == absl::string_view::npos) return BadAddress(text, "missing ']'");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return BadAddress(text, "missing :PORT after ']'");
    }
    port_text = text.substr(close + 2);
    bracketed = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) return BadAddress(text, "missing :PORT");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != absl::string_view::npos) {
      return BadAddress(text, "an IPv6 address must be in brackets");
    }
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return BadAddress(text, "port must be a number 0..65535");
  }
  auto addr = IpAddress::Parse(std::string_view(host.data(), host.size()));
  SocketAddress out;
  if (bracketed) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
    if (!addr.ok() || addr->is_v4()) return BadAddress(text, "not an IPv6 address");
    std::memcpy(&in6->sin6_addr, addr->bytes().data(), 16);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(port));
    out.length = sizeof(sockaddr_in6);
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&out.storage);
    if (!addr.ok() || !addr->is_v4()) return BadAddress(text, "not an IPv4 address");
    std::memcpy(&in4->sin_addr, addr->bytes().data(), 4);
    in4->sin_family = AF_INET;
    in4->sin_port = htons(static_cast<uint16_t>(port));
    out.length = sizeof(sockaddr_in);
  }
  return out;
}

std::string FormatSocketAddress(const SocketAddress& address) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (address.family() == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    return absl::StrCat("[", buf, "]:", ntohs(in6->sin6_port));
  }
  const auto* in4 = reinterpret_cast<const sockaddr_in*>(&address.storage);
  inet_ntop(AF_INET, &in4->sin_addr, buf, sizeof buf);
  return absl::StrCat(buf, ":", ntohs(in4->sin_port));
}

absl::StatusOr<int> Listen(const SocketAddress& address, int backlog) {
  const std::string where = FormatSocketAddress(address);
  int fd = socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("listen on ", where, ": socket: ", strerror(errno)));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (address.family() == AF_INET6) {
    int v6only = address.IsIpv6Any() ? 0 : 1;
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) != 0) {
      int err = errno;
      close(fd);
      return absl::InternalError(
          absl::StrCat("listen on ", where, ": IPV6_V6ONLY: ", strerror(err)));
    }
  }
  if (bind(fd, address.sa(), address.length) != 0) {
    int err = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot bind ", where, ": ", strerror(err)));
  }
  if (listen(fd, backlog) != 0) {
    int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("listen on ", where, ": ", strerror(err)));
  }
  return fd;
}

absl::StatusOr<SocketAddress> BoundAddress(int fd) {
  SocketAddress out;
  out.length = sizeof out.storage;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&out.storage), &out.length) != 0) {
    return absl::InternalError(absl::StrCat("getsockname: ", strerror(errno)));
  }
  return out;
}

}  // namespace ballast::testbackend
