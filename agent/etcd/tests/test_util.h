// Helpers shared by the etcd tests.
#ifndef BALLAST_AGENT_ETCD_TESTS_TEST_UTIL_H_
#define BALLAST_AGENT_ETCD_TESTS_TEST_UTIL_H_

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/etcd/client.h"

namespace ballast::etcd::testing {

inline absl::Status StatusOf(const absl::Status& s) { return s; }
template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

// REQUIRE that a Status/StatusOr is OK, printing it when not.
#define REQUIRE_OK(expr)                                                   \
  do {                                                                     \
    const absl::Status status_ = ::ballast::etcd::testing::StatusOf(expr); \
    INFO(#expr << " -> " << status_.ToString());                           \
    REQUIRE(status_.ok());                                                 \
  } while (0)

inline std::unique_ptr<Client> MakeClient(std::vector<std::string> endpoints,
                                          ClientOptions base = {}) {
  base.endpoints = std::move(endpoints);
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(base);
  REQUIRE_OK(c);
  return std::move(*c);
}

using SteadyClock = std::chrono::steady_clock;

inline double MsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t).count();
}

// Polls `pred` every 10 ms until it holds or `timeout` passes.
inline bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

// A measured figure, printed so that ctest -V shows it.
inline void Report(const std::string& what, double value, const char* unit) {
  std::printf("measure: %s = %.1f %s\n", what.c_str(), value, unit);
  std::fflush(stdout);
}

}  // namespace ballast::etcd::testing

#endif  // BALLAST_AGENT_ETCD_TESTS_TEST_UTIL_H_
