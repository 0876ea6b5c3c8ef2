// lbagent's config file: protobuf text format of v1::AgentConfig
// (see deploy/lbagent.conf).
//
// A bad file is reported with the file name and what is wrong, so the agent
// can refuse to start with an actionable message:
//   "/etc/ballast/lbagent.conf:12:5: Message type "ballast.v1.Vip" has no field named "wieght"."
//   "/etc/ballast/lbagent.conf: initial.vips[0].backends[2].weight: 3000 is out of range 0..1000"
//
// Pure functions except LoadAgentConfig (reads the file). Thread-safe.
#ifndef BALLAST_AGENT_CORE_AGENT_CONFIG_H_
#define BALLAST_AGENT_CORE_AGENT_CONFIG_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/dataplane/types.h"
#include "ballast/v1/agent.pb.h"
#include "absl/strings/string_view.h"

namespace ballast::core {

inline constexpr char kDefaultSocketPath[] = "/run/ballast/lbagent.sock";
inline constexpr char kDefaultStateFile[] = "/var/lib/ballast/state.pb";
inline constexpr char kDefaultAuditLog[] = "/var/lib/ballast/audit.jsonl";

// Parses text format (every error with line:column, 1-based), then
// validates (ValidateAgentConfig). `name` prefixes messages.
absl::StatusOr<v1::AgentConfig> ParseAgentConfig(absl::string_view text, absl::string_view name);

// Reads `path` and ParseAgentConfig()s it.
absl::StatusOr<v1::AgentConfig> LoadAgentConfig(const std::string& path);

// A copy with every empty path/mode replaced by its documented default.
v1::AgentConfig WithDefaults(const v1::AgentConfig& config);

// The seed lbagent fixes for the data plane (EngineOptions::
// fixed_flow_hash_seed): flow_hash_seed_file's (read here; errors name the
// file and the line), the public seed (an empty FlowHashSeed) for a
// standalone router that announces over BGP without one, else none (the
// state's own seed: a cluster's, or a lone router's).
absl::StatusOr<std::optional<dataplane::FlowHashSeed>> FixedFlowHashSeed(
    const v1::AgentConfig& config);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_AGENT_CONFIG_H_
