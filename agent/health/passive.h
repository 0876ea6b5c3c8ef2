// Passive signals: what real client traffic says about a backend.
//
// The data plane keeps cumulative, monotonic per-backend counters (summed over
// CPUs by the agent). Two snapshots taken one interval apart give that
// interval's deltas, from which six signals are derived:
//
//   signal                       value                                  samples
//   syn_retransmit_ratio         syn_retransmits / new_flows            new_flows
//   client_rst_ratio             client_rsts / new_flows                new_flows
//   incomplete_handshake_ratio   1 - handshake_count / new_flows        new_flows
//                                (clamped to 0..1; the data plane counts
//                                a new flow once its client shows it is
//                                there: a retransmitted SYN or the
//                                completing ACK, so this is clients that
//                                kept trying and never got through)
//   unanswered_ratio             1 - first_response_count /             handshake_count
//                                handshake_count (0..1; a hung server
//                                completes handshakes in the kernel but
//                                never answers)
//                                For both "missing" ratios, the ones that
//                                are still in flight across the interval's
//                                end are not failures: (missing - slack) /
//                                samples, slack = max(2, 5% of the samples,
//                                samples * mean time / interval), the mean
//                                time being the interval's handshake or
//                                first-response time (none in a full hang).
//   handshake_ms                 handshake_ns_sum / handshake_count     handshake_count
//   first_response_ms            first_response_ns_sum /                first_response_count
//                                first_response_count
//
// A signal with fewer than Params::min_samples samples in the interval has no
// value ("no opinion"), so a quiet backend produces no noise. A seventh signal,
// probe_latency_ms (mean latency of the successful probes), is compared the
// same way and lives here so that all comparisons share one rule.
//
// Comparison, per signal: the value is compared with the backend's own
// baseline (Baseline, an EWMA) and with the median of the same signal over the
// backend's peers (the other backends of the pool with a value in the same
// evaluation). Both ratios are (value + floor) / (reference + floor), floor =
// Params::ratio_floor for ratios and Params::latency_floor_ms for times, so a
// reference near zero does not turn noise into a huge ratio. The signal's
// severity is the smaller of the available ratios: a backend is judged "three
// times slower" only if it is three times slower than it was AND than its
// peers (a machine that is always slower than its peers, or a pool that slows
// down together, is not singled out; the fleet guard sees the latter through
// the baseline ratio alone, see machine.h).
//
// All functions are pure; types are plain values; thread-compatible.
#ifndef BALLAST_AGENT_HEALTH_PASSIVE_H_
#define BALLAST_AGENT_HEALTH_PASSIVE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "absl/time/time.h"
#include "agent/health/params.h"

namespace ballast::health {

// Cumulative per-backend counters as read from the data plane. All monotonic;
// times in nanoseconds.
struct CounterSnapshot {
  uint64_t new_flows = 0;
  uint64_t packets = 0;
  uint64_t syn_retransmits = 0;
  uint64_t client_rsts = 0;
  uint64_t handshake_ns_sum = 0;
  uint64_t handshake_count = 0;
  uint64_t first_response_ns_sum = 0;
  uint64_t first_response_count = 0;
  // SYNs the backend sent back because no socket would take them (second
  // chance, docs/dataplane.md): certain evidence of a dead port, judged on
  // its own (Params::refused_demote, machine.h), not as a ratio.
  uint64_t refused_syns = 0;

  bool operator==(const CounterSnapshot&) const = default;
};

enum class Signal : uint8_t {
  kSynRetransmitRatio = 0,
  kClientRstRatio,
  kIncompleteHandshakeRatio,
  kUnansweredRatio,
  kHandshakeMs,
  kFirstResponseMs,
  kProbeLatencyMs,
};
inline constexpr size_t kNumPassiveSignals = 6;                // the first six
inline constexpr size_t kNumSignals = kNumPassiveSignals + 1;  // + probe latency

// Stable snake_case name, e.g. "first_response_ms".
std::string_view SignalName(Signal s);
// True for the three times (handshake, first response, probe latency).
bool IsTimeSignal(Signal s);
// The comparison floor of the signal (ratio_floor or latency_floor_ms).
double SignalFloor(Signal s, const Params& p);

// cur - prev, field by field. nullopt when any field of `cur` is below the same
// field of `prev` (counter reset, e.g. the data plane was reloaded, or wrap):
// that interval has no passive data, and `cur` becomes the next `prev`.
std::optional<CounterSnapshot> CounterDelta(const CounterSnapshot& prev,
                                            const CounterSnapshot& cur);

// One interval's signal values; nullopt = too few samples (no opinion).
struct PassiveValues {
  std::array<std::optional<double>, kNumPassiveSignals> value;
  std::array<uint64_t, kNumPassiveSignals> samples{};
  bool any() const;
};
// `interval`: the time between the two snapshots of `delta` (zero: unknown,
// then the slack of the missing ratios ignores the completion times).
PassiveValues DerivePassive(const CounterSnapshot& delta, const Params& p,
                            absl::Duration interval = absl::ZeroDuration());

// A backend's recent normal for one signal. While fewer than
// baseline_min_intervals intervals have been seen it is the plain mean of
// those intervals and is not used for comparisons; after that it is an EWMA.
struct Baseline {
  double value = 0;
  uint32_t intervals = 0;  // intervals folded in (saturates at 1000000)

  bool operator==(const Baseline&) const = default;
};
bool Established(const Baseline& b, const Params& p);
// Folds `value` into `b`: the mean while warming up, else an EWMA with
// baseline_alpha, or baseline_alpha_anomalous when `anomalous` (the value is
// at least slowdown_tolerance times the established baseline) so that a
// sustained anomaly is absorbed only slowly.
Baseline UpdateBaseline(const Baseline& b, double value, bool anomalous, const Params& p);

// (value + floor) / (reference + floor). floor > 0.
double CompareRatio(double value, double reference, double floor);

// Median of `values` (mean of the two middle ones for an even count).
// Precondition: !values.empty(). Does not modify the caller's data.
double Median(std::span<const double> values);

// The median of a backend's peers: `sorted` holds the signal's values of all
// backends of the pool that have one (ascending), `self` is this backend's
// value (present in `sorted`). Median of `sorted` without one occurrence of
// `self`; nullopt when fewer than min_peers peers remain. O(log n).
std::optional<double> PeerMedian(std::span<const double> sorted, double self, const Params& p);

// The comparison of one signal of one backend in one evaluation.
struct SignalComparison {
  double value = 0;
  std::optional<double> baseline;     // set when the baseline is established
  std::optional<double> peer_median;  // set when >= min_peers peers have a value (PeerMedian)
  std::optional<double> vs_baseline;  // CompareRatio(value, baseline)
  std::optional<double> vs_peers;     // CompareRatio(value, peer_median)
  // min(vs_baseline, vs_peers) of those present; nullopt when neither is
  // (the signal then has no opinion).
  std::optional<double> severity;
};
// `peer_median`: PeerMedian() of the signal this evaluation (nullopt: no peer
// comparison).
SignalComparison Compare(Signal s, double value, const Baseline& baseline,
                         std::optional<double> peer_median, const Params& p);

}  // namespace ballast::health

#endif  // BALLAST_AGENT_HEALTH_PASSIVE_H_
