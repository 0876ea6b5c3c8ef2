#include "agent/dataplane/adopted_carry.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/dataplane_internal.h"
#include "ballast_flow_hash.h"

namespace ballast::dataplane {

using base::Cat;

Placed PlaceAdopted(ballast_adopted_set& set, const ballast_flow_key& key, const ballast_flow& flow,
                    bool exclusive) {
  uint32_t own = BALLAST_ADOPTED_WAYS, free_way = BALLAST_ADOPTED_WAYS, oldest_way = 0;
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  for (uint32_t w = 0; w < BALLAST_ADOPTED_WAYS; ++w) {
    if (std::memcmp(&set.key[w], &key, sizeof key) == 0) {
      own = w;
    } else if (set.key[w].family == 0) {
      if (free_way == BALLAST_ADOPTED_WAYS) free_way = w;
    } else if (set.flow[w].last_seen_ns < oldest) {
      oldest = set.flow[w].last_seen_ns;
      oldest_way = w;
    }
  }
  Placed placed;
  uint32_t w;
  if (own != BALLAST_ADOPTED_WAYS) {
    if (!exclusive) return Placed::kPresent;
    placed = Placed::kReplaced;
    w = own;
  } else if (free_way != BALLAST_ADOPTED_WAYS) {
    placed = Placed::kFree;
    w = free_way;
  } else if (exclusive) {
    placed = Placed::kEvicted;
    w = oldest_way;
  } else {
    return Placed::kFull;
  }
  set.key[w] = key;
  set.flow[w] = flow;
  return placed;
}

absl::StatusOr<CarryCount> CarryAdoptedFlows(int from_fd, int sets_fd, uint32_t sets,
                                             const ballast_hash_seed& seed, bool exclusive) {
  auto info = GetMapInfo(from_fd);
  if (!info.ok()) return info.status();
  if (info->key_size != sizeof(ballast_flow_key) || info->value_size != sizeof(ballast_flow)) {
    return absl::FailedPreconditionError(Cat("flows_adopted has key/value sizes ", info->key_size,
                                             "/", info->value_size, ", this build's flows are ",
                                             sizeof(ballast_flow_key), "/", sizeof(ballast_flow)));
  }
  if (sets == 0 || (sets & (sets - 1)) != 0) {
    return absl::InvalidArgumentError(Cat("adopted_flows: ", sets, " sets, not a power of two"));
  }
  CarryCount n;
  absl::Status failed;
  auto read = internal::ForEachHashFlow(
      from_fd, "flows_adopted", std::numeric_limits<size_t>::max(),
      [&](const ballast_flow_key& key, const ballast_flow& flow) {
        ++n.read;
        if (!failed.ok()) return;
        const uint32_t idx = ballast_flow_hash(&key, &seed) & (sets - 1);
        ballast_adopted_set set;
        if (bpf_map_lookup_elem(sets_fd, &idx, &set) != 0) {
          failed = ErrnoStatus(errno, Cat("reading adopted_flows[", idx, "]"));
          return;
        }
        switch (PlaceAdopted(set, key, flow, exclusive)) {
          case Placed::kPresent:
            ++n.present;
            return;
          case Placed::kFull:
            ++n.full;
            return;
          case Placed::kReplaced:
          case Placed::kFree:
          case Placed::kEvicted:
            break;
        }
        if (bpf_map_update_elem(sets_fd, &idx, &set, BPF_EXIST) != 0) {
          failed = ErrnoStatus(errno, Cat("writing adopted_flows[", idx, "]"));
          return;
        }
        ++n.carried;
      },
      1024);
  if (!read.ok()) return read.status();
  if (!failed.ok()) return failed;
  return n;
}

}  // namespace ballast::dataplane
