#include "agent/health/action.h"

#include "agent/base/json.h"

namespace ballast::health {

std::string_view ActionKindName(ActionKind k) {
  switch (k) {
    case ActionKind::kScoreBand:
      return "score_band";
    case ActionKind::kDemote:
      return "demote";
    case ActionKind::kPromote:
      return "promote";
    case ActionKind::kRampStep:
      return "ramp_step";
    case ActionKind::kRampBack:
      return "ramp_back";
    case ActionKind::kPin:
      return "pin";
    case ActionKind::kRelease:
      return "release";
    case ActionKind::kFreeze:
      return "freeze";
    case ActionKind::kUnfreeze:
      return "unfreeze";
    case ActionKind::kDisagreement:
      return "disagreement";
    case ActionKind::kDisagreementCleared:
      return "disagreement_cleared";
  }
  return "unknown";
}

bool IsAlert(ActionKind k) {
  return k == ActionKind::kPin || k == ActionKind::kFreeze || k == ActionKind::kDisagreement;
}

std::string Action::ToJson() const {
  base::JsonObject o;
  o.Int("at_unix_ms", absl::ToUnixMillis(at))
      .String("kind", ActionKindName(kind))
      .String("pool", pool)
      .String("backend", backend)
      .String("message", message)
      .Raw("inputs", inputs_json.empty() ? "{}" : inputs_json);
  return o.Build();
}

}  // namespace ballast::health
