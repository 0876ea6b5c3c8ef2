// Synthetic probes: one Prober per probe kind (TCP connect, HTTP, HTTPS,
// gRPC, TLS handshake), built from a v1::ProbeSpec by MakeProber().
//
// A probe is one blocking attempt against one endpoint with a deadline. The
// endpoint says where to connect and with which socket mark: a probe "via
// the VIP" connects to VIP:port with the mark that ProbeForwarder maps to
// the chosen backend (forwarder.h), so the packets take the data plane's
// encapsulation to that backend; a direct probe connects to the backend's
// own address without a mark.
//
// Every probe identifies itself: HTTP(S) sends "User-Agent: ballast-probe/1"
// and gRPC sets the primary user agent to the same string (kProbeUserAgent),
// so a backend can tell probes from real traffic.
//
// Thread-safety: a Prober is immutable after MakeProber() (compiled regex,
// loaded descriptors); Run() may be called from several threads at once.
#ifndef BALLAST_AGENT_PROBES_PROBE_H_
#define BALLAST_AGENT_PROBES_PROBE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"
#include "ballast/v1/config.pb.h"

namespace ballast::probes {

inline constexpr char kProbeUserAgent[] = "ballast-probe/1";

using Clock = std::chrono::steady_clock;

// Where one probe attempt goes.
struct Endpoint {
  IpAddress address;  // connect to: the VIP (via mode) or the backend (direct)
  uint16_t port = 0;
  uint32_t mark = 0;  // SO_MARK of the probe's socket; 0 = none
  // For messages: "198.18.0.10:80 via backend 198.18.1.2" or
  // "198.18.1.2:80 (direct)". Describe() builds it.
  std::string description;
};

// "198.18.0.10:80", "[2001:db8::10]:80".
std::string HostPort(const IpAddress& a, uint16_t port);
// The description of an endpoint via a VIP to `backend`, or direct.
std::string DescribeVia(const IpAddress& vip, uint16_t port, const IpAddress& backend);
std::string DescribeDirect(const IpAddress& backend, uint16_t port);

struct ProbeResult {
  bool ok = false;
  std::chrono::nanoseconds latency{0};  // start of Run() to the verdict
  // One line an operator can read, e.g. "HTTP 503 from 198.18.0.10:80 via
  // backend 198.18.1.2 (want 200)" or "HTTP 200 from ... in 3.1 ms".
  std::string detail;
  // The agent itself did not run for part of the probe (PauseWatch): the
  // verdict says nothing about the backend and is not counted.
  bool discarded = false;
};

class Prober {
 public:
  virtual ~Prober() = default;
  // One attempt; returns by `deadline` (give or take scheduling) whatever
  // the endpoint does. Never throws; every failure is a result with ok=false.
  virtual ProbeResult Run(const Endpoint& endpoint, Clock::time_point deadline) const = 0;
};

// Builds the prober of spec.kind(). The spec must pass ValidateProbeSpec()
// (spec.h); the same checks run here and their error is returned. When its
// files fail CheckProbeFiles() (a CA bundle or descriptor set missing on
// this host), the prober's every run fails saying why, and checks them
// again, until they are right.
absl::StatusOr<std::unique_ptr<Prober>> MakeProber(const v1::ProbeSpec& spec);

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_PROBE_H_
