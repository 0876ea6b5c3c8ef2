// Announcer: the agent's way to announce and withdraw each VIP over BGP,
// through BIRD 2's control socket.
//
// Mechanism: one `protocol static` per VIP in BIRD's config, named after the
// VIP (vip_prefix.h: ballast_vip_<hex>), holding one host route, and declared
// `disabled yes`. The agent announces a VIP with `enable <name>` and
// withdraws it with `disable <name>`; BIRD's export filter towards the ToR
// passes only routes of ballast_vip_* protocols (deploy/bird.conf). Why this
// and not "the agent writes an include file of routes and runs `configure`":
//  - Fail-safe by construction. After any BIRD (re)start, and after any
//    `configure` (checked on BIRD 2.0.12: configure restarts a runtime-enabled
//    protocol whose config says `disabled yes`), every VIP is withdrawn until
//    a live agent enables it again. A route file left by a crashed agent
//    would instead keep announcing a VIP after BIRD restarts with no agent.
//  - No whole-config reloads at run time: announce/withdraw touches one
//    protocol; a reload re-evaluates every protocol and every filter, and a
//    config error elsewhere would block the VIP change.
//  - Auditable: `birdc show protocols` lists every VIP by name with its state
//    and the time it last changed; the route content (prefix, blackhole) lives
//    in a reviewed config file, the agent only flips switches.
// The cost: BIRD's config must declare every VIP's protocol (config
// management renders it with VipPrefix::BirdStaticProtocol(), or the
// `ballast-announce render` tool). A desired VIP without a protocol is
// reported as kMissing with that hint, never silently ignored.
//
// Reconciliation: SetDesired() records what should be announced; Reconcile()
// reads `show protocols`, compares (PlanReconcile, pure), sends only the
// enable/disable commands that differ, and reads `show protocols` again to
// confirm. So it is idempotent, repairs anything changed behind its back
// (operator `birdc disable`, `configure`, BIRD restart) and withdraws
// ballast_vip_* protocols that are up but not desired (a VIP removed while the
// agent was down). Callers run it periodically (lbagent: every second) and
// after every SetDesired/Hold. Withdrawals are sent before announcements.
//
// Holds: WithdrawAll(reason) withdraws every ballast_vip_* protocol and keeps
// them withdrawn, whatever SetDesired says, until ReleaseHold(). This is the
// agent's answer to shutdown, fencing, lease loss and an unhealthy data
// plane: a periodic SetDesired(true) cannot undo it by accident.
//
// Thread-safe: every public method takes one mutex; Reconcile() holds it
// across its BIRD round trips (each bounded by the client's timeout).
#ifndef BALLAST_AGENT_BGP_ANNOUNCER_H_
#define BALLAST_AGENT_BGP_ANNOUNCER_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/bgp/bird_client.h"
#include "agent/bgp/bird_reply.h"
#include "agent/bgp/vip_prefix.h"

namespace ballast::bgp {

// One enable/disable the reconciler decided on.
struct Step {
  std::string protocol;
  bool enable = false;  // true: announce ("enable"), false: withdraw ("disable")
  std::string reason;   // why, for the audit log
};

// What BIRD shows for a VIP's protocol.
enum class BirdVipState {
  kUnknown,    // BIRD not reachable (or not asked yet)
  kMissing,    // BIRD's config has no such protocol
  kAnnounced,  // protocol up: the route is in BIRD's table and exported
  kWithdrawn,  // protocol down (disabled)
  kChanging,   // start/stop/flush
  kConflict,   // a protocol of that name exists but is not `Static`
};
const char* BirdVipStateName(BirdVipState s);
BirdVipState StateOfRow(const ProtocolRow& row);

// Pure: the steps that bring BIRD's `show protocols` rows to `want` (VIP ->
// announce). Desired VIPs whose protocol is missing or not Static get no
// step. A desired VIP is enabled unless its protocol is up or starting; every
// other ballast_vip_* protocol that is not down is disabled.
// Withdrawals come first, then announcements, each in name order.
std::vector<Step> PlanReconcile(const std::map<VipPrefix, bool>& want,
                                const std::vector<ProtocolRow>& rows);

struct VipStatus {
  VipPrefix vip;
  std::string protocol;
  bool desired = false;                           // as last given to SetDesired
  bool effective = false;                         // desired and no hold
  BirdVipState bird = BirdVipState::kUnknown;     // as last observed
  std::string bird_since;                         // BIRD's "since" column
  absl::Time last_change = absl::InfinitePast();  // when we last saw `bird` change
  std::string error;                              // last problem with this VIP, empty when in line
};

struct SessionStatus {  // a BGP protocol of BIRD, for status pages
  std::string name;
  std::string state;  // "up", "start", ...
  std::string info;   // "Established", "Active  Socket: ...", ...
};

struct AnnouncerStatus {
  bool bird_reachable = false;
  std::string bird_version;  // "BIRD 2.0.12"
  std::string bird_error;    // last connection/command error, empty when fine
  std::string hold_reason;   // non-empty while WithdrawAll's hold is in force
  absl::Time last_reconcile = absl::InfinitePast();
  std::vector<VipStatus> vips;          // desired VIPs, in VIP order
  std::vector<std::string> orphans;     // ballast_vip_* protocols not desired
  std::vector<SessionStatus> sessions;  // BGP protocols
};

struct ReconcileReport {
  absl::Status status;  // first error, or OK when BIRD now matches
  struct Change {
    Step step;
    absl::Status result;  // BIRD's answer
  };
  std::vector<Change> changes;  // every command sent, in order (audit these)
};

class Announcer {
 public:
  struct Options {
    BirdClient::Options bird;
    std::function<absl::Time()> clock = [] { return absl::Now(); };
  };

  explicit Announcer(Options options);

  // Replaces the desired set: VIP -> announce. VIPs not in the map are
  // withdrawn at the next Reconcile().
  void SetDesired(std::map<VipPrefix, bool> desired);
  // Withdraw everything and hold it withdrawn (see the header comment);
  // reconciles at once. Returns the reconcile's status.
  ReconcileReport WithdrawAll(std::string reason);
  // Ends the hold; the next Reconcile() announces the desired VIPs again.
  void ReleaseHold();

  ReconcileReport Reconcile();
  AnnouncerStatus Status() const;

 private:
  // Reads `show protocols` and updates vip/session status from it.
  absl::StatusOr<std::vector<ProtocolRow>> Observe() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::map<VipPrefix, bool> Want() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unreachable(const absl::Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::function<absl::Time()> clock_;
  mutable absl::Mutex mu_;
  BirdClient client_ ABSL_GUARDED_BY(mu_);
  std::map<VipPrefix, bool> desired_ ABSL_GUARDED_BY(mu_);
  std::string hold_ ABSL_GUARDED_BY(mu_);
  AnnouncerStatus status_ ABSL_GUARDED_BY(mu_);
  std::map<VipPrefix, VipStatus> vips_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ballast::bgp

#endif  // BALLAST_AGENT_BGP_ANNOUNCER_H_
