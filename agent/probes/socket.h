// Connected TCP sockets for probes: non-blocking connect with a deadline
// and an optional SO_MARK, plus waiting for readiness against a deadline.
// Stateless, thread-safe.
#ifndef BALLAST_AGENT_PROBES_SOCKET_H_
#define BALLAST_AGENT_PROBES_SOCKET_H_

#include <sys/socket.h>

#include <memory>
#include <string>

#include <re2/re2.h>

#include "absl/status/statusor.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/probes/probe.h"

namespace ballast::probes {

// Fills a sockaddr for (address, port); returns its length.
socklen_t ToSockaddr(const IpAddress& address, uint16_t port, sockaddr_storage* out);

// Sets SO_MARK (needs CAP_NET_ADMIN). No-op for mark 0.
absl::Status SetMark(int fd, uint32_t mark);

// A connected, non-blocking TCP socket to the endpoint (with its mark).
// Errors: Unavailable "connection refused" / "no route to host" / ...,
// DeadlineExceeded "no answer within N ms", PermissionDenied for SO_MARK.
absl::StatusOr<dataplane::UniqueFd> ConnectTcp(const Endpoint& endpoint,
                                               Clock::time_point deadline);

// Waits until `fd` is ready for `events` (POLLIN/POLLOUT). DeadlineExceeded
// once the deadline passes.
absl::Status WaitFd(int fd, short events, Clock::time_point deadline);

// Milliseconds left until `deadline` (>= 0).
long MsLeft(Clock::time_point deadline);

// "3.1 ms"
std::string FormatLatency(std::chrono::nanoseconds d);

// The first 80 bytes of a reply, C-escaped and quoted, for messages.
std::string Excerpt(const std::string& body);

// The compiled body_regex of a spec (null when it has none). The spec
// passed ValidateProbeSpec, so the pattern compiles.
std::unique_ptr<RE2> BodyRegexOf(const v1::ProbeSpec& spec);

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_SOCKET_H_
