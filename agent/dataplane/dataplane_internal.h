// Helpers shared by the Dataplane's files (dataplane.cc, dataplane_maps.cc,
// dataplane_counters.cc, adopted_carry.cc): the ABI form of a VIP key, the
// vip_refs map's upkeep, per-CPU reads, walking a hash map of flows. Not an
// API; nothing outside agent/dataplane includes it. Thread-safety: as
// Dataplane's.
#ifndef BALLAST_AGENT_DATAPLANE_DATAPLANE_INTERNAL_H_
#define BALLAST_AGENT_DATAPLANE_DATAPLANE_INTERNAL_H_

#include <bpf/bpf.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/checks.h"
#include "agent/dataplane/dataplane.h"
#include "ballast_abi.h"

namespace ballast::dataplane {
namespace internal {

// The map key of a VIP (address bytes, port in network order).
ballast_vip_key ToAbi(const VipKey& k);

// vip_refs: the established-flow shortcut (struct ballast_vip_ref).
// Invariants kept here: an entry is written before the `vips` entry it
// mirrors appears; gen never decreases for a vip_id; every change to which
// flows a vip_id covers (id given to another key, VIP deleted, a port-0 VIP
// shadowed by a new one-port VIP) advances gen, so flows recorded under
// the old meaning re-resolve through `vips`.
//
// Makes vip_refs[meta.vip_id] describe (key, meta). The generation moves
// on unless the entry already described this same key under this id (a
// flags or owner-deadline change keeps the flows' shortcut).
absl::Status PublishVipRef(int fd, const ballast_vip_key& key, const ballast_vip_meta& meta);
// Advances vip_refs[vip_id].gen; with `retire`, also marks the id unused.
// A no-op for an entry that does not describe a VIP.
absl::Status BumpVipRef(int fd, uint32_t vip_id, bool retire);

// Calls fn(key, flow) for up to `max` entries of the hash map of flows
// `fd` (named `map` in messages), `batch` per system call (more when a
// bucket needs it). Returns how many it visited.
absl::StatusOr<size_t> ForEachHashFlow(
    int fd, std::string_view map, size_t max,
    const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn, size_t batch);

// Sums a per-CPU value made only of __u64 fields.
template <typename T>
T SumU64Fields(const std::vector<T>& per_cpu) {
  static_assert(sizeof(T) % sizeof(uint64_t) == 0);
  constexpr size_t kWords = sizeof(T) / sizeof(uint64_t);
  uint64_t sum[kWords] = {};
  for (const T& v : per_cpu) {
    uint64_t words[kWords];
    std::memcpy(words, &v, sizeof(T));
    for (size_t i = 0; i < kWords; ++i) sum[i] += words[i];
  }
  T out;
  std::memcpy(&out, sum, sizeof(T));
  return out;
}

}  // namespace internal

template <typename T>
absl::StatusOr<std::vector<T>> Dataplane::ReadPerCpu(int fd, uint32_t key,
                                                     std::string_view what) const {
  static_assert(sizeof(T) % 8 == 0, "per-CPU values are 8-byte aligned");
  auto ncpus = PossibleCpus();
  if (!ncpus.ok()) return ncpus.status();
  std::vector<T> v(static_cast<size_t>(*ncpus));
  if (bpf_map_lookup_elem(fd, &key, v.data()) != 0) {
    return ErrnoStatus(errno, base::Cat("reading ", what, "[", key, "]"));
  }
  return v;
}

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_DATAPLANE_INTERNAL_H_
