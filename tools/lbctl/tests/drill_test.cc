// lbctl drill's rules (tools/lbctl/drill.h) on made-up observation
// sequences: when traffic moved, when the pool was stable, what counts as a
// flap, PASS/FAIL.
#include <catch2/catch.hpp>

#include "tools/lbctl/drill.h"

namespace ballast::lbctl {
namespace {

TEST_CASE("TrafficWatch: the first standby whose counter rises above its baseline",
          "[lbctl][drill]") {
  TrafficWatch w;
  w.Baseline("b", 100);
  w.Baseline("c", 7);
  CHECK_FALSE(w.Observe("b", 100, 40));  // unchanged
  CHECK_FALSE(w.Observe("c", 7, 40));
  CHECK_FALSE(w.moved());
  CHECK(w.Observe("c", 9, 420));
  CHECK(w.moved());
  CHECK(*w.moved_ms() == 420);
  CHECK(w.to() == "c");
  CHECK_FALSE(w.Observe("b", 200, 460));  // later rises change nothing
  CHECK(w.to() == "c");
}

TEST_CASE("TrafficWatch: a node without a baseline is baselined by its first reading",
          "[lbctl][drill]") {
  TrafficWatch w;
  CHECK_FALSE(w.Observe("b", 500, 40));
  CHECK(w.Observe("b", 501, 80));
  CHECK(*w.moved_ms() == 80);
}

TEST_CASE("PoolWatch: no change after traffic moved is stable at 0 once the window passed",
          "[lbctl][drill]") {
  PoolWatch p(/*traffic_ms=*/400, /*window_ms=*/2000);
  CHECK_FALSE(p.StableMs(400).has_value());  // nothing observed yet
  p.Observe(440, "x");
  CHECK_FALSE(p.StableMs(2399).has_value());
  p.Observe(2400, "x");
  REQUIRE(p.StableMs(2400).has_value());
  CHECK(*p.StableMs(2400) == 0);
  CHECK(p.changes() == 0);
}

TEST_CASE("PoolWatch: the time of the last change, confirmed by a full window after it",
          "[lbctl][drill]") {
  PoolWatch p(1000, 2000);
  p.Observe(1040, "a");
  p.Observe(1500, "b");  // +500
  p.Observe(3000, "b");
  CHECK_FALSE(p.StableMs(3000).has_value());  // 1.5 s after the change
  p.Observe(3200, "c");                       // +2200: the last change
  p.Observe(5100, "c");
  CHECK_FALSE(p.StableMs(5100).has_value());
  p.Observe(5200, "c");
  REQUIRE(p.StableMs(5200).has_value());
  CHECK(*p.StableMs(5200) == 2200);
  CHECK(p.changes() == 2);
}

TEST_CASE("PoolWatch: a change back to the first signature is still a change", "[lbctl][drill]") {
  PoolWatch p(0, 500);
  p.Observe(10, "a");
  p.Observe(100, "b");
  p.Observe(200, "a");
  p.Observe(700, "a");
  REQUIRE(p.StableMs(700).has_value());
  CHECK(*p.StableMs(700) == 200);
  CHECK(p.changes() == 2);
}

v1::VipStatus Vip(uint32_t w2) {
  v1::VipStatus v;
  auto* b = v.add_backends();
  b->set_address("198.18.12.2");
  b->set_state("active");
  b->set_effective_weight(w2);
  b = v.add_backends();
  b->set_address("198.18.11.2");
  b->set_state("active");
  b->set_effective_weight(10);
  return v;
}

TEST_CASE("PoolSignature: states, effective weights and the table; order-free", "[lbctl][drill]") {
  const std::string s = PoolSignature(Vip(10), "abc");
  CHECK(s == "198.18.11.2 active 10,198.18.12.2 active 10 table abc");
  CHECK(PoolSignature(Vip(5), "abc") != s);
  CHECK(PoolSignature(Vip(10), "abd") != s);
  v1::VipStatus counters = Vip(10);
  counters.set_packets(12345);  // counters are not the pool
  counters.mutable_backends(0)->set_flows(7);
  CHECK(PoolSignature(counters, "abc") == s);
}

v1::NodeRecord Record(const std::string& node, bool in_service, const std::string& vip) {
  v1::NodeRecord r;
  r.set_node(node);
  auto* o = r.add_observations();
  o->set_vip(vip);
  o->set_backend("198.18.11.2");
  o->set_in_service(in_service);
  o->set_state(in_service ? "healthy" : "down");
  return r;
}

TEST_CASE("VerdictWatch: every flip of a node's own verdict for the VIP is a flap",
          "[lbctl][drill]") {
  const std::string vip = "198.18.0.10:80/tcp";
  VerdictWatch w(vip);
  w.Observe(Record("a", true, vip), 0);
  w.Observe(Record("b", true, vip), 0);
  w.Observe(Record("a", true, vip), 250);
  CHECK(w.flips() == 0);
  w.Observe(Record("a", false, vip), 500);  // out
  w.Observe(Record("a", true, vip), 750);   // back
  w.Observe(Record("b", true, vip), 750);
  w.Observe(Record("c", false, vip), 750);                    // first reading of c: not a flip
  w.Observe(Record("a", false, "198.18.0.11:80/tcp"), 1000);  // another VIP
  CHECK(w.flips() == 2);
  REQUIRE(w.notes().size() == 2);
  CHECK(w.notes()[0] == "node a: backend 198.18.11.2 out at +0.50 s (down)");
}

TEST_CASE("IsFlapAction: backend transitions only", "[lbctl][drill]") {
  CHECK(IsFlapAction("demote"));
  CHECK(IsFlapAction("promote"));
  CHECK(IsFlapAction("pin"));
  CHECK_FALSE(IsFlapAction("ramp_step"));
  CHECK_FALSE(IsFlapAction("vip_acquired"));
  CHECK_FALSE(IsFlapAction("drill"));
  CHECK_FALSE(IsFlapAction("set_weight"));
}

v1::DrillResult Result(int64_t failover, int64_t stable, uint32_t flaps, uint32_t diffs) {
  v1::DrillResult r;
  r.mutable_vip()->set_address("198.18.0.10");
  r.mutable_vip()->set_port(80);
  r.mutable_vip()->set_protocol(v1::TCP);
  r.set_mode("fence");
  r.set_from_node("a");
  r.set_to_node("b");
  r.set_failover_ms(failover);
  r.set_stable_ms(stable);
  r.set_flaps(flaps);
  r.set_differences(diffs);
  r.set_stable_window_ms(2000);
  r.set_pass(DrillPasses(r));
  return r;
}

TEST_CASE("DrillPasses: stable <= 5 s, zero flaps, zero differences, traffic moved",
          "[lbctl][drill]") {
  CHECK(DrillPasses(Result(420, 0, 0, 0)));
  CHECK(DrillPasses(Result(420, 5000, 0, 0)));
  CHECK_FALSE(DrillPasses(Result(420, 5001, 0, 0)));
  CHECK_FALSE(DrillPasses(Result(420, -1, 0, 0)));  // never stable
  CHECK_FALSE(DrillPasses(Result(-1, 0, 0, 0)));    // traffic never moved
  CHECK_FALSE(DrillPasses(Result(420, 0, 1, 0)));
  CHECK_FALSE(DrillPasses(Result(420, 0, 0, 1)));
}

TEST_CASE("FormatDrill: the four numbers with their targets and the verdict", "[lbctl][drill]") {
  const std::string pass = FormatDrill(Result(420, 0, 0, 0), "a");
  CHECK(pass ==
        "drill of vip 198.18.0.10:80/tcp, mode fence: owner a -> b (stable window 2.00 s)\n"
        "  failover     0.42 s   failure -> traffic on b                      traffic moves  "
        "PASS\n"
        "  stable       0.00 s   traffic moved -> stable pool on b            <= 5 s         "
        "PASS\n"
        "  flaps        0        backend state transitions, every node        0              "
        "PASS\n"
        "  differences  0        configuration, between the nodes at the end  0              "
        "PASS\n"
        "result: PASS (recorded in the audit log of node a as `drill`)\n");
  v1::DrillResult fail = Result(-1, -1, 2, 0);
  fail.set_to_node("");
  fail.add_notes("node a: demote of backend 198.18.11.2 at +1.2 s");
  const std::string f = FormatDrill(fail, "");
  CHECK(f.find("failover     none     no traffic on any standby before the timeout") !=
        std::string::npos);
  CHECK(f.find("flaps        2 ") != std::string::npos);
  CHECK(f.find("  note: node a: demote of backend 198.18.11.2 at +1.2 s\n") != std::string::npos);
  CHECK(f.find("result: FAIL\n") != std::string::npos);
}

}  // namespace
}  // namespace ballast::lbctl
