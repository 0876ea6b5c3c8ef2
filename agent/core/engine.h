// The agent's engine: the one place that owns ballast's state and turns
// operator requests into data-plane changes.
//
// Contract
//  - Every mutating call validates the whole request against the current
//    state first (agent/core/validate.h). On any error nothing changes: not
//    the state, not the state file, not the data plane.
//  - A successful mutation is applied in this order: the new state is
//    persisted (write-to-temp, fsync, rename), then the data plane is
//    programmed, then an Event and an AuditRecord are emitted. If
//    programming the data plane fails the previous state is restored and
//    re-persisted, and the error returned (FAILED_PRECONDITION / INTERNAL).
//  - Thread-safety: all public methods may be called from any thread; they
//    are serialized by one internal mutex. Event subscribers are called
//    without the mutex held.
//  - Time comes from the injected Clock, never from a global.
//
// Status codes: INVALID_ARGUMENT (bad field; the message names the field and
// the allowed range), NOT_FOUND (unknown VIP or backend), ALREADY_EXISTS
// (duplicate VIP or backend), FAILED_PRECONDITION (a valid request that the
// current state forbids, e.g. undrain of a backend that is not draining).
#ifndef BALLAST_AGENT_CORE_ENGINE_H_
#define BALLAST_AGENT_CORE_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ballast/v1/agent.pb.h"
#include "ballast/v1/api.pb.h"
#include "ballast/v1/config.pb.h"

namespace ballast::core {

// Who asked: "operator:<identity>" for API calls, "automation" for the
// agent's own decisions. Written to the audit log.
struct Actor {
  std::string name;
};

class Engine {
 public:
  virtual ~Engine() = default;

  // VIPs.
  virtual absl::Status AddVip(const v1::Vip& vip, const Actor& actor) = 0;
  virtual absl::Status DeleteVip(const v1::VipKey& key, const Actor& actor) = 0;
  virtual std::vector<v1::Vip> ListVips() const = 0;

  // Backends of a VIP, addressed by their address text.
  virtual absl::Status AddBackend(const v1::VipKey& vip, const v1::Backend& backend,
                                  const Actor& actor) = 0;
  virtual absl::Status DeleteBackend(const v1::VipKey& vip, const std::string& address,
                                     const Actor& actor) = 0;
  virtual absl::Status SetWeight(const v1::VipKey& vip, const std::string& address, uint32_t weight,
                                 const Actor& actor) = 0;
  // deadline_s == 0: the global drain timeout.
  virtual absl::Status Drain(const v1::VipKey& vip, const std::string& address, uint32_t deadline_s,
                             const Actor& actor) = 0;
  virtual absl::Status Undrain(const v1::VipKey& vip, const std::string& address,
                               const Actor& actor) = 0;
  virtual absl::Status Release(const v1::VipKey& vip, const std::string& address,
                               const Actor& actor) = 0;
  // Health checking learns the VIP's baselines again from its next
  // evaluation; a pool frozen by the shift then unfreezes by the fleet
  // guard's rule (api.proto, RelearnHealthRequest; health/relearn.h).
  // Audited; changes no state. NotFound for an unknown VIP,
  // FailedPrecondition when health checking is off.
  virtual absl::Status RelearnHealth(const v1::VipKey& vip, const Actor& actor) = 0;

  // Status with live data-plane counters.
  virtual absl::StatusOr<v1::StatusResponse> GetStatus() const = 0;
  // A VIP's live connection-table entries (`lbctl flows`). NotFound for an
  // unknown VIP or backend, InvalidArgument for a bad key or limit.
  virtual absl::StatusOr<v1::ListFlowsResponse> ListFlows(
      const v1::ListFlowsRequest& request) const = 0;

  // Declarative config. ApplyConfig with dry_run returns exactly the diff a
  // real apply would make, and changes nothing.
  virtual v1::Config GetConfig() const = 0;
  virtual absl::StatusOr<v1::ApplyConfigResponse> ApplyConfig(const v1::Config& config,
                                                              bool dry_run, const Actor& actor) = 0;

  // `lbctl config diff`: every node of the cluster with its configuration
  // and table hashes, and the differences between them (standalone: this
  // node alone).
  virtual absl::StatusOr<v1::ConfigDiffResponse> ConfigDiff() const {
    return absl::UnimplementedError("this engine has no config diff");
  }

  // Cluster operations (api.proto ClusterOps). Set a VIP's ownership
  // (validated and committed like any write, audited `set_ownership`);
  // give up an owned VIP on purpose (cluster mode only); record a drill's
  // result in the audit log (action `drill`).
  virtual absl::Status SetVipOwnership(const v1::VipKey& key, v1::VipOwnership ownership,
                                       const Actor& actor) {
    (void)key, (void)ownership, (void)actor;
    return absl::UnimplementedError("this engine has no VIP ownership");
  }
  virtual absl::StatusOr<v1::YieldVipResponse> YieldVip(const v1::YieldVipRequest& req,
                                                        const Actor& actor) {
    (void)req, (void)actor;
    return absl::UnimplementedError("this engine has no VIP ownership");
  }
  virtual absl::Status RecordDrill(const v1::DrillResult& result, const Actor& actor) {
    (void)result, (void)actor;
    return absl::UnimplementedError("this engine has no audit log for drills");
  }

  // Audit records at or after since_unix_ms, oldest first, at most limit
  // (0 = no limit).
  virtual absl::StatusOr<std::vector<v1::AuditRecord>> QueryAudit(int64_t since_unix_ms,
                                                                  uint32_t limit) const = 0;

  // Event stream. The callback runs on the thread that made the change,
  // without the engine's lock held; it must not block. Returns a handle;
  // Unsubscribe(handle) stops delivery (safe to call from any thread).
  using EventSink = std::function<void(const v1::Event&)>;
  virtual uint64_t Subscribe(EventSink sink) = 0;
  virtual void Unsubscribe(uint64_t handle) = 0;

  // Draws a new flow hash seed for the cluster; the one it replaces stays
  // as the previous seed (api.proto, RotateFlowHashSeedRequest).
  virtual absl::StatusOr<v1::RotateFlowHashSeedResponse> RotateFlowHashSeed(
      const std::string& reason, const Actor& actor) {
    (void)reason, (void)actor;
    return absl::UnimplementedError("this engine has no flow hash seed");
  }

  // QUIC-LB of a QUIC VIP (api.proto, RotateQuicConfigRequest): start a
  // new configuration keeping the current one live, or retire the previous
  // one; audited without keys. Export: what backend `address` loads, keys
  // included (an admin's request, audited).
  virtual absl::StatusOr<v1::QuicConfigChangeResponse> RotateQuicConfig(const v1::VipKey& vip,
                                                                        const std::string& reason,
                                                                        const Actor& actor) {
    (void)vip, (void)reason, (void)actor;
    return absl::UnimplementedError("this engine has no QUIC-LB");
  }
  virtual absl::StatusOr<v1::QuicConfigChangeResponse> RetireQuicConfig(const v1::VipKey& vip,
                                                                        const std::string& reason,
                                                                        const Actor& actor) {
    (void)vip, (void)reason, (void)actor;
    return absl::UnimplementedError("this engine has no QUIC-LB");
  }
  virtual absl::StatusOr<v1::ExportQuicConfigResponse> ExportQuicConfig(const v1::VipKey& vip,
                                                                        const std::string& address,
                                                                        const Actor& actor) {
    (void)vip, (void)address, (void)actor;
    return absl::UnimplementedError("this engine has no QUIC-LB");
  }

  // Detach, unpin, and ask the agent to stop (the agent's main loop watches
  // ShutdownRequested()).
  virtual absl::Status Teardown(const Actor& actor) = 0;
  virtual bool ShutdownRequested() const = 0;
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_ENGINE_H_
