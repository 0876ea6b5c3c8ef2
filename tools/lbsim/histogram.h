// A log-linear histogram of non-negative integers (nanoseconds in lbsim):
// exact below 128, then 64 buckets per power of two (relative error under
// 1.6%). Integer arithmetic only, so percentiles are the same on every
// platform. Fixed memory (about 4 KiB), O(1) per sample.
#ifndef BALLAST_TOOLS_LBSIM_HISTOGRAM_H_
#define BALLAST_TOOLS_LBSIM_HISTOGRAM_H_

#include <array>
#include <cstdint>

namespace ballast::lbsim {

class Histogram {
 public:
  void Add(uint64_t v);
  uint64_t count() const { return count_; }
  // The value at quantile q (0..1): the midpoint of the bucket holding the
  // ceil(q * count)-th smallest sample; 0 when empty.
  uint64_t Quantile(double q) const;

 private:
  static constexpr int kSub = 64;
  static constexpr int kBuckets = 128 + 57 * kSub;
  static int Index(uint64_t v);
  static uint64_t Low(int index);
  static uint64_t High(int index);  // exclusive

  std::array<uint64_t, kBuckets> n_{};
  uint64_t count_ = 0;
};

}  // namespace ballast::lbsim

#endif  // BALLAST_TOOLS_LBSIM_HISTOGRAM_H_
