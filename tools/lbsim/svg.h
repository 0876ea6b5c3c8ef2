// SVG charts drawn by lbsim itself (no plotting dependency): a run's score
// and weight timeline per backend, and a sweep's curves.
//
// Output is plain SVG 1.1 text, deterministic (fixed number formatting), and
// readable in any browser or embedded in Markdown.
//
// Pure functions; thread-safe.
#ifndef BALLAST_TOOLS_LBSIM_SVG_H_
#define BALLAST_TOOLS_LBSIM_SVG_H_

#include <string>
#include <vector>

#include "tools/lbsim/report.h"
#include "tools/lbsim/sim.h"

namespace ballast::lbsim {

// One panel per plotted backend: the leader's score and the applied weight
// (as % of nominal) over time, with the backend's faults shaded.
std::string TimelineSvg(const Scenario& sc, const RunResult& r);

// One panel per metric (y) against the swept values (x: numeric when every
// value is a number, else evenly spaced labels).
std::string SweepSvg(const std::string& title, const std::string& tunable,
                     const std::vector<SweepRow>& rows, const std::vector<std::string>& metrics);

}  // namespace ballast::lbsim

#endif  // BALLAST_TOOLS_LBSIM_SVG_H_
