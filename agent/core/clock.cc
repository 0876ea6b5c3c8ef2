#include "agent/core/clock.h"

#include <time.h>

namespace ballast::core {

int64_t SystemClock::NowUnixMs() const {
  timespec ts = {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

uint64_t SystemClock::NowMonotonicNs() const {
  timespec ts = {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ballast::core
