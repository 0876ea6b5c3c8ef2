// The flow hash seed of the replicated state (agent.proto, FlowHashSeed):
// drawn when the state is first made, rotated by the operator, written to
// the data plane's `flow_hash_seed` map (bpf/include/ballast_abi.h). A
// secret: nothing here puts it in a log, an audit record or a reply.
#ifndef BALLAST_AGENT_CORE_FLOW_HASH_SEED_H_
#define BALLAST_AGENT_CORE_FLOW_HASH_SEED_H_

#include <cstdint>
#include <functional>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/dataplane/types.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::core {

// Where fresh seeds come from: getrandom(2) unless a test says otherwise.
using SeedSource = std::function<absl::StatusOr<dataplane::HashSeed>()>;
absl::StatusOr<dataplane::HashSeed> RandomSeed();

// A state's first seed.
v1::FlowHashSeed FirstFlowHashSeed(const dataplane::HashSeed& fresh, int64_t now_ms);

// `seed` rotated to `fresh`: its current seed (the public one when it has
// none) becomes the previous one.
v1::FlowHashSeed RotatedFlowHashSeed(const v1::FlowHashSeed& seed, const dataplane::HashSeed& fresh,
                                     int64_t now_ms);

// Whether the state hashes with the public seed of earlier builds.
bool SeedIsPublic(const v1::FlowHashSeed& seed);

// What the data plane's map holds for it.
dataplane::FlowHashSeed DataplaneSeedOf(const v1::FlowHashSeed& seed);

// A seed's words: none or three, current and previous.
absl::Status ValidateFlowHashSeed(const v1::FlowHashSeed& seed);

// The contents of a flow_hash_seed_file (agent.proto): the current seed,
// 24 hex digits, and optionally on the next line the previous one; blank
// lines and surrounding spaces ignored. Errors name the line.
absl::StatusOr<dataplane::FlowHashSeed> ParseFlowHashSeedFile(absl::string_view text);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_FLOW_HASH_SEED_H_
