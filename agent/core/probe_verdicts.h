// ProbeVerdicts: the probe results of each target between two evaluations,
// and the verdict an evaluation sees.
//
// An evaluation sees the results that arrived since the previous one. When
// none did, the previous verdict still stands until the next probe is due
// (its `stands_for`: the probe's interval + jitter + timeout after the last
// result arrived), and the evaluation sees it again, marked `carried`. So
// with evaluations more frequent than probes, a failing probe is not
// forgotten at every other evaluation, where the passive signals alone
// would judge (a dead backend whose traffic looks only mildly wrong then
// scored bad, neutral, bad, ... and was never demoted). Past `stands_for`
// the target has no probe opinion.
//
// Pure: time is passed in (the agent's monotonic clock). Not thread-safe.
#ifndef BALLAST_AGENT_CORE_PROBE_VERDICTS_H_
#define BALLAST_AGENT_CORE_PROBE_VERDICTS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "agent/health/score.h"

namespace ballast::core {

class ProbeVerdicts {
 public:
  // One counted result of target `id` at `now`.
  void Add(const std::string& id, bool ok, absl::Duration latency, absl::Time now);

  // The verdict of `id` at an evaluation at `now`, or nullopt (no opinion),
  // given how long its verdict stands. Starts the next interval.
  std::optional<health::ProbeSummary> Take(const std::string& id, absl::Time now,
                                           absl::Duration stands_for);

  void Forget(const std::string& id);
  void Clear() { targets_.clear(); }

 private:
  struct Target {
    health::ProbeSummary pending;  // since the last Take
    bool has_pending = false;
    health::ProbeSummary last;  // the last verdict with results
    absl::Time last_at = absl::InfinitePast();
  };
  std::map<std::string, Target> targets_;
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_PROBE_VERDICTS_H_
