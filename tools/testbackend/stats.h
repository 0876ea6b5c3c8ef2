// Counters of the test backend, served as JSON at the control endpoint's
// GET /stats. All fields are atomics: any thread may bump or read them
// without a lock; a JSON snapshot is per-field consistent, not global.
#ifndef BALLAST_TOOLS_TESTBACKEND_STATS_H_
#define BALLAST_TOOLS_TESTBACKEND_STATS_H_

#include <atomic>
#include <cstdint>
#include <string>

namespace ballast::testbackend {

struct Stats {
  using Counter = std::atomic<uint64_t>;
  // Requests by protocol and by kind of client.
  Counter http_requests{0};
  Counter grpc_requests{0};
  Counter probe_requests{0};
  Counter real_requests{0};
  // Requests a knob applied to, by client kind, and faults by kind.
  Counter faulted_probe{0};
  Counter faulted_real{0};
  Counter delayed{0};
  Counter errors{0};
  Counter resets{0};
  Counter hangs{0};
  Counter wrong_bodies{0};
  // HTTP connections (control endpoint excluded).
  Counter connections_accepted{0};
  std::atomic<int64_t> connections_open{0};

  // Zeroes every counter except connections_open (a gauge).
  void Reset();
  // {"requests":{...},"faults":{...},"connections":{...}}
  std::string Json() const;
};

}  // namespace ballast::testbackend

#endif  // BALLAST_TOOLS_TESTBACKEND_STATS_H_
