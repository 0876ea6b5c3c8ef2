// The `flow_hash_seed` map (ballast_abi.h, struct ballast_flow_hash_seed):
// the seed the program hashes flows with, and the one before the last
// rotation.
#include <bpf/bpf.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/dataplane.h"
#include "ballast_flow_hash.h"

namespace ballast::dataplane {

absl::Status Dataplane::SetFlowHashSeed(const FlowHashSeed& seed) {
  ballast_flow_hash_seed v = {};
  if (seed.current) {
    std::copy(seed.current->begin(), seed.current->end(), v.current.w);
    v.flags |= BALLAST_SEED_F_SET;
  }
  if (seed.previous) {
    std::copy(seed.previous->begin(), seed.previous->end(), v.previous.w);
    v.flags |= BALLAST_SEED_F_PREVIOUS;
  }
  const uint32_t zero = 0;
  if (bpf_map_update_elem(map_fd("flow_hash_seed"), &zero, &v, BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing the flow_hash_seed map");
  }
  return absl::OkStatus();
}

absl::StatusOr<FlowHashSeed> Dataplane::ReadFlowHashSeed() const {
  ballast_flow_hash_seed v = {};
  const uint32_t zero = 0;
  if (bpf_map_lookup_elem(map_fd("flow_hash_seed"), &zero, &v) != 0) {
    return ErrnoStatus(errno, "reading the flow_hash_seed map");
  }
  FlowHashSeed seed;
  if (v.flags & BALLAST_SEED_F_SET) seed.current = std::to_array(v.current.w);
  if (v.flags & BALLAST_SEED_F_PREVIOUS) seed.previous = std::to_array(v.previous.w);
  return seed;
}

absl::StatusOr<ballast_hash_seed> Dataplane::CurrentHashSeed() const {
  auto seed = ReadFlowHashSeed();
  if (!seed.ok()) return seed.status();
  ballast_hash_seed out = BALLAST_PUBLIC_SEED_INIT;
  if (seed->current) std::copy(seed->current->begin(), seed->current->end(), out.w);
  return out;
}

}  // namespace ballast::dataplane
