#include "agent/probes/probe.h"

#include "agent/dataplane/strcat.h"
#include "agent/probes/probers.h"
#include "agent/probes/spec.h"

namespace ballast::probes {

using dataplane::Cat;

std::string HostPort(const IpAddress& a, uint16_t port) {
  return a.is_v4() ? Cat(a.ToString(), ":", port) : Cat("[", a.ToString(), "]:", port);
}

std::string DescribeVia(const IpAddress& vip, uint16_t port, const IpAddress& backend) {
  return Cat(HostPort(vip, port), " via backend ", backend.ToString());
}

std::string DescribeDirect(const IpAddress& backend, uint16_t port) {
  return Cat(HostPort(backend, port), " (direct)");
}

absl::StatusOr<std::unique_ptr<Prober>> MakeProber(const v1::ProbeSpec& spec) {
  if (absl::Status s = ValidateProbeSpec(spec, "probe"); !s.ok()) return s;
  switch (KindOf(spec)) {
    case v1::ProbeSpec::HTTP:
    case v1::ProbeSpec::HTTPS:
      return MakeHttpProber(spec);
    case v1::ProbeSpec::TLS:
      return MakeTlsProber(spec);
    case v1::ProbeSpec::GRPC:
      return MakeGrpcProber(spec);
    case v1::ProbeSpec::UDP:
      return MakeUdpProber(spec);
    default:
      return MakeTcpProber(spec);
  }
}

}  // namespace ballast::probes
