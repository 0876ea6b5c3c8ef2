// RouterEngine: the operator's requests (VIPs, backends, drain, declarative
// config), each a Mutation committed through Commit().
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/diff.h"
#include "agent/core/engine_util.h"
#include "agent/core/ids.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/core/flow_hash_seed.h"
#include "agent/core/router_engine.h"
#include "agent/core/validate.h"

namespace ballast::core {

using namespace engine_util;  // NOLINT: the engine's own helpers

absl::Status RouterEngine::FindBackend(v1::State& state, const v1::VipKey& vip,
                                       const std::string& address, v1::Vip** vip_out,
                                       v1::Backend** backend_out) {
  v1::Vip* v = FindVip(state, vip);
  if (v == nullptr)
    return absl::NotFoundError(absl::StrCat("vip ", VipKeyText(vip), " does not exist"));
  const std::string want = CanonicalAddress(address);
  for (v1::Backend& b : *v->mutable_backends()) {
    if (CanonicalAddress(b.address()) == want) {
      if (vip_out != nullptr) *vip_out = v;
      if (backend_out != nullptr) *backend_out = &b;
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(absl::StrCat("vip ", VipKeyText(vip), " has no backend ", address));
}

// ---- VIPs ----------------------------------------------------------------------------

absl::Status RouterEngine::AddVip(const v1::Vip& vip, const Actor& actor) {
  const std::string key = VipKeyText(vip.key());
  v1::AddVipRequest req;
  *req.mutable_vip() = vip;
  Mutation m;
  m.audit.push_back({"add_vip", key, "", ToJson(req)});
  m.scoped = true;
  m.scope.push_back(CanonicalVipKey(vip.key()));
  m.ids_changed = true;
  m.events.push_back(
      MakeEvent("vip_added", key, "",
                absl::StrCat("vip ", key, " added with ", vip.backends_size(), " backends")));
  auto r = Commit(
      actor, std::move(m),
      [&](v1::State& st, Mutation&) -> absl::Status {
        if (auto s = ValidateVip(vip, FieldPath::Named(absl::StrCat("vip ", key))); !s.ok()) {
          return s;
        }
        if (FindVip(st, vip.key()) != nullptr) {
          return absl::AlreadyExistsError(absl::StrCat("vip ", key, " already exists"));
        }
        v1::Config one;
        *one.add_vips() = vip;
        *st.mutable_config()->add_vips() = CanonicalConfig(one).vips(0);
        return absl::OkStatus();
      },
      false, absl::StatusCode::kFailedPrecondition);
  return r.status();
}

absl::Status RouterEngine::DeleteVip(const v1::VipKey& vkey, const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::DeleteVipRequest req;
  *req.mutable_key() = vkey;
  Mutation m;
  m.audit.push_back({"delete_vip", key, "", ToJson(req)});
  m.scoped = true;
  m.scope.push_back(CanonicalVipKey(vkey));
  m.ids_changed = true;
  m.events.push_back(MakeEvent("vip_deleted", key, "", absl::StrCat("vip ", key, " deleted")));
  auto r = Commit(
      actor, std::move(m),
      [&](v1::State& st, Mutation&) -> absl::Status {
        if (auto s = ValidateVipKey(vkey, FieldPath::Named("", "key")); !s.ok()) return s;
        auto typed = ToDataplaneKey(vkey);
        if (!typed.ok()) return typed.status();
        if (const int i = VipIndex(st, *typed); i >= 0) {
          st.mutable_config()->mutable_vips()->DeleteSubrange(i, 1);
          return absl::OkStatus();
        }
        return absl::NotFoundError(absl::StrCat("vip ", key, " does not exist"));
      },
      false, absl::StatusCode::kFailedPrecondition);
  return r.status();
}

std::vector<v1::Vip> RouterEngine::ListVips() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {state_->config().vips().begin(), state_->config().vips().end()};
}

// ---- backends ------------------------------------------------------------------------

absl::Status RouterEngine::AddBackend(const v1::VipKey& vkey, const v1::Backend& backend,
                                      const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::AddBackendRequest req;
  *req.mutable_vip() = vkey;
  *req.mutable_backend() = backend;
  Mutation m;
  m.audit.push_back({"add_backend", key, backend.address(), ToJson(req)});
  m.scoped = true;
  m.scope.push_back(CanonicalVipKey(vkey));
  m.ids_changed = true;
  m.events.push_back(MakeEvent("backend_added", key, CanonicalAddress(backend.address()),
                               absl::StrCat("backend ", backend.address(), " added to ", key,
                                            " with weight ", backend.weight())));
  auto r = Commit(
      actor, std::move(m),
      [&](v1::State& st, Mutation&) -> absl::Status {
        if (auto s = ValidateVipKey(vkey, FieldPath::Named("", "vip")); !s.ok()) return s;
        const FieldPath at =
            FieldPath::Named(absl::StrCat("vip ", key, " backend ", backend.address()));
        if (auto s = ValidateBackend(backend, vkey, at); !s.ok()) return s;
        v1::Vip* v = FindVip(st, vkey);
        if (v == nullptr) return absl::NotFoundError(absl::StrCat("vip ", key, " does not exist"));
        const std::string addr = CanonicalAddress(backend.address());
        for (const v1::Backend& b : v->backends()) {
          if (CanonicalAddress(b.address()) == addr) {
            return absl::AlreadyExistsError(
                absl::StrCat("vip ", key, " already has backend ", addr));
          }
        }
        v1::Backend* nb = v->add_backends();
        *nb = backend;
        nb->set_address(addr);
        return absl::OkStatus();
      },
      false, absl::StatusCode::kFailedPrecondition);
  return r.status();
}

RouterEngine::Mutation RouterEngine::BackendMutation(const v1::VipKey& vkey,
                                                     const std::string& address,
                                                     std::string_view action,
                                                     const google::protobuf::Message& request,
                                                     bool ids_changed) {
  Mutation m;
  m.audit.push_back({std::string(action), VipKeyText(vkey), address, ToJson(request)});
  m.scoped = true;
  m.scope.push_back(CanonicalVipKey(vkey));
  m.ids_changed = ids_changed;
  return m;
}

absl::Status RouterEngine::ChangeBackend(const Actor& actor, Mutation m, const v1::VipKey& vkey,
                                         const std::string& address,
                                         const std::function<absl::Status()>& check_request,
                                         const BackendChange& change) {
  auto r = Commit(
      actor, std::move(m),
      [&](v1::State& st, Mutation& mm) -> absl::Status {
        if (auto s = ValidateVipKey(vkey, FieldPath::Named("", "vip")); !s.ok()) return s;
        if (auto s = ValidateAddress(address, FieldPath::Named("", "address")); !s.ok()) return s;
        if (check_request) {
          if (auto s = check_request(); !s.ok()) return s;
        }
        v1::Vip* v = nullptr;
        v1::Backend* b = nullptr;
        if (auto s = FindBackend(st, vkey, address, &v, &b); !s.ok()) return s;
        return change(st, *v, *b, mm);
      },
      false, absl::StatusCode::kFailedPrecondition);
  return r.status();
}

absl::Status RouterEngine::DeleteBackend(const v1::VipKey& vkey, const std::string& address,
                                         const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::DeleteBackendRequest req;
  *req.mutable_vip() = vkey;
  req.set_address(address);
  Mutation m = BackendMutation(vkey, address, "delete_backend", req, /*ids_changed=*/true);
  m.events.push_back(MakeEvent("backend_deleted", key, CanonicalAddress(address),
                               absl::StrCat("backend ", address, " deleted from ", key)));
  return ChangeBackend(actor, std::move(m), vkey, address, nullptr,
                       [&](v1::State&, v1::Vip& v, v1::Backend& b, Mutation&) -> absl::Status {
                         auto* bs = v.mutable_backends();
                         for (int i = 0; i < bs->size(); ++i) {
                           if (&bs->at(i) == &b) {
                             bs->DeleteSubrange(i, 1);
                             break;
                           }
                         }
                         return absl::OkStatus();
                       });
}

absl::Status RouterEngine::SetWeight(const v1::VipKey& vkey, const std::string& address,
                                     uint32_t weight, const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::SetWeightRequest req;
  *req.mutable_vip() = vkey;
  req.set_address(address);
  req.set_weight(weight);
  return ChangeBackend(
      actor, BackendMutation(vkey, address, "set_weight", req, /*ids_changed=*/false), vkey,
      address,
      [&] {
        return ValidateWeight(
            weight, FieldPath::Named(absl::StrCat("vip ", key, " backend ", address), "weight"));
      },
      [&](v1::State&, v1::Vip&, v1::Backend& b, Mutation& mm) -> absl::Status {
        const uint32_t old_weight = b.weight();
        b.set_weight(weight);
        mm.changed = old_weight != weight;
        mm.events.push_back(MakeEvent("weight_changed", key, CanonicalAddress(address),
                                      absl::StrCat("weight ", old_weight, " -> ", weight)));
        return absl::OkStatus();
      });
}

absl::Status RouterEngine::Drain(const v1::VipKey& vkey, const std::string& address,
                                 uint32_t deadline_s, const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::DrainRequest req;
  *req.mutable_vip() = vkey;
  req.set_address(address);
  req.set_deadline_s(deadline_s);
  return ChangeBackend(
      actor, BackendMutation(vkey, address, "drain", req, /*ids_changed=*/false), vkey, address,
      [&] { return ValidateDrainDeadline(deadline_s, FieldPath::Named("", "deadline_s")); },
      [&](v1::State& st, v1::Vip&, v1::Backend& b, Mutation& mm) -> absl::Status {
        const BackendView view = ViewOf(st, vkey, b);
        if (view.mode == BackendMode::kPinned) {
          return absl::FailedPreconditionError(
              absl::StrCat("vip ", key, " backend ", address,
                           " is pinned out by flap damping; release it first"));
        }
        if (view.mode == BackendMode::kEvicted) {
          return absl::FailedPreconditionError(
              absl::StrCat("vip ", key, " backend ", address,
                           " is already evicted (its drain deadline passed); undrain it first"));
        }
        const uint32_t secs = deadline_s != 0 ? deadline_s : DrainTimeoutOf(st.config().global());
        const int64_t deadline = clock_->NowUnixMs() + static_cast<int64_t>(secs) * 1000;
        v1::BackendOverride* o = FindOverrideMut(st, vkey, address);
        if (o == nullptr) {
          o = st.add_overrides();
          *o->mutable_vip() = CanonicalVipKey(vkey);
          o->set_address(CanonicalAddress(address));
        }
        o->set_drain_deadline_unix_ms(deadline);
        o->set_evicted(false);
        mm.events.push_back(MakeEvent(
            "backend_drained", key, CanonicalAddress(address),
            absl::StrCat("draining: no new flows; existing flows may stay ", secs, " s")));
        return absl::OkStatus();
      });
}

absl::Status RouterEngine::Undrain(const v1::VipKey& vkey, const std::string& address,
                                   const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::UndrainRequest req;
  *req.mutable_vip() = vkey;
  req.set_address(address);
  Mutation m = BackendMutation(vkey, address, "undrain", req, /*ids_changed=*/false);
  m.events.push_back(MakeEvent("backend_undrained", key, CanonicalAddress(address),
                               "back in service with its nominal weight"));
  return ChangeBackend(
      actor, std::move(m), vkey, address, nullptr,
      [&](v1::State& st, v1::Vip&, v1::Backend& b, Mutation&) -> absl::Status {
        const BackendView view = ViewOf(st, vkey, b);
        if (view.mode == BackendMode::kPinned) {
          return absl::FailedPreconditionError(absl::StrCat(
              "vip ", key, " backend ", address, " is pinned out by flap damping; use release"));
        }
        if (view.mode == BackendMode::kActive) {
          return absl::FailedPreconditionError(
              absl::StrCat("vip ", key, " backend ", address, " is not draining or evicted"));
        }
        EraseOverride(st, vkey, address);
        return absl::OkStatus();
      });
}

absl::Status RouterEngine::Release(const v1::VipKey& vkey, const std::string& address,
                                   const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::ReleaseRequest req;
  *req.mutable_vip() = vkey;
  req.set_address(address);
  Mutation m = BackendMutation(vkey, address, "release", req, /*ids_changed=*/false);
  m.events.push_back(
      MakeEvent("backend_released", key, CanonicalAddress(address), "released from flap damping"));
  return ChangeBackend(actor, std::move(m), vkey, address, nullptr,
                       [&](v1::State& st, v1::Vip&, v1::Backend&, Mutation&) -> absl::Status {
                         v1::BackendOverride* o = FindOverrideMut(st, vkey, address);
                         if (o == nullptr || !o->pinned()) {
                           return absl::FailedPreconditionError(
                               absl::StrCat("vip ", key, " backend ", address, " is not pinned"));
                         }
                         o->set_pinned(false);
                         // Out of service until health checking promotes it
                         // again (promote_after good evaluations, then the ramp).
                         v1::HealthMark* h = o->mutable_health();
                         h->set_in_service(false);
                         h->set_state("down");
                         return absl::OkStatus();
                       });
}

// ---- declarative config ----------------------------------------------------------------

v1::Config RouterEngine::GetConfig() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_->config();
}

absl::StatusOr<v1::ApplyConfigResponse> RouterEngine::ApplyConfig(const v1::Config& config,
                                                                  bool dry_run,
                                                                  const Actor& actor) {
  v1::ApplyConfigRequest req;
  *req.mutable_config() = config;
  req.set_dry_run(dry_run);
  Mutation m;
  m.audit.push_back({"apply_config", "", "", ToJson(req)});
  auto r = Commit(
      actor, std::move(m),
      [&](v1::State& st, Mutation& mm) -> absl::Status {
        if (auto s = ValidateConfig(config, FieldPath::Index()); !s.ok()) return s;
        const v1::Config canonical = CanonicalConfig(config);
        std::vector<std::string> diff = DiffConfig(st.config(), canonical);
        *st.mutable_config() = canonical;
        mm.changed = !diff.empty();
        mm.diff = diff;
        mm.events.push_back(
            MakeEvent("config_applied", "", "",
                      absl::StrCat(diff.size(), " changes: ", absl::StrJoin(diff, "; "))));
        return absl::OkStatus();
      },
      dry_run, absl::StatusCode::kInvalidArgument);
  if (!r.ok()) return r.status();
  v1::ApplyConfigResponse resp;
  for (std::string& line : r->diff) resp.add_diff(std::move(line));
  resp.set_generation(r->generation);
  return resp;
}

// ---- flow hash seed ----------------------------------------------------------------

absl::StatusOr<dataplane::HashSeed> RouterEngine::DrawSeed() const {
  return options_.seed_source ? options_.seed_source() : RandomSeed();
}

absl::StatusOr<BuiltImage> RouterEngine::Build(const v1::State& state, const Image* previous,
                                               const std::set<dataplane::VipKey>* only_vips,
                                               bool keep_tables) const {
  auto built = BuildImage(state, previous, only_vips, keep_tables);
  if (built.ok() && options_.fixed_flow_hash_seed) {
    built->image.settings.flow_hash_seed = *options_.fixed_flow_hash_seed;
  }
  return built;
}

absl::StatusOr<v1::RotateFlowHashSeedResponse> RouterEngine::RotateFlowHashSeed(
    const std::string& reason, const Actor& actor) {
  if (reason.size() > 200) {
    return absl::InvalidArgumentError(
        absl::StrCat("reason: ", reason.size(), " characters; at most 200"));
  }
  if (options_.fixed_flow_hash_seed) {
    return absl::FailedPreconditionError(
        "this router's flow hash seed comes from its agent config (flow_hash_seed_file, or the "
        "public seed of a standalone router announcing over BGP): rotate it by changing that "
        "file on every router of the group (docs/dataplane.md)");
  }
  auto fresh = DrawSeed();
  if (!fresh.ok()) return fresh.status();
  v1::RotateFlowHashSeedRequest req;
  req.set_reason(reason);
  Mutation m;
  m.audit.push_back({"rotate_flow_hash_seed", "", "", ToJson(req)});
  m.ids_changed = false;
  v1::RotateFlowHashSeedResponse resp;
  auto r = Commit(
      actor, std::move(m),
      [&](v1::State& st, Mutation& mm) -> absl::Status {
        const int64_t now_ms = clock_->NowUnixMs();
        resp.set_previous_was_public(SeedIsPublic(st.flow_hash_seed()));
        *st.mutable_flow_hash_seed() = RotatedFlowHashSeed(st.flow_hash_seed(), *fresh, now_ms);
        resp.set_rotated_unix_ms(now_ms);
        mm.events.push_back(MakeEvent(
            "flow_hash_seed_rotated", "", "",
            resp.previous_was_public()
                ? "a secret flow hash seed replaces the public one of earlier builds"
                : "a new flow hash seed; the one it replaces stays as the previous seed"));
        return absl::OkStatus();
      },
      false, absl::StatusCode::kFailedPrecondition);
  if (!r.ok()) return r.status();
  resp.set_generation(r->generation);
  return resp;
}

}  // namespace ballast::core
