// Random numbers for lbsim: portable and reproducible.
//
// std::mt19937_64 is specified bit for bit by the C++ standard, but the
// std:: distributions are not (libstdc++ and libc++ turn the same bits into
// different values). So every value lbsim draws goes through the functions
// here, which use only a generator's raw 64-bit output and plain arithmetic
// (and libm's log/exp/cos/pow): the same seed gives the same run whatever
// C++ library the tool is built with.
//
// Two generators:
//   Rng      std::mt19937_64, for the long streams (arrivals, each backend's
//            faults, probes);
//   FlowRng  SplitMix64 (8 bytes of state), one per simulated connection,
//            seeded from the arrival stream, for that connection's own draws
//            (its 5-tuple hash, service time, lifetime, packet losses).
// A run derives its streams from the scenario seed with StreamSeed(), and a
// connection draws everything about itself from its own FlowRng, so the
// traffic (arrival times, classes, hashes, service times) is identical at
// every point of a sweep whatever the health logic decides (common random
// numbers): differences between points come from the tunable, not from
// reshuffled draws.
//
// Value types; not thread-safe (one per stream).
#ifndef BALLAST_TOOLS_LBSIM_RNG_H_
#define BALLAST_TOOLS_LBSIM_RNG_H_

#include <cmath>
#include <cstdint>
#include <random>

namespace ballast::lbsim {

// SplitMix64 of (seed, stream): well-mixed, distinct seeds for distinct streams.
uint64_t StreamSeed(uint64_t seed, uint64_t stream);

// The derived draws, from Derived::Bits().
template <class Derived>
class RandomSource {
 public:
  // [0, 1), 53 random bits.
  double Uniform01() { return static_cast<double>(Bits() >> 11) * 0x1.0p-53; }
  // (0, 1]: safe under log().
  double UniformPositive() { return static_cast<double>((Bits() >> 11) + 1) * 0x1.0p-53; }
  bool Bernoulli(double p) { return p > 0 && Uniform01() < p; }
  // Exponential with the given mean (<= 0: 0).
  double Exponential(double mean) { return mean <= 0 ? 0 : -mean * std::log(UniformPositive()); }
  // Standard normal (Box-Muller; two uniforms per value, nothing cached).
  double Normal() {
    const double u1 = UniformPositive();
    const double u2 = Uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  uint64_t Bits() { return static_cast<Derived*>(this)->Bits(); }
};

class Rng : public RandomSource<Rng> {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  uint64_t Bits() { return g_(); }

 private:
  std::mt19937_64 g_;
};

class FlowRng : public RandomSource<FlowRng> {
 public:
  FlowRng() = default;
  explicit FlowRng(uint64_t seed) : s_(seed) {}
  uint64_t Bits() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t s_ = 0;
};

// A distribution of non-negative values (seconds, or a plain number), as a
// scenario writes it:
//   constant     value
//   exponential  mean
//   uniform      min, max
//   lognormal    median, sigma (of the underlying normal)
//   pareto       min (scale), shape (> 1 for a finite mean)
// Plain value type.
struct Distribution {
  enum class Kind : uint8_t { kConstant = 0, kExponential, kUniform, kLogNormal, kPareto };
  Kind kind = Kind::kConstant;
  double a = 0;  // value | mean | min | median | min
  double b = 0;  // -     | -    | max | sigma  | shape

  static Distribution Constant(double v) { return {Kind::kConstant, v, 0}; }
  static Distribution Exponential(double mean) { return {Kind::kExponential, mean, 0}; }

  template <class G>
  double Sample(RandomSource<G>& r) const {
    switch (kind) {
      case Kind::kConstant:
        return a;
      case Kind::kExponential:
        return r.Exponential(a);
      case Kind::kUniform:
        return a + (b - a) * r.Uniform01();
      case Kind::kLogNormal:
        return a * std::exp(b * r.Normal());
      case Kind::kPareto:
        return a / std::pow(r.UniformPositive(), 1.0 / b);
    }
    return a;
  }
  // The mean (infinity for a pareto with shape <= 1).
  double Mean() const;
};

}  // namespace ballast::lbsim

#endif  // BALLAST_TOOLS_LBSIM_RNG_H_
