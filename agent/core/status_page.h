// The read-only HTML status page lbagent serves on its metrics listener
// (GET /status): every VIP with its backends (state, health, score, weight,
// slots, flows, why), per-backend score and effective-weight timelines as
// inline SVG, and the last audited actions. One self-contained page: no
// JavaScript, no external assets.
//
// Pure: RenderStatusPage() formats what it is given, reads nothing.
#ifndef BALLAST_AGENT_CORE_STATUS_PAGE_H_
#define BALLAST_AGENT_CORE_STATUS_PAGE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/core/timeline.h"
#include "ballast/v1/agent.pb.h"
#include "ballast/v1/api.pb.h"

namespace ballast::core {

struct StatusPageInput {
  const v1::StatusResponse* status = nullptr;  // null: reading it failed
  std::string status_error;                    // why, when status is null
  std::vector<v1::AuditRecord> recent;         // the last actions, oldest first
  bool hide_actions = false;  // the operator left them out (AgentConfig.status_page NO_AUDIT)
  std::map<TimelineKey, std::vector<TimelinePoint>> timelines;
  int64_t now_unix_ms = 0;
  int64_t horizon_ms = 3'600'000;  // what the timelines' x axis spans at most
};

std::string RenderStatusPage(const StatusPageInput& in);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_STATUS_PAGE_H_
