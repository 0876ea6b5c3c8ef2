// Maglev table build time (issue target: M = 65537, N = 1000 in <= 1 ms).
//
//   bench_maglev --benchmark_repetitions=20        (all cases)
//   bench_maglev --benchmark_filter=N:1000 --benchmark_repetitions=100 --benchmark_min_time=0.02
//
// Arguments: N backends, weights (0 = all equal, 1 = mixed 1..100). Each
// iteration is one full BuildTable() call, including its allocations. On a
// shared machine, many short repetitions (the second command) give a "min"
// row that is much less disturbed than a few long ones.
#include <algorithm>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "agent/maglev/maglev.h"
#include "bpf/include/ballast_abi.h"

namespace {

using ballast::maglev::Backend;

std::vector<Backend> MakeBackends(uint32_t n, bool mixed) {
  std::vector<Backend> backends;
  backends.reserve(n);
  uint32_t lcg = 12345;  // fixed sequence: the same weights on every run
  for (uint32_t i = 1; i <= n; ++i) {
    lcg = lcg * 1103515245u + 12345u;
    const uint32_t weight = mixed ? 1 + (lcg >> 16) % 100 : 100;
    backends.push_back(
        Backend{i, "198.18." + std::to_string(i >> 8) + "." + std::to_string(i & 0xff), weight});
  }
  return backends;
}

void BM_BuildTable(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const bool mixed = state.range(1) != 0;
  const uint32_t m = BALLAST_DEFAULT_TABLE_SIZE;
  const auto backends = MakeBackends(n, mixed);
  if (auto check = ballast::maglev::BuildTable(backends, m); !check.ok()) {
    state.SkipWithError(check.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    auto table = ballast::maglev::BuildTable(backends, m);
    benchmark::DoNotOptimize(table->data());
    benchmark::ClobberMemory();
  }
  state.SetLabel("M=" + std::to_string(m) + (mixed ? " weights 1..100" : " equal weights"));
}

// Repetitions come from --benchmark_repetitions (a Repetitions() here would
// override the flag); the "min" row is the least disturbed one on a shared
// machine, "mean" and "median" show what a busy machine costs.
BENCHMARK(BM_BuildTable)
    ->ArgNames({"N", "mixed"})
    ->ArgsProduct({{10, 100, 1000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->ReportAggregatesOnly(true)
    ->ComputeStatistics("min", [](const std::vector<double>& v) {
      return *std::min_element(v.begin(), v.end());
    });

}  // namespace

BENCHMARK_MAIN();
