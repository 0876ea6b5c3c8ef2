#include "agent/probes/probe.h"

#include <mutex>

#include "agent/base/strcat.h"
#include "agent/probes/probers.h"
#include "agent/probes/spec.h"

namespace ballast::probes {

using base::Cat;

std::string HostPort(const IpAddress& a, uint16_t port) {
  return a.is_v4() ? Cat(a.ToString(), ":", port) : Cat("[", a.ToString(), "]:", port);
}

std::string DescribeVia(const IpAddress& vip, uint16_t port, const IpAddress& backend) {
  return Cat(HostPort(vip, port), " via backend ", backend.ToString());
}

std::string DescribeDirect(const IpAddress& backend, uint16_t port) {
  return Cat(HostPort(backend, port), " (direct)");
}

namespace {

absl::StatusOr<std::unique_ptr<Prober>> MakeKindProber(const v1::ProbeSpec& spec) {
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

// A probe whose files (CA bundle, descriptor set) were missing or wrong when
// it was made: each run checks them again and fails saying why, until they
// are right; from then on it runs the real prober.
class PendingFilesProber : public Prober {
 public:
  explicit PendingFilesProber(v1::ProbeSpec spec) : spec_(std::move(spec)) {}

  ProbeResult Run(const Endpoint& ep, Clock::time_point deadline) const override {
    std::shared_ptr<const Prober> p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      p = built_;
    }
    if (p == nullptr) {
      absl::StatusOr<std::unique_ptr<Prober>> made = absl::UnknownError("not made");
      if (absl::Status s = CheckProbeFiles(spec_, "probe"); s.ok()) {
        made = MakeKindProber(spec_);
      } else {
        made = s;
      }
      if (!made.ok()) {
        ProbeResult r;
        r.detail = Cat(KindName(KindOf(spec_)), " probe to ", ep.description,
                       " cannot run: ", made.status().message());
        return r;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (built_ == nullptr) built_ = std::shared_ptr<const Prober>(std::move(*made));
      p = built_;
    }
    return p->Run(ep, deadline);
  }

 private:
  const v1::ProbeSpec spec_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Prober> built_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Prober>> MakeProber(const v1::ProbeSpec& spec) {
  if (absl::Status s = ValidateProbeSpec(spec, "probe"); !s.ok()) return s;
  if (!CheckProbeFiles(spec, "probe").ok()) {
    return std::unique_ptr<Prober>(new PendingFilesProber(spec));
  }
  return MakeKindProber(spec);
}

}  // namespace ballast::probes
