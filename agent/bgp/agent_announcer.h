// AgentAnnouncer: lbagent's BGP announcement of its VIPs through BIRD
// (docs/bgp.md). Every `interval` (and at once after Kick()) it
//   1. gathers the inputs: the operator hold file, the local data plane's
//      health (dataplane_probe.h), the engine's VIPs and, in cluster mode,
//      which ACTIVE_STANDBY VIPs this node owns and their data-plane owner
//      deadlines;
//   2. decides per VIP address, announce or withdraw and why
//      (DecideAnnouncements, announce_policy.h, pure);
//   3. audits (actor "automation", actions vip_announce / vip_withdraw, the
//      reason in the inputs) and logs every change of a decision;
//   4. hands the desired set to the Announcer and reconciles BIRD with it
//      (announcer.h: enable/disable one static protocol per VIP; idempotent,
//      so a restarted BIRD is re-applied on the next pass);
//   5. publishes the result to the engine's status (StatusResponse.
//      announcement), hence `lbctl status` and the metrics;
//   6. releases the engine's retired VIP addresses whose route BIRD no
//      longer exports, after the ToR's grace (bgp.withdraw_grace_ms;
//      PlanAddressRelease, address_release.h, pure). Until then the data
//      plane drops their packets instead of sending them back to the ToR
//      (core::EngineOptions::retire_addresses, which lbagent sets with a
//      `bgp` section).
// BIRD unreachable: the pass counts an error, logs it when it changes, and
// the next pass tries again; nothing else is affected.
//
// Shutdown(reason) stops the loop and runs one last pass in which every VIP
// is withdrawn (the program stays attached: the ToR moves the flows to the
// other routers, which hash them to the same backends).
//
// Threading: one thread of its own; Kick(), Shutdown() and Status() from any
// thread. The engine and the `owned` callback must outlive Shutdown().
#ifndef BALLAST_AGENT_BGP_AGENT_ANNOUNCER_H_
#define BALLAST_AGENT_BGP_AGENT_ANNOUNCER_H_

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "agent/bgp/address_release.h"
#include "agent/bgp/announce_policy.h"
#include "agent/bgp/announcer.h"
#include "agent/core/router_engine.h"
#include "ballast/v1/agent.pb.h"
#include "ballast/v1/api.pb.h"

namespace ballast::bgp {

// AgentConfig.bgp with its defaults filled in.
v1::Bgp BgpWithDefaults(const v1::Bgp& in);

class AgentAnnouncer {
 public:
  struct Options {
    v1::Bgp config;       // validated; defaults applied by Start()
    std::string pin_dir;  // the data plane's pins (AgentConfig.pin_dir)
    core::RouterEngine* engine = nullptr;
    // Cluster mode: the ACTIVE_STANDBY VIPs (VipKeyText) this node holds the
    // lease of (ClusterNode::OwnedVips). Empty function: standalone mode.
    std::function<std::set<std::string>()> owned;
  };

  // Starts the loop (its first pass runs at once).
  static std::unique_ptr<AgentAnnouncer> Start(Options options);
  ~AgentAnnouncer();  // Shutdown("agent stopping") unless done already
  AgentAnnouncer(const AgentAnnouncer&) = delete;
  AgentAnnouncer& operator=(const AgentAnnouncer&) = delete;

  // Runs a pass now (e.g. after a config change).
  void Kick();
  // Withdraws every VIP for `reason` ("SIGTERM") and stops. Returns BIRD's
  // answer (an error when BIRD could not be told; the VIPs then stay
  // announced until BIRD's hold timer expires or the agent runs again).
  absl::Status Shutdown(const std::string& reason);

  v1::Announcement Status() const;

 private:
  explicit AgentAnnouncer(Options options);
  void Loop();
  // One pass; `shutdown` non-empty for the last one.
  absl::Status Pass(const std::string& shutdown);
  // The policy's inputs; `*retired` gets the engine's retired addresses.
  PolicyInput Gather(const std::string& shutdown, std::map<IpAddress, uint64_t>* retired);
  // Step 6 (not on the shutdown pass): releases what PlanAddressRelease
  // lets go, and returns why each of the others is still held.
  std::map<VipPrefix, std::string> ReleaseRetired(const std::map<IpAddress, uint64_t>& retired,
                                                  const AnnouncerStatus& bird, uint64_t now_ns);

  const Options options_;
  Announcer announcer_;

  // Pass() only (the loop thread, then Shutdown() after the join).
  std::map<VipPrefix, AnnounceDecision> decided_;
  std::map<VipPrefix, int64_t> since_ms_;
  std::string last_error_;
  std::string last_dataplane_problem_;
  ReleaseMemory release_memory_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool kicked_ = false;
  bool shut_ = false;
  v1::Announcement status_;   // guarded by mu_
  uint64_t bird_errors_ = 0;  // guarded by mu_
  std::thread thread_;
};

}  // namespace ballast::bgp

#endif  // BALLAST_AGENT_BGP_AGENT_ANNOUNCER_H_
