// The data plane as the engine reaches it: the narrow interface the router
// engine (agent/core) programs and reads, implemented by the real,
// BPF-backed Dataplane (dataplane.h) and by the in-memory FakeDataplane
// (fake_dataplane.h) that lets engine tests run without root.
//
// Every implementation runs the same input checks (checks.h) and keeps the
// same semantics; port_contract_test.cc runs one contract over both. The
// method contracts are Dataplane's (dataplane.h), summarised here.
//
// Thread-safety: as Dataplane's. One owner thread, except
// SetVipOwnerDeadline/GetVipOwner (a lease keep-alive) and ForEachFlowIn
// (the status scan), which may run on another thread.
#ifndef BALLAST_AGENT_DATAPLANE_PORT_H_
#define BALLAST_AGENT_DATAPLANE_PORT_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"
#include "agent/dataplane/quic.h"
#include "agent/dataplane/types.h"
#include "agent/dataplane/vip_key.h"
#include "ballast_abi.h"

namespace ballast::dataplane {

class DataplanePort {
 public:
  virtual ~DataplanePort() = default;

  // ---- programming ----
  virtual absl::Status SetSettings(const Settings& s) = 0;
  virtual absl::StatusOr<Settings> GetSettings() const = 0;
  // A new VIP also gets its address marker (one per VIP address, removed
  // with the address's last VIP); an existing one keeps its ownership. The
  // GUE flag is options.gue, new VIP or not.
  // AlreadyExists if another key holds vip_id.
  virtual absl::Status UpsertVip(const VipKey& key, uint32_t vip_id,
                                 const VipOptions& options = {}) = 0;
  // NotFound if absent; takes the VIP's table and counters with it, and
  // the address marker with the address's last VIP unless
  // options.keep_address_marker.
  virtual absl::Status DeleteVip(const VipKey& key, const DeleteVipOptions& options = {}) = 0;
  virtual absl::StatusOr<std::vector<VipEntry>> Vips() const = 0;
  // The addresses that hold an address marker.
  virtual absl::StatusOr<std::vector<IpAddress>> VipAddressMarkers() const = 0;
  // Removes a marker no VIP uses (kept by DeleteVip, or left by something
  // else) with its filter bit; NotFound if none, FailedPrecondition while a
  // VIP uses the address.
  virtual absl::Status DeleteVipAddressMarker(const IpAddress& addr) = 0;
  virtual absl::Status SetVipOwnerDeadline(const VipKey& key,
                                           std::optional<uint64_t> monotonic_ns) = 0;
  virtual absl::StatusOr<VipOwner> GetVipOwner(const VipKey& key) const = 0;
  virtual absl::Status SetBackend(uint32_t id, const IpAddress& addr, ballast_backend_state state,
                                  uint64_t drain_deadline_ns = 0) = 0;
  // UNUSED again, counters zeroed.
  virtual absl::Status ClearBackend(uint32_t id) = 0;
  // Every slot whose state is not UNUSED, by id.
  virtual absl::StatusOr<std::vector<BackendEntry>> Backends() const = 0;
  virtual absl::Status SetTable(uint32_t vip_id, std::span<const uint32_t> table) = 0;
  // NotFound if vip_id has no table.
  virtual absl::StatusOr<std::vector<uint32_t>> GetTable(uint32_t vip_id) const = 0;
  // The slot history of vip_id's table (established second chance; one
  // `maglev_history` word per slot); empty removes it. NotFound from Get if
  // it has none.
  virtual absl::Status SetHistory(uint32_t vip_id, std::span<const uint64_t> slots) = 0;
  virtual absl::StatusOr<std::vector<uint64_t>> GetHistory(uint32_t vip_id) const = 0;
  // QUIC-LB (quic.h; docs/dataplane.md, "QUIC"): the live configurations
  // of UDP VIP vip_id (at most two: a rotation), empty = not a QUIC VIP.
  // Server IDs of a configuration no longer live (or now of another
  // length) are removed with it. DeleteVip removes both.
  virtual absl::Status SetQuicConfigs(uint32_t vip_id, std::span<const QuicConfig> configs) = 0;
  virtual absl::StatusOr<std::vector<QuicConfig>> GetQuicConfigs(uint32_t vip_id) const = 0;
  // Replaces vip_id's server IDs with `servers` (each of a live
  // configuration): new and changed entries are written before the
  // missing ones are removed. Only backends of the VIP belong here: a
  // server ID reaches its backend while that backend is usable.
  virtual absl::Status SetQuicServers(uint32_t vip_id, std::span<const QuicServer> servers) = 0;
  virtual absl::StatusOr<std::vector<QuicServer>> GetQuicServers(uint32_t vip_id) const = 0;
  // Summed over CPUs; zero for a VIP that never saw a QUIC packet.
  virtual absl::StatusOr<ballast_quic_stats> QuicStats(uint32_t vip_id) const = 0;

  // ---- devices ----
  // NotFound for a device that does not exist.
  virtual absl::Status Attach(std::string_view ifname, AttachMode mode) = 0;
  virtual absl::StatusOr<AttachMode> AttachedMode(std::string_view ifname) const = 0;
  virtual absl::Status Detach(std::string_view ifname) = 0;
  // Detaches and unpins everything; the object is spent afterwards.
  virtual absl::Status Teardown() = 0;
  // The program was adopted from the pins of a previous run.
  virtual bool adopted() const = 0;

  // ---- counters and the connection table ----
  virtual absl::StatusOr<ballast_backend_stats> BackendStats(uint32_t id) const = 0;
  virtual absl::StatusOr<ballast_backend_bounces> BackendBounces(uint32_t id) const = 0;
  // Established second chance counters (summed over CPUs).
  virtual absl::StatusOr<ballast_esc_stats> EscStats() const = 0;
  virtual absl::StatusOr<LatencyHistograms> BackendLatency(uint32_t id) const = 0;
  virtual absl::StatusOr<ballast_vip_stats> VipStats(uint32_t vip_id) const = 0;
  virtual absl::StatusOr<std::array<uint64_t, BALLAST_V_MAX>> Verdicts() const = 0;
  virtual absl::StatusOr<uint64_t> IcmpTooBigLimited() const = 0;
  // Calls `fn` for up to `max` entries of the flow map `map` (one of
  // kFlowMaps); returns how many it saw.
  virtual absl::StatusOr<size_t> ForEachFlowIn(
      const char* map, size_t max,
      const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
      size_t batch = 4096) const = 0;
  virtual absl::StatusOr<uint32_t> MapCapacity(const char* map) const = 0;
  // Frees the handshake slots older than syn_idle; returns how many.
  virtual absl::StatusOr<uint64_t> ExpireHandshakes() = 0;
};

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_PORT_H_
