// Shared helpers of lbsim's tests: a scenario from a test's own YAML text,
// a run that must succeed, and a metric of it.
#ifndef BALLAST_TOOLS_LBSIM_TESTS_TEST_UTIL_H_
#define BALLAST_TOOLS_LBSIM_TESTS_TEST_UTIL_H_

#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include "tools/lbsim/report.h"
#include "tools/lbsim/runner.h"
#include "tools/lbsim/scenario.h"
#include "tools/lbsim/sim.h"

namespace ballast::lbsim::testing {

// The scenario of `yaml` (named `file` in errors) with `sets` applied.
inline Scenario MakeScenario(const char* yaml, const std::string& file, const Sets& sets = {}) {
  auto f = ParseScenarioText(yaml, file);
  REQUIRE(f.ok());
  auto sc = BuildScenario(*f, "", sets);
  INFO(sc.status().message());
  REQUIRE(sc.ok());
  return *sc;
}

inline RunResult RunOk(const Scenario& sc) {
  auto r = Run(sc);
  INFO(r.status().message());
  REQUIRE(r.ok());
  return *std::move(r);
}

// The metric `name` of a run.
inline double M(const RunResult& r, const std::string& name) {
  auto v = FindMetric(Metrics(r), name);
  REQUIRE(v.has_value());
  return *v;
}

}  // namespace ballast::lbsim::testing

#endif  // BALLAST_TOOLS_LBSIM_TESTS_TEST_UTIL_H_
