// Reading a scenario's router-churn sections (ChurnSpec: routers,
// long_lived, table_changes, router_events). Internal to tools/lbsim;
// ReadScenario (scenario.cc) calls it once the rest of the root map is read.
#ifndef BALLAST_TOOLS_LBSIM_SCENARIO_CHURN_H_
#define BALLAST_TOOLS_LBSIM_SCENARIO_CHURN_H_

#include "absl/status/status.h"
#include "tools/lbsim/scenario.h"
#include "tools/lbsim/scenario_reader.h"

namespace ballast::lbsim::internal {

// The router-churn sections of the root map `m` into sc->churn. Without a
// routers section the model is off, and its other sections are an error;
// with one, faults are. Needs sc's backends, weight and faults read.
absl::Status ReadChurn(MapReader& m, Scenario* sc);

}  // namespace ballast::lbsim::internal

#endif  // BALLAST_TOOLS_LBSIM_SCENARIO_CHURN_H_
