// Running scenario files: the variants, overrides, checks and sweeps that
// the lbsim command line (main.cc) and the tests share.
//
// Overrides apply in this order: the file, then the variant's `set`, then
// the caller's sets (--set), then the swept value.
//
// Functions run simulations (CPU only, no I/O) and are thread-compatible.
#ifndef BALLAST_TOOLS_LBSIM_RUNNER_H_
#define BALLAST_TOOLS_LBSIM_RUNNER_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/lbsim/report.h"
#include "tools/lbsim/scenario.h"
#include "tools/lbsim/sim.h"

namespace ballast::lbsim {

using Sets = std::vector<std::pair<std::string, std::string>>;  // tunable or path -> value

// The scenario of `variant` ("" = the base; an error names the file's
// variants when it has one of that name not) with `sets` applied.
absl::StatusOr<Scenario> BuildScenario(const ScenarioFile& f, const std::string& variant,
                                       const Sets& sets);

// The names of the runs a file stands for: its variants in file order, or
// {""} when it has none.
std::vector<std::string> RunNames(const ScenarioFile& f);

// Runs every variant (or the base), evaluates each run's expect and the
// file's compare checks. `text` gets the reports and one line per check.
struct CheckOutcome {
  bool passed = true;
  int checks = 0;
  std::string text;
};
absl::StatusOr<CheckOutcome> CheckFile(const ScenarioFile& f, const Sets& sets);

// "a,b,[c,d]" -> {"a", "b", "[c,d]"}: commas inside brackets stay.
std::vector<std::string> SplitSweepValues(std::string_view list);

// After each run of a sweep: how many are done of how many, the value run.
using SweepProgress = std::function<void(size_t done, size_t total, const std::string& value)>;

// One run per value of `tunable` (a short name or a path); `progress`, if
// set, is called after each.
absl::StatusOr<std::vector<SweepRow>> Sweep(const ScenarioFile& f, const std::string& variant,
                                            const Sets& sets, const std::string& tunable,
                                            const std::vector<std::string>& values,
                                            const SweepProgress& progress = nullptr);

}  // namespace ballast::lbsim

#endif  // BALLAST_TOOLS_LBSIM_RUNNER_H_
