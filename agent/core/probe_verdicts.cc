#include "agent/core/probe_verdicts.h"

namespace ballast::core {

void ProbeVerdicts::Add(const std::string& id, bool ok, absl::Duration latency, absl::Time now) {
  Target& t = targets_[id];
  t.has_pending = true;
  if (ok) {
    ++t.pending.successes;
    t.pending.success_latency_sum += latency;
  } else {
    ++t.pending.failures;
  }
  t.last_at = now;
}

std::optional<health::ProbeSummary> ProbeVerdicts::Take(const std::string& id, absl::Time now,
                                                        absl::Duration stands_for) {
  auto it = targets_.find(id);
  if (it == targets_.end()) return std::nullopt;
  Target& t = it->second;
  if (t.has_pending) {
    t.last = t.pending;
    t.pending = {};
    t.has_pending = false;
    return t.last;
  }
  if (now - t.last_at > stands_for) return std::nullopt;
  health::ProbeSummary carried = t.last;
  carried.carried = true;
  return carried;
}

void ProbeVerdicts::Forget(const std::string& id) { targets_.erase(id); }

}  // namespace ballast::core
