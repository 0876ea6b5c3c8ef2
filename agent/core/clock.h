// Time for the agent's decisions, injected so that tests control it.
//
// Two clocks, because the agent speaks to two audiences: the state file and
// operators see wall-clock time (unix milliseconds), the data plane compares
// CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns). Nothing in agent/core reads
// a global clock; it asks the Clock it was given.
//
// Thread-safety: SystemClock is stateless. FakeClock may be read from any
// thread while a test advances it (atomics).
#ifndef BALLAST_AGENT_CORE_CLOCK_H_
#define BALLAST_AGENT_CORE_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace ballast::core {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowUnixMs() const = 0;        // wall clock, for state and operators
  virtual uint64_t NowMonotonicNs() const = 0;  // CLOCK_MONOTONIC, for the data plane
};

// The real clocks (CLOCK_REALTIME, CLOCK_MONOTONIC).
class SystemClock final : public Clock {
 public:
  int64_t NowUnixMs() const override;
  uint64_t NowMonotonicNs() const override;
};

// A clock that moves only when told to; both readings move together.
class FakeClock final : public Clock {
 public:
  FakeClock(int64_t unix_ms, uint64_t monotonic_ns) : unix_ms_(unix_ms), mono_ns_(monotonic_ns) {}
  int64_t NowUnixMs() const override { return unix_ms_.load(); }
  uint64_t NowMonotonicNs() const override { return mono_ns_.load(); }
  void AdvanceMs(int64_t ms) {
    unix_ms_ += ms;
    mono_ns_ += static_cast<uint64_t>(ms) * 1'000'000ull;
  }

 private:
  std::atomic<int64_t> unix_ms_;
  std::atomic<uint64_t> mono_ns_;
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_CLOCK_H_
