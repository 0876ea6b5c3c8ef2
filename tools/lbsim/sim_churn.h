// The router-churn model (a scenario with `routers`): several routers
// behind ECMP, table changes and router changes, and what becomes of
// long-lived connections with and without established second chance
// (docs/dataplane.md; bpf/lib/esc.h, bpf/lib/bounce.h).
//
// The agent's side is the agent's own code (churn_agent.h): every router
// programs the same table and slot history from the same state. The data
// plane is modelled by its rules:
//  - a connection's SYN goes to the router ECMP gives it then, which picks
//    the backend from its table and records the flow; the connection stays
//    on that backend;
//  - a router that holds the connection's entry (it saw the handshake, or
//    adopted it earlier, and has not forgotten it: tcp_idle) sends its
//    packets to the recorded backend;
//  - a router without one adopts the connection on its table's current
//    pick. If that is not the connection's backend, the backend has no
//    socket for it and answers with a RST: without the mechanism the
//    connection is reset. With it, the pick bounces the packet back and the
//    router walks the chain of the slot (the pick, then the slot's previous
//    backends from maglev_history, most recent first), skipping backends
//    that are not usable (removed, evicted, or draining past the deadline),
//    at most BALLAST_ESC_HOPS_MAX bounces (bounce_take_est); each bounce is
//    a hop. A chain that does not hold the backend ends on the pick without
//    the mark: reset.
//  - a drained backend keeps its connections until its deadline, then they
//    are cut (re-steered; the new backend answers with a RST), as are those
//    of a removed backend.
// Routers: ECMP over the routers announcing the VIP (EcmpMode); a dead host
// still announces until `detect` has passed, and the packets it gets are
// lost; an agent restart withdraws and announces again, keeping its
// connection table (pinned maps) unless `flush`.
//
// Every run simulates the same population twice, without and with the
// mechanism (common random numbers). Deterministic.
#ifndef BALLAST_TOOLS_LBSIM_SIM_CHURN_H_
#define BALLAST_TOOLS_LBSIM_SIM_CHURN_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/lbsim/scenario.h"
#include "tools/lbsim/sim.h"
#include "tools/lbsim/sim_ecmp.h"

namespace ballast::lbsim::internal {

absl::StatusOr<RunResult> RunChurn(const Scenario& sc);

// Metrics() of a router-churn run (names: ChurnMetricNames()).
std::vector<std::pair<std::string, double>> ChurnMetrics(const RunResult& r);

}  // namespace ballast::lbsim::internal

#endif  // BALLAST_TOOLS_LBSIM_SIM_CHURN_H_
