// TCP connect probe: the three-way handshake completes before the deadline.
#include <unistd.h>

#include "agent/base/strcat.h"
#include "agent/probes/probers.h"
#include "agent/probes/socket.h"

namespace ballast::probes {
namespace {

using base::AV;
using base::Cat;

class TcpProber : public Prober {
 public:
  ProbeResult Run(const Endpoint& ep, Clock::time_point deadline) const override {
    const auto start = Clock::now();
    ProbeResult r;
    auto fd = ConnectTcp(ep, deadline);
    r.latency = Clock::now() - start;
    if (!fd.ok()) {
      r.detail = Cat("TCP connect to ", ep.description, ": ", std::string(fd.status().message()));
      return r;
    }
    r.ok = true;
    r.detail = Cat("TCP connect to ", ep.description, " in ", FormatLatency(r.latency));
    return r;
  }
};

}  // namespace

std::unique_ptr<Prober> MakeTcpProber(const v1::ProbeSpec&) {
  return std::make_unique<TcpProber>();
}

}  // namespace ballast::probes
