// Scenario files: reading, defaults, errors that name the field, overrides,
// variants, sweep values and the expectation checks.
#include <map>
#include <string>

#include <catch2/catch.hpp>

#include "tools/lbsim/report.h"
#include "tools/lbsim/runner.h"
#include "tools/lbsim/scenario.h"

namespace ballast::lbsim {
namespace {

absl::StatusOr<Scenario> Read(const std::string& text) {
  auto f = ParseScenarioText(text, "test.yaml");
  if (!f.ok()) return f.status();
  return BuildScenario(*f, "", {});
}

std::string ErrorOf(const std::string& text) {
  auto sc = Read(text);
  REQUIRE_FALSE(sc.ok());
  return std::string(sc.status().message());
}

TEST_CASE("a minimal scenario gets lbagent-like defaults") {
  auto sc = Read("name: t\n");
  REQUIRE(sc.ok());
  CHECK(sc->backends == 3);
  CHECK(sc->health);
  CHECK(sc->params.demote_after == 3);
  CHECK(sc->params.latency_floor_ms == 10);  // lbagent's default floor
  CHECK(sc->eval_interval == sc->probe_interval);
  CHECK(sc->probe_timeout <= sc->probe_interval);
  CHECK(sc->table_size == 65537);
}

TEST_CASE("every field is read, durations and distributions included") {
  auto sc = Read(R"(
name: full
seed: 9
duration: 2m
warmup: 5s
traffic:
  rate: 250
  classes:
    - {name: a, share: 3, lifetime: 50ms, latency: {dist: exponential, mean: 4ms}}
    - {name: b, share: 1, lifetime: {dist: uniform, min: 1s, max: 2s}, latency: {dist: lognormal, median: 10ms, sigma: 0.4}}
client: {syn_rto: 200ms, connect_timeout: 1s, request_timeout: 500ms, retries: 2, retry_backoff: 10ms}
network: {rtt: 1ms, loss_penalty: 300ms}
backends: {count: 6, weight: 10, zones: 2, accept: 1ms, probe_latency: {dist: pareto, min: 1ms, shape: 3}}
dataplane: {table_size: 4099, resteer: false}
health:
  probe_interval: 500ms
  probe_timeout: 300ms
  eval_interval: 1s
  probe: tcp
  passive: false
  observers: 3
  params: {demote_after: 5, ramp_percents: [10, 100], cooldown_base: 10s, new_backend_start: ramping}
faults:
  - {kind: crash, backends: "1-2", mttf: 30s, mttr: 2s, mode: blackhole}
  - {kind: zone, zone: 1, at: 10s, for: 5s}
  - {kind: blind, observer: 2, backends: [0], at: 1s}
plot: {backends: [0, 5]}
expect: ["flaps == 0"]
)");
  REQUIRE(sc.ok());
  CHECK(sc->seed == 9);
  CHECK(sc->duration == absl::Minutes(2));
  CHECK(sc->classes.size() == 2);
  CHECK(sc->classes[0].lifetime.kind == Distribution::Kind::kConstant);
  CHECK(sc->classes[0].lifetime.a == Approx(0.05));
  CHECK(sc->classes[1].latency.kind == Distribution::Kind::kLogNormal);
  CHECK(sc->classes[1].latency.b == Approx(0.4));
  CHECK(sc->retries == 2);
  CHECK(sc->rtt == absl::Milliseconds(1));
  CHECK(sc->zones == 2);
  CHECK(sc->probe_latency.kind == Distribution::Kind::kPareto);
  CHECK(sc->table_size == 4099);
  CHECK_FALSE(sc->resteer);
  CHECK(sc->probe == ProbeKind::kTcp);
  CHECK_FALSE(sc->passive);
  CHECK(sc->observers == 3);
  CHECK(sc->eval_interval == absl::Seconds(1));
  CHECK(sc->params.demote_after == 5);
  CHECK(sc->params.ramp_percents == std::vector<int>{10, 100});
  CHECK(sc->params.cooldown_base == absl::Seconds(10));
  CHECK(sc->params.new_backend_start == health::NewBackendStart::kRamping);
  REQUIRE(sc->faults.size() == 3);
  CHECK(sc->faults[0].recurring);
  CHECK(sc->faults[0].backends == std::vector<int>{1, 2});
  CHECK(sc->faults[0].mode == CrashMode::kBlackhole);
  CHECK(sc->faults[1].backends == std::vector<int>{1, 3, 5});  // zone 1 of 2
  CHECK(sc->faults[2].observer == 2);
  CHECK(sc->plot_backends == std::vector<int>{0, 5});
  CHECK(sc->expect.size() == 1);
}

TEST_CASE("mistakes are rejected with the field that is wrong") {
  CHECK_THAT(ErrorOf("name: t\nbackends: {cout: 3}\n"),
             Catch::Contains("backends.cout: unknown key"));
  CHECK_THAT(ErrorOf("name: t\ntraffic: {rate: fast}\n"),
             Catch::Contains("traffic.rate: expected a number"));
  CHECK_THAT(ErrorOf("name: t\nhealth: {params: {demote_after: 0}}\n"),
             Catch::Contains("demote_after 0 is out of range"));
  CHECK_THAT(ErrorOf("name: t\nfaults: [{kind: melt, backends: all}]\n"),
             Catch::Contains("faults[0].kind: 'melt' is not a fault kind"));
  CHECK_THAT(ErrorOf("name: t\nfaults: [{kind: hang, backends: [7]}]\n"),
             Catch::Contains("backend 7 does not exist"));
  CHECK_THAT(ErrorOf("name: t\nfaults: [{kind: hang}]\n"),
             Catch::Contains("faults[0].backends: missing"));
  CHECK_THAT(ErrorOf("name: t\ndataplane: {table_size: 65536}\n"), Catch::Contains("not prime"));
  CHECK_THAT(ErrorOf("name: t\nhealth: {probe_interval: 100ms, probe_timeout: 200ms}\n"),
             Catch::Contains("must not exceed"));
  CHECK_THAT(ErrorOf("name: t\nduration: soon\n"),
             Catch::Contains("duration: expected a duration"));
  CHECK_THAT(ErrorOf("duration: 10s\n"), Catch::Contains("name: missing"));
  CHECK_THAT(ErrorOf("name: t\nfaults: [{kind: hang, backends: [0], mttr: 1s}]\n"),
             Catch::Contains("needs mttf"));
}

TEST_CASE("short tunable names stand for their paths") {
  CHECK(*TunablePath("demote_after") == "health.params.demote_after");
  CHECK(*TunablePath("probe_interval") == "health.probe_interval");
  CHECK(*TunablePath("rate") == "traffic.rate");
  CHECK(*TunablePath("faults") == "faults");
  CHECK(*TunablePath("client.retries") == "client.retries");
  CHECK_FALSE(TunablePath("demote_afterr").ok());
  CHECK(TunableNames().size() > 30);
}

TEST_CASE("overrides apply in order: file, variant, --set") {
  auto f = ParseScenarioText(R"(
name: t
health: {params: {demote_after: 4}}
variants:
  fast: {set: {demote_after: 1, probe_interval: 100ms}, expect: ["flaps >= 0"]}
  slow: {set: {health.params.demote_after: 9}}
)",
                             "t.yaml");
  REQUIRE(f.ok());
  CHECK(RunNames(*f) == std::vector<std::string>{"fast", "slow"});
  auto base = BuildScenario(*f, "", {});
  REQUIRE(base.ok());
  CHECK(base->params.demote_after == 4);
  auto fast = BuildScenario(*f, "fast", {});
  REQUIRE(fast.ok());
  CHECK(fast->params.demote_after == 1);
  CHECK(fast->probe_interval == absl::Milliseconds(100));
  CHECK(fast->eval_interval == absl::Milliseconds(100));
  CHECK(fast->expect.size() == 1);
  CHECK(fast->variant == "fast");
  auto slow = BuildScenario(*f, "slow", {{"demote_after", "2"}});
  REQUIRE(slow.ok());
  CHECK(slow->params.demote_after == 2);
  auto missing = BuildScenario(*f, "medium", {});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("variants: fast, slow"));
  // The file's tree is not changed by building a variant.
  CHECK(BuildScenario(*f, "", {})->params.demote_after == 4);
}

TEST_CASE("sweep values keep commas inside brackets") {
  CHECK(SplitSweepValues("1,2,3") == std::vector<std::string>{"1", "2", "3"});
  CHECK(SplitSweepValues("[5,100],[5,20,50,100]") ==
        std::vector<std::string>{"[5,100]", "[5,20,50,100]"});
  CHECK(SplitSweepValues("250ms") == std::vector<std::string>{"250ms"});
  CHECK(SplitSweepValues("").empty());
}

TEST_CASE("checks compare metrics with numbers and across runs") {
  std::map<std::string, MetricList> sets = {
      {"", {{"flaps", 2}, {"success_fraction", 0.99}}},
      {"a", {{"success_fraction", 0.95}}},
      {"b", {{"success_fraction", 0.999}}},
  };
  std::string detail;
  CHECK(*EvalCheck("flaps == 2", sets, &detail));
  CHECK(detail == "flaps == 2: 2 vs 2 (ok)");
  CHECK_FALSE(*EvalCheck("flaps < 2", sets, &detail));
  CHECK_THAT(detail, Catch::EndsWith("FAILED"));
  CHECK(*EvalCheck("success_fraction >= 0.98", sets, &detail));
  CHECK(*EvalCheck("a.success_fraction < b.success_fraction", sets, &detail));
  CHECK(*EvalCheck("flaps != 3", sets, &detail));
  CHECK_FALSE(EvalCheck("flaps =< 2", sets, &detail).ok());
  CHECK_FALSE(EvalCheck("flops == 2", sets, &detail).ok());
  CHECK_FALSE(EvalCheck("c.flaps == 2", sets, &detail).ok());
  CHECK_FALSE(EvalCheck("flaps==2", sets, &detail).ok());
}

}  // namespace
}  // namespace ballast::lbsim
