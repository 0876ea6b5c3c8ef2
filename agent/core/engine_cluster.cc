// RouterEngine: cluster mode's hooks (replicated state, coordination and
// announcement views, ownership, drills, config diff).
#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "agent/base/json.h"
#include "agent/core/engine_util.h"
#include "agent/core/ids.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/core/router_engine.h"
#include "agent/core/validate.h"

namespace ballast::core {

using namespace engine_util;  // NOLINT: the engine's own helpers

// ---- cluster mode -------------------------------------------------------------------------

absl::Status RouterEngine::AdoptReplicated(const v1::State& incoming, int64_t revision,
                                           const Actor& actor) {
  uint64_t from_generation = 0;
  ProgramStats stats;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_.torn_down) return absl::OkStatus();
    if (revision <= revision_) return absl::OkStatus();  // already running it (or newer)
    const std::string have = state_->SerializeAsString();
    if (have == incoming.SerializeAsString()) {
      // The same state (e.g. re-read after etcd came back): nothing to write.
      revision_ = revision;
      health_.store_revision = revision_;
      store_->Adopted(*state_, revision_);
      return absl::OkStatus();
    }
    if (auto s = ValidateState(incoming); !s.ok()) {
      ++health_.map_update_errors;
      return absl::InvalidArgumentError(
          absl::StrCat("the replicated state at revision ", revision,
                       " is invalid and was not applied: ", s.message()));
    }
    auto built = Build(incoming, &image_, nullptr);
    if (!built.ok()) return built.status();
    if (auto s = Program(image_, *built, nullptr, &stats); !s.ok()) {
      ++health_.map_update_errors;
      ProgramStats ignored;
      absl::Status restore = ReconcileLocked(*state_, &ignored);
      return absl::InternalError(absl::StrCat(
          "programming the replicated state at revision ", revision, ": ", s.message(),
          restore.ok()
              ? " (the previous state was restored)"
              : absl::StrCat("; restoring the previous state also failed: ", restore.message())));
    }
    from_generation = state_->generation();
    state_ = std::make_unique<v1::State>(incoming);
    image_ = std::move(built->image);
    revision_ = revision;
    health_.store_revision = revision_;
    health_.generation = state_->generation();
    generation_ = health_.generation;
    health_.last_map_update_unix_ms = clock_->NowUnixMs();
    ++health_.adopted;
    health_.adopted_map_writes += static_cast<uint64_t>(stats.map_writes());
    store_->Adopted(*state_, revision_);
  }
  Mutation m;
  m.audit.push_back({"replicated_state", "", "",
                     base::JsonObject()
                         .Int("revision", revision)
                         .Uint("generation_from", from_generation)
                         .Uint("generation", incoming.generation())
                         .Int("map_writes", stats.map_writes())
                         .Build()});
  m.events.push_back(MakeEvent(
      "replicated_state", "", "",
      absl::StrCat("state revision ", revision, " applied (", stats.map_writes(), " map writes)")));
  Finish(actor, m, absl::OkStatus(), incoming.generation());
  return absl::OkStatus();
}

absl::Status RouterEngine::RefreshFromStore(const Actor& actor) {
  absl::StatusOr<StoredState> loaded;
  {
    std::lock_guard<std::mutex> lock(mu_);
    loaded = store_->Load();
  }
  if (!loaded.ok()) return loaded.status();
  return AdoptReplicated(loaded->state, loaded->revision, actor);
}

void RouterEngine::Record(const Actor& actor, const std::string& action, const std::string& vip,
                          const std::string& backend, const std::string& inputs_json,
                          const std::string& message) {
  Mutation m;
  m.audit.push_back({action, vip, backend, inputs_json});
  m.events.push_back(MakeEvent(action, vip, backend, message));
  // No mu_: a commit holds it across its store's write (disk, etcd), and
  // the cluster's owner calls this under its renewal lock.
  Finish(actor, m, absl::OkStatus(), generation_.load());
}

void RouterEngine::SetCoordination(v1::Coordination view) {
  std::lock_guard<std::mutex> lock(mu_);
  coordination_ = std::move(view);
}

void RouterEngine::SetAnnouncement(v1::Announcement view) {
  std::lock_guard<std::mutex> lock(mu_);
  announcement_ = std::move(view);
}

void RouterEngine::SetDiffProvider(DiffProvider provider) {
  std::lock_guard<std::mutex> lock(mu_);
  diff_provider_ = std::move(provider);
}

void RouterEngine::SetYieldProvider(YieldProvider provider) {
  std::lock_guard<std::mutex> lock(mu_);
  yield_provider_ = std::move(provider);
}

absl::StatusOr<v1::YieldVipResponse> RouterEngine::YieldVip(const v1::YieldVipRequest& req,
                                                            const Actor& actor) {
  YieldProvider provider;
  {
    std::lock_guard<std::mutex> lock(mu_);
    provider = yield_provider_;
  }
  if (!provider) {
    return absl::FailedPreconditionError(
        "this node runs standalone: its VIPs have no owner to fail over (yield and `lbctl "
        "drill` need cluster mode)");
  }
  return provider(req, actor);
}

absl::Status RouterEngine::SetVipOwnership(const v1::VipKey& vkey, v1::VipOwnership ownership,
                                           const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::SetVipOwnershipRequest req;
  *req.mutable_vip() = vkey;
  req.set_ownership(ownership);
  Mutation m;
  m.audit.push_back({"set_ownership", key, "", ToJson(req)});
  m.scoped = true;
  m.scope.push_back(CanonicalVipKey(vkey));
  m.ids_changed = false;
  m.events.push_back(
      MakeEvent("vip_ownership", key, "",
                absl::StrCat("vip ", key, ": ownership ", v1::VipOwnership_Name(ownership))));
  auto r = Commit(
      actor, std::move(m),
      [&](v1::State& st, Mutation& mut) -> absl::Status {
        if (auto s = ValidateVipKey(vkey, FieldPath::Named("", "vip")); !s.ok()) return s;
        if (!v1::VipOwnership_IsValid(ownership)) {
          return absl::InvalidArgumentError(
              absl::StrCat("ownership: ", static_cast<int>(ownership),
                           " is not a VipOwnership (OWNERSHIP_NONE or ACTIVE_STANDBY)"));
        }
        if (v1::Vip* v = FindVip(st, vkey); v != nullptr) {
          if (v->ownership() == ownership) {
            mut.changed = false;
          } else {
            v->set_ownership(ownership);
          }
          return absl::OkStatus();
        }
        return absl::NotFoundError(absl::StrCat("vip ", key, " does not exist"));
      },
      false, absl::StatusCode::kFailedPrecondition);
  return r.status();
}

absl::Status RouterEngine::RecordDrill(const v1::DrillResult& result, const Actor& actor) {
  if (auto s = ValidateVipKey(result.vip(), FieldPath::Named("", "result.vip")); !s.ok()) return s;
  auto typed = ToDataplaneKey(result.vip());
  if (!typed.ok()) return typed.status();
  const std::string key = dataplane::VipKeyString(*typed);
  if (result.mode() != "fence" && result.mode() != "stop") {
    return absl::InvalidArgumentError(
        absl::StrCat("result.mode: \"", absl::CEscape(result.mode()), "\" is not fence or stop"));
  }
  const auto node_ok = [](const std::string& n) {
    if (n.size() > 64) return false;
    for (char c : n) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
        return false;
      }
    }
    return true;
  };
  if (result.from_node().empty() || !node_ok(result.from_node())) {
    return absl::InvalidArgumentError(
        "result.from_node: required, at most 64 letters, digits, - _ .");
  }
  if (!node_ok(result.to_node())) {
    return absl::InvalidArgumentError("result.to_node: at most 64 letters, digits, - _ .");
  }
  constexpr int64_t kDay = 86400000;
  if (result.failover_ms() < -1 || result.failover_ms() > kDay || result.stable_ms() < -1 ||
      result.stable_ms() > kDay) {
    return absl::InvalidArgumentError(
        "result.failover_ms and result.stable_ms: -1 (none) or 0..86400000");
  }
  if (result.stable_window_ms() < 0 || result.stable_window_ms() > kDay ||
      result.started_unix_ms() <= 0) {
    return absl::InvalidArgumentError(
        "result.stable_window_ms: 0..86400000; result.started_unix_ms: required");
  }
  if (result.notes_size() > 64) {
    return absl::InvalidArgumentError("result.notes: at most 64 notes");
  }
  for (int i = 0; i < result.notes_size(); ++i) {
    if (result.notes(i).size() > 512) {
      return absl::InvalidArgumentError(
          absl::StrCat("result.notes[", i, "]: at most 512 characters"));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (VipIndex(*state_, *typed) < 0)
      return absl::NotFoundError(absl::StrCat("vip ", key, " does not exist"));
  }
  const bool pass = result.stable_ms() >= 0 && result.stable_ms() <= 5000 &&
                    result.failover_ms() >= 0 && result.flaps() == 0 && result.differences() == 0;
  if (pass != result.pass()) {
    return absl::InvalidArgumentError(
        "result.pass does not follow from the numbers (stable 0..5000 ms, traffic moved, "
        "flaps 0, differences 0)");
  }
  std::string inputs;
  google::protobuf::util::JsonPrintOptions jo;
  jo.always_print_primitive_fields = true;  // the four numbers, zeros included
  jo.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(result, &inputs, jo);
  Record(actor, "drill", key, "", inputs,
         absl::StrCat("drill ", result.mode(), " of vip ", key, " (", result.from_node(), " -> ",
                      result.to_node().empty() ? "nobody" : result.to_node(), "): failover ",
                      result.failover_ms(), " ms, stable ", result.stable_ms(), " ms, flaps ",
                      result.flaps(), ", differences ", result.differences(), ": ",
                      pass ? "PASS" : "FAIL"));
  return absl::OkStatus();
}

absl::StatusOr<v1::ConfigDiffResponse> RouterEngine::ConfigDiff() const {
  DiffProvider provider;
  v1::ConfigDiffResponse out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    provider = diff_provider_;
    if (!provider) {
      out.set_mode("standalone");
      out.set_self("standalone");
      v1::NodeRecord* n = out.add_nodes();
      n->set_node("standalone");
      n->set_unix_ms(clock_->NowUnixMs());
      n->set_leader(true);
      n->set_agent_version(options_.agent_version);
    }
  }
  if (provider) return provider();
  return out;
}

absl::Status RouterEngine::SetVipOwnerDeadline(const v1::VipKey& vip,
                                               std::optional<uint64_t> monotonic_ns) {
  auto key = ToDataplaneKey(vip);
  if (!key.ok()) return key.status();
  return dp_->SetVipOwnerDeadline(*key, monotonic_ns);
}

absl::StatusOr<dataplane::VipOwner> RouterEngine::GetVipOwner(const v1::VipKey& vip) const {
  auto key = ToDataplaneKey(vip);
  if (!key.ok()) return key.status();
  return dp_->GetVipOwner(*key);
}

}  // namespace ballast::core
