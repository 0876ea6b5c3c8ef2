// The router-churn model: ECMP, the agent's table history as the routers
// program it, and the connections reset with and without established
// second chance.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ballast_abi.h"
#include "tools/lbsim/churn_agent.h"
#include "tools/lbsim/report.h"
#include "tools/lbsim/runner.h"
#include "tools/lbsim/scenario.h"
#include "tools/lbsim/sim.h"
#include "tools/lbsim/tests/test_util.h"
#include "tools/lbsim/sim_churn.h"

namespace ballast::lbsim {
namespace {

// 3 routers, 3 backends of weight 4 (and a spare), a small table.
const char* const kBase = R"(
name: churn
seed: 3
duration: 10s
backends: {count: 4, weight: 4, absent: [3]}
dataplane: {table_size: 4099}
routers: {count: 3}
long_lived: {count: 3000, start: {dist: uniform, min: 0s, max: 2s}, packet_interval: 200ms}
table_changes: [{at: 3s, kind: weight, backends: [0], weight: 2}]
router_events: [{at: 4s, kind: withdraw, router: 0}]
)";

Scenario Make(const Sets& sets = {}) { return testing::MakeScenario(kBase, "churn.yaml", sets); }
using testing::M;
using testing::RunOk;

TEST_CASE("churn: the same scenario and seed give the same figures; another seed does not") {
  const Scenario sc = Make({{"long_lived.count", "400"}});
  const RunResult a = RunOk(sc);
  const RunResult b = RunOk(sc);
  CHECK(FormatReport(sc, a) == FormatReport(sc, b));
  CHECK(Metrics(a) == Metrics(b));
  // Pinned figures of this small scenario (they change only when the model,
  // the Maglev builder or the table history does).
  CHECK(a.churn.established == 400);
  CHECK(a.tables == 1);
  CHECK(a.churn.versions == 1);
  CHECK(a.churn.without.reset > 0);
  CHECK(a.churn.with.reset == 0);
  CHECK(a.churn.with.saved == a.churn.without.reset);
  CHECK(a.churn.with.hops == a.churn.with.saved);  // one change: one hop each
  CHECK(M(a, "hops_mean") == 1);
  CHECK(M(a, "reset_with_fraction") == 0);
  CHECK(M(a, "reset_without_fraction") ==
        Approx(static_cast<double>(a.churn.without.reset) / 400.0));
  Scenario other = sc;
  other.seed = 4;
  CHECK(FormatReport(other, RunOk(other)) != FormatReport(sc, a));
  // Only the metrics of the churn model.
  CHECK(Metrics(a).size() == ChurnMetricNames().size());
  CHECK_FALSE(FindMetric(Metrics(a), "success_fraction").has_value());
}

TEST_CASE("churn: a table change alone resets nothing; nor does a router change alone") {
  const RunResult table_only = RunOk(Make({{"router_events", "[]"}}));
  CHECK(table_only.churn.moved == 0);
  CHECK(table_only.churn.without.reset == 0);
  CHECK(table_only.churn.slot_changed > 0);
  const RunResult router_only = RunOk(Make({{"table_changes", "[]"}}));
  CHECK(router_only.churn.moved > 0);
  CHECK(router_only.churn.slot_changed == 0);
  CHECK(router_only.churn.without.reset == 0);
  CHECK(router_only.churn.without.adopted == router_only.churn.moved);
}

// Without the mechanism a connection is reset when ECMP moves it and its
// slot changed; the ECMP hash and the flow's slot are independent, so the
// fraction reset is the product of the two fractions, within sampling.
TEST_CASE("churn: without the mechanism, reset = moved x slot changed") {
  for (const char* ecmp : {"hash_threshold", "modulo", "resilient"}) {
    for (const char* change : {"[{at: 3s, kind: weight, backends: [0], weight: 2}]",
                               "[{at: 3s, kind: add, backends: [3]}]",
                               "[{at: 3s, kind: drain, backends: [1], deadline: 1h}]"}) {
      const RunResult r = RunOk(
          Make({{"routers.ecmp", ecmp}, {"table_changes", change}, {"long_lived.count", "20000"}}));
      INFO(ecmp << " " << change);
      const double n = static_cast<double>(r.churn.established);
      REQUIRE(n == 20000);
      const double moved = static_cast<double>(r.churn.moved) / n;
      const double changed = static_cast<double>(r.churn.slot_changed) / n;
      const double reset = static_cast<double>(r.churn.without.reset) / n;
      const double p = moved * changed;
      const double sigma = std::sqrt(p * (1 - p) / n);
      CHECK(moved > 0.2);
      CHECK(changed > 0.1);
      CHECK(std::fabs(reset - p) < 4 * sigma);
      CHECK(r.churn.with.reset == 0);
    }
  }
}

TEST_CASE("churn: ECMP moves what each scheme moves") {
  // Fractions of 30000 flow hashes whose router changes when router 1 of 3
  // withdraws, and when a fourth joins.
  auto moved = [](EcmpMode mode, std::vector<bool> before, std::vector<bool> after) {
    internal::Ecmp e(mode, static_cast<int>(before.size()));
    e.Set(before);
    std::vector<int> was;
    uint64_t h = 0x1234;
    std::vector<uint64_t> hashes;
    for (int i = 0; i < 30000; ++i) {
      h = h * 6364136223846793005ULL + 1442695040888963407ULL;
      hashes.push_back(h ^ (h >> 29));
      was.push_back(e.Route(hashes.back()));
    }
    e.Set(after);
    int n = 0;
    for (size_t i = 0; i < hashes.size(); ++i) {
      const int r = e.Route(hashes[i]);
      CHECK(r >= 0);
      CHECK(after[r]);
      if (r != was[i]) ++n;
      // Resilient: a flow moves only off a router that left, or to one that joined.
      if (mode == EcmpMode::kResilient && r != was[i]) {
        CHECK((!after[was[i]] || !before[r]));
      }
    }
    return n / 30000.0;
  };
  const std::vector<bool> all3 = {true, true, true}, mid_out = {true, false, true},
                          first_out = {false, true, true};
  // Hash-threshold: the middle range splits between its neighbours (1/3);
  // the first one out shifts every boundary (1/2).
  CHECK(moved(EcmpMode::kHashThreshold, all3, mid_out) == Approx(1.0 / 3).margin(0.02));
  CHECK(moved(EcmpMode::kHashThreshold, all3, first_out) == Approx(0.5).margin(0.02));
  // Resilient: only the withdrawn router's flows.
  CHECK(moved(EcmpMode::kResilient, all3, first_out) == Approx(1.0 / 3).margin(0.03));
  CHECK(moved(EcmpMode::kResilient, {true, true, true, false}, {true, true, true, true}) ==
        Approx(0.25).margin(0.03));
  // Modulo: 3 -> 2 keeps only the flows whose hash agrees mod 2 and mod 3.
  CHECK(moved(EcmpMode::kModulo, all3, first_out) > 0.5);
  internal::Ecmp none(EcmpMode::kHashThreshold, 2);
  none.Set({false, false});
  CHECK(none.Route(42) == -1);
}

TEST_CASE("churn: with the mechanism nothing is reset after up to three changes of a slot") {
  const char* const changes[] = {
      "[{at: 3s, kind: weight, backends: [0], weight: 2}]",
      "[{at: 3s, kind: add, backends: [3], weight: 4}]",
      "[{at: 3s, kind: drain, backends: [0], deadline: 1h}]",
      "[{at: 3s, kind: remove, backends: [2]}]",
      "[{at: 2.5s, kind: weight, backends: [0], weight: 2}, {at: 3s, kind: weight, backends: [1], "
      "weight: 6}, {at: 3.5s, kind: weight, backends: [2], weight: 3}]",
      "[{at: 2.5s, kind: add, backends: [3], weight: 2}, {at: 3s, kind: weight, backends: [3], "
      "weight: 8}, {at: 3.5s, kind: drain, backends: [1]}]",
      "[{at: 2.5s, kind: weight, backends: [0], weight: 1}, {at: 3s, kind: weight, backends: [0], "
      "weight: 8}, {at: 3.5s, kind: weight, backends: [0], weight: 3}]",
  };
  const char* const events[] = {
      "[{at: 4s, kind: withdraw, router: 1}]",
      "[{at: 4s, kind: restart, router: 0, down: 1s}]",
      "[{at: 4s, kind: dead, router: 2}]",
  };
  for (const char* change : changes) {
    for (const char* ev : events) {
      INFO(change << " then " << ev);
      const RunResult r = RunOk(Make({{"table_changes", change}, {"router_events", ev}}));
      CHECK(r.churn.versions <= 3);
      CHECK(r.churn.without.reset > 0);
      CHECK(r.churn.with.reset == 0);
      // What the mechanism saves is what the other run lost (the removed
      // backend's connections are cut in both).
      CHECK(r.churn.with.saved == r.churn.without.reset);
      CHECK(r.churn.with.hops_max >= 1);
      CHECK(r.churn.with.hops_max <= 3);
      CHECK(r.churn.with.hops_max <= BALLAST_ESC_HOPS_MAX);
    }
  }
  // A removed backend's connections are cut, with or without.
  const RunResult removed =
      RunOk(Make({{"table_changes", "[{at: 3s, kind: remove, backends: [2]}]"}}));
  CHECK(removed.churn.with.cut_removed > 800);
  CHECK(removed.churn.with.cut_removed == removed.churn.without.cut_removed);
  // A dead router: its connections lose packets for the detection time.
  const RunResult dead = RunOk(Make({{"router_events", "[{at: 4s, kind: dead, router: 2}]"}}));
  CHECK(dead.churn.stalled > 800);
  CHECK(dead.churn.stall_max_s >= 0.3);
  CHECK(dead.churn.stall_max_s <= 0.3 + 0.2 + 1e-9);
}

TEST_CASE("churn: a drained backend keeps its connections until its deadline, then loses them") {
  // Drained at 3 s with a 4 s deadline; router 0 withdrawn at 4 s; the run
  // ends before the deadline (6.5 s) or after it (10 s).
  const Sets drain = {{"table_changes", "[{at: 3s, kind: drain, backends: [0], deadline: 4s}]"}};
  Sets before = drain;
  before.emplace_back("duration", "6.5s");
  const RunResult kept = RunOk(Make(before));
  CHECK(kept.churn.without.reset > 0);  // only the drained backend's slots changed
  CHECK(kept.churn.with.reset == 0);
  CHECK(kept.churn.with.cut_drain == 0);
  CHECK(kept.churn.with.open_at_end == kept.churn.established);
  CHECK(kept.churn.with.saved == kept.churn.without.reset);
  const RunResult after = RunOk(Make(drain));
  CHECK(after.churn.with.reset == 0);
  // Every connection of backend 0 (a third) is cut at its deadline.
  CHECK(after.churn.with.cut_drain > 800);
  CHECK(after.churn.with.cut_drain < 1200);
  CHECK(after.churn.with.open_at_end == after.churn.established - after.churn.with.cut_drain);
  // Its version stays in the history however many changes follow, while it
  // drains: the newest version in which it had weight is kept.
  const char* const five =
      ", {at: 3.2s, kind: weight, backends: [1], weight: 6}, {at: 3.4s, kind: weight, backends: "
      "[2], weight: 3}, {at: 3.6s, kind: weight, backends: [1], weight: 3}, {at: 3.8s, kind: "
      "weight, backends: [2], weight: 6}, {at: 3.9s, kind: weight, backends: [1], weight: 5}]";
  const RunResult drained5 = RunOk(Make(
      {{"table_changes", std::string("[{at: 3s, kind: drain, backends: [0], deadline: 1h}") + five},
       {"router_events", "[{at: 4.5s, kind: withdraw, router: 0}]"}}));
  CHECK(drained5.churn.versions == static_cast<int>(4 + 1));
  CHECK(drained5.churn.with.reset == 0);
  CHECK(drained5.churn.with.saved == drained5.churn.without.reset);
  // The same with its weight set to 0 instead (active, not draining): its
  // version is pruned after four more, and its moved connections are lost.
  const RunResult zeroed5 = RunOk(Make(
      {{"table_changes", std::string("[{at: 3s, kind: weight, backends: [0], weight: 0}") + five},
       {"router_events", "[{at: 4.5s, kind: withdraw, router: 0}]"}}));
  CHECK(zeroed5.churn.versions == 4);
  CHECK(zeroed5.churn.with.reset > zeroed5.churn.without.reset / 2);
}

TEST_CASE("churn: a backend beyond the history loses its moved connections") {
  // Backend 0 loses slots at the first change, then the others grow; the
  // router change comes after n changes.
  const std::vector<std::string> seq = {"{at: 2.5s, kind: weight, backends: [0], weight: 3}",
                                        "{at: 2.8s, kind: weight, backends: [1], weight: 5}",
                                        "{at: 3.1s, kind: weight, backends: [2], weight: 5}",
                                        "{at: 3.4s, kind: weight, backends: [1], weight: 6}",
                                        "{at: 3.7s, kind: weight, backends: [2], weight: 6}",
                                        "{at: 4.0s, kind: weight, backends: [1], weight: 7}"};
  std::vector<uint64_t> lost;
  for (size_t n = 1; n <= seq.size(); ++n) {
    std::string changes = "[";
    for (size_t i = 0; i < n; ++i) changes += (i ? ", " : "") + seq[i];
    changes += "]";
    const RunResult r = RunOk(Make({{"table_changes", changes},
                                    {"router_events", "[{at: 4.5s, kind: withdraw, router: 0}]"}}));
    INFO(n << " changes");
    CHECK(r.churn.versions == static_cast<int>(std::min<size_t>(n, 4)));
    CHECK(r.churn.without.reset > 0);
    lost.push_back(r.churn.with.reset);
  }
  // Within the history (kTableVersions = 4 versions): nothing lost.
  CHECK(lost[0] == 0);
  CHECK(lost[1] == 0);
  CHECK(lost[2] == 0);
  CHECK(lost[3] == 0);
  // Beyond it: the connections whose slot changed only in the oldest change.
  CHECK(lost[4] > 0);
  CHECK(lost[5] >= lost[4]);
}

TEST_CASE("churn: the agent's history as the routers program it") {
  auto a = VipAgent::Create(4, 4, {3}, 251, 1'800'000'000'000);
  REQUIRE(a.ok());
  const std::vector<int32_t> t0 = a->programmed().table;
  CHECK(a->programmed().history.empty());
  CHECK(a->programmed().versions == 0);
  CHECK(VipAgent::AddressOf(0) == "198.18.31.2");
  CHECK(VipAgent::AddressOf(12) == "198.20.0.13");
  TableChange halve;
  halve.backends = {0};
  halve.weight = 2;
  REQUIRE(a->Apply(halve, 1'800'000'001'000).ok());
  const ProgrammedTable& p = a->programmed();
  CHECK(p.versions == 1);
  CHECK(p.slots_moved > 0);
  uint64_t moved = 0, from0 = 0;
  for (uint32_t s = 0; s < p.table.size(); ++s) {
    if (p.table[s] == t0[s]) {
      CHECK(p.HistoryAt(s, 0) == -1);
      continue;
    }
    ++moved;
    if (t0[s] == 0) ++from0;
    CHECK(p.HistoryAt(s, 0) == t0[s]);  // the slot's previous backend
    CHECK(p.HistoryAt(s, 1) == -1);
  }
  CHECK(moved == p.slots_moved);
  CHECK(from0 >= moved * 9 / 10);  // mostly backend 0's (Maglev moves a few more)
  // The agent refuses what lbctl would refuse.
  TableChange add_again;
  add_again.kind = TableChangeKind::kAdd;
  add_again.backends = {1};
  CHECK_FALSE(a->Apply(add_again, 1'800'000'002'000).ok());
  // A drain's eviction at the deadline, not before.
  TableChange drain;
  drain.kind = TableChangeKind::kDrain;
  drain.backends = {2};
  drain.deadline = absl::Seconds(5);
  REQUIRE(a->Apply(drain, 1'800'000'002'000).ok());
  CHECK(a->programmed().backends[2].state == BALLAST_BACKEND_DRAINING);
  CHECK(a->programmed().backends[2].Usable(1'800'000'006'999));
  CHECK_FALSE(a->programmed().backends[2].Usable(1'800'000'007'000));
  CHECK_FALSE(*a->Evict(2, 1'800'000'006'000));
  CHECK(*a->Evict(2, 1'800'000'007'000));
  CHECK(a->programmed().backends[2].state == BALLAST_BACKEND_EVICTED);
}

TEST_CASE("churn: scenario mistakes name the field") {
  auto error_of = [](const std::string& text) {
    auto f = ParseScenarioText(text, "t.yaml");
    if (!f.ok()) return std::string(f.status().message());
    auto sc = BuildScenario(*f, "", {});
    return sc.ok() ? std::string("ok") : std::string(sc.status().message());
  };
  CHECK(error_of("name: t\nrouters: {count: 2}\n") == "ok");
  CHECK_THAT(error_of("name: t\nlong_lived: {count: 5}\n"), Catch::Contains("routers: missing"));
  CHECK_THAT(
      error_of("name: t\nrouters: {count: 2}\nrouter_events: [{kind: withdraw, router: 2}]\n"),
      Catch::Contains("router_events[0].router: 2 is out of range"));
  CHECK_THAT(error_of("name: t\nrouters: {count: 2}\nrouter_events: [{kind: reboot, router: 1}]\n"),
             Catch::Contains("'reboot' is not a router event"));
  CHECK_THAT(error_of("name: t\nrouters: {count: 2, ecmp: random}\n"),
             Catch::Contains("routers.ecmp: 'random'"));
  CHECK_THAT(error_of("name: t\nrouters: {count: 2, announcing: [3]}\n"),
             Catch::Contains("routers.announcing: router 3 does not exist"));
  CHECK_THAT(
      error_of("name: t\nrouters: {count: 2}\ntable_changes: [{kind: weight, backends: [0]}]\n"),
      Catch::Contains("table_changes[0].weight: missing"));
  CHECK_THAT(error_of("name: t\nrouters: {count: 2}\nfaults: [{kind: crash, backends: [0]}]\n"),
             Catch::Contains("faults: the router-churn model"));
  // An impossible change is an error of the run, naming the change.
  auto f = ParseScenarioText(
      "name: t\nrouters: {count: 2}\ntable_changes: [{at: 1s, kind: add, backends: [0]}]\n",
      "t.yaml");
  REQUIRE(f.ok());
  auto sc = BuildScenario(*f, "", {});
  REQUIRE(sc.ok());
  auto r = Run(*sc);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(std::string(r.status().message()),
             Catch::Contains("table_changes[0] (backend 0 added at 1s)"));
}

}  // namespace
}  // namespace ballast::lbsim
