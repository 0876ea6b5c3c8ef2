// PlanAddressRelease: when a retired VIP address's marker may go (its route
// out of BIRD's export, without a break, for the grace), and why it is held
// otherwise.
#include <catch2/catch.hpp>

#include "agent/bgp/address_release.h"

namespace ballast::bgp {
namespace {

VipPrefix V(const char* t) { return *VipPrefix::Parse(t); }

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 1'000'000 * kMs;
constexpr uint64_t kGrace = 2000 * kMs;

using State = BirdVipState;

TEST_CASE("a withdrawn route releases its address after the grace, not before", "[release]") {
  const std::map<VipPrefix, State> retired = {{V("198.18.0.10"), State::kWithdrawn}};
  ReleasePlan p = PlanAddressRelease({}, retired, kT0, kGrace);
  CHECK(p.release.empty());
  CHECK(p.next.gone_since_ns == std::map<VipPrefix, uint64_t>{{V("198.18.0.10"), kT0}});
  CHECK_THAT(p.held.at(V("198.18.0.10")), Catch::Contains("route withdrawn 0 ms ago"));
  CHECK_THAT(p.held.at(V("198.18.0.10")), Catch::Contains("2000 ms more"));

  p = PlanAddressRelease(p.next, retired, kT0 + kGrace - 1, kGrace);
  CHECK(p.release.empty());
  CHECK_THAT(p.held.at(V("198.18.0.10")), Catch::Contains("route withdrawn 1999 ms ago"));

  p = PlanAddressRelease(p.next, retired, kT0 + kGrace, kGrace);
  CHECK(p.release == std::vector<VipPrefix>{V("198.18.0.10")});
  CHECK(p.held.empty());
  CHECK(p.next.gone_since_ns.empty());
}

TEST_CASE("an announced route holds its address; the grace counts from the withdrawal",
          "[release]") {
  ReleasePlan p = PlanAddressRelease({}, {{V("198.18.0.10"), State::kAnnounced}}, kT0, kGrace);
  CHECK(p.release.empty());
  CHECK(p.next.gone_since_ns.empty());
  CHECK(p.held.at(V("198.18.0.10")) ==
        "no VIP uses it; its packets are dropped here until BIRD withdraws the route (BIRD: "
        "announced)");
  // Withdrawn 10 s later: the grace starts then.
  p = PlanAddressRelease(p.next, {{V("198.18.0.10"), State::kWithdrawn}}, kT0 + 10'000 * kMs,
                         kGrace);
  CHECK(p.release.empty());
  p = PlanAddressRelease(p.next, {{V("198.18.0.10"), State::kWithdrawn}},
                         kT0 + 10'000 * kMs + kGrace, kGrace);
  CHECK(p.release.size() == 1);
}

TEST_CASE("a break in the withdrawal starts the grace again", "[release]") {
  ReleasePlan p = PlanAddressRelease({}, {{V("2001:db8:10::10"), State::kWithdrawn}}, kT0, kGrace);
  for (State s : {State::kAnnounced, State::kChanging, State::kUnknown, State::kConflict}) {
    INFO(BirdVipStateName(s));
    ReleasePlan broken = PlanAddressRelease(p.next, {{V("2001:db8:10::10"), s}}, kT0 + kMs, kGrace);
    CHECK(broken.release.empty());
    CHECK(broken.next.gone_since_ns.empty());
    CHECK(broken.held.count(V("2001:db8:10::10")) == 1);
    // Gone again: a full grace from now.
    ReleasePlan again = PlanAddressRelease(broken.next, {{V("2001:db8:10::10"), State::kWithdrawn}},
                                           kT0 + kGrace + kMs, kGrace);
    CHECK(again.release.empty());
    CHECK(again.next.gone_since_ns.at(V("2001:db8:10::10")) == kT0 + kGrace + kMs);
  }
}

TEST_CASE("BIRD unreachable holds the address; a protocol BIRD does not have counts as gone",
          "[release]") {
  ReleasePlan p = PlanAddressRelease({}, {{V("198.18.0.10"), State::kUnknown}}, kT0, kGrace);
  CHECK_THAT(p.held.at(V("198.18.0.10")),
             Catch::Contains("until BIRD can be asked whether the route is withdrawn"));
  p = PlanAddressRelease({}, {{V("198.18.0.10"), State::kMissing}}, kT0, kGrace);
  p = PlanAddressRelease(p.next, {{V("198.18.0.10"), State::kMissing}}, kT0 + kGrace, kGrace);
  CHECK(p.release.size() == 1);
}

TEST_CASE("addresses no longer retired are forgotten; each address on its own", "[release]") {
  ReleaseMemory m;
  m.gone_since_ns[V("198.18.0.10")] = kT0;  // a VIP uses it again: not in `retired`
  m.gone_since_ns[V("198.18.0.11")] = kT0;
  ReleasePlan p = PlanAddressRelease(m,
                                     {{V("198.18.0.11"), State::kWithdrawn},
                                      {V("198.18.0.12"), State::kWithdrawn},
                                      {V("198.18.0.13"), State::kAnnounced}},
                                     kT0 + kGrace, kGrace);
  CHECK(p.release == std::vector<VipPrefix>{V("198.18.0.11")});
  CHECK(p.next.gone_since_ns == std::map<VipPrefix, uint64_t>{{V("198.18.0.12"), kT0 + kGrace}});
  CHECK(p.held.size() == 2);
}

}  // namespace
}  // namespace ballast::bgp
