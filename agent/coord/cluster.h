// ClusterNode: lbagent's part in a cluster of routers sharing one etcd
// (docs/cluster.md). It owns the etcd client, the EtcdStore the engine
// writes through, this node's session (lease), the leader election, the
// watch on the replicated state, and one background loop (every
// `tick`) that:
//   - reads `<prefix>/state` (also the reachability probe): a newer state is
//     adopted by the engine (validate -> program a diff); etcd unreachable
//     -> frozen (the health controller's decisions are dropped, operator
//     writes fail UNAVAILABLE), audited once, shown in status and metrics;
//     back -> re-read, converge (the same state writes no map), audited;
//   - keeps a session; while it has one, campaigns for `<prefix>/leader`;
//     the leader makes a fenced write each tick (`<prefix>/leader-beat`)
//     and steps down, audited, as soon as etcd rejects a fenced write
//     (a newer leader exists) or its session is lost;
//   - publishes this node's NodeRecord at `<prefix>/nodes/<node>` under its
//     session lease (config hash, per-VIP Maglev table hashes read back from
//     the data plane, its health observations, leader, frozen), reads every
//     node's record, counts the nodes whose hashes differ from ours
//     (alerting `config_drift` after drift_alert_s) and the backends whose
//     observers disagree (`split_view`, agent/health/quorum.h).
// Gate() is the health controller's decision gate (health_controller.h).
//
// VIP ownership (Vip.ownership ACTIVE_STANDBY; docs/cluster.md;
// cluster_owner.cc): two more loops on their own threads hold at most one
// etcd::Ownership per such VIP on `<prefix>/owners/<vip>` (TTL =
// lease_ttl_s): the renew loop (every 100 ms, no etcd call, no engine lock,
// no log line or audit record, so that no slow etcd call, state disk or log
// delays a renewal) and the sync loop (acquire, release, status; its etcd
// calls, its wait for the engine's state and its audits and logs run
// outside owner_mu_). The owner writes the
// data-plane owner deadline `Ownership::deadline() - margin` (margin =
// TTL/4) whenever the lease is renewed; on loss (on_lost) the deadline is
// set to the past at once, audited `vip_lost`. A node that does not hold
// the lease keeps the VIP stopped (the engine creates it stopped,
// EngineOptions::vip_ownership) and tries to acquire it every 500 ms while
// etcd is up and it is not frozen; etcd grants it only once the previous
// owner's lease is gone, and only then is the deadline moved to the future
// (audited `vip_acquired`). Stop() stops the VIPs it owns, then releases.
//
// Threading: the loops and the watch run on their own threads; Gate() runs
// on the health thread; the accessors are thread-safe. Stop() before the
// engine is destroyed.
#ifndef BALLAST_AGENT_COORD_CLUSTER_H_
#define BALLAST_AGENT_COORD_CLUSTER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/coord/drift.h"
#include "agent/coord/etcd_store.h"
#include "agent/core/clock.h"
#include "agent/core/router_engine.h"
#include "agent/etcd/client.h"
#include "agent/etcd/election.h"
#include "agent/etcd/ownership.h"
#include "agent/etcd/session.h"
#include "agent/etcd/watch.h"
#include "ballast/v1/agent.pb.h"
#include "ballast/v1/api.pb.h"

namespace ballast::coord {

struct ClusterOptions {
  v1::Cluster config;  // validated (ValidateAgentConfig)
  std::string cache_file;
  std::string agent_version;
  // This node's admin API, published in its NodeRecord (lbctl drill).
  std::string admin_socket;
  std::string admin_tcp;
  absl::Duration tick = absl::Milliseconds(500);
};

class ClusterNode {
 public:
  // Creates the client and the store; contacts nobody yet.
  static absl::StatusOr<std::unique_ptr<ClusterNode>> Create(ClusterOptions options);
  ~ClusterNode();
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // The store to give the engine (EngineOptions::store).
  std::shared_ptr<EtcdStore> store() const { return store_; }

  // Starts the loop and the watch; `engine` and `clock` must outlive Stop().
  void Start(core::RouterEngine* engine, const core::Clock* clock);
  // Stops both, resigns leadership and closes the session (best effort).
  void Stop();

  bool IsLeader() const { return leader_.load(); }
  bool Frozen() const { return frozen_.load(); }
  // The ACTIVE_STANDBY VIPs (VipKeyText) whose lease this node holds, as of
  // the owner loop's last status pass (every 500 ms; a loss also sets the
  // data-plane deadline to the past at once). For the BGP announcer.
  std::set<std::string> OwnedVips() const;

  // The health controller's decision gate (see the file comment).
  void Gate(std::vector<core::HealthDecision>* decisions, std::vector<core::HealthRecord>* records);

  // `lbctl config diff`.
  absl::StatusOr<v1::ConfigDiffResponse> Diff() const;

  // `lbctl drill --mode fence` (api.proto YieldVipRequest): if this node
  // owns the VIP, stops it in the data plane at once (deadline in the
  // past), releases the lease and stays out of the contest until another
  // node holds the VIP (at most the hold-off) so that a standby acquires
  // it; audited `vip_yielded` with `actor`.
  // FAILED_PRECONDITION when it does not own the VIP, or no other live,
  // unfrozen node could take it over; NOT_FOUND for an unknown VIP.
  absl::StatusOr<v1::YieldVipResponse> Yield(const v1::YieldVipRequest& req,
                                             const core::Actor& actor);

 private:
  explicit ClusterNode(ClusterOptions options);
  void Loop();
  void Tick();
  // cluster_owner.cc: the renew loop (data-plane deadlines, losses; no
  // etcd call) and the sync loop (acquire, release, status; etcd calls
  // outside owner_mu_).
  void RenewLoop();
  void OwnerRenew();
  void OwnerLoop();
  void OwnerSync();
  void Publish();
  void ReadPeers();
  void Analyse();
  void StepDown(const std::string& why, const std::string& action);
  void OnFenced(const absl::Status& s);
  void EnsureWatch();
  void OnWatch(const etcd::WatchUpdate& u);
  void Audit(const std::string& action, const std::string& vip, const std::string& backend,
             const std::string& inputs_json, const std::string& message);
  std::string Key(absl::string_view rest) const;

  const ClusterOptions options_;
  const std::string prefix_;
  const int64_t ttl_s_;
  std::unique_ptr<etcd::Client> client_;
  std::shared_ptr<EtcdStore> store_;
  core::RouterEngine* engine_ = nullptr;
  const core::Clock* clock_ = nullptr;

  // Loop thread only.
  std::unique_ptr<etcd::Session> session_;
  std::unique_ptr<etcd::Election> election_;
  std::unique_ptr<etcd::Watch> watch_;
  DriftTracker drift_;
  std::set<std::string> split_alerted_;  // "vip backend"
  // Publish(): the Maglev table hashes last read back from the data plane.
  std::map<std::string, std::string> tables_;
  int64_t tables_revision_ = -1;
  int64_t tables_map_update_ms_ = -1;
  int64_t tables_read_ms_ = 0;

  std::atomic<bool> leader_{false};
  std::atomic<bool> frozen_{false};
  std::atomic<bool> fenced_{false};      // set by OnFenced (any thread), handled by the loop
  std::atomic<bool> watch_dead_{false};  // the watch ended (compacted, failed)

  mutable std::mutex mu_;  // guards the members below
  std::condition_variable cv_;
  bool stop_ = false;
  bool up_ = true;  // as last seen (start: assume up, the first tick decides)
  int64_t since_ms_ = 0;
  std::string leader_name_;
  std::map<std::string, v1::NodeRecord> peers_;  // every live node's record, ours included
  v1::NodeRecord self_;
  std::vector<v1::Observation> observations_;  // the health thread's latest
  std::vector<std::string> differences_;
  std::vector<std::string> alerts_;
  uint32_t split_views_ = 0;

  std::thread thread_;

  // VIP ownership (owner thread only, except the atomics).
  struct OwnedVip {
    v1::VipKey key;
    std::unique_ptr<etcd::Ownership> own;
    std::shared_ptr<std::atomic<bool>> lost = std::make_shared<std::atomic<bool>>(false);
    std::string holder;                   // the holder as last seen ("" none)
    uint64_t written_ns = 0;              // the deadline last written while owner
    std::optional<uint64_t> dp_deadline;  // as last read back
    uint64_t fenced = 0;
  };
  // owner_mu_ guards owned_, hold_until_, retired_ and owner_notes_: the
  // renew loop, the sync loop and Yield() (an API thread) hold it briefly,
  // never across an etcd call, a wait for the engine's lock (State(): a
  // commit holds it across its store's disk or etcd work), a log line or an
  // audit record. Taken before mu_, never after.
  std::mutex owner_mu_;
  std::map<std::string, OwnedVip> owned_;  // by VipKeyText, the ACTIVE_STANDBY VIPs
  // VIPs yielded on purpose: no acquisition before this (steady clock), or
  // until another node holds the VIP, whichever comes first.
  std::map<std::string, uint64_t> hold_until_;  // CLOCK_MONOTONIC ns (the Clock)
  // Ownerships the renew loop found lost: released by the sync loop.
  std::vector<std::unique_ptr<etcd::Ownership>> retired_;
  // What the renew loop noticed (a lost lease, a failed deadline write):
  // audited and logged by the sync loop, outside owner_mu_, so that neither
  // a stalled log (stderr, journald) nor an event subscriber ever holds the
  // renew loop's thread.
  struct OwnerNote {
    std::string action;  // "vip_lost", or "" for a log line only
    std::string vip;
    std::string inputs_json;
    std::string message;
    std::string error;  // log line only: the failed write's error
  };
  std::vector<OwnerNote> owner_notes_;
  // Audits and logs `notes` (the sync loop and Stop(); owner_mu_ not held).
  void EmitOwnerNotes(const std::vector<OwnerNote>& notes);
  std::vector<v1::VipOwnerStatus> owner_status_;  // guarded by mu_
  std::thread owner_thread_;
  std::thread renew_thread_;
};

}  // namespace ballast::coord

#endif  // BALLAST_AGENT_COORD_CLUSTER_H_
