// A small in-memory core::Engine for the API layer's own tests: it keeps
// VIPs and backends in maps, records every call with its actor, and can be
// told to fail the next calls with a given status. It is not the agent's
// engine (agent/core), which these tests do not depend on; it exists so the
// server, the access rules and lbctl can be tested on their own.
//
// Thread-safe: the gRPC server calls it from its thread pool.
#ifndef BALLAST_AGENT_API_TESTS_RECORDING_ENGINE_H_
#define BALLAST_AGENT_API_TESTS_RECORDING_ENGINE_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/engine.h"

namespace ballast::api::testing {

struct RecordedCall {
  std::string method;  // "AddVip", "SetWeight", ...
  std::string actor;
  std::string detail;  // e.g. "198.18.0.10:80/tcp 198.18.1.1 weight=50"
};

class RecordingEngine : public core::Engine {
 public:
  // Every following call fails with `status` (until cleared with OkStatus).
  void FailWith(absl::Status status);
  std::vector<RecordedCall> calls() const;
  // Delivers `event` to every subscriber, on the calling thread.
  void Emit(const v1::Event& event);
  size_t subscribers() const;
  void SetStatus(v1::StatusResponse status);

  absl::Status AddVip(const v1::Vip& vip, const core::Actor& actor) override;
  absl::Status DeleteVip(const v1::VipKey& key, const core::Actor& actor) override;
  std::vector<v1::Vip> ListVips() const override;
  absl::Status AddBackend(const v1::VipKey& vip, const v1::Backend& backend,
                          const core::Actor& actor) override;
  absl::Status DeleteBackend(const v1::VipKey& vip, const std::string& address,
                             const core::Actor& actor) override;
  absl::Status SetWeight(const v1::VipKey& vip, const std::string& address, uint32_t weight,
                         const core::Actor& actor) override;
  absl::Status Drain(const v1::VipKey& vip, const std::string& address, uint32_t deadline_s,
                     const core::Actor& actor) override;
  absl::Status Undrain(const v1::VipKey& vip, const std::string& address,
                       const core::Actor& actor) override;
  absl::Status Release(const v1::VipKey& vip, const std::string& address,
                       const core::Actor& actor) override;
  absl::Status RelearnHealth(const v1::VipKey& vip, const core::Actor& actor) override;
  absl::StatusOr<v1::StatusResponse> GetStatus() const override;
  absl::StatusOr<v1::ListFlowsResponse> ListFlows(
      const v1::ListFlowsRequest& request) const override;
  // What ListFlows returns (default: no flows).
  void SetFlows(v1::ListFlowsResponse flows);
  v1::Config GetConfig() const override;
  absl::StatusOr<v1::ApplyConfigResponse> ApplyConfig(const v1::Config& config, bool dry_run,
                                                      const core::Actor& actor) override;
  absl::StatusOr<std::vector<v1::AuditRecord>> QueryAudit(int64_t since_unix_ms,
                                                          uint32_t limit) const override;
  uint64_t Subscribe(EventSink sink) override;
  void Unsubscribe(uint64_t handle) override;
  absl::StatusOr<v1::QuicConfigChangeResponse> RotateQuicConfig(const v1::VipKey& vip,
                                                                const std::string& reason,
                                                                const core::Actor& actor) override;
  absl::StatusOr<v1::QuicConfigChangeResponse> RetireQuicConfig(const v1::VipKey& vip,
                                                                const std::string& reason,
                                                                const core::Actor& actor) override;
  // Returns what SetQuicExport gave (NotFound before) for a known backend.
  absl::StatusOr<v1::ExportQuicConfigResponse> ExportQuicConfig(const v1::VipKey& vip,
                                                                const std::string& address,
                                                                const core::Actor& actor) override;
  void SetQuicExport(v1::ExportQuicConfigResponse resp);
  absl::Status Teardown(const core::Actor& actor) override;
  bool ShutdownRequested() const override;

 private:
  // Records the call; returns the programmed failure, if any.
  absl::Status Record(std::string method, const core::Actor& actor, std::string detail);
  v1::Vip* FindVip(const v1::VipKey& key);  // requires mu_
  absl::StatusOr<v1::Backend*> FindBackend(const v1::VipKey& key, const std::string& address);
  // RotateQuicConfig and RetireQuicConfig (by `method`).
  absl::StatusOr<v1::QuicConfigChangeResponse> QuicChange(const std::string& method,
                                                          const v1::VipKey& vip,
                                                          const std::string& reason,
                                                          const core::Actor& actor);

  mutable std::mutex mu_;
  absl::Status fail_with_;
  mutable std::vector<RecordedCall> calls_;  // mutable: const reads are recorded too
  std::vector<v1::Vip> vips_;
  std::vector<v1::AuditRecord> audit_;
  std::optional<v1::StatusResponse> status_;
  v1::ListFlowsResponse flows_;
  std::optional<v1::ExportQuicConfigResponse> quic_export_;
  uint64_t generation_ = 0;
  bool shutdown_ = false;
  uint64_t next_handle_ = 1;
  std::map<uint64_t, EventSink> sinks_;
};

// "198.18.0.10:80/tcp"-style key text, for details and audit records.
std::string KeyText(const v1::VipKey& key);

}  // namespace ballast::api::testing

#endif  // BALLAST_AGENT_API_TESTS_RECORDING_ENGINE_H_
