// Turning runs into text: the per-run report, sweep tables and CSV, and the
// checks written in scenario files ("expect" and "compare").
//
// Everything here formats with absl::StrFormat from ordered data, so the
// same runs print the same bytes.
//
// Check syntax: "<operand> <op> <operand>", op one of < <= > >= == !=, an
// operand a number or a metric name (sim.h Metrics), or in "compare"
// <variant>.<metric>. E.g. "success_fraction >= 0.999", "flaps == 0",
// "avoid.success_fraction < resteer.success_fraction".
//
// Pure functions; thread-safe.
#ifndef BALLAST_TOOLS_LBSIM_REPORT_H_
#define BALLAST_TOOLS_LBSIM_REPORT_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/lbsim/sim.h"

namespace ballast::lbsim {

using MetricList = std::vector<std::pair<std::string, double>>;

// The human report of one run (several lines, ends with a newline).
std::string FormatReport(const Scenario& sc, const RunResult& r);

// Evaluates one check against named metric sets: `sets` maps a variant name
// ("" for the run itself) to its metrics. Returns whether it holds;
// *detail gets "success_fraction >= 0.999: 0.99991 (ok)" or "... FAILED".
// Errors: a malformed check, an unknown metric or variant.
absl::StatusOr<bool> EvalCheck(const std::string& check,
                               const std::map<std::string, MetricList>& sets, std::string* detail);

// A sweep: one row per value of the swept tunable.
struct SweepRow {
  std::string value;
  MetricList metrics;
};
// The columns a sweep table shows (a readable subset of Metrics()); of a
// router-churn run's metrics, ChurnSweepColumns().
const std::vector<std::string>& SweepColumns();
const std::vector<std::string>& ChurnSweepColumns();
// Router churn: one Markdown row per run (`value` = the run's name, e.g.
// the variant): connections, moved by ECMP, slot changed, reset without and
// with established second chance (count and % of the established), hops
// of the connections it brought back (mean / max).
std::string FormatChurnTable(const std::vector<SweepRow>& rows);
std::string FormatSweepTable(const std::string& tunable, const std::vector<SweepRow>& rows);
// Every metric, one row per value; first column the tunable.
std::string FormatSweepCsv(const std::string& tunable, const std::vector<SweepRow>& rows);

// A metric's value, or nullopt.
std::optional<double> FindMetric(const MetricList& m, const std::string& name);

}  // namespace ballast::lbsim

#endif  // BALLAST_TOOLS_LBSIM_REPORT_H_
