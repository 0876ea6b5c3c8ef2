#include "tools/lbsim/histogram.h"

#include <bit>
#include <cmath>

namespace ballast::lbsim {

// Values below 128 have their own bucket. Above, a value with bit width w
// (8..64) falls into group w - 8, split into 64 sub-buckets by the six bits
// after its leading one.
int Histogram::Index(uint64_t v) {
  if (v < 128) return static_cast<int>(v);
  const int w = std::bit_width(v);
  const int sub = static_cast<int>((v >> (w - 7)) & (kSub - 1));
  return 128 + (w - 8) * kSub + sub;
}

uint64_t Histogram::Low(int index) {
  if (index < 128) return static_cast<uint64_t>(index);
  const int g = (index - 128) / kSub;
  const int sub = (index - 128) % kSub;
  const int w = g + 8;
  return (uint64_t{1} << (w - 1)) | (static_cast<uint64_t>(sub) << (w - 7));
}

uint64_t Histogram::High(int index) {
  if (index < 128) return static_cast<uint64_t>(index) + 1;
  const int w = (index - 128) / kSub + 8;
  return Low(index) + (uint64_t{1} << (w - 7));
}

void Histogram::Add(uint64_t v) {
  ++n_[Index(v)];
  ++count_;
}

uint64_t Histogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += n_[i];
    if (seen >= rank) {
      if (i < 128) return Low(i);
      return Low(i) + (High(i) - Low(i)) / 2;
    }
  }
  return Low(kBuckets - 1);
}

}  // namespace ballast::lbsim
