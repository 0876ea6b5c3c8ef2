#include "agent/maglev/maglev.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <bit>
#include <bitset>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "agent/maglev/table_filler.h"
#include "bpf/include/ballast_abi.h"

namespace ballast::maglev {
namespace {

// ---- primality ------------------------------------------------------------

uint64_t MulMod64(uint64_t a, uint64_t b, uint64_t m) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b % m);
}

uint64_t PowMod64(uint64_t base, uint64_t exp, uint64_t m) {
  uint64_t result = 1;
  base %= m;
  while (exp != 0) {
    if (exp & 1) result = MulMod64(result, base, m);
    base = MulMod64(base, base, m);
    exp >>= 1;
  }
  return result;
}

// ---- key hashing ----------------------------------------------------------
//
// FNV-1a over the key bytes, then a multiply/xorshift finaliser so that every
// input bit affects every output bit. Two seeds give the two independent
// hashes the permutation needs. The constants are part of the table format:
// changing any of them changes every table, so they are fixed forever.

constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;
constexpr uint64_t kSeedOffset = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kSeedSkip = 0xc2b2ae3d27d4eb4fULL;

uint64_t Finalise(uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  return x;
}

// Both hashes in one pass over the key: {hash(kSeedOffset), hash(kSeedSkip)}.
std::pair<uint64_t, uint64_t> KeyHashes(std::string_view key) {
  uint64_t a = kFnvOffsetBasis ^ kSeedOffset;
  uint64_t b = kFnvOffsetBasis ^ kSeedSkip;
  for (unsigned char c : key) {
    a = (a ^ c) * kFnvPrime;
    b = (b ^ c) * kFnvPrime;
  }
  return {Finalise(a ^ kSeedOffset), Finalise(b ^ kSeedSkip)};
}

// A backend with the first 16 bytes of its key packed big-endian (zero
// padded), so that most key comparisons are two integer comparisons. Equal
// prefixes fall back to comparing the whole keys; the order is exactly
// std::string's (bytes compared as unsigned char).
struct SortEntry {
  uint64_t hi, lo;
  const Backend* backend;

  explicit SortEntry(const Backend& b) : backend(&b) {
    // In locals: stores into the members would make each byte wait for the
    // previous one's read-modify-write.
    const size_t n = std::min<size_t>(b.key.size(), 16);
    const auto* key = reinterpret_cast<const unsigned char*>(b.key.data());
    uint64_t h = 0, l = 0;
    for (size_t k = 0; k < n && k < 8; ++k) h |= uint64_t{key[k]} << (56 - 8 * k);
    for (size_t k = 8; k < n; ++k) l |= uint64_t{key[k]} << (56 - 8 * (k - 8));
    hi = h;
    lo = l;
  }
  bool operator<(const SortEntry& o) const {
    // One 128-bit comparison, not a branch on which half differs: address
    // keys often share their first eight bytes, so that branch is a coin toss.
    const auto prefix = static_cast<unsigned __int128>(hi) << 64 | lo;
    const auto other = static_cast<unsigned __int128>(o.hi) << 64 | o.lo;
    if (prefix != other) [[likely]]
      return prefix < other;
    return backend->key < o.backend->key;
  }
};

std::string BackendName(const Backend& b) {
  return b.key.empty() ? "backend id " + std::to_string(b.id) : "backend " + b.key;
}

using Word2 = uint64_t __attribute__((vector_size(16)));

// kBitsOfByte[b] lists the set bits of byte b in increasing order (the rest
// of the entry is 0).
constexpr std::array<std::array<uint32_t, 8>, 256> kBitsOfByte = [] {
  std::array<std::array<uint32_t, 8>, 256> table{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t k = 0;
    for (uint32_t bit = 0; bit < 8; ++bit) {
      if ((b >> bit & 1) != 0) table[b][k++] = bit;
    }
  }
  return table;
}();

// Writes base + p for every set bit p of `word`, in increasing order, from
// `out` on, and returns the new end. A byte at a time and without a branch
// per bit: the byte's whole kBitsOfByte row is written (two vectors of four)
// at the byte's offset, the number of set bits in the bytes below it, so up
// to 8 entries past the new end are overwritten. The offsets come from the
// word alone (per-byte bit counts, summed by one multiplication), so the
// bytes' writes do not wait on each other.
[[gnu::always_inline]] inline uint32_t* AppendSetBits(uint32_t* out, uint64_t word, uint32_t base) {
  using U4 = uint32_t __attribute__((vector_size(16)));
  if (word == 0) return out;
  uint64_t count = word - ((word >> 1) & 0x5555555555555555ULL);
  count = (count & 0x3333333333333333ULL) + ((count >> 2) & 0x3333333333333333ULL);
  count = (count + (count >> 4)) & 0x0f0f0f0f0f0f0f0fULL;  // set bits of each byte
  const uint64_t through = count * 0x0101010101010101ULL;  // byte k: in bytes 0..k
  const uint64_t below = through << 8;                     // byte k: in bytes 0..k-1
#pragma GCC unroll 8
  for (uint32_t byte = 0; byte < 8; ++byte) {
    const auto b = static_cast<uint32_t>(word >> (8 * byte) & 0xff);
    uint32_t* const at = out + (below >> (8 * byte) & 0xff);
    const U4 add = U4{} + (base + 8 * byte);
    U4 lo, hi;
    std::memcpy(&lo, kBitsOfByte[b].data(), sizeof lo);
    std::memcpy(&hi, kBitsOfByte[b].data() + 4, sizeof hi);
    lo += add;
    hi += add;
    std::memcpy(at, &lo, sizeof lo);
    std::memcpy(at + 4, &hi, sizeof hi);
  }
  return out + (through >> 56);
}

// Upper bound on the weighted schedule's calendar ring (see BuildTable), in
// rounds: weights further apart than this fall back to sorting the claims.
constexpr uint64_t kMaxRingRounds = 1 << 16;
// Upper bound on the per-backend ring (see BuildTable), in 64-bit words.
constexpr uint64_t kMaxRingWords = 1 << 15;
// Upper bound on the weighted schedule's table of per-round bitsets (see
// BuildTable), in 64-bit words.
constexpr uint64_t kMaxRoundWords = 1 << 15;
// Upper bound on the weighted schedule's per-class member bitsets, in 64-bit words.
constexpr uint64_t kMaxMaskWords = 1 << 13;
// The weighted schedules hand rounds to the filler at least this many claims
// at a time: with few backends and unequal weights there are thousands of
// rounds of a few claims.
constexpr size_t kClaimBatch = 256;
// A round's claims are ORed from the class bitsets this many pairs of words at
// a time: one read of each claiming class's index per block, and as many
// independent ORs in flight.
constexpr size_t kBlockPairs = 8;

// Owns the table being built and fills it: Claims(list, count) makes the next

using internal::TableFiller;

}  // namespace

bool IsPrime(uint64_t n) {
  if (n < 2) return false;
  static constexpr uint64_t kSmall[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  for (uint64_t p : kSmall) {
    if (n % p == 0) return n == p;
  }
  // n - 1 = d * 2^s with d odd.
  uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  // These witnesses decide primality for every n < 3.3e24, so all of uint64_t.
  for (uint64_t a : kSmall) {
    uint64_t x = PowMod64(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int i = 1; i < s; ++i) {
      x = MulMod64(x, x, n);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite) return false;
  }
  return true;
}

Permutation PermutationOf(std::string_view key, uint32_t table_size) {
  const auto [h1, h2] = KeyHashes(key);
  return Permutation{
      .offset = static_cast<uint32_t>(h1 % table_size),
      .skip = static_cast<uint32_t>(h2 % (table_size - 1) + 1),
  };
}

absl::StatusOr<std::vector<uint32_t>> BuildTable(std::span<const Backend> backends,
                                                 uint32_t table_size) {
  const uint32_t m = table_size;
  if (m < 2 || m > BALLAST_MAX_TABLE_SIZE) {
    return absl::InvalidArgumentError("maglev table size " + std::to_string(m) +
                                      " is out of range 2.." +
                                      std::to_string(BALLAST_MAX_TABLE_SIZE) + " (must be prime)");
  }
  if (!IsPrime(m)) {
    return absl::InvalidArgumentError("maglev table size " + std::to_string(m) +
                                      " is not prime; use a prime such as " +
                                      std::to_string(BALLAST_DEFAULT_TABLE_SIZE));
  }

  // Validate each backend on its own, then order them by key so that nothing
  // below depends on the order the caller used.
  std::vector<SortEntry> sorted;
  sorted.reserve(backends.size());
  std::bitset<BALLAST_MAX_BACKENDS> id_seen;
  bool duplicate_id = false;
  for (const Backend& b : backends) {
    if (b.key.empty()) {
      return absl::InvalidArgumentError(BackendName(b) +
                                        ": empty key (the key, e.g. the address text, places "
                                        "the backend in the table)");
    }
    if (b.id == BALLAST_INVALID_ID || b.id >= BALLAST_MAX_BACKENDS) {
      return absl::InvalidArgumentError(BackendName(b) + ": id " + std::to_string(b.id) +
                                        " is out of range 1.." +
                                        std::to_string(BALLAST_MAX_BACKENDS - 1));
    }
    duplicate_id |= id_seen.test(b.id);
    id_seen.set(b.id);
    sorted.emplace_back(b);
  }
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i - 1].backend->key == sorted[i].backend->key) {
      const auto [lo, hi] = std::minmax(sorted[i - 1].backend->id, sorted[i].backend->id);
      return absl::InvalidArgumentError("backend " + sorted[i].backend->key +
                                        ": key given twice (ids " + std::to_string(lo) + " and " +
                                        std::to_string(hi) + ")");
    }
  }
  if (duplicate_id) {
    // Report the first clash in key order (error path only, so quadratic is fine).
    for (size_t i = 0; i < sorted.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (sorted[j].backend->id == sorted[i].backend->id) {
          return absl::InvalidArgumentError("backends " + sorted[j].backend->key + " and " +
                                            sorted[i].backend->key + " both use id " +
                                            std::to_string(sorted[i].backend->id));
        }
      }
    }
  }

  // Only positive weights take part in the table; index i below is the rank
  // of the backend's key among them.
  std::vector<const Backend*> active;
  active.reserve(sorted.size());
  uint64_t weight_sum = 0;
  uint64_t weight_max = 0;
  uint64_t weight_min = ~uint64_t{0};
  for (const SortEntry& e : sorted) {
    const Backend* b = e.backend;
    if (b->weight == 0) continue;
    active.push_back(b);
    weight_sum += b->weight;
    weight_max = std::max<uint64_t>(weight_max, b->weight);
    weight_min = std::min<uint64_t>(weight_min, b->weight);
  }
  const size_t n = active.size();
  if (n == 0) return std::vector<uint32_t>(m, BALLAST_INVALID_ID);
  if (n > m) {
    return absl::InvalidArgumentError(
        std::to_string(n) + " backends have a positive weight but the maglev table has only " +
        std::to_string(m) + " slots; use a larger prime table size");
  }

  // Quotas: floor(M * w / W), then one more slot for the largest remainders
  // (ties: smaller key) until the quotas sum to M. M * w < 2^21 * 2^32 and
  // W <= M * 2^32, so everything fits in 64 bits.
  std::vector<uint32_t> quota(n);
  {
    std::vector<uint64_t> remainder(n);
    uint64_t assigned = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t share = uint64_t{m} * active[i]->weight;
      quota[i] = static_cast<uint32_t>(share / weight_sum);
      remainder[i] = share % weight_sum;
      assigned += quota[i];
    }
    const size_t leftover = m - assigned;  // < n
    if (leftover > 0) {
      std::vector<uint32_t> order(n);
      for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
      std::nth_element(order.begin(), order.begin() + (leftover - 1), order.end(),
                       [&](uint32_t a, uint32_t b) {
                         return remainder[a] != remainder[b] ? remainder[a] > remainder[b] : a < b;
                       });
      for (size_t k = 0; k < leftover; ++k) ++quota[order[k]];
    }
  }

  TableFiller filler(m, active);
  std::vector<uint32_t> list(n);  // the claims of one round, in key order

  if (weight_min == weight_max) {
    // Equal weights: every round, every backend with quota left claims, in
    // key order (the paper's round-robin). Same order as the general
    // schedule below, without its bookkeeping.
    uint32_t rounds = 0;
    uint32_t full_rounds = ~0u;  // rounds in which every backend claims
    for (size_t i = 0; i < n; ++i) {
      rounds = std::max(rounds, quota[i]);
      full_rounds = std::min(full_rounds, quota[i]);
    }
    for (size_t i = 0; i < n; ++i) list[i] = static_cast<uint32_t>(i);
    for (uint32_t round = 0; round < full_rounds; ++round) filler.Claims(list.data(), n);
    for (uint32_t round = full_rounds; round < rounds; ++round) {
      size_t count = 0;
      for (size_t i = 0; i < n; ++i) {
        if (round < quota[i]) list[count++] = static_cast<uint32_t>(i);
      }
      filler.Claims(list.data(), count);
    }
    return filler.Finish();
  }

  // Claim schedule: backend i makes its k-th claim in round
  // ceil(k * w_max / w_i); a round's claims go in key order. The round of the
  // next claim is kept incrementally as k * w_max = whole * w_i + part.
  struct Pace {
    uint64_t whole_step, part_step;  // w_max = whole_step * w + part_step
    uint64_t whole, part;            // k * w_max = whole * w + part, k = claims so far
    uint64_t weight;
    uint64_t NextRound() {
      part += part_step;
      const uint64_t carry = part >= weight;  // branch-free: the pattern is irregular
      part -= weight & (0 - carry);
      whole += whole_step + carry;
      return whole + (part != 0);
    }
  };

  // Backends of equal weight claim in the same rounds; only the last claim
  // differs, made by those whose quota is one above the rest of their weight
  // class (largest remainders). So the schedule is kept per class of equal
  // weight, not per backend: in each round, the classes that claim set their
  // members' bits in a bitset over the backends, and reading the bitset in
  // order gives the round's claims in key order.
  struct Class {
    Pace pace;
    uint32_t first, extra, end;  // members[first, end); [extra, end) make one more claim
    uint32_t quota;              // claims of members[first, extra)
    uint32_t claims;             // claims made so far
  };
  std::vector<uint32_t> members;  // of each class in turn, each class in key order
  std::vector<Class> classes;
  uint64_t max_gap = 1;  // consecutive claims of one class are at most this many rounds apart
  {
    std::vector<uint64_t> by_weight;  // weight << 24 | i (n <= M < 2^24)
    by_weight.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (quota[i] > 0) by_weight.push_back(uint64_t{active[i]->weight} << 24 | i);
    }
    if (weight_max <= 4 * uint64_t{n} + 256) {
      // A counting sort by weight; `by_weight` is in key order already, so
      // each weight's entries stay in key order.
      std::vector<uint32_t> start(weight_max + 2, 0);
      for (uint64_t e : by_weight) ++start[(e >> 24) + 1];
      for (size_t w = 1; w < start.size(); ++w) start[w] += start[w - 1];
      std::vector<uint64_t> sorted_by_weight(by_weight.size());
      for (uint64_t e : by_weight) sorted_by_weight[start[e >> 24]++] = e;
      by_weight.swap(sorted_by_weight);
    } else {
      std::sort(by_weight.begin(), by_weight.end());
    }
    members.reserve(by_weight.size());
    for (size_t k = 0; k < by_weight.size();) {
      const uint64_t w = by_weight[k] >> 24;
      size_t e = k;
      uint32_t q = ~0u;  // the smaller of the class's two quotas
      for (; e < by_weight.size() && by_weight[e] >> 24 == w; ++e) {
        q = std::min(q, quota[by_weight[e] & 0xffffff]);
      }
      for (size_t t = k; t < e; ++t) {
        const auto i = static_cast<uint32_t>(by_weight[t] & 0xffffff);
        if (quota[i] == q) members.push_back(i);
      }
      const auto extra = static_cast<uint32_t>(members.size());
      for (size_t t = k; t < e; ++t) {
        const auto i = static_cast<uint32_t>(by_weight[t] & 0xffffff);
        if (quota[i] != q) members.push_back(i);
      }
      classes.push_back(Class{
          .pace = Pace{.whole_step = weight_max / w,
                       .part_step = weight_max % w,
                       .whole = 0,
                       .part = 0,
                       .weight = w},
          .first = static_cast<uint32_t>(k),
          .extra = extra,
          .end = static_cast<uint32_t>(e),
          .quota = q,
          .claims = 0,
      });
      max_gap = std::max(max_gap, (weight_max + w - 1) / w);
      k = e;
    }
  }

  if (max_gap < kMaxRingRounds && classes.size() * 4 > n) {
    // Most weights distinct (classes of one to four backends): the calendar
    // would cost more per round than it saves, and with few backends there
    // are many rounds. A ring of per-round bitsets over the backends: bit i
    // of ring[r % ring_size] is set when backend i claims in round r.
    const size_t words = (n + 63) / 64;
    uint64_t gap = 1;
    for (size_t i = 0; i < n; ++i) {
      if (quota[i] > 0)
        gap = std::max<uint64_t>(gap, (weight_max + active[i]->weight - 1) / active[i]->weight);
    }
    const uint64_t ring_size = std::bit_ceil(gap + 1);
    if (ring_size * words <= kMaxRingWords) {
      const uint64_t ring_mask = ring_size - 1;
      std::vector<Pace> pace(n);
      std::vector<uint32_t> left(quota);
      std::vector<uint64_t> ring(ring_size * words, 0);
      for (size_t i = 0; i < n; ++i) {
        const uint64_t w = active[i]->weight;
        pace[i] = Pace{.whole_step = weight_max / w,
                       .part_step = weight_max % w,
                       .whole = 0,
                       .part = 0,
                       .weight = w};
        if (left[i] == 0) continue;
        const uint64_t slot = pace[i].NextRound() & ring_mask;
        ring[slot * words + i / 64] |= uint64_t{1} << (i % 64);
      }
      list.resize(n + kClaimBatch);
      size_t count = 0;
      uint32_t claims_left = m;
      for (uint64_t round = 1; claims_left > 0; ++round) {
        uint64_t* const bits = &ring[(round & ring_mask) * words];
        const size_t before = count;
        for (size_t w = 0; w < words; ++w) {
          uint64_t word = bits[w];
          bits[w] = 0;
          while (word != 0) {
            const auto i = static_cast<uint32_t>(w * 64 + std::countr_zero(word));
            word &= word - 1;
            list[count++] = i;
            if (--left[i] == 0) continue;
            const uint64_t next = pace[i].NextRound() & ring_mask;
            ring[next * words + i / 64] |= uint64_t{1} << (i % 64);
          }
        }
        claims_left -= static_cast<uint32_t>(count - before);
        if (count >= kClaimBatch || claims_left == 0) {
          filler.Claims(list.data(), count);
          count = 0;
        }
      }
      return filler.Finish();
    }
  }

  // The round of every class's last claim: the schedule's length.
  uint64_t rounds = 0;
  for (const Class& cl : classes) {
    const uint64_t last = uint64_t{cl.quota} + (cl.extra < cl.end ? 1 : 0);  // < 2^21
    const uint64_t w = cl.pace.weight;
    rounds = std::max(rounds, (last * weight_max + w - 1) / w);  // < 2^53: no overflow
  }
  const size_t words = (n + 63) / 64;

  if (rounds <= kMaxRoundWords / words) {  // (rounds * words could overflow)
    // Few rounds: every round's bitset over the backends at once, class by
    // class. Each class ORs the words its members occupy into the bitset of
    // every round it claims in (the last claim only for the members with
    // one more); then the rounds are read in order.
    std::vector<uint64_t> round_bits(rounds * words, 0);
    std::vector<std::pair<uint32_t, uint64_t>> class_words;  // (word, members' bits)
    for (const Class& cl : classes) {
      class_words.clear();
      for (uint32_t t = cl.first; t < cl.end; ++t) {
        const uint32_t w = members[t] / 64;
        if (class_words.empty() || class_words.back().first != w) class_words.push_back({w, 0});
        class_words.back().second |= uint64_t{1} << (members[t] % 64);
      }
      // Members are in key order within each part ([first, extra) and
      // [extra, end)), so a word can appear twice: once per part.
      Pace pace = cl.pace;
      for (uint32_t k = 0; k < cl.quota; ++k) {
        uint64_t* const row = &round_bits[(pace.NextRound() - 1) * words];
        for (const auto& [w, bits] : class_words) row[w] |= bits;
      }
      if (cl.extra < cl.end) {
        uint64_t* const row = &round_bits[(pace.NextRound() - 1) * words];
        for (uint32_t t = cl.extra; t < cl.end; ++t) {
          row[members[t] / 64] |= uint64_t{1} << (members[t] % 64);
        }
      }
    }
    // AppendSetBits may write 8 entries past a round's claims.
    list.resize(n + kClaimBatch + 8);
    size_t count = 0;
    for (uint64_t round = 0; round < rounds; ++round) {
      uint32_t* out = list.data() + count;
      const uint64_t* const row = &round_bits[round * words];
      for (size_t w = 0; w < words; ++w) {
        out = AppendSetBits(out, row[w], static_cast<uint32_t>(w * 64));
      }
      count = static_cast<size_t>(out - list.data());
      if (count >= kClaimBatch || round + 1 == rounds) {
        filler.Claims(list.data(), count);
        count = 0;
      }
    }
  } else if (max_gap < kMaxRingRounds) {
    // Classes wait in a calendar: ring entry r % ring_size lists the classes
    // whose next claim is in round r (a linked list through `link`). Pending
    // rounds are always less than `ring_size` rounds ahead.
    const uint64_t ring_size = std::bit_ceil(max_gap + 1);  // a power of two: index by mask
    const uint64_t ring_mask = ring_size - 1;
    constexpr uint32_t kNone = ~0u;
    std::vector<uint32_t> head(ring_size, kNone);
    std::vector<uint32_t> link(classes.size());
    for (uint32_t c = 0; c < classes.size(); ++c) {
      const uint64_t slot = classes[c].pace.NextRound() & ring_mask;
      link[c] = head[slot];
      head[slot] = c;
    }
    std::vector<uint64_t> bits(words, 0);
    // Each class's members as a bitset over the backends, when these are
    // small, stored by class (rows padded to whole blocks of kBlockPairs pairs
    // of words): a round's claims are then, a block at a time, the OR of the
    // rows of the classes claiming with all their members (`due`), kept in
    // registers. (Per-member
    // read-modify-writes of a bitset word wait on each other when they hit
    // the same word; so do per-class ORs into a bitset in memory.) `bits`
    // holds the rest: last claims made by part of a class, or every claim
    // when there are no masks.
    const size_t nclasses = classes.size();
    const size_t pairs = (words + 1) / 2;
    const size_t row_pairs = (pairs + kBlockPairs - 1) / kBlockPairs * kBlockPairs;
    std::vector<Word2> masks;  // [class][pair of words]
    std::vector<uint32_t> due;
    if (nclasses * row_pairs * 2 <= kMaxMaskWords) {
      masks.assign(nclasses * row_pairs, Word2{0, 0});
      due.reserve(nclasses);
      for (size_t c = 0; c < nclasses; ++c) {
        for (uint32_t t = classes[c].first; t < classes[c].end; ++t) {
          masks[c * row_pairs + members[t] / 128][members[t] / 64 % 2] |= uint64_t{1}
                                                                          << (members[t] % 64);
        }
      }
    }
    // AppendSetBits may write 8 entries past a round's claims.
    list.resize(n + kClaimBatch + 8);
    size_t count = 0;
    uint32_t claims_left = m;
    for (uint64_t round = 1; claims_left > 0; ++round) {
      const uint64_t slot = round & ring_mask;
      uint32_t c = head[slot];
      if (c == kNone) continue;
      head[slot] = kNone;
      while (c != kNone) {
        const uint32_t next_c = link[c];
        Class& cl = classes[c];
        if (cl.claims < cl.quota && !masks.empty()) {
          due.push_back(c);
        } else {
          for (uint32_t t = cl.claims < cl.quota ? cl.first : cl.extra; t < cl.end; ++t) {
            bits[members[t] >> 6] |= uint64_t{1} << (members[t] & 63);
          }
        }
        ++cl.claims;
        if (cl.claims < cl.quota || (cl.claims == cl.quota && cl.extra < cl.end)) {
          const uint64_t next = cl.pace.NextRound() & ring_mask;
          link[c] = head[next];
          head[next] = c;
        }
        c = next_c;
      }
      const size_t before = count;
      uint32_t* out = list.data() + count;
      const uint32_t* const due_begin = due.data();
      const uint32_t* const due_end = due_begin + due.size();
      for (size_t block = 0; block < pairs; block += kBlockPairs) {
        Word2 acc[kBlockPairs] = {};
        if (!masks.empty()) {
          for (const uint32_t* d = due_begin; d < due_end; ++d) {
            const Word2* const row = masks.data() + *d * row_pairs + block;
#pragma GCC unroll 8
            for (size_t k = 0; k < kBlockPairs; ++k) acc[k] |= row[k];
          }
        }
        for (size_t k = 0; k < kBlockPairs && block + k < pairs; ++k) {
          for (size_t half = 0; half < 2 && 2 * (block + k) + half < words; ++half) {
            const size_t w = 2 * (block + k) + half;
            out = AppendSetBits(out, acc[k][half] | bits[w], static_cast<uint32_t>(w * 64));
            bits[w] = 0;
          }
        }
      }
      due.clear();
      count = static_cast<size_t>(out - list.data());
      claims_left -= static_cast<uint32_t>(count - before);
      if (count >= kClaimBatch || claims_left == 0) {
        filler.Claims(list.data(), count);
        count = 0;
      }
    }
  } else {
    // Weights so far apart that the ring would be large: sort all claims by
    // (round, key) instead.
    std::vector<std::pair<uint64_t, uint32_t>> claims;
    claims.reserve(m);
    for (const Class& cl : classes) {
      Pace pace = cl.pace;
      for (uint32_t k = 0; k <= cl.quota; ++k) {
        const uint64_t round = pace.NextRound();
        for (uint32_t t = k < cl.quota ? cl.first : cl.extra; t < cl.end; ++t) {
          claims.emplace_back(round, members[t]);
        }
      }
    }
    std::sort(claims.begin(), claims.end());
    std::vector<uint32_t> order(claims.size());
    for (size_t k = 0; k < claims.size(); ++k) order[k] = claims[k].second;
    filler.Claims(order.data(), order.size());
  }
  return filler.Finish();
}

}  // namespace ballast::maglev
