// UDP probe: one datagram (udp_request) to the endpoint, one datagram back
// before the deadline, whose payload passes body_contains / body_regex.
//
// The socket is connected, so an ICMP port unreachable from the backend
// (nothing listens) comes back as ECONNREFUSED and fails the probe at once;
// a reply from any other address is not delivered to it. Via the VIP the
// request carries the probe mark like the TCP kinds (tc_probe encapsulates
// it to the chosen backend) and the reply comes straight back from the VIP.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include <re2/re2.h>

#include "absl/strings/escaping.h"
#include "agent/base/strcat.h"
#include "agent/probes/probers.h"
#include "agent/probes/socket.h"

namespace ballast::probes {
namespace {

using base::Cat;
using dataplane::UniqueFd;

class UdpProber : public Prober {
 public:
  explicit UdpProber(const v1::ProbeSpec& spec)
      : request_(spec.udp_request()),
        body_contains_(spec.body_contains()),
        regex_(BodyRegexOf(spec)) {}

  ProbeResult Run(const Endpoint& ep, Clock::time_point deadline) const override {
    const auto start = Clock::now();
    ProbeResult r;
    auto fail = [&](std::string why) {
      r.latency = Clock::now() - start;
      r.detail = Cat("UDP to ", ep.description, ": ", why);
      return r;
    };
    sockaddr_storage ss;
    const socklen_t len = ToSockaddr(ep.address, ep.port, &ss);
    UniqueFd fd(socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP));
    if (!fd) return fail(Cat("creating the probe socket: ", std::strerror(errno)));
    if (absl::Status s = SetMark(fd.get(), ep.mark); !s.ok()) return fail(std::string(s.message()));
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      return fail(Cat("connect: ", std::strerror(errno)));
    }
    if (send(fd.get(), request_.data(), request_.size(), 0) < 0) {
      return fail(Cat("send: ", std::strerror(errno)));
    }
    std::string reply(65536, '\0');
    for (;;) {
      if (absl::Status s = WaitFd(fd.get(), POLLIN, deadline); !s.ok()) {
        if (absl::IsDeadlineExceeded(s))
          return fail(Cat("no reply within ", ElapsedMs(start), " ms"));
        return fail(std::string(s.message()));
      }
      const ssize_t n = recv(fd.get(), reply.data(), reply.size(), 0);
      if (n >= 0) {
        reply.resize(static_cast<size_t>(n));
        break;
      }
      if (errno == EAGAIN || errno == EINTR) continue;
      if (errno == ECONNREFUSED) return fail("refused (ICMP port unreachable: nothing listens)");
      return fail(Cat("recv: ", std::strerror(errno)));
    }
    if (!body_contains_.empty() && reply.find(body_contains_) == std::string::npos) {
      return fail(Cat("reply does not contain \"", absl::CHexEscape(body_contains_), "\" (reply ",
                      Excerpt(reply), ")"));
    }
    if (regex_ && !RE2::PartialMatch(reply, *regex_)) {
      return fail(
          Cat("reply does not match /", regex_->pattern(), "/ (reply ", Excerpt(reply), ")"));
    }
    r.ok = true;
    r.latency = Clock::now() - start;
    r.detail = Cat("UDP reply of ", reply.size(), " bytes from ", ep.description, " in ",
                   FormatLatency(r.latency));
    return r;
  }

 private:
  static long ElapsedMs(Clock::time_point start) {
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  }

  const std::string request_;
  const std::string body_contains_;
  std::unique_ptr<RE2> regex_;  // RE2 matching is thread-safe
};

}  // namespace

std::unique_ptr<Prober> MakeUdpProber(const v1::ProbeSpec& spec) {
  return std::make_unique<UdpProber>(spec);
}

}  // namespace ballast::probes
