// PlanReconcile: desired VIPs against BIRD's `show protocols` rows.
#include <catch2/catch.hpp>

#include "agent/bgp/announcer.h"

namespace ballast::bgp {
namespace {

VipPrefix V(const char* t) { return *VipPrefix::Parse(t); }

ProtocolRow Row(const std::string& name, const std::string& state,
                const std::string& proto = "Static") {
  return {name, proto, "master4", state, "00:00:00.000", ""};
}

const std::string kA = V("198.18.0.10").ProtocolName();
const std::string kB = V("2001:db8:10::10").ProtocolName();
const std::string kC = V("198.18.0.11").ProtocolName();

TEST_CASE("desired and withdrawn VIPs become enable steps; in-line ones none") {
  auto steps = PlanReconcile({{V("198.18.0.10"), true}, {V("2001:db8:10::10"), true}},
                             {Row("device1", "up", "Device"), Row(kA, "down"), Row(kB, "up")});
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].protocol == kA);
  CHECK(steps[0].enable);
}

TEST_CASE("undesired announced VIPs are withdrawn, already-down ones left") {
  auto steps = PlanReconcile({{V("198.18.0.10"), false}, {V("2001:db8:10::10"), false}},
                             {Row(kA, "up"), Row(kB, "down")});
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].protocol == kA);
  CHECK_FALSE(steps[0].enable);
}

TEST_CASE("a VIP in transition: starting is left alone, stopping is enabled again") {
  CHECK(PlanReconcile({{V("198.18.0.10"), true}}, {Row(kA, "start")}).empty());
  for (const char* going_down : {"stop", "flush"}) {
    auto up = PlanReconcile({{V("198.18.0.10"), true}}, {Row(kA, going_down)});
    REQUIRE(up.size() == 1);
    CHECK(up[0].enable);
  }
  auto steps = PlanReconcile({{V("198.18.0.10"), false}}, {Row(kA, "start")});
  REQUIRE(steps.size() == 1);
  CHECK_FALSE(steps[0].enable);
}

TEST_CASE("ballast_vip_* protocols that are not desired are withdrawn (orphans)") {
  auto steps = PlanReconcile({{V("198.18.0.10"), true}},
                             {Row(kA, "up"), Row(kC, "up"), Row("ballast_vip_junk", "up"),
                              Row("ballast_vip_old", "down"), Row("other_static", "up")});
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].protocol == kC);  // name order
  CHECK(steps[1].protocol == "ballast_vip_junk");
  CHECK_FALSE(steps[0].enable);
  CHECK_FALSE(steps[1].enable);
}

TEST_CASE("nothing desired withdraws every ballast VIP (WithdrawAll's plan)") {
  auto steps = PlanReconcile({}, {Row(kA, "up"), Row(kB, "up"), Row(kC, "down")});
  REQUIRE(steps.size() == 2);
  for (const Step& s : steps) CHECK_FALSE(s.enable);
}

TEST_CASE("a same-named protocol that is not Static is never touched") {
  CHECK(PlanReconcile({{V("198.18.0.10"), true}}, {Row(kA, "down", "BGP")}).empty());
  CHECK(PlanReconcile({}, {Row(kA, "up", "BGP")}).empty());
  CHECK(StateOfRow(Row(kA, "up", "BGP")) == BirdVipState::kConflict);
}

TEST_CASE("missing protocols produce no steps") {
  CHECK(PlanReconcile({{V("198.18.0.10"), true}}, {}).empty());
}

TEST_CASE("withdrawals come before announcements") {
  auto steps = PlanReconcile({{V("198.18.0.10"), true}, {V("2001:db8:10::10"), false}},
                             {Row(kA, "down"), Row(kB, "up")});
  REQUIRE(steps.size() == 2);
  CHECK_FALSE(steps[0].enable);
  CHECK(steps[0].protocol == kB);
  CHECK(steps[1].enable);
}

TEST_CASE("the plan is idempotent: applying it leaves nothing to do") {
  std::map<VipPrefix, bool> want = {{V("198.18.0.10"), true}, {V("2001:db8:10::10"), false}};
  std::vector<ProtocolRow> rows = {Row(kA, "down"), Row(kB, "up"), Row(kC, "up")};
  for (const Step& s : PlanReconcile(want, rows)) {
    for (ProtocolRow& r : rows) {
      if (r.name == s.protocol) r.state = s.enable ? "up" : "down";
    }
  }
  CHECK(PlanReconcile(want, rows).empty());
}

}  // namespace
}  // namespace ballast::bgp
