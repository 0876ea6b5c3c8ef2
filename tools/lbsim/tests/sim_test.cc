// The engine: determinism, the layer-4 rules it models, the health logic it
// drives, and the brownout trade-off of demote_after.
#include <string>

#include <catch2/catch.hpp>

#include "tools/lbsim/report.h"
#include "tools/lbsim/runner.h"
#include "tools/lbsim/scenario.h"
#include "tools/lbsim/sim.h"
#include "tools/lbsim/tests/test_util.h"
#include "tools/lbsim/svg.h"

namespace ballast::lbsim {
namespace {

// A small pool: 6 backends, short requests, 20 s of which 15 s are counted.
const char* const kBase = R"(
name: unit
seed: 4
duration: 20s
warmup: 5s
traffic:
  rate: 1500
  classes:
    - {name: short, share: 0.9, lifetime: {dist: exponential, mean: 50ms}, latency: {dist: lognormal, median: 10ms, sigma: 0.4}}
    - {name: long, share: 0.1, lifetime: {dist: uniform, min: 4s, max: 8s}, latency: 10ms}
backends: {count: 6}
dataplane: {table_size: 4099}
health: {probe_interval: 200ms}
)";

Scenario Make(const Sets& sets = {}) { return testing::MakeScenario(kBase, "unit.yaml", sets); }
using testing::M;
using testing::RunOk;

TEST_CASE("the same scenario and seed give byte-identical output; another seed does not") {
  const Scenario sc =
      Make({{"faults", "[{kind: crash, backends: [1], mttf: 4s, mttr: 1s, mode: blackhole}]"}});
  const RunResult a = RunOk(sc);
  const RunResult b = RunOk(sc);
  CHECK(FormatReport(sc, a) == FormatReport(sc, b));
  CHECK(Metrics(a) == Metrics(b));
  CHECK(TimelineSvg(sc, a) == TimelineSvg(sc, b));
  CHECK(a.events == b.events);
  REQUIRE(a.action_log.size() == b.action_log.size());
  for (size_t i = 0; i < a.action_log.size(); ++i) {
    CHECK(a.action_log[i].message == b.action_log[i].message);
    CHECK(a.action_log[i].inputs_json == b.action_log[i].inputs_json);
  }
  Scenario other = sc;
  other.seed = 5;
  CHECK(FormatReport(other, RunOk(other)) != FormatReport(sc, a));
}

TEST_CASE("a healthy pool: every connection succeeds and health does nothing") {
  const RunResult r = RunOk(Make());
  CHECK(r.connections > 20000);
  CHECK(r.succeeded + r.unresolved == r.connections);
  CHECK(r.failed_new == 0);
  CHECK(r.broken == 0);
  CHECK(r.tables == 0);
  CHECK(M(r, "actions_demote") == 0);
  CHECK(M(r, "actions_freeze") == 0);
  CHECK(M(r, "latency_p50_ms") > 10);
  CHECK(M(r, "latency_p50_ms") < 13);
}

TEST_CASE("traffic is the same at every point of a sweep (common random numbers)") {
  const RunResult a = RunOk(Make({{"demote_after", "1"}}));
  const RunResult b = RunOk(Make({{"demote_after", "7"}}));
  CHECK(a.connections == b.connections);
  CHECK(a.latency_ns.Quantile(0.5) == b.latency_ns.Quantile(0.5));
}

TEST_CASE("the handshake re-steer saves the connections of a host that vanishes") {
  const std::string crash = "[{kind: crash, backends: [2], at: 8s, for: 6s, mode: blackhole}]";
  const RunResult on = RunOk(Make({{"faults", crash}}));
  const RunResult off =
      RunOk(Make({{"faults", crash}, {"resteer", "false"}, {"second_chance", "false"}}));
  CHECK(on.failed_new == 0);
  CHECK(on.resteered_syns > 0);
  CHECK(off.resteered_syns == 0);
  CHECK(off.failed_new > 50);  // pinned to the dead host until the connect timeout
  CHECK(on.syn_retransmits > 0);
  // Health demoted it within a second in both.
  CHECK(on.steer_s.size() == 1);
  CHECK(on.steer_s[0] <= 1.0);
  // Established connections on the crashed host are lost either way.
  CHECK(on.broken > 0);
}

TEST_CASE("a refusing host fails new connections until it is demoted, unless they bounce") {
  const std::string crash = "[{kind: crash, backends: [2], at: 8s, for: 6s, mode: refuse}]";
  const RunResult r = RunOk(Make({{"faults", crash}, {"second_chance", "false"}}));
  CHECK(r.failed_new > 0);
  // About rate/6 per second for the detection window (< 1 s).
  CHECK(r.failed_new < 1500 / 6);
  CHECK(M(r, "actions_demote") == 1);
  CHECK(M(r, "actions_promote") == 1);
  CHECK(r.bounced_syns == 0);

  // Second chance: the dead server's host bounces each SYN to the next
  // choice, and its refusals demote it at the next evaluation.
  const RunResult sc = RunOk(Make({{"faults", crash}}));
  CHECK(sc.failed_new == 0);
  CHECK(sc.bounced_syns > 0);
  CHECK(M(sc, "actions_demote") == 1);
  REQUIRE(sc.steer_s.size() == 1);
  CHECK(sc.steer_s[0] < r.steer_s.at(0));
}

TEST_CASE("without health checking a dead backend keeps its share") {
  const RunResult r = RunOk(Make({{"faults", "[{kind: crash, backends: [2], at: 8s, for: 6s}]"},
                                  {"health.enabled", "false"},
                                  {"second_chance", "false"}}));
  // 1/6 of 6 s of 15 counted: about 6.7% of the connections.
  const double failed = static_cast<double>(r.failed_new) / static_cast<double>(r.connections);
  CHECK(failed > 0.05);
  CHECK(failed < 0.085);
  CHECK(r.evaluations == 0);
}

TEST_CASE("a drain deadline cuts exactly the connections that outlive it") {
  const RunResult cut =
      RunOk(Make({{"faults", "[{kind: drain, backends: [3], at: 8s, deadline: 1s}]"}}));
  CHECK(cut.failed_new == 0);
  CHECK(cut.broken_drain > 0);
  CHECK(cut.broken == cut.broken_drain);
  const RunResult wait =
      RunOk(Make({{"faults", "[{kind: drain, backends: [3], at: 8s, deadline: 10s}]"}}));
  CHECK(wait.broken == 0);  // long connections last at most 8 s
  CHECK(M(wait, "actions_demote") == 0);
}

TEST_CASE("a hang is seen by an HTTP probe and missed by a TCP one") {
  const std::string hang = "[{kind: hang, backends: [1], at: 7s, for: 8s}]";
  const RunResult http = RunOk(Make({{"faults", hang}}));
  const RunResult tcp = RunOk(Make({{"faults", hang}, {"health.probe", "tcp"}}));
  CHECK(M(http, "actions_demote") == 1);
  CHECK(M(tcp, "actions_demote") == 0);
  CHECK(tcp.failed_request > http.failed_request);
  CHECK(http.failed_new == 0);
}

TEST_CASE("when no probe reaches any backend the fleet guard freezes instead of demoting") {
  // Every probe of the only observer fails on every backend (its probe path
  // broke) while real traffic is fine.
  const RunResult r =
      RunOk(Make({{"faults", "[{kind: blind, observer: 0, backends: all, at: 6s}]"}}));
  CHECK(M(r, "actions_demote") == 0);
  CHECK(M(r, "actions_freeze") >= 1);
}

TEST_CASE("a minority observer that cannot see a backend changes nothing") {
  const RunResult r =
      RunOk(Make({{"observers", "3"},
                  {"health.passive", "false"},
                  {"faults", "[{kind: blind, observer: 2, backends: [0], at: 6s}]"}}));
  CHECK(r.split_views == 1);
  CHECK(r.taken_out == 0);
  CHECK(r.tables == 0);
  const RunResult two = RunOk(Make({{"observers", "3"},
                                    {"health.passive", "false"},
                                    {"faults",
                                     "[{kind: blind, observer: 2, backends: [0], at: 6s}, "
                                     "{kind: blind, observer: 1, backends: [0], at: 6s}]"}}));
  CHECK(two.taken_out == 1);
}

TEST_CASE("timelines record score and weight of the plotted backends") {
  const Scenario sc = Make(
      {{"faults", "[{kind: crash, backends: [4], at: 8s, for: 4s}]"}, {"plot.backends", "[4]"}});
  const RunResult r = RunOk(sc);
  REQUIRE(r.timelines.size() == 1);
  const BackendTimeline& tl = r.timelines[0];
  CHECK(tl.backend == 4);
  CHECK(tl.points.size() == 99);  // one per evaluation: 0.2 s .. 19.8 s
  REQUIRE(tl.faults.size() == 1);
  CHECK(tl.faults[0].from == Approx(8));
  CHECK(tl.faults[0].to == Approx(12));
  bool zero = false;
  for (const TimelinePoint& p : tl.points) zero = zero || (p.t > 8 && p.t < 12 && p.weight == 0);
  CHECK(zero);
  const std::string svg = TimelineSvg(sc, r);
  CHECK_THAT(svg, Catch::StartsWith("<svg"));
  CHECK_THAT(svg, Catch::Contains("backend 4"));
  CHECK_THAT(svg, Catch::EndsWith("</svg>\n"));
}

TEST_CASE("brownout trade-off: faster demotion flaps more, slower demotion exposes more") {
  auto f = LoadScenarioFile(LBSIM_SCENARIO_DIR "/brownout.yaml");
  REQUIRE(f.ok());
  std::vector<std::string> progress;
  auto rows =
      Sweep(*f, "tradeoff", {}, "demote_after", {"1", "3", "8"},
            [&](size_t done, size_t total, const std::string& value) {
              progress.push_back(std::to_string(done) + "/" + std::to_string(total) + " " + value);
            });
  INFO(rows.status().message());
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);
  // A progress call after each run, in order.
  CHECK(progress == std::vector<std::string>{"1/3 1", "2/3 3", "3/3 8"});
  auto at = [&](size_t i, const char* m) { return FindMetric((*rows)[i].metrics, m).value(); };
  INFO(FormatSweepTable("demote_after", *rows));
  // Demoting after one bad evaluation takes blippy backends out and flaps.
  CHECK(at(0, "flaps") > at(2, "flaps"));
  CHECK(at(0, "flaps") >= 1);
  CHECK(at(0, "actions_demote") > at(1, "actions_demote"));
  CHECK(at(1, "actions_demote") >= at(2, "actions_demote"));
  // Waiting longer lets more connections reach a faulty backend.
  CHECK(at(0, "hit_faulty") < at(1, "hit_faulty"));
  CHECK(at(1, "hit_faulty") < at(2, "hit_faulty"));
  const std::string svg = SweepSvg("t", "demote_after", *rows, {"flaps", "hit_faulty"});
  CHECK_THAT(svg, Catch::Contains("hit_faulty"));
}

}  // namespace
}  // namespace ballast::lbsim
