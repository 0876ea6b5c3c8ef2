// lbsim speed: one million simulated connections (issue target: < 10 s).
//
//   bench_lbsim [--connections N] [--rounds R] [--scenario FILE] [--variant V]
//
// Runs the sanity scenario's "resteer" variant (250 backends, fail-fast
// crashes, health checking every 100 ms, Maglev M = 65537, handshake
// re-steer) with the arrival rate raised so that N connections (default
// 1,000,000) arrive over its 70 s, R times (default 3), and prints the wall
// and CPU time of each round, the best and the median. Everything the
// scenario does is included: traffic, probes, every health::Next()
// evaluation and every Maglev rebuild. Not a test: nothing fails on time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tools/lbsim/report.h"
#include "tools/lbsim/runner.h"
#include "tools/lbsim/sim.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: bench_lbsim [--connections N] [--rounds R] [--scenario FILE] "
               "[--variant V]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ballast::lbsim;
  std::string file = LBSIM_SCENARIO_DIR "/sanity.yaml";
  std::string variant = "resteer";
  uint64_t connections = 1000000;
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Usage();
    const std::string v = argv[++i];
    if (a == "--connections") {
      if (!absl::SimpleAtoi(v, &connections) || connections == 0) return Usage();
    } else if (a == "--rounds") {
      if (!absl::SimpleAtoi(v, &rounds) || rounds < 1) return Usage();
    } else if (a == "--scenario") {
      file = v;
    } else if (a == "--variant") {
      variant = v;
    } else {
      return Usage();
    }
  }
  auto f = LoadScenarioFile(file);
  if (!f.ok()) {
    std::fprintf(stderr, "bench_lbsim: %s\n", std::string(f.status().message()).c_str());
    return 1;
  }
  auto base = BuildScenario(*f, variant, {});
  if (!base.ok()) {
    std::fprintf(stderr, "bench_lbsim: %s\n", std::string(base.status().message()).c_str());
    return 1;
  }
  // Every connection of the run counts, warmup included.
  const double rate = static_cast<double>(connections) / absl::ToDoubleSeconds(base->duration);
  auto sc = BuildScenario(*f, variant, {{"rate", absl::StrCat(rate)}});
  if (!sc.ok()) {
    std::fprintf(stderr, "bench_lbsim: %s\n", std::string(sc.status().message()).c_str());
    return 1;
  }
  std::printf("bench_lbsim: %s / %s, %d backends, %.0f conn/s for %.0f s\n", sc->name.c_str(),
              variant.c_str(), sc->backends, rate, absl::ToDoubleSeconds(sc->duration));
  std::vector<double> wall, cpu;
  RunResult last;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    auto res = Run(*sc);
    const std::clock_t c1 = std::clock();
    const auto t1 = std::chrono::steady_clock::now();
    if (!res.ok()) {
      std::fprintf(stderr, "bench_lbsim: %s\n", std::string(res.status().message()).c_str());
      return 1;
    }
    wall.push_back(std::chrono::duration<double>(t1 - t0).count());
    cpu.push_back(static_cast<double>(c1 - c0) / CLOCKS_PER_SEC);
    std::printf(
        "  round %d: %llu connections, %llu events, %llu tables, %llu evaluations: "
        "wall %.2f s, cpu %.2f s\n",
        r + 1, static_cast<unsigned long long>(res->total_connections),
        static_cast<unsigned long long>(res->events), static_cast<unsigned long long>(res->tables),
        static_cast<unsigned long long>(res->evaluations), wall.back(), cpu.back());
    last = *std::move(res);
  }
  std::vector<double> w = wall, c = cpu;
  std::sort(w.begin(), w.end());
  std::sort(c.begin(), c.end());
  const double per_m = 1e6 / static_cast<double>(last.total_connections);
  std::printf(
      "1M connections: wall best %.2f s, median %.2f s; cpu best %.2f s, median %.2f s "
      "(target < 10 s)\n",
      w.front() * per_m, w[w.size() / 2] * per_m, c.front() * per_m, c[c.size() / 2] * per_m);
  const auto m = Metrics(last);
  std::printf("run: success %.5f, steer p50 %.2f s\n",
              FindMetric(m, "success_fraction").value_or(0),
              FindMetric(m, "steer_p50_s").value_or(0));
  return 0;
}
