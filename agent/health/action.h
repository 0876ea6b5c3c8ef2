// Actions: what the health logic decided, for the audit log, the event stream
// and alerts.
//
// Every automated decision of Next() and Release() (machine.h) is returned as
// an Action. The agent appends each one to the audit log as it is; nothing in
// this library writes anywhere. `inputs_json` is a JSON object holding the
// observations that caused the action (score, probe results, passive signal
// values with their baselines and peer medians, streaks, ramp step, ...), so
// an auditor can see why without any other record.
//
// Plain value type; thread-compatible.
#ifndef BALLAST_AGENT_HEALTH_ACTION_H_
#define BALLAST_AGENT_HEALTH_ACTION_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/time/time.h"

namespace ballast::health {

// Names are stable (audit log, metrics labels, lbctl): never renumber/rename.
enum class ActionKind : uint8_t {
  kScoreBand = 0,        // the score moved to another band (backend)
  kDemote,               // taken out of service after demote_after bad evaluations
  kPromote,              // back in service after promote_after good ones (starts the ramp)
  kRampStep,             // one ramp step up
  kRampBack,             // one ramp step down after a sag
  kPin,                  // pinned out after pin_flaps flaps in pin_window: ALERT
  kRelease,              // an operator released a pinned backend
  kFreeze,               // fleet guard: pool frozen (fleet-wide degradation): ALERT
  kUnfreeze,             // fleet guard cleared
  kDisagreement,         // probe and traffic disagree for disagreement_alert_after: ALERT
  kDisagreementCleared,  // that disagreement ended
};
// "score_band", "demote", "promote", "ramp_step", "ramp_back", "pin", "release",
// "freeze", "unfreeze", "disagreement", "disagreement_cleared".
std::string_view ActionKindName(ActionKind k);
// True for pin, freeze and disagreement: the kinds that should page a human.
bool IsAlert(ActionKind k);

struct Action {
  ActionKind kind = ActionKind::kScoreBand;
  absl::Time at;            // the `now` of the evaluation (or release)
  std::string pool;         // PoolInput::pool
  std::string backend;      // BackendInput::key; empty for pool actions (freeze, unfreeze)
  std::string message;      // one human sentence, e.g. "demoted after 3 bad evaluations ..."
  std::string inputs_json;  // JSON object, see the file comment

  // One JSON-lines record: {"at_unix_ms":..,"kind":..,"pool":..,"backend":..,
  // "message":..,"inputs":{...}} (no trailing newline).
  std::string ToJson() const;
};

}  // namespace ballast::health

#endif  // BALLAST_AGENT_HEALTH_ACTION_H_
