// HealthController: the edges around the pure health logic (agent/health).
//
// It runs the synthetic probes (a ProbeScheduler), reads the data plane's
// passive counters through the engine, calls health::Next() once per pool
// per evaluation, and hands the outcome back to the engine: the marks that
// set each backend's effective weight (persisted, programmed), the actions
// (audited as "automation", sent as events) and a status-only view (score,
// conditions, last probe, fleet guard).
//
//   lbagent:  HealthController hc(engine, clock, options, forward_hook);
//             every hc.EvalIntervalMs():  hc.Evaluate();
//
// Probe targets follow the configuration at every evaluation: one per
// (VIP, backend), id "<vip> <address>", with the backend's ProbeSpec. Probes
// "via the VIP" need the router to deliver marked packets to the chosen
// backend (agent/probes: ProbeForwarder); `forward_hook`, when set, is given
// the via-VIP targets each time the set changes, to program it.
//
// Restart: the health logic's memory (streaks, flaps, baselines) lives in
// this process only. What it decided for each backend is persisted by the
// engine (BackendOverride.health), and a new controller starts each known
// backend from that mark: a backend that was down stays down (and needs
// promote_after good evaluations), a ramping one resumes at its step. An
// operator's release (the engine clears `pinned`) is noticed at the next
// evaluation and given to health::Release().
//
// Health checking off (global.health absent): no probes run, marks are
// cleared, every backend gets its nominal weight.
//
// Thread-safety: Evaluate() must be called from one thread at a time; probe
// results arrive on the scheduler's threads and are accumulated under an
// internal mutex. The engine must outlive the controller.
#ifndef BALLAST_AGENT_CORE_HEALTH_CONTROLLER_H_
#define BALLAST_AGENT_CORE_HEALTH_CONTROLLER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/core/clock.h"
#include "agent/core/probe_verdicts.h"
#include "agent/core/router_engine.h"
#include "agent/core/timeline.h"
#include "agent/health/machine.h"
#include "agent/probes/scheduler.h"

namespace ballast::core {

// Whether a backend of `vip` is probed, at which port, or why not. A VIP of
// every port (port 0) needs probe.port; a UDP VIP needs a UDP probe (or a
// TCP-based one on its own probe.port: a TCP service beside the UDP one). A
// backend without a probe shows `unchecked` in status while no passive
// signal covers it either, never `healthy`.
struct ProbePlan {
  uint16_t port = 0;  // the port probed (probe.port, else the VIP's)
  std::string none;   // non-empty: not probed, and why
};
ProbePlan PlanProbe(const v1::VipKey& vip, bool has_probe, const v1::ProbeSpec& probe);

struct HealthControllerOptions {
  int probe_workers = 8;
  uint32_t mark_base = BALLAST_PROBE_MARK_BASE;
  // Cluster mode (coord::ClusterNode): sees every evaluation's decisions
  // and records before they go to the engine, and may remove them (a node
  // that is not the leader, or is frozen, writes none; the leader applies a
  // demotion only with an observer quorum). Unset: all are applied.
  std::function<void(std::vector<HealthDecision>*, std::vector<HealthRecord>*)> decision_gate;
  // Gets every backend's score and the effective weight its table used as
  // the evaluation began (so what the gate let through, one evaluation
  // later) after each evaluation that was applied (the status page's
  // timelines); may be null. Must outlive the controller.
  Timeline* timeline = nullptr;
};

// What the last evaluation did (for metrics and tests).
struct HealthCounters {
  uint64_t evaluations = 0;
  uint64_t evaluation_errors = 0;
  uint64_t probes_ok = 0;
  uint64_t probes_failed = 0;
  uint64_t probes_discarded = 0;  // overlapped a pause of the agent (probes/pause_watch.h)
  std::map<std::string, uint64_t> actions;  // by action kind
  int64_t last_evaluation_unix_ms = 0;
};

class HealthController {
 public:
  using ForwardHook = std::function<absl::Status(const std::vector<probes::ProbeTarget>&)>;

  HealthController(RouterEngine* engine, const Clock* clock, HealthControllerOptions options,
                   ForwardHook forward_hook);
  ~HealthController();  // stops the probes (waits for running ones, each bounded by its timeout)
  HealthController(const HealthController&) = delete;
  HealthController& operator=(const HealthController&) = delete;

  // One evaluation of every pool (see the file comment). Errors: the
  // engine's (reading counters, persisting, programming) and the health
  // logic's; the next evaluation starts over from the same state.
  absl::Status Evaluate();

  // The configured evaluation interval (ms) as of the last Evaluate()
  // (default before the first one).
  uint32_t EvalIntervalMs() const;
  bool Enabled() const;
  HealthCounters Counters() const;

 private:
  void OnProbeResult(const std::string& id, const probes::ProbeResult& result);
  absl::Status SyncTargets(const HealthInputs& in);
  void StopProbes();
  // The machine state of a pool, seeded from the engine's marks for
  // backends it does not know yet (restart), with operator releases applied.
  health::PoolState PrepareState(const HealthPool& pool, const health::Params& params,
                                 absl::Time now, std::vector<HealthRecord>* records);

  RouterEngine* const engine_;
  const Clock* const clock_;
  const HealthControllerOptions options_;
  const ForwardHook forward_hook_;
  std::unique_ptr<probes::ProbeScheduler> scheduler_;

  mutable std::mutex mu_;                           // guards the members below
  ProbeVerdicts verdicts_;                          // by target id
  std::map<std::string, std::string> last_probe_;   // by target id
  std::map<std::string, uint64_t> probe_failures_;  // by target id, since it was first probed
  HealthCounters counters_;
  uint32_t eval_interval_ms_ = 1000;
  bool enabled_ = false;

  // Evaluate()'s own (one caller at a time).
  std::map<std::string, health::PoolState> pools_;  // by VIP text
  // HealthPool::relearn_requests last applied to each pool (by VIP text).
  std::map<std::string, uint64_t> relearned_;
  std::map<std::string, std::string> target_defs_;  // id -> serialized definition
  std::vector<probes::ProbeTarget> forwarded_;      // last given to forward_hook_
  std::map<std::string, std::string> unprobed_;     // target id -> why it has no probe
  std::map<std::string, HealthHistory> history_;    // by BackendIdKey: the state's record
  absl::Time last_now_ = absl::InfinitePast();      // the last evaluation's `now`
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_HEALTH_CONTROLLER_H_
