// SIGHUP (`systemctl reload lbagent`): the config file read again and what
// can change without a restart applied, all or nothing.
//
//  - `admin`: the API's TLS files, CRL and identities are reloaded
//    (api::AdminServer::Reload).
//  - `initial`: when it changed since the agent last read the file, it is
//    applied like `lbctl config apply` (validated first; refused with the
//    field named). Unchanged, it is left alone, so a reload for a new
//    certificate does not undo changes made with lbctl since. In a cluster it
//    is never applied (the cluster's state is replicated; use lbctl there).
//  - anything else (metrics_listen, pin_dir, flow_capacity, cluster, bgp,
//    ...): takes effect at the next start; the reload says which.
//
// A file that does not load, an admin section that does not load, or an
// `initial` the engine refuses: nothing changes, and the error is logged and
// returned. PlanReload is the pure decision; ReloadConfig does the I/O.
// Called from the main loop only.
#ifndef BALLAST_TOOLS_LBAGENT_RELOAD_H_
#define BALLAST_TOOLS_LBAGENT_RELOAD_H_

#include <string>
#include <vector>

#include "agent/api/server.h"
#include "agent/core/router_engine.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::lbagent {

struct ReloadPlan {
  bool apply_initial = false;
  // `initial` changed but is not applied (cluster mode).
  bool initial_ignored = false;
  // Top-level fields that changed and need a restart, by name.
  std::vector<std::string> need_restart;
};

// `last`: the file as the agent last read it (with defaults); `next`: as
// read now (with defaults).
ReloadPlan PlanReload(const v1::AgentConfig& last, const v1::AgentConfig& next, bool cluster);

// Reloads `path`; on success `*last` becomes the file read. Returns the
// one-line outcome (for systemd's STATUS and the log), or the error.
absl::StatusOr<std::string> ReloadConfig(const std::string& path, v1::AgentConfig* last,
                                         core::RouterEngine& engine, api::AdminServer& admin,
                                         bool cluster);

}  // namespace ballast::lbagent

#endif  // BALLAST_TOOLS_LBAGENT_RELOAD_H_
