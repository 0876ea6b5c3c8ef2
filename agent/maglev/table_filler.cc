#include "agent/maglev/table_filler.h"

#include <cmath>
#include <tuple>

namespace ballast::maglev::internal {

// By the extended Euclidean algorithm.
uint32_t InverseMod(uint32_t a, uint32_t m) {
  int64_t old_r = a, r = m, old_s = 1, s = 0;
  while (r != 0) {
    const int64_t q = old_r / r;
    std::tie(old_r, r) = std::make_pair(r, old_r - q * r);
    std::tie(old_s, s) = std::make_pair(s, old_s - q * s);
  }
  int64_t inv = old_s % static_cast<int64_t>(m);
  if (inv < 0) inv += m;
  return static_cast<uint32_t>(inv);
}

// The tail's search (see TableFiller::Solve): over free slots e (held as
// doubles), the smallest key = steps(e) * kKeyScale + index of e, where
// steps(e) = (e + shift) * inv mod M is how many steps of a backend's
// permutation lead from its cursor to e. Every value here is an integer below
// 2^42, so double arithmetic is exact: x < 2M * M; q = x / M rounded to the
// nearest integer (adding 1.5 * 2^52 and taking it away again rounds), one
// above floor(x / M) at most, so x - q * M >= -M and one correction suffices.
// Padding entries are NaN: a NaN key is never less than the best so far.
// Two vectors per iteration, for two independent chains of minimums.
template <typename V, typename VMask>
[[gnu::always_inline]] inline double MinStepKey(const double* free, size_t count, double shift,
                                                double inv, double m) {
  constexpr size_t kLanes = sizeof(V) / sizeof(double);
  const V vshift = V{} + shift, vinv = V{} + inv, vm = V{} + m, inv_m = V{} + 1.0 / m;
  const V round = V{} + 6755399441055744.0;  // 1.5 * 2^52
  V idx[2], best[2];
  for (size_t k = 0; k < kLanes; ++k) {
    idx[0][k] = static_cast<double>(k);
    idx[1][k] = static_cast<double>(k + kLanes);
  }
  best[0] = best[1] = V{} + std::numeric_limits<double>::max();
  for (size_t f = 0; f < count; f += 2 * kLanes) {
#pragma GCC unroll 2
    for (size_t u = 0; u < 2; ++u) {
      V e;
      std::memcpy(&e, free + f + u * kLanes, sizeof e);
      const V x = (e + vshift) * vinv;
      const V q = (x * inv_m + round) - round;
      V r = x - q * vm;                      // in [-M, M)
      r += (V)((VMask)(r < 0) & (VMask)vm);  // in [0, M): the steps
      const V key = r * kKeyScale + idx[u];
      best[u] = key < best[u] ? key : best[u];
      idx[u] += static_cast<double>(2 * kLanes);
    }
  }
  double low = std::numeric_limits<double>::max();
  for (size_t k = 0; k < kLanes; ++k) low = std::min({low, best[0][k], best[1][k]});
  return low;
}

double MinStepKeyGeneric(const double* free, size_t count, double shift, double inv, double m) {
  using V = double __attribute__((vector_size(16)));
  using VMask = int64_t __attribute__((vector_size(16)));
  return MinStepKey<V, VMask>(free, count, shift, inv, m);
}

#if defined(__x86_64__)
// Twice the lanes; the results are identical (exact arithmetic), so which of
// the two runs depends only on the CPU.
[[gnu::target("avx2")]] double MinStepKeyAvx2(const double* free, size_t count, double shift,
                                              double inv, double m) {
  using V = double __attribute__((vector_size(32)));
  using VMask = int64_t __attribute__((vector_size(32)));
  return MinStepKey<V, VMask>(free, count, shift, inv, m);
}
#endif

std::vector<MinStepKeyFn> MinStepKeyImplementations() {
  std::vector<MinStepKeyFn> fns;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) fns.push_back(MinStepKeyAvx2);
#endif
  fns.push_back(MinStepKeyGeneric);
  return fns;
}

MinStepKeyFn FastestMinStepKey() {
  static const MinStepKeyFn fn = MinStepKeyImplementations().front();
  return fn;
}

// When this few slots are left, finding a backend's next free slot by walking
// its permutation costs about M / free probes, while computing the position of
// every free slot in that permutation directly costs `free` vector lanes
// (MinStepKey). The crossover is near sqrt(M) (measured: sqrt(M) / 2 to
// 2 sqrt(M) cost the same); the result is identical either way.
uint32_t TailThreshold(uint32_t table_size) {
  return static_cast<uint32_t>(std::sqrt(static_cast<double>(table_size))) + 16;
}

}  // namespace ballast::maglev::internal
