// `lbctl drill`: fails an ACTIVE_STANDBY VIP over on purpose and measures
// it (docs/cluster.md, "Drills"; the rules are in drill.h).
//
//  1. Who is who: the node lbctl talks to names the owner (its status) and
//     every live node with its admin address (its `config diff`: the
//     NodeRecords); --node NAME=ADDR overrides an address. lbctl connects
//     to each with the same credentials.
//  2. Checks, before anything changes: cluster mode, the VIP is
//     ACTIVE_STANDBY and owned, a live unfrozen standby exists, the owner
//     forwards traffic (its counter rises within 3 s; lbctl generates no
//     traffic), and for --mode stop the owner runs on this host.
//  3. The failure: fence = the owner's YieldVip (stops the VIP in its data
//     plane, releases the lease, stays out for a hold-off); stop = SIGSTOP
//     to the owner's lbagent (SIGCONT at the end, also on ^C).
//  4. Polls every 40 ms: the standbys' per-VIP forwarded packets, then the
//     new owner's pool; the nodes' published verdicts every 250 ms.
//  5. The end: audit logs of every node (flaps), `config diff` of every
//     node (differences), the result recorded on the node lbctl talks to
//     (RecordDrill), printed; FAIL exits 1.
#ifndef BALLAST_TOOLS_LBCTL_DRILL_RUN_H_
#define BALLAST_TOOLS_LBCTL_DRILL_RUN_H_

#include <cstdio>

#include "absl/status/status.h"
#include "tools/lbctl/commands.h"

namespace ballast::lbctl {

absl::Status RunDrill(Session& session, const Args& args, std::FILE* out);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_DRILL_RUN_H_
