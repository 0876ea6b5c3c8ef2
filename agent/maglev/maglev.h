// Weighted Maglev lookup tables.
//
// A Maglev table maps a flow hash to a backend: slot = hash % M, and the slot
// holds the data-plane backend id. BuildTable() fills the table the way the
// Maglev paper (Eisenbud et al., NSDI 2016) does, extended with integer
// weights:
//
//   1. Every backend gets a permutation of the slots from two hashes of its
//      key:  offset = h1(key) % M,  skip = h2(key) % (M - 1) + 1,
//      permutation[j] = (offset + j * skip) % M.  M is prime, so every skip
//      visits every slot exactly once.
//   2. Each backend with a positive weight gets a quota of slots: its exact
//      share M * w / W (W = sum of weights), rounded by the largest-remainder
//      method (remainders compared exactly; ties go to the smaller key). So
//      every backend holds floor(share) or ceil(share) slots, and the quotas
//      sum to M. A backend whose share is below one slot can receive 0 slots.
//   3. Backends take turns claiming the next free slot of their permutation.
//      Backend i makes its k-th claim in round ceil(k * w_max / w_i); within a
//      round the smaller key goes first. A backend stops when its quota is
//      reached. With equal weights this is exactly the paper's round-robin
//      (every backend claims once per round, in key order).
//
// The result depends only on the set of (key, id, weight) triples and M: not
// on the order backends are given in, the host, the compiler or the run. Two
// routers with the same state build byte-identical tables.
//
// Cost: about M * ln(M) cheap probes of a one-bit-per-slot map (the walks of
// the paper's algorithm), plus O(N log N) for sorting. For M = 65537 that is
// about one millisecond on a current x86 core whatever N is (see
// tools/bench/maglev_bench.cc). Memory: the returned table plus M / 8 bytes,
// O(N) scratch and at most 256 KiB for the claim schedule (a bitset of
// backends per round, or a calendar) plus 64 KiB for its per-class member
// bitsets (20 * M bytes instead when weights are more than 65536 times apart,
// where the claims are sorted), all released on return.
//
// Thread-safety: every function here is pure (no shared state) and may be
// called from any number of threads at once.
#ifndef BALLAST_AGENT_MAGLEV_MAGLEV_H_
#define BALLAST_AGENT_MAGLEV_MAGLEV_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ballast::maglev {

struct Backend {
  uint32_t id;      // value written into the table slots (data-plane backend_id, != 0)
  std::string key;  // stable identity for the permutation, e.g. "198.18.1.10" (address text)
  uint32_t weight;  // 0 = no new flows (no slots)
};

// True if n is prime. Exact for every uint64_t (deterministic Miller-Rabin).
bool IsPrime(uint64_t n);

// A backend's permutation of an M-slot table: slot j = (offset + j * skip) % M.
// offset < M and 1 <= skip < M. Exposed so that tests and tools can explain
// where a backend lands; BuildTable() uses exactly this.
// Precondition: table_size >= 2 (callers pass a validated prime).
struct Permutation {
  uint32_t offset;
  uint32_t skip;
};
Permutation PermutationOf(std::string_view key, uint32_t table_size);

// Builds a weighted Maglev table of `table_size` slots (prime, <= BALLAST_MAX_TABLE_SIZE).
// Deterministic and independent of input order (permutation from hash of key; ties by key).
// No backends or all weights 0 -> every slot is BALLAST_INVALID_ID (0).
// Errors (InvalidArgument): table size not prime / out of range, id 0 or
// >= BALLAST_MAX_BACKENDS, empty key, duplicate id or key, more positive-weight
// backends than slots.
// On success the vector has exactly `table_size` entries, each either the id
// of a positive-weight backend or, only when no backend has a positive weight,
// BALLAST_INVALID_ID.
absl::StatusOr<std::vector<uint32_t>> BuildTable(std::span<const Backend> backends,
                                                 uint32_t table_size);

namespace internal {

// BuildTable's search over the last free slots (exposed for tests): among
// free[0..count), slot numbers held as doubles, with NaN in
// free[count..count + 8), the smallest key ((e + shift) * inv mod m) * 2^21 +
// k, where e = free[k]; m < 2^21 and shift, inv < 2m. Every implementation
// this CPU can run gives the same key; the first is the one BuildTable uses.
using MinStepKeyFn = double (*)(const double* free, size_t count, double shift, double inv,
                                double m);
std::vector<MinStepKeyFn> MinStepKeyImplementations();

}  // namespace internal

}  // namespace ballast::maglev

#endif  // BALLAST_AGENT_MAGLEV_MAGLEV_H_
