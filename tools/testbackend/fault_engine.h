// FaultEngine: the live fault knobs of one test backend, shared by the HTTP
// server, the gRPC service and the control endpoint.
//
// Thread-safety: every method may be called from any thread. Knob changes
// are atomic as a whole (Set applies all assignments or none). Requests
// already waiting (delay, hang) re-read the knobs while they wait, so clearing
// `hang` releases them.
#ifndef BALLAST_TOOLS_TESTBACKEND_FAULT_ENGINE_H_
#define BALLAST_TOOLS_TESTBACKEND_FAULT_ENGINE_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "tools/testbackend/knobs.h"
#include "tools/testbackend/stats.h"

namespace ballast::testbackend {

enum class Protocol { kHttp, kGrpc };

// The probe contract (see main.cc and README.md): a request is a probe when
// one of the space-separated product tokens of its User-Agent (the HTTP
// header, or the gRPC "user-agent" metadata) starts with "ballast-probe", or
// a gRPC HelloRequest.from is exactly "ballast-probe". Probes send a
// User-Agent that starts with "ballast-probe/..."; grpc++ clients cannot
// (grpc++ puts "grpc-c++/<version>" first and the channel's primary user
// agent second), hence tokens rather than a prefix of the whole header.
inline constexpr absl::string_view kProbeUserAgentPrefix = "ballast-probe";
bool IsProbeUserAgent(absl::string_view user_agent);

class FaultEngine {
 public:
  // `stats` must outlive the engine.
  explicit FaultEngine(Stats* stats) : stats_(stats) {}

  Knobs knobs() const;
  // Applies "key=value" assignments in order, all or none.
  absl::Status Set(const std::vector<std::string>& assignments);
  // Back to the defaults (no fault).
  void Clear();

  // Decides the fate of one request under the current knobs and counts it
  // (requests by protocol and client kind, faults by kind). A request
  // released from a hang is decided again with count_request false, so it
  // is counted once as a request; its new faults are counted.
  Plan Decide(Protocol protocol, bool is_probe, bool count_request = true);

  // True while `hang` is set and applies to a request of this kind.
  bool HangApplies(bool is_probe) const;

  // Waits up to `ms`, in slices of at most 20 ms, returning early with false
  // when `abandoned()` turns true or the engine is stopping; true when the
  // full time passed.
  bool Sleep(int64_t ms, const std::function<bool()>& abandoned) const;
  // Waits while hang applies; false when abandoned or stopping first.
  bool WaitOutHang(bool is_probe, const std::function<bool()>& abandoned) const;

  // Shutdown: waiting requests give up; irreversible.
  void Stop() { stopping_.store(true); }
  bool stopping() const { return stopping_.load(); }

  Stats& stats() { return *stats_; }

 private:
  mutable std::mutex mu_;
  Knobs knobs_;  // guarded by mu_
  Stats* stats_;
  std::atomic<bool> stopping_{false};
};

}  // namespace ballast::testbackend

#endif  // BALLAST_TOOLS_TESTBACKEND_FAULT_ENGINE_H_
