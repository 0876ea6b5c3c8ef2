// The fill engine of the Maglev table builder (maglev.cc): claims of slots
// in schedule order, made by walking each backend's permutation while the
// table is mostly empty and by solving for the nearest free slot once few
// are left. maglev.cc decides who claims when (quotas, claim order); this
// file only makes the claims. Internal to agent/maglev; included by
// maglev.cc alone. Not thread-safe (one TableFiller per table being built).
#ifndef BALLAST_AGENT_MAGLEV_TABLE_FILLER_H_
#define BALLAST_AGENT_MAGLEV_TABLE_FILLER_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/maglev/maglev.h"
#include "bpf/include/ballast_abi.h"

namespace ballast::maglev::internal {

// Inverse of a modulo the prime m (1 <= a < m).
uint32_t InverseMod(uint32_t a, uint32_t m);

// The fastest MinStepKey this CPU runs (table_filler.cc).
MinStepKeyFn FastestMinStepKey();

// When this few slots are left, the filler stops walking permutations and
// solves for each claim's slot (see table_filler.cc).
uint32_t TailThreshold(uint32_t table_size);

// The key scale of MinStepKey's results: key = steps * kKeyScale + index.
constexpr double kKeyScale = 2097152.0;  // 2^21 > any free-list index (M < 2^21)
// Free-list padding MinStepKey may read past `count`, and must hold NaN.
constexpr size_t kFreePadding = 8;

struct Cursor {
  uint32_t pos;   // next slot of this backend's permutation to try
  uint32_t skip;  // step of the permutation
};

// schedule order and number exactly M in total; Finish() returns the table.
class TableFiller {
 public:
  TableFiller(uint32_t m, const std::vector<const Backend*>& active)
      : m_(m),
        walk_claims_(m - std::min(TailThreshold(m), m)),
        // The walk changes shape as the table fills (see Claims): up to 40%
        // full, up to 70%, up to 90%, then long walks.
        chunk4_from_(static_cast<uint32_t>(uint64_t{m} * 40 / 100)),
        chunk8_from_(static_cast<uint32_t>(uint64_t{m} * 70 / 100)),
        long_from_(static_cast<uint32_t>(uint64_t{m} * 90 / 100)),
        cursor_(active.size()),
        ids_(active.size()),
        table_(m, BALLAST_INVALID_ID),
        taken_((2 * uint64_t{m} + 63) / 64 + 1, 0),
        min_step_key_(FastestMinStepKey()) {
    for (size_t i = 0; i < active.size(); ++i) {
      const Permutation p = PermutationOf(active[i]->key, m);
      cursor_[i] = Cursor{.pos = p.offset, .skip = p.skip};
      ids_[i] = active[i]->id;
    }
  }

  void Claims(const uint32_t* list, size_t count) {
    uint32_t c = claims_;
    size_t k = 0;
    if (c < walk_claims_) {
      const size_t walks = std::min<size_t>(count, walk_claims_ - c);
      const Walker w{.m = m_,
                     .taken = taken_.data(),
                     .cursor = cursor_.data(),
                     .table = table_.data(),
                     .ids = ids_.data()};
      // Which walk suits a claim depends on how full the table is (the
      // chance that a probe finds its slot taken); all give the same slot.
      // One loop per stretch of claims with the same walk: each loop then
      // holds one walk's code (a test per claim of which walk applies, with
      // all four inlined into one loop, measured 3-7% slower overall).
      while (k < walks) {
        if (c < chunk4_from_) {
          const size_t end = k + std::min<size_t>(walks - k, chunk4_from_ - c);
          for (; k < end; ++k, ++c) w.Short(list[k]);
        } else if (c < chunk8_from_) {
          const size_t end = k + std::min<size_t>(walks - k, chunk8_from_ - c);
          for (; k < end; ++k, ++c) w.Chunked<4>(list[k]);
        } else if (c < long_from_) {
          const size_t end = k + std::min<size_t>(walks - k, long_from_ - c);
          for (; k < end; ++k, ++c) w.Chunked<8>(list[k]);
        } else {
          if (c == long_from_) Mirror();
          for (; k < walks; ++k, ++c) w.Long(list[k]);
        }
      }
    }
    for (; k < count; ++k, ++c) {
      if (c == walk_claims_) CollectFreeSlots();
      Solve(list[k]);
    }
    claims_ = c;
  }

  std::vector<uint32_t> Finish() { return std::move(table_); }

 private:
  // (a + b) % m for a, b < m, without a division.
  static uint32_t AddMod(uint32_t a, uint32_t b, uint32_t m) {
    const uint32_t sum = a + b;
    return sum >= m ? sum - m : sum;
  }

  // Walks backend i's permutation to its next free slot and claims it. The
  // pointers are copied out of the filler so that they stay in registers
  // (stores into the table could otherwise alias the filler's members).
  // This is where the build spends most of its time, much of it in
  // mispredicted branches: how long a walk is, is random.
  struct Walker {
    uint32_t m;
    uint64_t* taken;  // bit per slot: already claimed
    Cursor* cursor;
    uint32_t* table;
    const uint32_t* ids;

    uint32_t IsTaken(uint32_t p) const {
      return static_cast<uint32_t>((taken[p >> 6] >> (p & 63)) & 1);
    }

    void Take(uint32_t i, uint32_t pos, uint32_t skip) const {
      taken[pos >> 6] |= uint64_t{1} << (pos & 63);
      table[pos] = ids[i];
      cursor[i].pos = AddMod(pos, skip, m);
    }

    // For a table up to 40% full: the first two probes are made without a branch (both bits are
    // loaded, and the first free of the two is selected arithmetically); only walks longer than two
    // probes branch into the loop.
    [[gnu::always_inline]] void Short(uint32_t i) const {
      uint32_t pos = cursor[i].pos;
      const uint32_t skip = cursor[i].skip;
      const uint32_t next = AddMod(pos, skip, m);
      const uint32_t t0 = IsTaken(pos);
      const uint32_t t1 = IsTaken(next);
      if ((t0 & t1) == 0) [[likely]] {
        pos ^= (pos ^ next) & (0u - t0);  // pos if free, else next
      } else {
        // Two interleaved chains (even and odd steps) halve the latency of
        // the modular additions; the slots are still tested in order.
        const uint32_t skip2 = AddMod(skip, skip, m);
        pos = AddMod(next, skip, m);
        uint32_t odd = AddMod(pos, skip, m);
        for (;;) {
          if (!IsTaken(pos)) break;
          if (!IsTaken(odd)) {
            pos = odd;
            break;
          }
          pos = AddMod(pos, skip2, m);
          odd = AddMod(odd, skip2, m);
        }
      }
      Take(i, pos, skip);
    }

    // From 90% full on, walks are long (ten probes and more): probes go four
    // to an iteration, one branch each, at pos + d for d = skip, 2 * skip,
    // 3 * skip (mod M). pos + d < 2M, and the bitmap's second half mirrors the
    // first from here on, so the sums need no reduction.
    [[gnu::always_inline]] void Long(uint32_t i) const {
      uint32_t pos = cursor[i].pos;
      const uint32_t skip = cursor[i].skip;
      const uint32_t d2 = AddMod(skip, skip, m);
      const uint32_t d3 = AddMod(d2, skip, m);
      const uint32_t d4 = AddMod(d2, d2, m);
      for (;;) {
        if (!IsTaken(pos)) break;
        if (!IsTaken(pos + skip)) {
          pos += skip;
          break;
        }
        if (!IsTaken(pos + d2)) {
          pos += d2;
          break;
        }
        if (!IsTaken(pos + d3)) {
          pos += d3;
          break;
        }
        pos = AddMod(pos, d4, m);
      }
      pos = pos >= m ? pos - m : pos;
      const uint32_t mirror = pos + m;
      taken[mirror >> 6] |= uint64_t{1} << (mirror & 63);
      Take(i, pos, skip);
    }

    // Between 40% and 90% full, walks of a few probes are common and their
    // length is a coin toss: K probes are made without a branch (a bit mask
    // of the taken ones), and the first free one is found from the mask. A
    // branch is mispredicted only when all K are taken.
    template <int K>
    [[gnu::always_inline]] void Chunked(uint32_t i) const {
      uint32_t pos = cursor[i].pos;
      const uint32_t skip = cursor[i].skip;
      for (;;) {
        uint32_t probe[K];
        probe[0] = pos;
#pragma GCC unroll 16
        for (int k = 1; k < K; ++k) probe[k] = AddMod(probe[k - 1], skip, m);
        uint32_t mask = 0;
#pragma GCC unroll 16
        for (int k = 0; k < K; ++k) mask |= IsTaken(probe[k]) << k;
        if (mask != (1u << K) - 1) [[likely]] {
          pos = probe[std::countr_zero(~mask)];
          break;
        }
        pos = AddMod(probe[K - 1], skip, m);
      }
      Take(i, pos, skip);
    }
  };

  // Sets bit p + M for every taken slot p < M: the long walks' mirror.
  [[gnu::noinline]] void Mirror() {
    const uint32_t words = m_ / 64, bits = m_ % 64;  // p + M = p + 64 * words + bits
    const size_t low = (m_ + 63) / 64;
    for (size_t w = 0; w < low; ++w) {
      uint64_t x = taken_[w];
      if (w == low - 1 && bits != 0) x &= (uint64_t{1} << bits) - 1;  // slots < M only
      taken_[w + words] |= x << bits;
      if (bits != 0) taken_[w + words + 1] |= x >> (64 - bits);
    }
  }

  [[gnu::noinline]] void CollectFreeSlots() {
    free_.assign(m_ - claims_ + kFreePadding, std::numeric_limits<double>::quiet_NaN());
    size_t n = 0;
    for (size_t w = 0; w < (m_ + 63) / 64; ++w) {
      uint64_t bits = ~taken_[w];
      while (bits != 0) {
        const uint32_t slot = static_cast<uint32_t>(w * 64 + std::countr_zero(bits));
        if (slot >= m_) break;
        free_[n++] = slot;
        bits &= bits - 1;
      }
    }
    free_count_ = n;
    inverse_.assign(cursor_.size(), 0);
  }

  // The last few slots. Every slot a backend's permutation visits between its
  // cursor and its next free slot is taken, so the next free slot is the free
  // slot e with the fewest steps j = (e - pos) / skip (mod M) from the cursor
  // (unique: the permutation visits each slot once). Same result as walking,
  // without the long walks near the end.
  [[gnu::noinline]] void Solve(uint32_t i) {
    if (inverse_[i] == 0) inverse_[i] = InverseMod(cursor_[i].skip, m_);
    const double key =
        min_step_key_(free_.data(), free_count_, static_cast<double>(m_ - cursor_[i].pos),
                      static_cast<double>(inverse_[i]), static_cast<double>(m_));
    const auto best =
        static_cast<size_t>(static_cast<uint64_t>(key) & (static_cast<uint64_t>(kKeyScale) - 1));
    const auto slot = static_cast<uint32_t>(free_[best]);
    free_[best] = free_[--free_count_];
    free_[free_count_] = std::numeric_limits<double>::quiet_NaN();
    table_[slot] = ids_[i];
    cursor_[i].pos = AddMod(slot, cursor_[i].skip, m_);
  }

  const uint32_t m_;
  const uint32_t walk_claims_;  // claims made by walking; the rest by Solve()
  const uint32_t chunk4_from_, chunk8_from_, long_from_;
  uint32_t claims_ = 0;
  std::vector<Cursor> cursor_;
  std::vector<uint32_t> ids_;
  std::vector<uint32_t> table_;
  std::vector<uint64_t> taken_;  // bit per slot: already claimed (walk phase); then a mirror
  std::vector<double> free_;     // free slots (tail phase), then NaN padding
  size_t free_count_ = 0;
  std::vector<uint32_t> inverse_;  // skip^-1 mod M per backend, 0 = not computed yet
  MinStepKeyFn min_step_key_;
};

}  // namespace ballast::maglev::internal

#endif  // BALLAST_AGENT_MAGLEV_TABLE_FILLER_H_
