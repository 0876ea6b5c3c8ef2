// The Engine (engine.h) of one router: the state in a Store (a local file
// standalone, etcd in a cluster), the data plane in this process
// (Dataplane), audit records in a local append-only file (AuditLog).
//
// Its implementation, by concern:
//   router_engine.cc     start-up, the commit transaction, events, teardown
//   engine_requests.cc   the operator's requests (each a Mutation)
//   engine_program.cc    state -> maps (the difference of two images, image.h)
//   engine_status.cc     GetStatus, counters, flow counts, audit queries
//   engine_health.cc     the tick and health checking's port (engine_health.h)
//   engine_cluster.cc    cluster mode's hooks (coord::ClusterNode)
//   engine_bounce.cc     where second-chance bounces arrive (bounce_path.h)
//
// Life cycle (lbagent):
//   auto dp = Dataplane::Open(...);                 // adopts pinned maps/program
//   auto engine = RouterEngine::Start(std::move(dp), options, clock, initial);
//     - loads the state file; a missing file is the first start and the
//       state becomes `initial` (validated); a corrupt or invalid file is an
//       error (the agent refuses to start, it never resets silently);
//     - reconciles the maps with the state: writes everything the state
//       says, removes VIPs, markers and backends the state does not have,
//       rewrites only the tables whose contents differ (a restart with the
//       same state rewrites none);
//     - attaches the program to global.interface if it is not attached
//       (never detaches: restart and crash keep forwarding);
//     - on a first start, stores the state only once all this worked
//       (options.defer_initial_save: once SaveInitialState() is called).
//   serve the API over `*engine`; call Tick() periodically (drain deadlines);
//   destroy the engine on SIGTERM: the program and maps stay attached.
//
// Everything in the Engine contract (engine.h) holds. Additionally:
//  - A mutation that changes nothing (e.g. the same weight again) is not
//    persisted and does not bump the generation; it is still audited.
//  - Requests are checked in this order: the request's own fields
//    (INVALID_ARGUMENT, named like "vip 198.18.0.10:80/tcp backend 198.18.1.7:
//    weight 3000 is out of range 0..1000"), existence (NOT_FOUND /
//    ALREADY_EXISTS), then the whole state with the change applied
//    (FAILED_PRECONDITION for limits and cross-field rules, e.g. too many
//    VIPs, or an IPv4 backend without global.source_v4). ApplyConfig reports
//    every config problem as INVALID_ARGUMENT with an index path
//    ("vips[0].backends[2].weight: ...").
//  - After Teardown() every mutation fails with FAILED_PRECONDITION.
//  - Backends: pinned and evicted backends are EVICTED in the map (their
//    flows move); draining ones are DRAINING with the deadline converted to
//    CLOCK_MONOTONIC through the injected Clock.
//
// Thread-safety: as Engine (one mutex; the Dataplane is only touched with it
// held). Tick() and the accessors below follow the same rule. Audit records
// are queued after the mutex is released; no call waits for the audit
// log's disk but PruneAudit() and FlushAudit(), which hold no engine lock.
#ifndef BALLAST_AGENT_CORE_ROUTER_ENGINE_H_
#define BALLAST_AGENT_CORE_ROUTER_ENGINE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/message.h>

#include "agent/core/audit_log.h"
#include "agent/core/bounce_path.h"
#include "agent/core/clock.h"
#include "agent/core/engine.h"
#include "agent/core/flow_hash_seed.h"
#include "agent/core/quic_ids.h"
#include "agent/core/engine_health.h"
#include "agent/core/image.h"
#include "agent/core/store.h"
#include "agent/core/state_store.h"
#include "agent/dataplane/port.h"

namespace ballast::core {

struct EngineOptions {
  std::string state_file = "/var/lib/ballast/state.pb";
  std::string audit_log = "/var/lib/ballast/audit.jsonl";
  uint64_t audit_max_bytes = AuditLog::kDefaultMaxBytes;  // rotated past this
  AuditLog::Syncer audit_sync;  // null: fdatasync (tests inject a slow disk)
  dataplane::AttachMode attach_mode = dataplane::AttachMode::kAuto;
  // Status counts flows per backend by reading at most this many entries of
  // the connection table (its three maps). The read runs outside the
  // engine's lock, about 0.5 us an entry, so the default bounds a status
  // call at about 0.5 s on a huge table (status then says its counts are
  // lower bounds). 0: no limit.
  size_t flow_scan_limit = size_t{1} << 20;
  std::string agent_version = "0.1.0";
  // Where the state lives (store.h). Null: the local state file
  // (FileStore over state_file), the standalone default.
  std::shared_ptr<Store> store;
  // A first start (nothing stored yet) programs the data plane from
  // `initial` and stores that state only once this worked, so a start that
  // fails stores nothing and the next one begins from `initial` again.
  // true: SaveInitialState() stores it (lbagent, once it serves: a start
  // that fails after the engine, e.g. its admin socket, stores nothing
  // either); false: Start() does, before it returns.
  bool defer_initial_save = false;
  // Cluster mode: a VIP with ownership ACTIVE_STANDBY is created stopped
  // (owned mode, deadline in the past) and forwarded only once the cluster
  // node (coord::ClusterNode) holds its lease and renews its deadline.
  // false (standalone): the field is ignored, every VIP is forwarded.
  bool vip_ownership = false;
  // Second-chance bounces (bounce_path.h): the device through which this
  // router reaches each address (lbagent: a netlink route lookup). Null:
  // RefreshBouncePaths() does nothing (tests that do not look at it).
  RouteLookup route_lookup;
  // Where the devices attached for bounces are recorded, so that the next
  // run detaches those no backend needs any more. "": not recorded.
  std::string bounce_devices_file;
  // Where flow hash seeds come from (flow_hash_seed.h). Null: getrandom.
  SeedSource seed_source;
  // Set: the data plane hashes with this seed whatever the state holds, and
  // the seed cannot be rotated through the API (lbagent: a standalone
  // router's flow_hash_seed_file, or the public seed for one that announces
  // over BGP without it: routers behind one ECMP group must agree).
  std::optional<dataplane::FlowHashSeed> fixed_flow_hash_seed;
  // Where QUIC-LB keys come from (quic_ids.h). Null: getrandom.
  QuicKeySource quic_key_source;
  // The VIP addresses are announced over BGP (lbagent with a `bgp`
  // section). An address whose last VIP goes is then *retired*: its address
  // marker stays in the data plane, so the packets its route still brings
  // are dropped (drop_vip_unserved) instead of passed to the kernel, which
  // would route them back to the ToR until their TTL ran out. It stays until
  // ReleaseRetiredAddresses() (the announcer, once BIRD no longer exports
  // the route and the ToR had time to follow; docs/bgp.md, "Deleting a
  // VIP"). Start-up keeps a marker no VIP uses as retired too (an earlier
  // run may have been waiting for its withdrawal). false: the marker goes
  // with the address's last VIP.
  bool retire_addresses = false;
};

// What one programming pass wrote (for logs, tests and the benchmark).
struct ProgramStats {
  int settings = 0;
  int backends_set = 0;
  int backends_cleared = 0;
  int vips_upserted = 0;
  int vips_deleted = 0;
  int tables_set = 0;
  int histories_set = 0;  // slot histories written (established second chance)
  int quic_set = 0;       // QUIC VIPs whose configurations or server IDs were written
  int markers_deleted = 0;
  // ACTIVE_STANDBY VIPs found forwarded without a fence (switched at
  // runtime) and stopped in this pass (vip_ownership only).
  int owners_stopped = 0;
  int attached = 0;  // Attach() calls (a no-op where our program already runs)
  int detached = 0;
  // Writes to the maps (the attachment is not a map write; Attach() on a
  // device that already runs our program is a no-op but is counted in
  // `attached`).
  int map_writes() const {
    return settings + backends_set + backends_cleared + vips_upserted + vips_deleted + tables_set +
           histories_set + markers_deleted + owners_stopped + quic_set;
  }
};

struct EngineHealth {
  uint64_t generation = 0;
  int64_t started_unix_ms = 0;
  int64_t last_map_update_unix_ms = 0;             // last successful programming pass
  uint64_t map_update_errors = 0;                  // failed programming passes since start
  uint64_t evictions = 0;                          // drain deadlines that passed since start
  ProgramStats start_reconcile;                    // what the start-up reconciliation wrote
  std::map<std::string, uint64_t> health_actions;  // automated health actions by kind
  bool torn_down = false;
  int64_t store_revision = 0;       // the store's revision of the running state
  uint64_t adopted = 0;             // replicated states applied (AdoptReplicated)
  uint64_t adopted_map_writes = 0;  // map writes those applications made
  uint64_t commit_conflicts = 0;    // operator writes retried after another writer won
  // The audit log's (AuditLog::Stats): records whose write or sync failed
  // (disk full, I/O error), records refused by its full queue (the disk too
  // slow), and why the latest of either was lost.
  uint64_t audit_append_failures = 0;
  uint64_t audit_records_dropped = 0;
  std::string last_audit_error;
};

class RouterEngine final : public Engine {
 public:
  // See the file comment. `clock` must outlive the engine. Errors: DataLoss
  // (corrupt or invalid state file), the state file's or audit log's I/O
  // errors, the data plane's errors (reconcile, attach).
  static absl::StatusOr<std::unique_ptr<RouterEngine>> Start(
      std::unique_ptr<dataplane::DataplanePort> dp, const EngineOptions& options,
      const Clock* clock, const v1::Config& initial);
  ~RouterEngine() override;

  // Engine.
  absl::Status AddVip(const v1::Vip& vip, const Actor& actor) override;
  absl::Status DeleteVip(const v1::VipKey& key, const Actor& actor) override;
  std::vector<v1::Vip> ListVips() const override;
  absl::Status AddBackend(const v1::VipKey& vip, const v1::Backend& backend,
                          const Actor& actor) override;
  absl::Status DeleteBackend(const v1::VipKey& vip, const std::string& address,
                             const Actor& actor) override;
  absl::Status SetWeight(const v1::VipKey& vip, const std::string& address, uint32_t weight,
                         const Actor& actor) override;
  absl::Status Drain(const v1::VipKey& vip, const std::string& address, uint32_t deadline_s,
                     const Actor& actor) override;
  absl::Status Undrain(const v1::VipKey& vip, const std::string& address,
                       const Actor& actor) override;
  absl::Status Release(const v1::VipKey& vip, const std::string& address,
                       const Actor& actor) override;
  absl::Status RelearnHealth(const v1::VipKey& vip, const Actor& actor) override;
  absl::StatusOr<v1::StatusResponse> GetStatus() const override;
  absl::StatusOr<v1::ListFlowsResponse> ListFlows(
      const v1::ListFlowsRequest& request) const override;
  v1::Config GetConfig() const override;
  absl::StatusOr<v1::ApplyConfigResponse> ApplyConfig(const v1::Config& config, bool dry_run,
                                                      const Actor& actor) override;
  absl::StatusOr<std::vector<v1::AuditRecord>> QueryAudit(int64_t since_unix_ms,
                                                          uint32_t limit) const override;
  uint64_t Subscribe(EventSink sink) override;
  void Unsubscribe(uint64_t handle) override;
  absl::StatusOr<v1::RotateFlowHashSeedResponse> RotateFlowHashSeed(const std::string& reason,
                                                                    const Actor& actor) override;
  absl::StatusOr<v1::QuicConfigChangeResponse> RotateQuicConfig(const v1::VipKey& vip,
                                                                const std::string& reason,
                                                                const Actor& actor) override;
  absl::StatusOr<v1::QuicConfigChangeResponse> RetireQuicConfig(const v1::VipKey& vip,
                                                                const std::string& reason,
                                                                const Actor& actor) override;
  absl::StatusOr<v1::ExportQuicConfigResponse> ExportQuicConfig(const v1::VipKey& vip,
                                                                const std::string& address,
                                                                const Actor& actor) override;
  absl::Status Teardown(const Actor& actor) override;
  bool ShutdownRequested() const override;

  // Stores the state a first start made from `initial` (a no-op when it is
  // stored already: not a first start, an earlier call or a commit since).
  // In a shared store that another node initialised meanwhile, that state
  // wins and is adopted (RefreshFromStore). Errors: the store's; nothing
  // was stored then.
  absl::Status SaveInitialState();

  // Evicts every draining backend whose deadline (by the Clock) has passed:
  // state, file, data plane, event and audit record (actor "automation").
  // Returns how many were evicted.
  absl::StatusOr<int> Tick();

  // Frees the data plane's expired handshake slots (Dataplane::
  // ExpireHandshakes); the agent calls it every minute. Returns how many.
  absl::StatusOr<uint64_t> ExpireHandshakes();

  // Second chance's bounce paths (engine_bounce.cc): looks up each backend's
  // device (options.route_lookup, outside the lock), attaches the lb program
  // where bounces arrive and nothing runs it, detaches it where this agent
  // attached it and no backend needs it any more, logs each problem once
  // and keeps the per-backend view GetStatus() shows. The agent calls it at
  // start, after state changes and periodically (routes change). Errors:
  // recording the devices (bounce_devices_file); the rest is reported.
  absl::Status RefreshBouncePaths();

  // Drops audit records older than `days` days (0 = keep everything). The
  // audit log's writer thread does it; the caller waits for it (the disk),
  // holding no engine lock.
  absl::StatusOr<size_t> PruneAudit(uint32_t days);
  // Waits until the audit records of every call that returned so far are
  // written and synced (AuditLog::Flush); destroying the engine does too.
  void FlushAudit();

  // ---- health checking (driven by HealthController; types in engine_health.h) ----

  // The configured pools with their backends' counters (read from the maps).
  absl::StatusOr<HealthInputs> ReadHealthInputs() const;
  // Stores the decisions whose mark or pin differs from the state's (a
  // decision for a backend that no longer exists is ignored), persists and
  // programs the VIPs concerned, then audits `records`. Nothing changed and
  // no records: a no-op.
  absl::Status ApplyHealth(const std::vector<HealthDecision>& decisions,
                           const std::vector<HealthRecord>& records);

  // Status-only health details (not persisted), shown by GetStatus().
  void SetHealthView(HealthView view);

  // ---- cluster mode (coord::ClusterNode) ----

  // Makes `state`, read from the store at `revision` (a watch, or a re-read
  // after the store was unreachable), the running state: validated as a
  // whole, then programmed as a diff against what the maps hold (the same
  // state again writes nothing). Older or equal revisions are ignored.
  // `actor` is audited ("replication"). On a validation or programming error
  // the running state stays (and the error is returned).
  absl::Status AdoptReplicated(const v1::State& state, int64_t revision, const Actor& actor);
  // Re-reads the store (Load) and adopts what it holds.
  absl::Status RefreshFromStore(const Actor& actor);
  // Writes an audit record (and sends an event of the same kind) for
  // something this node noticed or did outside a state change, e.g.
  // "coordination_lost", "leader_elected", "fenced", "split_view". Takes
  // no engine lock and never waits for the disk (the record is queued):
  // the cluster's owner calls it under its renewal lock.
  void Record(const Actor& actor, const std::string& action, const std::string& vip,
              const std::string& backend, const std::string& inputs_json,
              const std::string& message);
  // The coordination view shown in GetStatus() (and so in metrics).
  void SetCoordination(v1::Coordination view);
  // The BGP announcement view shown in GetStatus() (agent/bgp/agent_announcer.h).
  void SetAnnouncement(v1::Announcement view);
  // `lbctl config diff`: answered by `provider` when set (cluster mode);
  // otherwise the standalone answer (this node alone, no differences).
  using DiffProvider = std::function<absl::StatusOr<v1::ConfigDiffResponse>()>;
  void SetDiffProvider(DiffProvider provider);
  absl::StatusOr<v1::ConfigDiffResponse> ConfigDiff() const override;
  // `lbctl drill --mode fence`: answered by `provider` when set (cluster
  // mode, ClusterNode::Yield); otherwise FAILED_PRECONDITION.
  using YieldProvider =
      std::function<absl::StatusOr<v1::YieldVipResponse>(const v1::YieldVipRequest&, const Actor&)>;
  void SetYieldProvider(YieldProvider provider);
  absl::StatusOr<v1::YieldVipResponse> YieldVip(const v1::YieldVipRequest& req,
                                                const Actor& actor) override;
  // Commits the change like any write (audited `set_ownership`, scoped to
  // the VIP). With EngineOptions::vip_ownership, a VIP switched to
  // ACTIVE_STANDBY is stopped in the same programming pass (Program: a VIP
  // the state says is ACTIVE_STANDBY but that the data plane forwards
  // without a fence is stopped); only the cluster node's owner loop starts
  // it again, once it holds the lease.
  absl::Status SetVipOwnership(const v1::VipKey& key, v1::VipOwnership ownership,
                               const Actor& actor) override;
  // Validates the result (VIP exists, mode, ranges, sizes) and audits it
  // as `drill` (inputs: the result as JSON).
  absl::Status RecordDrill(const v1::DrillResult& result, const Actor& actor) override;

  // ---- retired VIP addresses (EngineOptions::retire_addresses) ----

  // The addresses no VIP uses whose marker the data plane still holds, with
  // when each was retired (CLOCK_MONOTONIC ns, by the Clock).
  std::map<IpAddress, uint64_t> RetiredAddresses() const;
  // Removes the markers of `addresses`, each given with the retirement time
  // RetiredAddresses() returned: one retired again since (a VIP came and
  // went) or in use again is left alone. Returns the addresses released.
  absl::StatusOr<std::vector<IpAddress>> ReleaseRetiredAddresses(
      const std::map<IpAddress, uint64_t>& addresses);

  EngineHealth Health() const;
  v1::State State() const;  // a copy of the current state
  // What the data plane's maps hold now (read back), e.g. to check that a
  // rejected request left them untouched.
  absl::StatusOr<Image> ReadDataplane() const;
  // The table the data plane holds for a VIP (read back from the map).
  absl::StatusOr<std::vector<uint32_t>> ReadTable(const v1::VipKey& vip) const;
  // Dataplane::SetVipOwnerDeadline / GetVipOwner for a VIP (cluster mode's
  // ownership). Callable from any thread (they do not take the engine lock).
  absl::Status SetVipOwnerDeadline(const v1::VipKey& vip, std::optional<uint64_t> monotonic_ns);
  absl::StatusOr<dataplane::VipOwner> GetVipOwner(const v1::VipKey& vip) const;

 private:
  struct AuditEntry {
    std::string action;
    std::string vip;
    std::string backend;
    std::string inputs_json;
  };
  struct Mutation {
    std::vector<AuditEntry> audit;  // at least one
    std::vector<v1::Event> events;  // kind/vip/backend/message; time and generation filled in
    // Set by the change: false = nothing changed (not persisted, no new
    // generation). `scoped`: the change touched only the VIPs in `scope`
    // (canonical keys; added, changed or deleted), so validation, ids and
    // the image are updated for those VIPs only (see ValidateVipChange,
    // UpdateIdsOfVip, BuildImage). `ids_changed`: backends or VIPs were added
    // or removed. `diff`: ApplyConfig's diff.
    bool changed = true;
    bool scoped = false;
    bool ids_changed = true;
    std::vector<v1::VipKey> scope;
    std::vector<std::string> diff;
    // An automated decision (health, drain deadline): a clustered store
    // lets only the leader write it, fenced.
    bool automation = false;
  };
  using Change = std::function<absl::Status(v1::State&, Mutation&)>;
  struct CommitResult {
    std::vector<std::string> diff;
    uint64_t generation = 0;
  };

  // A fresh flow hash seed (EngineOptions::seed_source).
  absl::StatusOr<dataplane::HashSeed> DrawSeed() const;
  // BuildImage(), with EngineOptions::fixed_flow_hash_seed when set: every
  // image the engine programs is built here.
  absl::StatusOr<BuiltImage> Build(const v1::State& state, const Image* previous,
                                   const std::set<dataplane::VipKey>* only_vips,
                                   bool keep_tables = true) const;
  // Rotation or retirement of a QUIC VIP's configuration (engine_quic.cc).
  absl::StatusOr<v1::QuicConfigChangeResponse> ChangeQuicConfig(const v1::VipKey& vip,
                                                                const std::string& reason,
                                                                bool rotate, const Actor& actor);

  RouterEngine(std::unique_ptr<dataplane::DataplanePort> dp, EngineOptions options,
               const Clock* clock, std::unique_ptr<AuditLog> audit);

  // Applies `change` to a copy of the state, validates, persists, programs;
  // see the contract. Audits and emits events after releasing the lock.
  absl::StatusOr<CommitResult> Commit(const Actor& actor, Mutation m, const Change& change,
                                      bool dry_run, absl::StatusCode whole_state_code);
  absl::StatusOr<CommitResult> CommitLocked(Mutation& m, const Change& change, bool dry_run,
                                            absl::StatusCode whole_state_code);
  // Writes the difference between `from` (what the maps hold) and `to`.
  // `scope` non-null: `to` is a delta for these VIPs (BuildImage only_vips)
  // and only they (and their backends) are compared and written.
  absl::Status Program(const Image& from, const BuiltImage& to,
                       const std::set<dataplane::VipKey>* scope, ProgramStats* stats);
  // Attaches to the devices of `want` this engine has not attached, and
  // detaches from those it attached that are no longer wanted.
  absl::Status ProgramExtraInterfaces(dataplane::DataplanePort& dp,
                                      const std::set<std::string>& want, ProgramStats* stats);
  // A device leaving `interface` or `extra_interfaces`: true if bounces
  // still arrive there, and then it stays attached, now for them.
  bool KeepForBounces(const std::string& device);
  // Writes bounce_.attached to options_.bounce_devices_file; Load reads
  // such a file (nothing when it is missing).
  absl::Status SaveBounceDevices() const;
  static std::set<std::string> LoadBounceDevices(const std::string& path);
  // Reads the maps and programs `state` over them (start-up, and recovery
  // after a failed programming pass).
  absl::Status ReconcileLocked(const v1::State& state, ProgramStats* stats);
  // Program()'s bookkeeping of retired addresses: `emptied` holds the
  // addresses of the VIPs it deleted; those no VIP of the result uses are
  // retired now, and every address the result uses is no longer retired.
  void NoteRetired(const Image& from, const Image& to, const std::set<dataplane::VipKey>* scope,
                   const std::set<IpAddress>& emptied, uint64_t now_ns);
  // GetStatus() but the data plane's counters and the flow counts (mu_
  // held).
  absl::Status StatusLocked(v1::StatusResponse* out) const;
  // The data plane's counters for what StatusLocked() filled (verdicts, VIP
  // and backend counters, the attach mode of `attached_if`); no lock.
  absl::Status ReadCounters(const std::string& attached_if, v1::StatusResponse* out) const;
  // Live flows per backend id from one read of the connection table (up to
  // flow_scan_limit entries; no engine lock needed: map reads only), and
  // each flow map's entries read and capacity (out->flow_tables).
  absl::StatusOr<size_t> CountLiveFlows(const dataplane::Settings& timeouts,
                                        std::vector<uint64_t>* flows,
                                        v1::StatusResponse* out) const;
  // Reads the flow maps (dataplane::kFlowMaps, in order) until
  // FlowScanLimit() entries were read: `visit` for each entry with its
  // map's name, then `done` (may be null) with each map's count. Returns
  // the entries read. Map reads only: no engine lock needed.
  using FlowVisit =
      std::function<void(const char* map, const ballast_flow_key&, const ballast_flow&)>;
  using FlowMapDone = std::function<void(const char* map, size_t entries)>;
  absl::StatusOr<size_t> ScanFlowMaps(const FlowVisit& visit, const FlowMapDone& done) const;
  size_t FlowScanLimit() const;  // options_.flow_scan_limit, 0 = none
  void Finish(const Actor& actor, const Mutation& m, const absl::Status& result,
              uint64_t generation);
  // Finds a backend of a VIP in the state; NOT_FOUND naming what is missing.
  // One backend of one VIP changes: audited as `action` with `request` as
  // its input, scoped to that VIP.
  static Mutation BackendMutation(const v1::VipKey& vkey, const std::string& address,
                                  std::string_view action, const google::protobuf::Message& request,
                                  bool ids_changed);
  // Commits a change to an existing backend: validates the VIP key and the
  // address, runs `check_request` (may be empty) for the request's other
  // fields, finds the backend (NOT_FOUND otherwise), then applies `change`.
  using BackendChange = std::function<absl::Status(v1::State&, v1::Vip&, v1::Backend&, Mutation&)>;
  absl::Status ChangeBackend(const Actor& actor, Mutation m, const v1::VipKey& vkey,
                             const std::string& address,
                             const std::function<absl::Status()>& check_request,
                             const BackendChange& change);
  static absl::Status FindBackend(v1::State& state, const v1::VipKey& vip,
                                  const std::string& address, v1::Vip** vip_out,
                                  v1::Backend** backend_out);

  std::unique_ptr<dataplane::DataplanePort> dp_;
  const EngineOptions options_;
  const Clock* const clock_;
  std::unique_ptr<AuditLog> audit_;
  std::shared_ptr<Store> store_;

  mutable std::mutex mu_;
  // GetStatus()'s connection-table scans take turns (outside mu_).
  mutable std::mutex flow_scan_mu_;
  std::unique_ptr<v1::State> state_;      // replaced whole by each commit
  int64_t revision_ = 0;                  // the store's revision of state_
  bool initial_unsaved_ = false;          // a first start's state, not stored yet
  v1::Coordination coordination_;         // guarded by mu_
  v1::Announcement announcement_;         // guarded by mu_
  DiffProvider diff_provider_;            // guarded by mu_
  YieldProvider yield_provider_;          // guarded by mu_
  Image image_;                           // what the maps hold (as last programmed)
  std::string attached_if_;               // device the program was attached to by this engine
  std::set<std::string> attached_extra_;  // Global.extra_interfaces attached by this engine
  // Second chance's bounce paths (guarded by mu_): the memory, the last
  // facts and the per-backend view of RefreshBouncePaths().
  BounceState bounce_;
  BounceFacts bounce_facts_;
  std::map<IpAddress, BackendBouncePath> bounce_view_;
  // Retired VIP addresses (EngineOptions::retire_addresses) and when each
  // was retired, CLOCK_MONOTONIC ns; guarded by mu_.
  std::map<IpAddress, uint64_t> retired_;
  EngineHealth health_;
  HealthView health_view_;  // guarded by mu_
  // health_.generation, for Record() and Finish() without mu_.
  std::atomic<uint64_t> generation_{0};
  // RelearnHealth requests per VIP since start (HealthPool::relearn_requests).
  std::map<dataplane::VipKey, uint64_t> relearn_requests_;  // guarded by mu_
  std::atomic<bool> shutdown_{false};

  std::mutex sinks_mu_;
  uint64_t next_sink_ = 1;
  std::map<uint64_t, EventSink> sinks_;
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_ROUTER_ENGINE_H_
