// Passive signal derivation, baselines and comparisons (pure functions).
#include <catch2/catch.hpp>

#include "agent/health/passive.h"

namespace ballast::health {
namespace {

double Value(const PassiveValues& v, Signal s) {
  REQUIRE(v.value[static_cast<size_t>(s)].has_value());
  return *v.value[static_cast<size_t>(s)];
}

TEST_CASE("counter delta is the field-by-field difference") {
  CounterSnapshot a{100, 600, 3, 2, 5000000, 90, 900000000, 80};
  CounterSnapshot b{150, 900, 4, 2, 6000000, 140, 1400000000, 120};
  auto d = CounterDelta(a, b);
  REQUIRE(d.has_value());
  CHECK(*d == CounterSnapshot{50, 300, 1, 0, 1000000, 50, 500000000, 40});
  CHECK(CounterDelta(b, b) == CounterSnapshot{});
}

TEST_CASE("a counter that goes backwards (reset or wrap) gives no delta") {
  CounterSnapshot a{100, 600, 3, 2, 5000000, 90, 900000000, 80};
  CounterSnapshot reset = a;
  reset.first_response_count = 79;
  CHECK_FALSE(CounterDelta(a, reset).has_value());
  CHECK_FALSE(CounterDelta(a, CounterSnapshot{}).has_value());
  CounterSnapshot wrapped = a;
  wrapped.handshake_ns_sum = 12;
  CHECK_FALSE(CounterDelta(a, wrapped).has_value());
}

TEST_CASE("a response or handshake in flight across the interval's end is not missing") {
  Params p;
  // 11 handshakes, 10 first responses: one answer lands in the next interval.
  CounterSnapshot d{11, 60, 0, 0, 5500000, 11, 11000000, 10};
  PassiveValues v = DerivePassive(d, p);
  CHECK(Value(v, Signal::kIncompleteHandshakeRatio) == Approx(0.0));
  CHECK(Value(v, Signal::kUnansweredRatio) == Approx(0.0));
  // A hung server: handshakes complete, nothing is answered.
  CounterSnapshot hung{40, 120, 0, 0, 20000000, 40, 0, 0};
  CHECK(Value(DerivePassive(hung, p), Signal::kUnansweredRatio) == Approx(0.95));
}

TEST_CASE("answers still in flight for a slow backend are not missing") {
  Params p;
  // 200 ms interval, 60 ms mean first response: about 30% of the interval's
  // handshakes are answered in the next one. 20 handshakes, 14 answered.
  CounterSnapshot slow{20, 120, 0, 0, 2000000, 20, 14 * 60000000ull, 14};
  CHECK(Value(DerivePassive(slow, p, absl::Milliseconds(200)), Signal::kUnansweredRatio) ==
        Approx(0.0));
  // Without the interval only max(2, 5%) is allowed for: (6 - 2) / 20.
  CHECK(Value(DerivePassive(slow, p), Signal::kUnansweredRatio) == Approx(0.2));
  // Half unanswered is more than the in-flight share: (10 - 6) / 20.
  CounterSnapshot half{20, 120, 0, 0, 2000000, 20, 10 * 60000000ull, 10};
  CHECK(Value(DerivePassive(half, p, absl::Milliseconds(200)), Signal::kUnansweredRatio) ==
        Approx(0.2));
  // A full hang has no response time: only the base slack, (40 - 2) / 40.
  CounterSnapshot hung{40, 120, 0, 0, 20000000, 40, 0, 0};
  CHECK(Value(DerivePassive(hung, p, absl::Milliseconds(200)), Signal::kUnansweredRatio) ==
        Approx(0.95));
  // Completion times longer than the interval allow everything to be in flight.
  CounterSnapshot slower{20, 120, 0, 0, 2000000, 20, 2 * 500000000ull, 2};
  CHECK(Value(DerivePassive(slower, p, absl::Milliseconds(200)), Signal::kUnansweredRatio) ==
        Approx(0.0));
}

TEST_CASE("passive signals are ratios per new flow and mean times") {
  Params p;
  // 200 flows, 20 SYN retransmits, 10 RSTs, 180 handshakes of 0.5 ms on
  // average, 90 first responses of 12 ms on average.
  CounterSnapshot d{200, 1200, 20, 10, 90000000, 180, 1080000000, 90};
  PassiveValues v = DerivePassive(d, p);
  CHECK(Value(v, Signal::kSynRetransmitRatio) == Approx(0.1));
  CHECK(Value(v, Signal::kClientRstRatio) == Approx(0.05));
  // Missing handshakes and responses beyond the in-flight slack of
  // max(2, 5% of the samples): (20 - 10) / 200 and (90 - 9) / 180.
  CHECK(Value(v, Signal::kIncompleteHandshakeRatio) == Approx(0.05));
  CHECK(Value(v, Signal::kUnansweredRatio) == Approx(0.45));
  CHECK(Value(v, Signal::kHandshakeMs) == Approx(0.5));
  CHECK(Value(v, Signal::kFirstResponseMs) == Approx(12.0));
  CHECK(v.samples[static_cast<size_t>(Signal::kSynRetransmitRatio)] == 200);
  CHECK(v.samples[static_cast<size_t>(Signal::kHandshakeMs)] == 180);
  CHECK(v.samples[static_cast<size_t>(Signal::kFirstResponseMs)] == 90);
  CHECK(v.any());
}

TEST_CASE("event ratios are at most 1: more RSTs or retransmissions than flows say 'every flow'") {
  Params p;
  // 20 new flows; 1,000 client RSTs (a flood) and 60 SYN retransmissions.
  CounterSnapshot d{20, 1200, 60, 1000, 2000000, 20, 0, 0};
  PassiveValues v = DerivePassive(d, p);
  CHECK(Value(v, Signal::kClientRstRatio) == 1.0);
  CHECK(Value(v, Signal::kSynRetransmitRatio) == 1.0);
}

TEST_CASE("handshakes completing flows of the previous interval do not make a negative ratio") {
  Params p;
  CounterSnapshot d{20, 120, 0, 0, 2200000, 22, 0, 0};
  CHECK(Value(DerivePassive(d, p), Signal::kIncompleteHandshakeRatio) == 0.0);
}

TEST_CASE("fewer samples than min_samples give no opinion for that signal") {
  Params p;
  p.min_samples = 10;
  CounterSnapshot d{50, 300, 1, 0, 450000, 9, 0, 0};  // 50 flows, 9 handshakes
  PassiveValues v = DerivePassive(d, p);
  CHECK(v.value[static_cast<size_t>(Signal::kSynRetransmitRatio)].has_value());
  CHECK_FALSE(v.value[static_cast<size_t>(Signal::kHandshakeMs)].has_value());
  CHECK_FALSE(v.value[static_cast<size_t>(Signal::kUnansweredRatio)].has_value());
  CHECK_FALSE(v.value[static_cast<size_t>(Signal::kFirstResponseMs)].has_value());
  CHECK_FALSE(DerivePassive(CounterSnapshot{9, 50, 0, 0, 0, 9, 0, 0}, p).any());
}

TEST_CASE("the baseline is a plain mean while warming up, then an EWMA") {
  Params p;
  p.baseline_min_intervals = 3;
  p.baseline_alpha = 0.5;
  Baseline b;
  b = UpdateBaseline(b, 10, false, p);
  CHECK_FALSE(Established(b, p));
  b = UpdateBaseline(b, 20, false, p);
  b = UpdateBaseline(b, 30, false, p);
  CHECK(Established(b, p));
  CHECK(b.value == Approx(20));
  b = UpdateBaseline(b, 40, false, p);
  CHECK(b.value == Approx(30));
}

TEST_CASE("an anomalous value moves the baseline only by baseline_alpha_anomalous") {
  Params p;  // alpha 0.05, anomalous 0.0001
  Baseline b{10, 100};
  for (int i = 0; i < 500; ++i) b = UpdateBaseline(b, 30, /*anomalous=*/true, p);
  CHECK(b.value < 11.0);  // 500 evaluations (100 s at 200 ms) of 3x: still about 10
  Baseline normal{10, 100};
  for (int i = 0; i < 500; ++i) normal = UpdateBaseline(normal, 30, false, p);
  CHECK(normal.value > 29.9);
  p.baseline_alpha_anomalous = 0;
  Baseline frozen{10, 100};
  frozen = UpdateBaseline(frozen, 1000, true, p);
  CHECK(frozen.value == 10);
}

TEST_CASE("median of odd and even counts") {
  std::vector<double> odd = {5, 1, 3};
  std::vector<double> even = {4, 1, 3, 2};
  CHECK(Median(odd) == 3);
  CHECK(Median(even) == 2.5);
  CHECK(odd == std::vector<double>{5, 1, 3});  // input untouched
}

TEST_CASE("the peer median leaves the backend itself out") {
  Params p;
  std::vector<double> all = {1, 2, 3, 10};
  CHECK(*PeerMedian(all, 10, p) == 2);  // median of 1, 2, 3
  CHECK(*PeerMedian(all, 1, p) == 3);   // median of 2, 3, 10
  CHECK(*PeerMedian(all, 2, p) == 3);   // median of 1, 3, 10
  std::vector<double> odd = {1, 2, 3, 4, 100};
  CHECK(*PeerMedian(odd, 100, p) == 2.5);  // median of 1, 2, 3, 4
  CHECK(*PeerMedian(odd, 3, p) == 3);      // median of 1, 2, 4, 100
  std::vector<double> same = {5, 5, 5};
  CHECK(*PeerMedian(same, 5, p) == 5);
  std::vector<double> alone = {7};
  CHECK_FALSE(PeerMedian(alone, 7, p).has_value());
  p.min_peers = 5;
  CHECK_FALSE(PeerMedian(odd, 3, p).has_value());
  p.min_peers = 4;
  CHECK(PeerMedian(odd, 3, p).has_value());
  p.min_peers = 3;
  CHECK(PeerMedian(all, 10, p).has_value());
}

TEST_CASE("three times slower than its baseline and its peers has severity about 3") {
  Params p;
  Baseline b{10, 100};
  std::vector<double> all = {9.5, 10, 10.5, 30};
  SignalComparison c = Compare(Signal::kFirstResponseMs, 30, b, PeerMedian(all, 30, p), p);
  REQUIRE(c.severity.has_value());
  CHECK(*c.baseline == 10);
  CHECK(*c.peer_median == 10);
  CHECK(*c.vs_baseline == Approx(30.1 / 10.1));
  CHECK(*c.vs_peers == Approx(30.1 / 10.1));
  CHECK(*c.severity == Approx(2.98).epsilon(0.01));
}

TEST_CASE("slower than its baseline but not than its peers: severity is the smaller ratio") {
  Params p;
  Baseline b{10, 100};
  SignalComparison c = Compare(Signal::kFirstResponseMs, 30, b, 30.5, p);
  CHECK(*c.vs_baseline == Approx(2.98).epsilon(0.01));
  CHECK(*c.vs_peers < 1.0);
  CHECK(*c.severity == *c.vs_peers);
}

TEST_CASE("without an established baseline only the peers judge, and without peers nothing does") {
  Params p;
  Baseline warming{10, 2};
  SignalComparison c = Compare(Signal::kFirstResponseMs, 20, warming, 10.0, p);
  CHECK_FALSE(c.baseline.has_value());
  CHECK(*c.severity == *c.vs_peers);
  SignalComparison alone = Compare(Signal::kFirstResponseMs, 20, warming, std::nullopt, p);
  CHECK_FALSE(alone.severity.has_value());
}

TEST_CASE("the floor keeps a near-zero reference from turning noise into a huge ratio") {
  Params p;  // ratio_floor 0.02
  Baseline zero{0, 100};
  SignalComparison one_rst = Compare(Signal::kClientRstRatio, 0.01, zero, std::nullopt, p);
  CHECK(*one_rst.severity == Approx(1.5));  // 1% of flows reset vs 0%: mild
  SignalComparison half = Compare(Signal::kClientRstRatio, 0.5, zero, std::nullopt, p);
  CHECK(*half.severity == Approx(26));
  CHECK(SignalFloor(Signal::kHandshakeMs, p) == p.latency_floor_ms);
  CHECK(SignalFloor(Signal::kSynRetransmitRatio, p) == p.ratio_floor);
}

TEST_CASE("signal names are stable") {
  CHECK(SignalName(Signal::kSynRetransmitRatio) == "syn_retransmit_ratio");
  CHECK(SignalName(Signal::kClientRstRatio) == "client_rst_ratio");
  CHECK(SignalName(Signal::kIncompleteHandshakeRatio) == "incomplete_handshake_ratio");
  CHECK(SignalName(Signal::kUnansweredRatio) == "unanswered_ratio");
  CHECK(SignalName(Signal::kHandshakeMs) == "handshake_ms");
  CHECK(SignalName(Signal::kFirstResponseMs) == "first_response_ms");
  CHECK(SignalName(Signal::kProbeLatencyMs) == "probe_latency_ms");
}

}  // namespace
}  // namespace ballast::health
