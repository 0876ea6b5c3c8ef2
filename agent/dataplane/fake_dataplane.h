// An in-memory data plane for tests: the port (port.h) over plain
// containers, no BPF, no root. It runs the same input checks as the real
// Dataplane (checks.h) and keeps its semantics where the engine can see
// them (port_contract_test.cc runs one contract over both): a VIP's address
// marker lives while a VIP uses the address (or until
// DeleteVipAddressMarker when its last VIP was deleted with
// keep_address_marker), an existing VIP keeps its
// ownership, a deleted VIP takes its table, counters and QUIC-LB
// configurations and server IDs, a cleared backend its counters.
//
// What it does not model: packets (nothing forwards), pins and adoption
// across processes (adopted() is what the constructor says), handshake
// slots (ExpireHandshakes frees nothing). Tests set the counters and the
// flow table through the hooks below, and make one call fail with
// FailNext().
//
// Thread-safety: every method may be called from any thread (one mutex).
#ifndef BALLAST_AGENT_DATAPLANE_FAKE_DATAPLANE_H_
#define BALLAST_AGENT_DATAPLANE_FAKE_DATAPLANE_H_

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/dataplane/port.h"

namespace ballast::dataplane {

class FakeDataplane final : public DataplanePort {
 public:
  struct Options {
    // Network devices Attach() finds; any other name is NotFound, as a
    // device missing from the namespace is for the real one.
    std::set<std::string> devices = {"lo"};
    uint32_t flow_capacity = 4096;  // MapCapacity of each flow map
    bool adopted = false;
  };
  FakeDataplane() : FakeDataplane(Options{}) {}
  explicit FakeDataplane(Options options);

  absl::Status SetSettings(const Settings& s) override;
  absl::StatusOr<Settings> GetSettings() const override;
  absl::Status UpsertVip(const VipKey& key, uint32_t vip_id,
                         const VipOptions& options = {}) override;
  absl::Status DeleteVip(const VipKey& key, const DeleteVipOptions& options = {}) override;
  absl::StatusOr<std::vector<VipEntry>> Vips() const override;
  absl::StatusOr<std::vector<IpAddress>> VipAddressMarkers() const override;
  absl::Status DeleteVipAddressMarker(const IpAddress& addr) override;
  absl::Status SetVipOwnerDeadline(const VipKey& key,
                                   std::optional<uint64_t> monotonic_ns) override;
  absl::StatusOr<VipOwner> GetVipOwner(const VipKey& key) const override;
  absl::Status SetBackend(uint32_t id, const IpAddress& addr, ballast_backend_state state,
                          uint64_t drain_deadline_ns = 0) override;
  absl::Status ClearBackend(uint32_t id) override;
  absl::StatusOr<std::vector<BackendEntry>> Backends() const override;
  absl::Status SetTable(uint32_t vip_id, std::span<const uint32_t> table) override;
  absl::StatusOr<std::vector<uint32_t>> GetTable(uint32_t vip_id) const override;
  absl::Status SetHistory(uint32_t vip_id, std::span<const uint64_t> slots) override;
  absl::StatusOr<std::vector<uint64_t>> GetHistory(uint32_t vip_id) const override;
  absl::Status SetQuicConfigs(uint32_t vip_id, std::span<const QuicConfig> configs) override;
  absl::StatusOr<std::vector<QuicConfig>> GetQuicConfigs(uint32_t vip_id) const override;
  absl::Status SetQuicServers(uint32_t vip_id, std::span<const QuicServer> servers) override;
  absl::StatusOr<std::vector<QuicServer>> GetQuicServers(uint32_t vip_id) const override;
  absl::StatusOr<ballast_quic_stats> QuicStats(uint32_t vip_id) const override;
  absl::Status Attach(std::string_view ifname, AttachMode mode) override;
  absl::StatusOr<AttachMode> AttachedMode(std::string_view ifname) const override;
  absl::Status Detach(std::string_view ifname) override;
  absl::Status Teardown() override;
  bool adopted() const override { return options_.adopted; }
  absl::StatusOr<ballast_backend_stats> BackendStats(uint32_t id) const override;
  absl::StatusOr<ballast_backend_bounces> BackendBounces(uint32_t id) const override;
  absl::StatusOr<ballast_esc_stats> EscStats() const override;
  void SetEscStats(const ballast_esc_stats& stats);
  absl::StatusOr<LatencyHistograms> BackendLatency(uint32_t id) const override;
  absl::StatusOr<ballast_vip_stats> VipStats(uint32_t vip_id) const override;
  absl::StatusOr<std::array<uint64_t, BALLAST_V_MAX>> Verdicts() const override;
  absl::StatusOr<uint64_t> IcmpTooBigLimited() const override;
  absl::StatusOr<size_t> ForEachFlowIn(
      const char* map, size_t max,
      const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
      size_t batch = 4096) const override;
  absl::StatusOr<uint32_t> MapCapacity(const char* map) const override;
  absl::StatusOr<uint64_t> ExpireHandshakes() override;

  // ---- test hooks ----
  // The next call of `method` (its name, e.g. "SetTable") returns `status`
  // and changes nothing; later calls work again.
  void FailNext(std::string_view method, absl::Status status);
  // Counters as the program would have counted them.
  void SetBackendStats(uint32_t id, const ballast_backend_stats& stats);
  void SetBackendBounces(uint32_t id, const ballast_backend_bounces& bounces);
  void SetBackendLatency(uint32_t id, const LatencyHistograms& latency);
  void SetVipStats(uint32_t vip_id, const ballast_vip_stats& stats);
  void SetQuicStats(uint32_t vip_id, const ballast_quic_stats& stats);
  void CountVerdict(ballast_verdict v, uint64_t n);
  // An entry of flow map `map` (one of kFlowMaps), as the program records one.
  absl::Status AddFlow(const char* map, const ballast_flow_key& key, const ballast_flow& flow);
  // Writes since construction, by method name (how the engine programmed).
  size_t Calls(std::string_view method) const;

 private:
  // Counts the call; the injected failure for `method`, if any (consumed).
  absl::Status Enter(std::string_view method) const;
  bool HasVipAddress(const IpAddress& addr) const;  // with mu_ held

  const Options options_;
  mutable std::mutex mu_;
  Settings settings_;
  std::map<std::string, VipEntry> vips_;  // by VipKeyString
  std::set<IpAddress> markers_;
  std::map<uint32_t, BackendEntry> backends_;
  std::map<uint32_t, std::vector<uint32_t>> tables_;
  std::map<uint32_t, std::vector<uint64_t>> histories_;
  ballast_esc_stats esc_ = {};
  std::map<uint32_t, ballast_backend_stats> backend_stats_;
  std::map<uint32_t, ballast_backend_bounces> bounces_;
  std::map<uint32_t, LatencyHistograms> latency_;
  std::map<uint32_t, ballast_vip_stats> vip_stats_;
  std::map<uint32_t, std::vector<QuicConfig>> quic_configs_;  // fake_dataplane_quic.cc
  std::map<uint32_t, std::vector<QuicServer>> quic_servers_;
  std::map<uint32_t, ballast_quic_stats> quic_stats_;
  std::array<uint64_t, BALLAST_V_MAX> verdicts_ = {};
  std::map<std::string, std::vector<std::pair<ballast_flow_key, ballast_flow>>, std::less<>> flows_;
  std::map<std::string, AttachMode, std::less<>> attached_;
  mutable std::map<std::string, absl::Status, std::less<>> fail_next_;
  mutable std::map<std::string, size_t, std::less<>> calls_;
};

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_FAKE_DATAPLANE_H_
