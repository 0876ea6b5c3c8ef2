#include "agent/health/passive.h"

#include <algorithm>
#include <vector>

namespace ballast::health {

std::string_view SignalName(Signal s) {
  switch (s) {
    case Signal::kSynRetransmitRatio:
      return "syn_retransmit_ratio";
    case Signal::kClientRstRatio:
      return "client_rst_ratio";
    case Signal::kIncompleteHandshakeRatio:
      return "incomplete_handshake_ratio";
    case Signal::kUnansweredRatio:
      return "unanswered_ratio";
    case Signal::kHandshakeMs:
      return "handshake_ms";
    case Signal::kFirstResponseMs:
      return "first_response_ms";
    case Signal::kProbeLatencyMs:
      return "probe_latency_ms";
  }
  return "unknown";
}

bool IsTimeSignal(Signal s) {
  return s == Signal::kHandshakeMs || s == Signal::kFirstResponseMs || s == Signal::kProbeLatencyMs;
}

double SignalFloor(Signal s, const Params& p) {
  return IsTimeSignal(s) ? p.latency_floor_ms : p.ratio_floor;
}

std::optional<CounterSnapshot> CounterDelta(const CounterSnapshot& prev,
                                            const CounterSnapshot& cur) {
  uint64_t CounterSnapshot::*const fields[] = {&CounterSnapshot::new_flows,
                                               &CounterSnapshot::packets,
                                               &CounterSnapshot::syn_retransmits,
                                               &CounterSnapshot::client_rsts,
                                               &CounterSnapshot::handshake_ns_sum,
                                               &CounterSnapshot::handshake_count,
                                               &CounterSnapshot::first_response_ns_sum,
                                               &CounterSnapshot::first_response_count,
                                               &CounterSnapshot::refused_syns};
  CounterSnapshot d;
  for (auto f : fields) {
    if (cur.*f < prev.*f) return std::nullopt;
    d.*f = cur.*f - prev.*f;
  }
  return d;
}

bool PassiveValues::any() const {
  return std::any_of(value.begin(), value.end(), [](const auto& v) { return v.has_value(); });
}

PassiveValues DerivePassive(const CounterSnapshot& d, const Params& p, absl::Duration interval) {
  PassiveValues out;
  const auto min = static_cast<uint64_t>(p.min_samples);
  auto set = [&](Signal s, uint64_t samples, double value) {
    auto i = static_cast<size_t>(s);
    out.samples[i] = samples;
    if (samples >= min) out.value[i] = value;
  };
  const double flows = static_cast<double>(d.new_flows);
  const double hs = static_cast<double>(d.handshake_count);
  const double fr = static_cast<double>(d.first_response_count);
  // Ratios of events to new flows, at most 1: more events than flows (a
  // client's retransmissions, resets of flows begun in an earlier interval)
  // say no more than "every flow".
  const auto per_flow = [&](uint64_t events) {
    return d.new_flows ? std::min(1.0, static_cast<double>(events) / flows) : 0.0;
  };
  set(Signal::kSynRetransmitRatio, d.new_flows, per_flow(d.syn_retransmits));
  set(Signal::kClientRstRatio, d.new_flows, per_flow(d.client_rsts));
  // A handshake or a first response that completes just after the interval
  // ends is not missing. With arrivals spread over an interval of length I and
  // completions taking `mean_ns`, about total * mean / I of them are still in
  // flight at the interval's end; at least max(2, 5% of the samples) are
  // allowed for in any case. Only what is missing beyond that counts.
  const double interval_ns = static_cast<double>(absl::ToInt64Nanoseconds(interval));
  const auto missing_ratio = [&](double total, double done, double mean_ns) {
    double slack = std::max(2.0, 0.05 * total);
    if (interval_ns > 0 && mean_ns > 0)
      slack = std::max(slack, total * std::min(1.0, mean_ns / interval_ns));
    return std::clamp((total - done - slack) / total, 0.0, 1.0);
  };
  const double hs_mean_ns = hs > 0 ? static_cast<double>(d.handshake_ns_sum) / hs : 0;
  const double fr_mean_ns = fr > 0 ? static_cast<double>(d.first_response_ns_sum) / fr : 0;
  set(Signal::kIncompleteHandshakeRatio, d.new_flows,
      d.new_flows ? missing_ratio(flows, hs, hs_mean_ns) : 0);
  set(Signal::kUnansweredRatio, d.handshake_count,
      d.handshake_count ? missing_ratio(hs, fr, fr_mean_ns) : 0);
  set(Signal::kHandshakeMs, d.handshake_count,
      d.handshake_count ? static_cast<double>(d.handshake_ns_sum) / hs / 1e6 : 0);
  set(Signal::kFirstResponseMs, d.first_response_count,
      d.first_response_count ? static_cast<double>(d.first_response_ns_sum) / fr / 1e6 : 0);
  return out;
}

bool Established(const Baseline& b, const Params& p) {
  return b.intervals >= static_cast<uint32_t>(p.baseline_min_intervals);
}

Baseline UpdateBaseline(const Baseline& b, double value, bool anomalous, const Params& p) {
  Baseline out = b;
  if (!Established(b, p)) {
    out.value = (b.value * b.intervals + value) / (b.intervals + 1);
  } else {
    double a = anomalous ? p.baseline_alpha_anomalous : p.baseline_alpha;
    out.value = b.value + a * (value - b.value);
  }
  if (out.intervals < 1000000) ++out.intervals;
  return out;
}

double CompareRatio(double value, double reference, double floor) {
  return (value + floor) / (reference + floor);
}

double Median(std::span<const double> values) {
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::optional<double> PeerMedian(std::span<const double> sorted, double self, const Params& p) {
  if (sorted.size() < 2 || sorted.size() - 1 < static_cast<size_t>(p.min_peers)) {
    return std::nullopt;
  }
  auto it = std::lower_bound(sorted.begin(), sorted.end(), self);
  if (it == sorted.end() || *it != self) return std::nullopt;  // precondition broken
  const auto k = static_cast<size_t>(it - sorted.begin());
  const size_t m = sorted.size() - 1;
  auto at = [&](size_t j) { return sorted[j < k ? j : j + 1]; };
  return m % 2 ? at(m / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
}

SignalComparison Compare(Signal s, double value, const Baseline& baseline,
                         std::optional<double> peer_median, const Params& p) {
  SignalComparison c;
  c.value = value;
  const double floor = SignalFloor(s, p);
  if (Established(baseline, p)) {
    c.baseline = baseline.value;
    c.vs_baseline = CompareRatio(value, baseline.value, floor);
  }
  if (peer_median) {
    c.peer_median = peer_median;
    c.vs_peers = CompareRatio(value, *peer_median, floor);
  }
  if (c.vs_baseline && c.vs_peers) {
    c.severity = std::min(*c.vs_baseline, *c.vs_peers);
  } else if (c.vs_baseline) {
    c.severity = c.vs_baseline;
  } else if (c.vs_peers) {
    c.severity = c.vs_peers;
  }
  return c;
}

}  // namespace ballast::health
