// The router-churn model's ECMP (sim_churn.h): the ToR's choice of router
// for a flow hash among the routers announcing the VIP, per EcmpMode.
// Internal to tools/lbsim.
#ifndef BALLAST_TOOLS_LBSIM_SIM_ECMP_H_
#define BALLAST_TOOLS_LBSIM_SIM_ECMP_H_

#include <cstdint>
#include <vector>

#include "tools/lbsim/scenario.h"

namespace ballast::lbsim::internal {

// The ToR's choice of router for a flow hash, given the routers announcing.
class Ecmp {
 public:
  static constexpr int kBuckets = 128;  // resilient nexthop groups' default

  Ecmp(EcmpMode mode, int routers) : mode_(mode), routers_(routers) {}
  // The routers announcing now (announced[i] for router i).
  void Set(const std::vector<bool>& announced);
  // The router for `hash`, or -1 when none announces.
  int Route(uint64_t hash) const;

 private:
  EcmpMode mode_;
  int routers_;
  std::vector<int> list_;     // announcing routers, in index order
  std::vector<int> buckets_;  // resilient: router per bucket
};

}  // namespace ballast::lbsim::internal

#endif  // BALLAST_TOOLS_LBSIM_SIM_ECMP_H_
