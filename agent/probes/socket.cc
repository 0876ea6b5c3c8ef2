#include "agent/probes/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "agent/base/strcat.h"

namespace ballast::probes {

using base::Cat;
using dataplane::UniqueFd;

socklen_t ToSockaddr(const IpAddress& address, uint16_t port, sockaddr_storage* out) {
  std::memset(out, 0, sizeof(*out));
  if (address.is_v4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(out);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, address.bytes().data(), 4);
    return sizeof(*sin);
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(out);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons(port);
  std::memcpy(&sin6->sin6_addr, address.bytes().data(), 16);
  return sizeof(*sin6);
}

absl::Status SetMark(int fd, uint32_t mark) {
  if (mark == 0) return absl::OkStatus();
  if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) != 0) {
    return dataplane::ErrnoStatus(errno, absl::StrFormat("setting SO_MARK 0x%x on the probe socket "
                                                         "(needs CAP_NET_ADMIN)",
                                                         mark));
  }
  return absl::OkStatus();
}

long MsLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : left;
}

std::string FormatLatency(std::chrono::nanoseconds d) {
  return absl::StrFormat("%.1f ms", static_cast<double>(d.count()) / 1e6);
}

absl::Status WaitFd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return absl::DeadlineExceededError("deadline passed");
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()) + 1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return dataplane::ErrnoStatus(errno, "poll");
    }
    if (n > 0) return absl::OkStatus();
  }
}

absl::StatusOr<UniqueFd> ConnectTcp(const Endpoint& endpoint, Clock::time_point deadline) {
  sockaddr_storage ss;
  const socklen_t len = ToSockaddr(endpoint.address, endpoint.port, &ss);
  UniqueFd fd(socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
  if (!fd) return dataplane::ErrnoStatus(errno, "creating the probe socket");
  if (absl::Status s = SetMark(fd.get(), endpoint.mark); !s.ok()) return s;
  const int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A probe socket must not linger in TIME_WAIT-heavy loops longer than
  // needed, but a clean close is part of the check: keep default close.
  const long ms = MsLeft(deadline);
  const unsigned user_timeout = static_cast<unsigned>(ms > 0 ? ms : 1);
  setsockopt(fd.get(), IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));

  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    return absl::UnavailableError(Cat("connect: ", std::strerror(errno)));
  }
  const auto start = Clock::now();
  if (absl::Status s = WaitFd(fd.get(), POLLOUT, deadline); !s.ok()) {
    if (absl::IsDeadlineExceeded(s)) {
      return absl::DeadlineExceededError(
          Cat("no connection within ",
              std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(),
              " ms (SYN not answered)"));
    }
    return s;
  }
  int err = 0;
  socklen_t elen = sizeof(err);
  if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen) != 0) {
    return dataplane::ErrnoStatus(errno, "getsockopt(SO_ERROR)");
  }
  if (err != 0) {
    if (err == ETIMEDOUT) {
      return absl::DeadlineExceededError("no connection before the deadline (SYN not answered)");
    }
    return absl::UnavailableError(Cat("connect: ", std::strerror(err)));
  }
  return fd;
}

std::string Excerpt(const std::string& body) {
  std::string e = absl::CHexEscape(body.substr(0, 80));
  if (body.size() > 80) e += "...";
  return Cat("\"", e, "\"");
}

std::unique_ptr<RE2> BodyRegexOf(const v1::ProbeSpec& spec) {
  if (spec.body_regex().empty()) return nullptr;
  RE2::Options opts;
  opts.set_log_errors(false);
  return std::make_unique<RE2>(spec.body_regex(), opts);
}

}  // namespace ballast::probes
