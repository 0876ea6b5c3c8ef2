// Test driver for the health machine: a fake clock (time values passed to
// Next()), cumulative data-plane counters built from per-interval traffic, and
// a record of every action. Header-only, used by the health tests only.
#ifndef BALLAST_AGENT_HEALTH_TESTS_SIM_H_
#define BALLAST_AGENT_HEALTH_TESTS_SIM_H_

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/time/time.h"
#include "agent/health/machine.h"

namespace ballast::health::testing {

inline const absl::Time kT0 = absl::FromUnixSeconds(1800000000);
inline constexpr absl::Duration kTick = absl::Milliseconds(200);

inline ProbeSummary ProbeOk(double latency_ms = 2.0) {
  return ProbeSummary{1, 0, absl::Microseconds(static_cast<int64_t>(latency_ms * 1000))};
}
inline ProbeSummary ProbeFail() { return ProbeSummary{0, 1, absl::ZeroDuration()}; }

// One interval of real traffic to a backend.
struct Traffic {
  uint64_t flows = 100;
  double syn_retransmit_ratio = 0.0;
  double rst_ratio = 0.0;
  double handshake_ms = 0.2;
  double first_response_ms = 10.0;
  double completed = 1.0;  // fraction of new flows whose handshake completed
  double answered = 1.0;   // fraction of handshakes that got a first response
  uint64_t refused = 0;    // SYNs bounced back: no listener (second chance)
};

// Cumulative counters of one backend.
struct Counters {
  CounterSnapshot c;
  CounterSnapshot Add(const Traffic& t) {
    c.new_flows += t.flows;
    c.packets += t.flows * 6;
    c.syn_retransmits += static_cast<uint64_t>(t.flows * t.syn_retransmit_ratio);
    c.client_rsts += static_cast<uint64_t>(t.flows * t.rst_ratio);
    const auto handshakes = static_cast<uint64_t>(t.flows * t.completed);
    c.handshake_count += handshakes;
    c.handshake_ns_sum += static_cast<uint64_t>(handshakes * t.handshake_ms * 1e6);
    const auto answered = static_cast<uint64_t>(handshakes * t.answered);
    c.first_response_count += answered;
    c.first_response_ns_sum += static_cast<uint64_t>(answered * t.first_response_ms * 1e6);
    c.refused_syns += t.refused;
    return c;
  }
};

struct Sim {
  Params p;
  PoolState state;
  absl::Time now = kT0;
  std::vector<Action> actions;  // every action so far
  Result last;

  // Advances the clock by one tick and evaluates `in`.
  const Result& Step(const PoolInput& in) {
    now += kTick;
    return StepAt(in, now);
  }
  const Result& StepAt(const PoolInput& in, absl::Time t) {
    now = t;
    auto r = Next(state, in, now, p);
    REQUIRE(r.ok());
    state = r->state;
    actions.insert(actions.end(), r->actions.begin(), r->actions.end());
    last = *std::move(r);
    return last;
  }
  void Advance(absl::Duration d) { now += d; }

  const BackendOutput& Out(const std::string& key) const {
    auto it = std::find_if(last.backends.begin(), last.backends.end(),
                           [&](const BackendOutput& b) { return b.key == key; });
    REQUIRE(it != last.backends.end());
    return *it;
  }
  const BackendState& State(const std::string& key) const {
    auto it = std::find_if(state.backends.begin(), state.backends.end(),
                           [&](const BackendState& b) { return b.key == key; });
    REQUIRE(it != state.backends.end());
    return *it;
  }
  int Count(ActionKind k, const std::string& backend = "") const {
    return static_cast<int>(std::count_if(actions.begin(), actions.end(), [&](const Action& a) {
      return a.kind == k && (backend.empty() || a.backend == backend);
    }));
  }
  int CountIn(const Result& r, ActionKind k) const {
    return static_cast<int>(std::count_if(r.actions.begin(), r.actions.end(),
                                          [&](const Action& a) { return a.kind == k; }));
  }
};

// A pool of backends with probe results only (no passive data).
inline PoolInput ProbePool(const std::map<std::string, ProbeSummary>& probes,
                           uint32_t nominal = 100) {
  PoolInput in;
  in.pool = "198.18.0.10:80/tcp";
  for (const auto& [key, probe] : probes) {
    BackendInput b;
    b.key = key;
    b.nominal_weight = nominal;
    b.probe = probe;
    in.backends.push_back(b);
  }
  return in;
}

// A pool whose backends all have probes and real traffic.
struct TrafficPool {
  std::map<std::string, Counters> counters;
  std::vector<std::string> keys = {"a", "b", "c"};
  // Per-backend overrides of this interval; others get the defaults.
  std::map<std::string, Traffic> traffic;
  std::map<std::string, ProbeSummary> probes;
  std::set<std::string> no_probe;  // backends without a probe result this interval
  PoolInput Next() {
    PoolInput in;
    in.pool = "198.18.0.10:80/tcp";
    for (const auto& k : keys) {
      BackendInput b;
      b.key = k;
      b.nominal_weight = 100;
      auto t = traffic.find(k);
      b.counters = counters[k].Add(t != traffic.end() ? t->second : Traffic{});
      auto p = probes.find(k);
      if (!no_probe.contains(k)) b.probe = p != probes.end() ? p->second : ProbeOk();
      in.backends.push_back(b);
    }
    return in;
  }
};

inline std::map<std::string, uint32_t> Weights(const Result& r) {
  std::map<std::string, uint32_t> w;
  for (const auto& b : r.backends) w[b.key] = b.effective_weight;
  return w;
}

}  // namespace ballast::health::testing

#endif  // BALLAST_AGENT_HEALTH_TESTS_SIM_H_
