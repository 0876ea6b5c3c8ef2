#include "agent/bgp/address_release.h"

#include "absl/strings/str_cat.h"

namespace ballast::bgp {
namespace {

// Out of BIRD's export: its protocol is down, or BIRD has none for it.
bool RouteGone(BirdVipState s) {
  return s == BirdVipState::kWithdrawn || s == BirdVipState::kMissing;
}

std::string Ms(uint64_t ns) { return absl::StrCat(ns / 1'000'000, " ms"); }

}  // namespace

ReleasePlan PlanAddressRelease(const ReleaseMemory& memory,
                               const std::map<VipPrefix, BirdVipState>& retired, uint64_t now_ns,
                               uint64_t grace_ns) {
  ReleasePlan plan;
  for (const auto& [prefix, bird] : retired) {
    if (!RouteGone(bird)) {
      plan.held[prefix] = absl::StrCat(
          "no VIP uses it; its packets are dropped here until BIRD ",
          bird == BirdVipState::kUnknown
              ? "can be asked whether the route is withdrawn"
              : absl::StrCat("withdraws the route (BIRD: ", BirdVipStateName(bird), ")"));
      continue;  // a break: the grace starts again once it is gone
    }
    auto it = memory.gone_since_ns.find(prefix);
    const uint64_t since =
        it != memory.gone_since_ns.end() && it->second <= now_ns ? it->second : now_ns;
    const uint64_t gone_for = now_ns - since;
    if (gone_for >= grace_ns) {
      plan.release.push_back(prefix);
      continue;
    }
    plan.next.gone_since_ns[prefix] = since;
    plan.held[prefix] =
        absl::StrCat("no VIP uses it; route withdrawn ", Ms(gone_for), " ago, its packets are ",
                     "dropped here for ", Ms(grace_ns - gone_for), " more (the ToR's grace)");
  }
  return plan;
}

}  // namespace ballast::bgp
