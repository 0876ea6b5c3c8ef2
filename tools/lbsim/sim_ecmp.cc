#include "tools/lbsim/sim_ecmp.h"

#include <utility>

namespace ballast::lbsim::internal {

void Ecmp::Set(const std::vector<bool>& announced) {
  std::vector<int> list;
  for (int i = 0; i < routers_; ++i) {
    if (announced[i]) list.push_back(i);
  }
  if (mode_ == EcmpMode::kResilient) {
    const int n = static_cast<int>(list.size());
    if (n == 0) {
      buckets_.clear();
    } else if (buckets_.empty()) {
      buckets_.resize(kBuckets);
      for (int b = 0; b < kBuckets; ++b) buckets_[b] = list[b % n];
    } else {
      std::vector<int> count(routers_, 0);
      for (int r : buckets_) {
        if (announced[r]) ++count[r];
      }
      // The buckets of a router that left go to the emptiest ones; no other
      // bucket moves.
      for (int b = 0; b < kBuckets; ++b) {
        if (announced[buckets_[b]]) continue;
        int best = list[0];
        for (int r : list) {
          if (count[r] < count[best]) best = r;
        }
        buckets_[b] = best;
        ++count[best];
      }
      // A router that joined takes buckets from the fullest ones until it
      // has its share.
      for (int r : list) {
        while (count[r] < kBuckets / n) {
          int donor = -1;
          for (int d : list) {
            if (d != r && (donor < 0 || count[d] > count[donor])) donor = d;
          }
          if (donor < 0 || count[donor] <= count[r] + 1) break;
          for (int b = kBuckets - 1; b >= 0; --b) {
            if (buckets_[b] == donor) {
              buckets_[b] = r;
              break;
            }
          }
          --count[donor];
          ++count[r];
        }
      }
    }
  }
  list_ = std::move(list);
}

int Ecmp::Route(uint64_t hash) const {
  if (list_.empty()) return -1;
  const uint64_t n = list_.size();
  switch (mode_) {
    case EcmpMode::kModulo:
      return list_[hash % n];
    case EcmpMode::kResilient:
      return buckets_[hash % kBuckets];
    case EcmpMode::kHashThreshold: {
      // fib_select_multipath: the first nexthop whose upper bound is at
      // least the 31-bit hash; fib_rebalance: upper bound of nexthop i =
      // round((i + 1) * 2^31 / n) - 1 (equal weights).
      const uint64_t h = hash >> 33;
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t ub = (((i + 1) << 31) + n / 2) / n - 1;
        if (h <= ub) return list_[i];
      }
      return list_.back();
    }
  }
  return -1;
}

}  // namespace ballast::lbsim::internal
