// The lbsim engine: one discrete-event run of a Scenario.
//
// Simulated time only (nanoseconds from 0); nothing reads a clock, so the
// same scenario and seed give the same RunResult, bit for bit.
//
// What runs is ballast's own decision code, fed the way lbagent feeds it
// (agent/core/health_controller.cc): at every evaluation each observer hands
// health::Next() the probe results that finished since the last evaluation
// and the cumulative data-plane counters of its router, and the resulting
// effective weights go through maglev::BuildTable() into the table that
// steers the next SYNs. With several observers each runs its own machine and
// the quorum rule (agent/health/quorum.h) decides whether a backend leaves
// service.
//
// Around it, a model of the rest:
//  - clients: Poisson arrivals; a SYN retransmitted after syn_rto, 2x, 4x ...
//    until connect_timeout; a first request answered after the class's
//    latency (x the backend's slowdown); a connection open for its lifetime;
//    optional application retries on a new connection (new 5-tuple);
//  - the data plane's connection-table rules (bpf/lib/conntrack.h): a flow
//    picks its backend from the table at its first SYN; a retransmitted SYN
//    follows the current table (`resteer`) and counts a SYN retransmission
//    against the backend that did not answer; with `second_chance` it goes
//    to the flow's next choice instead (maglev_next_choice), and a SYN that
//    reaches a host whose server is dead is bounced to the next choice, at
//    most twice, and counted as refused; an established connection
//    stays on its backend whatever the table says, until it closes, its
//    backend dies, or its backend's drain deadline passes; the passive
//    counters (new flows, SYN retransmissions, client RSTs, handshake and
//    first-response sums and counts) are kept per backend and per router;
//  - backends and their faults (scenario.h FaultKind), which the synthetic
//    probes see too: a crashed host refuses or times out, a hung server
//    times out an HTTP probe but still completes a TCP connect, a brownout
//    slows the probe and loses some, a blind observer's probes time out.
//
// Thread-compatible; Run() is a pure function of the scenario.
#ifndef BALLAST_TOOLS_LBSIM_SIM_H_
#define BALLAST_TOOLS_LBSIM_SIM_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/lbsim/histogram.h"
#include "tools/lbsim/scenario.h"

namespace ballast::lbsim {

struct TimelinePoint {
  double t = 0;  // seconds
  int score = 100;
  uint32_t weight = 0;  // applied (what the table uses)
  uint8_t state = 0;    // health::HealthState of the leader's machine
};

struct FaultSpan {
  double from = 0;  // seconds
  double to = 0;
  std::string kind;
};

struct BackendTimeline {
  int backend = 0;
  std::string key;
  std::vector<TimelinePoint> points;
  std::vector<FaultSpan> faults;
};

// One action of the leader's health machine.
struct ActionRecord {
  double t = 0;  // seconds
  std::string kind;
  std::string backend;
  std::string message;
  std::string inputs_json;
};

// The router-churn model (Scenario::churn), one data-plane behaviour: what
// became of the long-lived connections.
struct ChurnOutcome {
  // A router without the connection's entry got one of its packets and
  // steered it to a backend that has no socket for it: the backend's RST
  // ends the connection.
  uint64_t reset = 0;
  uint64_t adopted = 0;  // packets that found no entry on their router (adoptions)
  // Adopted on a slot whose table pick is not their backend, and brought to
  // it by established second chance (the slot's history walked).
  uint64_t saved = 0;
  uint64_t hops = 0;  // the bounces the saved ones took, in all
  uint64_t hops_max = 0;
  uint64_t cut_drain = 0;    // on a drained backend when its deadline passed
  uint64_t cut_removed = 0;  // on a backend removed from the config
  uint64_t open_at_end = 0;
};

struct ChurnResult {
  bool enabled = false;
  int routers = 0;
  std::string ecmp;
  uint64_t connections = 0;  // the long-lived population
  uint64_t established = 0;  // their handshake done before the end
  // Sent by ECMP at least once to a router that had no entry for them.
  uint64_t moved = 0;
  // Established, and the slot's pick at the end is not their backend.
  uint64_t slot_changed = 0;
  uint64_t stalled = 0;         // their packets were lost for a while (a dead router)
  double stall_max_s = 0;       // the longest such stretch, to the first packet delivered again
  uint64_t router_changes = 0;  // changes of the set of routers announcing the VIP
  int versions = 0;             // table versions the agent's state keeps at the end
  uint32_t table_size = 0;
  uint64_t slots_changed = 0;  // slots whose backend at the end is not the one at time 0
  ChurnOutcome without;        // established second chance off
  ChurnOutcome with;           // on (the agents' default)
};

struct RunResult {
  std::string scenario;
  std::string variant;
  uint64_t seed = 0;
  double duration_s = 0;
  double warmup_s = 0;

  // Logical client connections that arrived at or after warmup. Each ends as
  // exactly one of: succeeded (answered and closed, or still open at the end),
  // failed_new (no handshake on any attempt: refused, timed out, no backend),
  // failed_request (handshake, but no answer: hung, crashed, too slow),
  // broken (answered, then cut: backend crash, hang, drain deadline), or
  // unresolved (still waiting when the run ended).
  uint64_t connections = 0;
  uint64_t succeeded = 0;
  uint64_t failed_new = 0;
  uint64_t failed_request = 0;
  uint64_t broken = 0;
  uint64_t broken_drain = 0;  // part of broken: cut at a drain deadline
  uint64_t unresolved = 0;
  uint64_t attempts = 0;  // TCP connections tried (retries included)
  // Connections whose SYN reached a backend with a fault of its own (crash,
  // hang, brownout) at least once: what slow steering costs, even when the
  // connection succeeds in the end (slower, or after a retransmission).
  uint64_t hit_faulty = 0;
  uint64_t syn_retransmits = 0;  // every router's counter, summed
  uint64_t resteered_syns = 0;   // retransmitted SYNs that went to another backend
  uint64_t bounced_syns = 0;     // SYNs a dead server's host bounced to the next choice
  Histogram latency_ns;          // arrival -> first response, of the answered ones

  // Time to steer: from the start of a backend's own fault (crash, flap,
  // zone, hang, brownout) to the first table in which its weight is at most
  // 70% of what it was at the start. Faults that end first are not steered.
  uint64_t onsets = 0;
  std::vector<double> steer_s;  // in onset order

  std::map<std::string, uint64_t> actions;  // the leader's, by kind name
  std::vector<ActionRecord> action_log;     // the leader's, in order, warmup included
  uint64_t flaps = 0;
  uint64_t evaluations = 0;
  // Backends taken out of service (health says down or pinned; with several
  // observers, a quorum does): each transition counted.
  uint64_t taken_out = 0;
  uint64_t split_views = 0;  // split-view episodes (some observers want it out, not a quorum)

  // Rebalancing: tables built, slots that changed owner, and established
  // connections whose slot moved away from their backend while they were
  // open (the connection table kept them; each counted once).
  uint64_t tables = 0;
  uint64_t slots_moved = 0;
  uint64_t remapped = 0;

  // The router-churn model's figures (ECMP figures from the run with the
  // mechanism; tables and slots_moved above count its commits).
  ChurnResult churn;

  uint64_t events = 0;
  uint64_t total_connections = 0;  // all logical connections, warmup included
  std::vector<BackendTimeline> timelines;
};

absl::StatusOr<RunResult> Run(const Scenario& sc);

// The run's figures as (name, value), in a fixed order: what reports, CSV
// files and expectations use. Names: success_fraction, connections,
// succeeded, failed_new, failed_request, broken, broken_drain, unresolved,
// attempts, hit_faulty, latency_p50_ms, latency_p90_ms, latency_p99_ms, latency_p999_ms,
// onsets, steered, steer_p50_s, steer_p90_s, steer_max_s, actions_<kind> for
// every action kind, flaps, evaluations, taken_out, split_views, tables,
// slots_moved, remapped, syn_retransmits, resteered_syns, bounced_syns.
// A router-churn run has its own list instead (ChurnMetricNames()).
std::vector<std::pair<std::string, double>> Metrics(const RunResult& r);

// The metrics of a router-churn run, in order: connections, established,
// moved, moved_fraction, slot_changed, slot_changed_fraction,
// reset_without, reset_without_fraction, reset_with, reset_with_fraction,
// saved, hops, hops_mean, hops_max, adopted, cut_drain, cut_removed,
// open_at_end, stalled, stall_max_s, tables, slots_moved (over all commits),
// slots_changed_fraction (of the table: the end against time 0), versions,
// router_changes. Fractions are of
// the established connections.
const std::vector<std::string>& ChurnMetricNames();

}  // namespace ballast::lbsim

#endif  // BALLAST_TOOLS_LBSIM_SIM_H_
