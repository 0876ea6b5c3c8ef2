// Internal: the factories of the probe kinds, used by MakeProber()
// (probe.cc). Each takes a spec that passed ValidateProbeSpec().
#ifndef BALLAST_AGENT_PROBES_PROBERS_H_
#define BALLAST_AGENT_PROBES_PROBERS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "agent/probes/probe.h"

namespace ballast::probes {

std::unique_ptr<Prober> MakeTcpProber(const v1::ProbeSpec& spec);
absl::StatusOr<std::unique_ptr<Prober>> MakeHttpProber(const v1::ProbeSpec& spec);  // HTTP, HTTPS
absl::StatusOr<std::unique_ptr<Prober>> MakeTlsProber(const v1::ProbeSpec& spec);
absl::StatusOr<std::unique_ptr<Prober>> MakeGrpcProber(const v1::ProbeSpec& spec);
std::unique_ptr<Prober> MakeUdpProber(const v1::ProbeSpec& spec);

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_PROBERS_H_
