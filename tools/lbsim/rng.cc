#include "tools/lbsim/rng.h"

#include <cmath>
#include <limits>

namespace ballast::lbsim {

uint64_t StreamSeed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Distribution::Mean() const {
  switch (kind) {
    case Kind::kConstant:
    case Kind::kExponential:
      return a;
    case Kind::kUniform:
      return (a + b) / 2;
    case Kind::kLogNormal:
      return a * std::exp(b * b / 2);
    case Kind::kPareto:
      return b > 1 ? a * b / (b - 1) : std::numeric_limits<double>::infinity();
  }
  return a;
}

}  // namespace ballast::lbsim
