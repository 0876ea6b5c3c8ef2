// Tests for the weighted Maglev table builder (agent/maglev/maglev.h).
#include "agent/maglev/maglev.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/status/status.h"
#include "bpf/include/ballast_abi.h"

namespace ballast::maglev {
namespace {

constexpr uint32_t kM = 65537;

std::string Addr(uint32_t i) {
  // 198.18.0.0/15 has 2^17 addresses; tests never need more.
  return "198." + std::to_string(18 + (i >> 16)) + "." + std::to_string((i >> 8) & 0xff) + "." +
         std::to_string(i & 0xff);
}

std::vector<Backend> EqualBackends(uint32_t n, uint32_t weight = 1) {
  std::vector<Backend> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(Backend{i + 1, Addr(i + 1), weight});
  return out;
}

std::vector<Backend> WeightedBackends(const std::vector<uint32_t>& weights) {
  std::vector<Backend> out;
  for (uint32_t i = 0; i < weights.size(); ++i) out.push_back({i + 1, Addr(i + 1), weights[i]});
  return out;
}

std::vector<uint32_t> Build(const std::vector<Backend>& backends, uint32_t m = kM) {
  auto table = BuildTable(backends, m);
  INFO(table.status().ToString());
  REQUIRE(table.ok());
  REQUIRE(table->size() == m);
  return *std::move(table);
}

std::map<uint32_t, uint64_t> SlotCounts(const std::vector<uint32_t>& table) {
  std::map<uint32_t, uint64_t> counts;
  for (uint32_t id : table) ++counts[id];
  return counts;
}

// The documented algorithm written the slow, obvious way: full sorts, a
// modulo per permutation step, no tail shortcut. BuildTable must agree with it
// slot for slot.
std::vector<uint32_t> ReferenceTable(std::vector<Backend> backends, uint32_t m) {
  std::sort(backends.begin(), backends.end(),
            [](const Backend& a, const Backend& b) { return a.key < b.key; });
  std::erase_if(backends, [](const Backend& b) { return b.weight == 0; });
  std::vector<uint32_t> table(m, BALLAST_INVALID_ID);
  const size_t n = backends.size();
  if (n == 0) return table;
  uint64_t total = 0, max_weight = 0;
  for (const Backend& b : backends) {
    total += b.weight;
    max_weight = std::max<uint64_t>(max_weight, b.weight);
  }
  // Largest remainder.
  std::vector<uint64_t> quota(n), rem(n);
  uint64_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    quota[i] = uint64_t{m} * backends[i].weight / total;
    rem[i] = uint64_t{m} * backends[i].weight % total;
    given += quota[i];
  }
  std::vector<size_t> by_rem(n);
  std::iota(by_rem.begin(), by_rem.end(), 0);
  std::sort(by_rem.begin(), by_rem.end(),
            [&](size_t a, size_t b) { return rem[a] != rem[b] ? rem[a] > rem[b] : a < b; });
  for (size_t k = 0; k < m - given; ++k) ++quota[by_rem[k]];
  // Claim k of backend i happens in round ceil(k * max / w_i), key order within a round.
  std::vector<std::pair<uint64_t, size_t>> claims;
  for (size_t i = 0; i < n; ++i) {
    for (uint64_t k = 1; k <= quota[i]; ++k) {
      claims.emplace_back((k * max_weight + backends[i].weight - 1) / backends[i].weight, i);
    }
  }
  std::sort(claims.begin(), claims.end());
  REQUIRE(claims.size() == m);
  std::vector<uint64_t> next(n, 0);
  for (const auto& [round, i] : claims) {
    const Permutation p = PermutationOf(backends[i].key, m);
    while (true) {
      const uint64_t slot = (p.offset + next[i] * p.skip) % m;
      ++next[i];
      if (table[slot] == BALLAST_INVALID_ID) {
        table[slot] = backends[i].id;
        break;
      }
    }
  }
  return table;
}

// FNV-1a over the table's bytes in a fixed (little-endian) order.
uint64_t TableDigest(const std::vector<uint32_t>& table) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (uint32_t v : table) {
    for (int b = 0; b < 4; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

// Slots that changed owner, not counting slots whose old or new owner is
// `excluded` (the backend that was removed or added: its own slots have to move).
double MovedFraction(const std::vector<uint32_t>& before, const std::vector<uint32_t>& after,
                     uint32_t excluded) {
  uint64_t moved = 0;
  for (size_t s = 0; s < before.size(); ++s) {
    if (before[s] != after[s] && before[s] != excluded && after[s] != excluded) ++moved;
  }
  return static_cast<double>(moved) / static_cast<double>(before.size());
}

void CheckShares(const std::vector<Backend>& backends, const std::vector<uint32_t>& table) {
  const auto counts = SlotCounts(table);
  uint64_t total = 0;
  for (const Backend& b : backends) total += b.weight;
  double worst_rel = 0;
  for (const Backend& b : backends) {
    const double share = static_cast<double>(table.size()) * b.weight / static_cast<double>(total);
    const uint64_t got = counts.contains(b.id) ? counts.at(b.id) : 0;
    INFO("backend " << b.key << " weight " << b.weight << " share " << share << " got " << got);
    // Largest-remainder rounding: floor(share) or ceil(share), never further.
    CHECK(static_cast<double>(got) >= std::floor(share));
    CHECK(static_cast<double>(got) <= std::ceil(share));
    if (share >= 100) {
      const double rel = std::abs(static_cast<double>(got) - share) / share;
      CHECK(rel <= 0.01);
      worst_rel = std::max(worst_rel, rel);
    }
  }
  uint64_t sum = 0;
  for (const auto& [id, c] : counts) sum += c;
  CHECK(sum == table.size());
  CHECK_FALSE(counts.contains(BALLAST_INVALID_ID));
}

}  // namespace

TEST_CASE("IsPrime matches trial division below 20000", "[maglev][prime]") {
  for (uint64_t n = 0; n < 20000; ++n) {
    bool prime = n >= 2;
    for (uint64_t d = 2; d * d <= n && prime; ++d) prime = n % d != 0;
    INFO("n = " << n);
    REQUIRE(IsPrime(n) == prime);
  }
}

TEST_CASE("IsPrime on table sizes and hard composites", "[maglev][prime]") {
  CHECK(IsPrime(65537));
  CHECK(IsPrime(1048573));
  CHECK(IsPrime(2147483647ULL));            // 2^31 - 1
  CHECK(IsPrime(2305843009213693951ULL));   // 2^61 - 1
  CHECK(IsPrime(18446744073709551557ULL));  // largest 64-bit prime
  CHECK_FALSE(IsPrime(0));
  CHECK_FALSE(IsPrime(1));
  CHECK_FALSE(IsPrime(65536));
  CHECK_FALSE(IsPrime(1048575));
  CHECK_FALSE(IsPrime(561));                     // Carmichael number
  CHECK_FALSE(IsPrime(3215031751ULL));           // strong pseudoprime to bases 2, 3, 5, 7
  CHECK_FALSE(IsPrime(3825123056546413051ULL));  // strong pseudoprime to bases 2..23
  CHECK_FALSE(IsPrime(4294967297ULL));           // 641 * 6700417
  CHECK_FALSE(IsPrime(18446744073709551615ULL));
}

TEST_CASE("PermutationOf gives a valid offset and skip", "[maglev]") {
  for (uint32_t m : {2u, 3u, 13u, 101u, kM, BALLAST_MAX_TABLE_SIZE}) {
    for (uint32_t i = 1; i <= 200; ++i) {
      const Permutation p = PermutationOf(Addr(i), m);
      CHECK(p.offset < m);
      CHECK(p.skip >= 1);
      CHECK(p.skip < m);
    }
  }
  // Different keys spread over the table: 1000 keys should hit many distinct
  // offsets and skips (a broken hash would collapse them).
  std::vector<uint32_t> offsets, skips;
  for (uint32_t i = 1; i <= 1000; ++i) {
    offsets.push_back(PermutationOf(Addr(i), kM).offset);
    skips.push_back(PermutationOf(Addr(i), kM).skip);
  }
  std::sort(offsets.begin(), offsets.end());
  std::sort(skips.begin(), skips.end());
  CHECK(std::unique(offsets.begin(), offsets.end()) - offsets.begin() > 980);
  CHECK(std::unique(skips.begin(), skips.end()) - skips.begin() > 980);
}

TEST_CASE("BuildTable is pinned: same bytes on every host and every run", "[maglev]") {
  // These values are part of the table format: routers running different
  // builds must agree. Change them only together with a deliberate format change.
  const Permutation p = PermutationOf("198.18.1.10", kM);
  CHECK(p.offset == 11353u);
  CHECK(p.skip == 48340u);
  CHECK(TableDigest(Build(EqualBackends(100))) == 0x4c832222642ae6c1ULL);
  CHECK(TableDigest(Build(WeightedBackends({5, 20, 50, 100, 100, 100, 7}))) ==
        0xd55bc53252ea9fb4ULL);
  // N = 1000 as tools/bench/maglev_bench.cc builds it (equal weights, and
  // weights 1..100 from a fixed LCG): guards the speed work on the fill loop.
  std::vector<uint32_t> mixed(1000);
  uint32_t lcg = 12345;
  for (auto& w : mixed) {
    lcg = lcg * 1103515245u + 12345u;
    w = 1 + (lcg >> 16) % 100;
  }
  CHECK(TableDigest(Build(EqualBackends(1000))) == 0x663a0a6ed38cee88ULL);
  CHECK(TableDigest(Build(WeightedBackends(mixed))) == 0x4fb2b8c8bf610c90ULL);
}

TEST_CASE("BuildTable equals a straightforward implementation of the documented algorithm",
          "[maglev]") {
  std::mt19937 rng(12345);
  struct Case {
    std::string name;
    std::vector<uint32_t> weights;
    uint32_t m;
  };
  std::vector<Case> cases = {
      {"1 backend", {1}, kM},
      {"10 equal", std::vector<uint32_t>(10, 1), kM},
      {"100 equal", std::vector<uint32_t>(100, 3), kM},
      {"1000 equal", std::vector<uint32_t>(1000, 1), kM},
      {"13 equal on M=13", std::vector<uint32_t>(13, 1), 13},
      {"100 equal on M=101", std::vector<uint32_t>(100, 1), 101},
      {"ramp mix", {5, 20, 50, 100, 100, 100, 100, 0, 100}, kM},
      {"two sizes", {1, 2, 1, 2, 1, 2, 1, 2}, 1009},
  };
  // One heavy backend (1000) and 90 light ones (1) on M=101: the heavy one
  // gets 93 slots and eight light ones win a leftover slot each, claimed in
  // round 1000: the schedule ring spans 1001 rounds.
  {
    std::vector<uint32_t> w(91, 1);
    w[40] = 1000;
    cases.push_back({"heavy and light", w, 101});
  }
  // Weight ratio 100000: three of the four light backends win a leftover slot,
  // claimed in round 100000, too far for the ring, so the builder sorts the
  // claims instead.
  cases.push_back({"extreme ratio", {100000, 1, 1, 1, 1}, kM});
  // 1000 weights, four backends each: too many classes for per-class member
  // bitsets (1000 classes x 63 words), so every claim sets its own bit.
  {
    std::vector<uint32_t> w(4000);
    for (uint32_t i = 0; i < w.size(); ++i) w[i] = 1 + (i * 7919) % 1000;
    cases.push_back({"no class bitsets", w, kM});
  }
  // Few weights, many backends, short schedules: a bitset per round of 47
  // words (3000 backends, 36 rounds) and of 18 words (1100, 80 rounds).
  {
    std::vector<uint32_t> w(3000);
    for (uint32_t i = 0; i < w.size(); ++i) w[i] = 25 * (1 + i % 4);
    cases.push_back({"four weights, 3000 backends", w, kM});
    std::vector<uint32_t> two(1100);
    for (uint32_t i = 0; i < two.size(); ++i) two[i] = 1 + i % 2;
    cases.push_back({"two weights, 1100 backends", two, kM});
  }
  // Schedules too long for a bitset per round, so classes wait in a calendar:
  // one heavy backend among 1999 light ones (22,000 rounds of 32 words), with
  // per-class member bitsets (two blocks of 16 words); and weights 1..1000
  // four backends each plus four of 60000 (984 classes with slots, 3334
  // rounds of 63 words), without.
  {
    std::vector<uint32_t> w(2000, 1);
    w[1234] = 1000;
    cases.push_back({"calendar, class bitsets", w, kM});
    std::vector<uint32_t> many(4004);
    for (uint32_t i = 0; i < many.size(); ++i) many[i] = i < 4000 ? 1 + i / 4 : 60000;
    cases.push_back({"calendar, no class bitsets", many, kM});
  }
  for (int r = 0; r < 6; ++r) {
    std::vector<uint32_t> w(1 + rng() % 300);
    for (auto& x : w) x = rng() % 4 == 0 ? 0 : 1 + rng() % 100;
    cases.push_back({"random " + std::to_string(r), w, r % 2 ? kM : 997u});
  }
  for (const Case& c : cases) {
    SECTION(c.name) {
      const auto backends = WeightedBackends(c.weights);
      REQUIRE(Build(backends, c.m) == ReferenceTable(backends, c.m));
    }
  }
}

// The table bytes are a contract between routers running different builds:
// BuildTable must give exactly what the documented algorithm gives
// (ReferenceTable; the digests above pin the hash and the bytes of earlier
// builds) for every input, and refuse what it must. Random configurations:
// small and large prime sizes, N from 1 to nearly M, equal, random, zero and
// extreme weights, random keys (shared prefixes, long keys, any bytes) and
// ids, in random order.
TEST_CASE("BuildTable gives the documented algorithm's bytes on random configurations",
          "[maglev][reference]") {
  std::mt19937_64 rng(20240611);
  auto uniform = [&rng](uint64_t lo, uint64_t hi) {  // inclusive
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  auto random_key = [&](uint32_t i) {
    switch (uniform(0, 3)) {
      case 0:
        return Addr(i);
      case 1:  // long keys sharing a 20-byte prefix: the fast key order must fall back
        return "2001:db8:aaaa:bbbb:" + std::to_string(i);
      default: {
        std::string key(uniform(1, 24), '\0');
        for (char& c : key) c = static_cast<char>(uniform(0, 255));
        return key + std::to_string(i);  // unique
      }
    }
  };
  auto random_weights = [&](size_t n) {
    std::vector<uint32_t> w(n);
    switch (uniform(0, 6)) {
      case 0: {  // equal
        const uint32_t x = static_cast<uint32_t>(uniform(1, 1000));
        std::fill(w.begin(), w.end(), x);
        break;
      }
      case 1:  // 1..100
        for (auto& x : w) x = static_cast<uint32_t>(uniform(1, 100));
        break;
      case 2:  // with zeros
        for (auto& x : w) x = uniform(0, 2) == 0 ? 0 : static_cast<uint32_t>(uniform(1, 100));
        break;
      case 3:  // extreme: one huge, the rest tiny (claim rounds far apart)
        for (auto& x : w) x = static_cast<uint32_t>(uniform(1, 3));
        w[uniform(0, n - 1)] = static_cast<uint32_t>(uniform(100000, 0xffffffffu));
        break;
      case 4:  // any 32-bit weight
        for (auto& x : w) x = static_cast<uint32_t>(uniform(0, 0xffffffffu));
        break;
      case 5:  // a few distinct values, as during a ramp
        for (auto& x : w) x = static_cast<uint32_t>(uniform(1, 4) * 25);
        break;
      default:  // equal with a few zeros
        for (auto& x : w) x = uniform(0, 9) == 0 ? 0 : 100;
        break;
    }
    return w;
  };
  struct Size {
    uint32_t m;
    int configs;
    uint32_t max_n;
  };
  const Size sizes[] = {{2, 20, 2},        {3, 20, 3},        {7, 40, 7},
                        {13, 60, 13},      {251, 60, 251},    {1009, 40, 1009},
                        {16381, 6, 16381}, {65537, 14, 2000}, {131071, 3, 3000}};
  int compared = 0;
  for (const Size& size : sizes) {
    for (int c = 0; c < size.configs; ++c) {
      // Mostly small N, sometimes up to the limit (every slot nearly one backend).
      const uint32_t n = static_cast<uint32_t>(
          uniform(0, 3) == 0 ? uniform(1, size.max_n) : uniform(1, std::min(size.max_n, 64u)));
      const auto weights = random_weights(n);
      std::vector<Backend> backends;
      std::vector<uint32_t> ids(BALLAST_MAX_BACKENDS - 1);
      std::iota(ids.begin(), ids.end(), 1u);
      std::shuffle(ids.begin(), ids.end(), rng);
      for (uint32_t i = 0; i < n; ++i) backends.push_back({ids[i], random_key(i + 1), weights[i]});
      std::shuffle(backends.begin(), backends.end(), rng);
      INFO("M=" << size.m << " N=" << n << " config " << c);
      const auto got = BuildTable(backends, size.m);
      INFO(got.status().ToString());
      REQUIRE(got.ok());
      REQUIRE(*got == ReferenceTable(backends, size.m));
      ++compared;
    }
  }
  // The benchmark's configurations and the error paths (their messages are
  // checked by the validation test below).
  const std::pair<std::vector<Backend>, bool> fixed[] = {
      {EqualBackends(1000), true},
      {WeightedBackends({100000, 1, 1, 1, 1}), true},
      {EqualBackends(14), true},
      {WeightedBackends({0, 0, 0}), true},
      {{{7, "a", 1}, {7, "b", 1}}, false},  // duplicate id
      {{{1, "a", 1}, {2, "a", 1}}, false},  // duplicate key
      {{{0, "a", 1}}, false},               // id 0
      {{{1, "", 1}}, false}};               // empty key
  for (const auto& [backends, valid] : fixed) {
    for (uint32_t m : {13u, 65537u, 65536u}) {
      const auto got = BuildTable(backends, m);
      INFO("N=" << backends.size() << " M=" << m << ": " << got.status().ToString());
      if (valid && m != 65536u && backends.size() <= m) {
        REQUIRE(got.ok());
        REQUIRE(*got == ReferenceTable(backends, m));
      } else {
        REQUIRE(got.status().code() == absl::StatusCode::kInvalidArgument);
      }
      ++compared;
    }
  }
  CHECK(compared > 250);
}

// The search over the last free slots runs on doubles, four or two lanes at a
// time, with the implementation picked by CPU: each one this CPU runs must
// give the exact integer answer, also with the padding read past the end and
// on the largest table.
TEST_CASE("The tail search finds the exact fewest steps on every implementation", "[maglev]") {
  std::mt19937_64 rng(7);
  const auto impls = internal::MinStepKeyImplementations();
  REQUIRE(!impls.empty());
  INFO(impls.size() << " implementations");
  constexpr double kScale = 2097152.0;
  int checked = 0;
  for (const uint64_t m : {uint64_t{13}, uint64_t{65537}, uint64_t{BALLAST_MAX_TABLE_SIZE}}) {
    for (int trial = 0; trial < 300; ++trial) {
      const size_t count = 1 + rng() % std::min<uint64_t>(m, 700);
      std::vector<uint32_t> slots(m < 4096 ? m : 0);
      std::iota(slots.begin(), slots.end(), 0u);
      std::shuffle(slots.begin(), slots.end(), rng);
      std::vector<bool> used(m, false);
      while (slots.size() < count) {  // large m: distinct random slots
        const auto e = static_cast<uint32_t>(rng() % m);
        if (!used[e]) {
          used[e] = true;
          slots.push_back(e);
        }
      }
      std::vector<double> free(count + 8, std::numeric_limits<double>::quiet_NaN());
      for (size_t k = 0; k < count; ++k) free[k] = slots[k];
      const uint64_t pos = rng() % m, skip = 1 + rng() % (m - 1);
      uint64_t inv = 1;  // skip^(m - 2) mod m
      for (uint64_t b = skip, e = m - 2; e != 0; e >>= 1, b = b * b % m) {
        if (e & 1) inv = inv * b % m;
      }
      REQUIRE(skip * inv % m == 1);
      double want = std::numeric_limits<double>::max();
      for (size_t k = 0; k < count; ++k) {
        const uint64_t steps = (slots[k] + m - pos) * inv % m;  // < 2^41: no overflow
        want = std::min(want, static_cast<double>(steps) * kScale + static_cast<double>(k));
      }
      for (const auto fn : impls) {
        INFO("M=" << m << " count=" << count << " pos=" << pos << " skip=" << skip);
        REQUIRE(fn(free.data(), count, static_cast<double>(m - pos), static_cast<double>(inv),
                   static_cast<double>(m)) == want);
        ++checked;
      }
    }
  }
  CHECK(checked >= 900);
}

TEST_CASE("BuildTable orders keys exactly as std::string does", "[maglev]") {
  // Keys longer than 16 bytes sharing a prefix, a key that is a prefix of
  // another, an embedded NUL and bytes above 0x7f: the builder's fast key
  // comparison must agree with the reference's std::string order.
  std::vector<Backend> backends = {
      {1, "2001:db8:0:0:0:0:0:10", 1},
      {2, "2001:db8:0:0:0:0:0:1", 1},
      {3, "2001:db8:0:0:0:0:1:0", 2},
      {4, "198.18.0.1", 1},
      {5, "198.18.0.10", 3},
      {6, std::string("198.18.0.1\0x", 12), 1},
      {7, "\xff\xfe", 1},
      {8, "\x7f", 1},
      {9, "2001:db8:0:0:0:0:0:100", 1},
      {10, "2001:db8:0:0:0:0:0:1000000000000", 1},
  };
  for (uint32_t m : {13u, 1009u, kM}) REQUIRE(Build(backends, m) == ReferenceTable(backends, m));
}

TEST_CASE("BuildTable is deterministic and independent of input order", "[maglev]") {
  std::mt19937 rng(7);
  for (const auto& backends :
       {EqualBackends(100), EqualBackends(1000),
        WeightedBackends({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 100, 50, 25})}) {
    const auto reference = Build(backends);
    CHECK(Build(backends) == reference);
    for (int i = 0; i < 5; ++i) {
      auto shuffled = backends;
      std::shuffle(shuffled.begin(), shuffled.end(), rng);
      CHECK(Build(shuffled) == reference);
    }
    auto reversed = backends;
    std::reverse(reversed.begin(), reversed.end());
    CHECK(Build(reversed) == reference);
  }
}

TEST_CASE("Equal weights give every backend floor(M/N) or ceil(M/N) slots", "[maglev]") {
  struct Case {
    uint32_t n, m, weight;
  };
  for (const Case& c :
       {Case{1, kM, 1}, Case{2, kM, 1}, Case{3, kM, 1}, Case{10, kM, 1}, Case{100, kM, 1},
        Case{100, kM, 77}, Case{1000, kM, 1}, Case{5000, kM, 1}, Case{100, 101, 1}, Case{13, 13, 1},
        Case{7, 13, 3}, Case{1000, BALLAST_MAX_TABLE_SIZE, 1}}) {
    INFO("N=" << c.n << " M=" << c.m << " weight=" << c.weight);
    const auto backends = EqualBackends(c.n, c.weight);
    const auto counts = SlotCounts(Build(backends, c.m));
    REQUIRE(counts.size() == c.n);
    for (const auto& [id, count] : counts) {
      CHECK(id != BALLAST_INVALID_ID);
      CHECK(count >= c.m / c.n);
      CHECK(count <= (c.m + c.n - 1) / c.n);
    }
  }
}

TEST_CASE("Unequal weights get their share: floor or ceil, within 1% of shares >= 100 slots",
          "[maglev]") {
  std::mt19937 rng(99);
  std::vector<std::vector<uint32_t>> mixes = {
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
      {5, 20, 50, 100, 100, 100, 100, 100},  // ramp steps beside full backends
      {1, 100},
      {3, 3, 3, 2, 2, 1},
      {1000000, 1, 1, 1},
  };
  {
    std::vector<uint32_t> heavy_and_light(1000, 1);  // one heavy, 999 light
    heavy_and_light[0] = 100;
    mixes.push_back(heavy_and_light);
  }
  for (int r = 0; r < 4; ++r) {
    std::vector<uint32_t> w(100);
    for (auto& x : w) x = 1 + rng() % 100;
    mixes.push_back(w);
  }
  for (size_t i = 0; i < mixes.size(); ++i) {
    INFO("mix " << i);
    const auto backends = WeightedBackends(mixes[i]);
    CheckShares(backends, Build(backends));
  }
}

TEST_CASE("Weight 0 backends get no slots and do not disturb the others' shares", "[maglev]") {
  auto backends = WeightedBackends({10, 0, 20, 0, 30});
  const auto table = Build(backends);
  const auto counts = SlotCounts(table);
  CHECK_FALSE(counts.contains(2));
  CHECK_FALSE(counts.contains(4));
  std::erase_if(backends, [](const Backend& b) { return b.weight == 0; });
  CheckShares(backends, table);
  // A weight-0 backend leaves the table exactly as if it were not there.
  CHECK(table == Build(backends));
}

TEST_CASE("No backends or all weights 0 give a table of BALLAST_INVALID_ID", "[maglev]") {
  const std::vector<uint32_t> empty(kM, BALLAST_INVALID_ID);
  CHECK(Build({}) == empty);
  CHECK(Build(WeightedBackends({0, 0, 0})) == empty);
  CHECK(Build({}, 13) == std::vector<uint32_t>(13, BALLAST_INVALID_ID));
}

TEST_CASE("One backend takes every slot", "[maglev]") {
  for (uint32_t m : {2u, 13u, kM}) {
    const auto table = Build({Backend{42, "198.18.1.10", 5}}, m);
    CHECK(table == std::vector<uint32_t>(m, 42));
  }
}

TEST_CASE("N close to M: every positive-weight backend fits", "[maglev]") {
  SECTION("M=13 N=13: one slot each") {
    const auto counts = SlotCounts(Build(EqualBackends(13), 13));
    REQUIRE(counts.size() == 13);
    for (const auto& [id, c] : counts) CHECK(c == 1);
  }
  SECTION("M=101 N=100: one slot each, one backend two") {
    const auto counts = SlotCounts(Build(EqualBackends(100), 101));
    REQUIRE(counts.size() == 100);
    uint64_t twos = 0;
    for (const auto& [id, c] : counts) {
      CHECK((c == 1 || c == 2));
      twos += c == 2;
    }
    CHECK(twos == 1);
  }
  SECTION("M=13 with 13 positive and 5 zero weights") {
    auto backends = EqualBackends(18);
    for (int i = 0; i < 5; ++i) backends[i * 3].weight = 0;
    const auto counts = SlotCounts(Build(backends, 13));
    CHECK(counts.size() == 13);
  }
}

// Disruption. When backend x leaves, its own slots must move (1/N of the
// table); every other slot that moves breaks connections for no reason. In
// the Maglev fill the others now find x's old slots free: a backend that picks
// one up reaches its quota one claim earlier, so the slot it would have
// claimed last goes to someone else, who then stops one claim earlier too, and
// so on to the end of the fill. Each freed slot can thus start a chain of
// moves, and there is no closed-form bound on the chains (the Maglev paper
// measures this churn rather than deriving it). The bound asserted here is
// the meaning of "minimal disruption" we hold the builder to: for N = 100 the
// needless moves must not exceed the necessary ones, i.e. at most the removed
// (or added) backend's own share, 1% of the table, for every one of the 100
// possible removals. Compare a modulo-N hash, which moves ~99% of the table.
// The tables are deterministic, so the printed figures only change when the
// algorithm does.
TEST_CASE("Removing or adding one of 100 backends moves few other slots", "[maglev][disruption]") {
  constexpr uint32_t kN = 100;
  const auto all = EqualBackends(kN + 1);  // the last one is the backend that gets added
  const std::vector<Backend> base(all.begin(), all.begin() + kN);
  const auto before = Build(base);

  double removed_sum = 0, removed_max = 0;
  for (uint32_t x = 0; x < kN; ++x) {
    auto without = base;
    without.erase(without.begin() + x);
    const double f = MovedFraction(before, Build(without), base[x].id);
    removed_sum += f;
    removed_max = std::max(removed_max, f);
  }
  const double added = MovedFraction(before, Build(all), all[kN].id);

  char line[256];
  std::snprintf(line, sizeof line,
                "N=%u M=%u: slots moved beyond the changed backend's own: remove one (all %u "
                "cases): mean %.3f%% max %.3f%%; add one: %.3f%%; bound %.3f%% (own share)",
                kN, kM, kN, 100 * removed_sum / kN, 100 * removed_max, 100 * added, 100.0 / kN);
  WARN(line);
  CHECK(removed_max <= 1.0 / kN);
  CHECK(added <= 1.0 / kN);
}

// The same measurement for a small and a large pool. The extra churn stays
// well under 1% of the table for M = 65537 whatever N is (for N = 1000 that is
// more than the removed backend's 0.1% share: many small shares contend for
// the last slots), so the bound here is 1% of the table.
TEST_CASE("Removing one of 10 or 1000 backends moves under 1% of the table",
          "[maglev][disruption]") {
  for (uint32_t n : {10u, 1000u}) {
    const auto base = EqualBackends(n);
    const auto before = Build(base);
    double sum = 0, max = 0;
    const uint32_t trials = 10;
    for (uint32_t t = 0; t < trials; ++t) {
      const uint32_t x = t * (n / trials);
      auto without = base;
      without.erase(without.begin() + x);
      const double f = MovedFraction(before, Build(without), base[x].id);
      sum += f;
      max = std::max(max, f);
    }
    char line[200];
    std::snprintf(line, sizeof line,
                  "N=%u M=%u: remove one (%u cases): slots moved beyond its own: mean %.3f%% "
                  "max %.3f%% (own share %.3f%%)",
                  n, kM, trials, 100 * sum / trials, 100 * max, 100.0 / n);
    WARN(line);
    CHECK(max <= 0.01);
  }
}

TEST_CASE("Changing one backend's weight moves few other slots", "[maglev][disruption]") {
  // A ramp step (weight 20 -> 50 among 100s) gives the backend about 200 more
  // slots (0.3% of the table) taken from the others. Count slots that moved
  // between two backends other than the changed one; same bound as above.
  auto backends = EqualBackends(100, 100);
  backends[17].weight = 20;
  const auto before = Build(backends);
  backends[17].weight = 50;
  const auto after = Build(backends);
  const double f = MovedFraction(before, after, backends[17].id);
  char line[160];
  std::snprintf(line, sizeof line,
                "N=100 M=%u: weight 20 -> 50 of one backend: %.3f%% of slots moved between "
                "other backends",
                kM, 100 * f);
  WARN(line);
  CHECK(f <= 0.01);
}

TEST_CASE("BuildTable rejects invalid input with actionable messages", "[maglev][errors]") {
  auto expect_error = [](const std::vector<Backend>& backends, uint32_t m,
                         const std::string& needle) {
    const auto table = BuildTable(backends, m);
    INFO("expected an error containing: " << needle);
    REQUIRE_FALSE(table.ok());
    CHECK(table.status().code() == absl::StatusCode::kInvalidArgument);
    INFO("message: " << table.status().message());
    CHECK(std::string(table.status().message()).find(needle) != std::string::npos);
  };
  const auto three = EqualBackends(3);
  SECTION("table size not prime") {
    expect_error(three, 65536, "table size 65536 is not prime");
    expect_error(three, 100, "not prime");
  }
  SECTION("table size out of range") {
    expect_error(three, 0, "out of range");
    expect_error(three, 1, "out of range");
    expect_error(three, 1048583, "table size 1048583 is out of range 2..1048573");
  }
  SECTION("id 0 is reserved") {
    expect_error({{1, "198.18.1.1", 1}, {0, "198.18.1.2", 1}}, kM,
                 "backend 198.18.1.2: id 0 is out of range 1..16383");
    // Even with weight 0: the id would still be wrong in the data plane.
    expect_error({{0, "198.18.1.2", 0}}, kM, "id 0");
  }
  SECTION("id above the data plane's backend array") {
    expect_error({{BALLAST_MAX_BACKENDS, "198.18.1.3", 1}}, kM, "id 16384 is out of range");
  }
  SECTION("empty key") { expect_error({{5, "", 1}}, kM, "backend id 5: empty key"); }
  SECTION("duplicate key") {
    expect_error({{1, "198.18.1.1", 1}, {2, "198.18.1.1", 0}}, kM,
                 "backend 198.18.1.1: key given twice (ids 1 and 2)");
  }
  SECTION("duplicate id") {
    expect_error({{7, "198.18.1.1", 1}, {7, "198.18.1.2", 1}}, kM,
                 "backends 198.18.1.1 and 198.18.1.2 both use id 7");
  }
  SECTION("more positive-weight backends than slots") {
    expect_error(EqualBackends(14), 13, "14 backends have a positive weight");
    expect_error(EqualBackends(14), 13, "only 13 slots");
  }
}

}  // namespace ballast::maglev
