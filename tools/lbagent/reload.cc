#include "tools/lbagent/reload.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/message_differencer.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/agent_config.h"
#include "agent/core/log.h"

namespace ballast::lbagent {

using core::Log;
using core::LogLevel;
using google::protobuf::util::MessageDifferencer;

ReloadPlan PlanReload(const v1::AgentConfig& last, const v1::AgentConfig& next, bool cluster) {
  ReloadPlan plan;
  const google::protobuf::Descriptor* d = v1::AgentConfig::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->name() == "admin") continue;  // reloaded in place
    const std::vector<const google::protobuf::FieldDescriptor*> only = {f};
    if (MessageDifferencer().CompareWithFields(last, next, only, only)) continue;
    if (f->name() == "initial") {
      (cluster ? plan.initial_ignored : plan.apply_initial) = true;
    } else {
      plan.need_restart.push_back(f->name());
    }
  }
  return plan;
}

absl::StatusOr<std::string> ReloadConfig(const std::string& path, v1::AgentConfig* last,
                                         core::RouterEngine& engine, api::AdminServer& admin,
                                         bool cluster) {
  const auto refuse = [&path](const absl::Status& s) {
    Log(LogLevel::kError, "reload refused: nothing changed",
        {{"config", path}, {"error", std::string(s.message())}});
    return s;
  };
  absl::StatusOr<v1::AgentConfig> loaded = core::LoadAgentConfig(path);
  if (!loaded.ok()) return refuse(loaded.status());
  const v1::AgentConfig next = core::WithDefaults(*loaded);
  const ReloadPlan plan = PlanReload(*last, next, cluster);
  const core::Actor actor{absl::StrCat("operator:reload:", path)};
  // The declarative part first as a dry run: a config the engine refuses
  // leaves the admin section as it was too.
  if (plan.apply_initial) {
    auto dry = engine.ApplyConfig(next.initial(), /*dry_run=*/true, actor);
    if (!dry.ok()) {
      return refuse(
          absl::Status(dry.status().code(), absl::StrCat("initial: ", dry.status().message())));
    }
  }
  if (absl::Status s = admin.Reload(next.admin()); !s.ok()) {
    return refuse(absl::Status(s.code(), absl::StrCat("admin: ", s.message())));
  }
  std::string outcome = "reloaded: admin";
  if (plan.apply_initial) {
    auto applied = engine.ApplyConfig(next.initial(), /*dry_run=*/false, actor);
    if (!applied.ok()) {
      // Validated a moment ago: a map write failed, and the engine restored
      // its previous state. The admin section is already the new one.
      Log(LogLevel::kError, "reload: applying initial failed; the previous state stays",
          {{"config", path}, {"error", std::string(applied.status().message())}});
      return absl::Status(applied.status().code(),
                          absl::StrCat("initial: ", applied.status().message()));
    }
    absl::StrAppend(&outcome, ", initial applied (generation ", engine.Health().generation, ")");
  }
  if (plan.initial_ignored) {
    Log(LogLevel::kWarning,
        "reload: initial changed but is not applied in a cluster (use lbctl config apply)",
        {{"config", path}});
    absl::StrAppend(&outcome, ", initial not applied (cluster)");
  }
  if (!plan.need_restart.empty()) {
    const std::string fields = absl::StrJoin(plan.need_restart, ", ");
    Log(LogLevel::kWarning, "reload: these changes take effect at the next start",
        {{"config", path}, {"fields", fields}});
    absl::StrAppend(&outcome, "; at the next start: ", fields);
  }
  Log(LogLevel::kInfo, "reloaded", {{"config", path}, {"outcome", outcome}});
  *last = next;
  return outcome;
}

}  // namespace ballast::lbagent
