// Carrying an older build's adopted flows into `adopted_flows`.
//
// Builds before adopted_flows kept TCP flows adopted mid-stream in
// `flows_adopted`, an LRU hash. A flow adopted there stays on the backend the
// table picked when it was adopted; the table may pick another one since (a
// weight ramp, a backend added). So an upgrade copies them into the sets
// rather than letting their next packets be adopted again on today's table.
//
// PlaceAdopted is the program's way choice (bpf/lib/adopted.h,
// adopted_store) on a copy of one set, pure; CarryAdoptedFlows does the I/O.
#ifndef BALLAST_AGENT_DATAPLANE_ADOPTED_CARRY_H_
#define BALLAST_AGENT_DATAPLANE_ADOPTED_CARRY_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "ballast_abi.h"

namespace ballast::dataplane {

enum class Placed {
  kPresent,   // the set already holds the key: left as it is (not `exclusive`)
  kReplaced,  // the key's own way rewritten (`exclusive`)
  kFree,      // written into a free way
  kEvicted,   // written over the way seen longest ago (`exclusive`)
  kFull,      // no free way and not `exclusive`: not written
};

// Writes (key, flow) into `set` as the program would, where `exclusive`
// says no program uses the sets yet, so the old map is the truth: into the
// key's own way if it has one (rewritten only when `exclusive`), else a free
// way, else, when `exclusive`, over the way whose last_seen_ns is oldest.
Placed PlaceAdopted(ballast_adopted_set& set, const ballast_flow_key& key, const ballast_flow& flow,
                    bool exclusive);

struct CarryCount {
  size_t read = 0;     // flows in the old map
  size_t carried = 0;  // written: into their own way, a free one, or over the oldest
  size_t present = 0;  // already in the sets, left as they were
  size_t full = 0;     // their set had no free way: not written
};

// Copies every flow of `from_fd` (an LRU hash of ballast_flow_key →
// ballast_flow) into the `sets` sets of the adopted_flows array `sets_fd`
// (PlaceAdopted; a flow's set is its ballast_flow_hash under `seed` & (sets - 1)).
// Each set is read and written back whole. With a program using the sets
// (not `exclusive`), only free ways are taken, and a way the program writes
// in the microseconds between the read and the write-back of its set is
// lost (that flow is adopted again, on the table of that moment).
// Fails without writing anything if the old map's key or value size is not
// this build's.
absl::StatusOr<CarryCount> CarryAdoptedFlows(int from_fd, int sets_fd, uint32_t sets,
                                             const ballast_hash_seed& seed, bool exclusive);

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_ADOPTED_CARRY_H_
