// RouterEngine: the periodic tick (drain deadlines, handshake expiry) and
// health checking's inputs and decisions (engine_health.h).
#include "absl/strings/str_cat.h"
#include "agent/base/json.h"
#include "agent/core/engine_util.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/core/router_engine.h"
#include "agent/core/validate.h"

namespace ballast::core {

using namespace engine_util;  // NOLINT: the engine's own helpers

// ---- tick -------------------------------------------------------------------------------

absl::StatusOr<uint64_t> RouterEngine::ExpireHandshakes() {
  std::lock_guard<std::mutex> lock(mu_);
  if (health_.torn_down) return 0;
  return dp_->ExpireHandshakes();
}

absl::StatusOr<int> RouterEngine::Tick() {
  const auto due = [](const v1::BackendOverride& o, int64_t now) {
    return !o.evicted() && !o.pinned() && o.drain_deadline_unix_ms() != 0 &&
           o.drain_deadline_unix_ms() <= now;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_.torn_down) return 0;
    const int64_t now = clock_->NowUnixMs();
    bool any = false;
    for (const v1::BackendOverride& o : state_->overrides()) any = any || due(o, now);
    if (!any) return 0;
  }
  int evicted = 0;
  Mutation tick;
  tick.automation = true;
  tick.scoped = true;
  tick.ids_changed = false;
  auto r = Commit(
      Actor{"automation"}, std::move(tick),
      [&](v1::State& st, Mutation& mm) -> absl::Status {
        const int64_t now = clock_->NowUnixMs();
        evicted = 0;
        for (v1::BackendOverride& o : *st.mutable_overrides()) {
          if (!due(o, now)) continue;
          const std::string vip = VipKeyText(o.vip());
          mm.audit.push_back({"evict", vip, o.address(),
                              base::JsonObject()
                                  .Int("drain_deadline_unix_ms", o.drain_deadline_unix_ms())
                                  .Int("now_unix_ms", now)
                                  .Build()});
          mm.events.push_back(MakeEvent("backend_evicted", vip, o.address(),
                                        "drain deadline passed: remaining flows are re-steered"));
          o.set_evicted(true);
          ++evicted;
          mm.scope.push_back(CanonicalVipKey(o.vip()));
        }
        mm.changed = evicted > 0;
        return absl::OkStatus();
      },
      false, absl::StatusCode::kInternal);
  if (!r.ok()) return r.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    health_.evictions += static_cast<uint64_t>(evicted);
  }
  return evicted;
}

// ---- health checking ---------------------------------------------------------------------

absl::StatusOr<HealthInputs> RouterEngine::ReadHealthInputs() const {
  std::lock_guard<std::mutex> lock(mu_);
  HealthInputs in;
  const v1::Global& g = state_->config().global();
  in.enabled = g.has_health();
  in.settings = g.health();
  if (health_.torn_down) return in;
  std::map<std::string, const v1::BackendOverride*> overrides;
  for (const v1::BackendOverride& o : state_->overrides()) {
    overrides[BackendIdKey(o.vip(), o.address())] = &o;
  }
  for (const v1::Vip& vip : state_->config().vips()) {
    HealthPool pool;
    auto key = ToDataplaneKey(vip.key());
    if (!key.ok()) continue;  // validated config: cannot happen
    pool.key = vip.key();
    pool.vip = *key;
    pool.key_text = dataplane::VipKeyString(*key);
    if (vip.mode() == v1::GUE) pool.gue_port = GuePortOf(g);
    if (auto r = relearn_requests_.find(*key); r != relearn_requests_.end()) {
      pool.relearn_requests = r->second;
    }
    for (const v1::Backend& b : vip.backends()) {
      HealthBackend hb;
      hb.address = b.address();
      const std::string bkey = BackendIdKey(vip.key(), b.address());
      const auto id_it = state_->ids().find(bkey);
      hb.backend_id = id_it == state_->ids().end() ? 0 : id_it->second;
      const auto o_it = overrides.find(bkey);
      const v1::BackendOverride* o = o_it == overrides.end() ? nullptr : o_it->second;
      const BackendView view = ViewFromOverride(o, b);
      hb.nominal_weight = view.nominal_weight;
      hb.effective_weight = view.effective_weight;
      hb.mode = view.mode;
      if (o != nullptr && o->has_health()) {
        hb.has_mark = true;
        hb.mark = o->health();
      }
      hb.has_probe = b.has_probe();
      hb.probe = b.probe();
      if (hb.backend_id != 0) {
        auto st = dp_->BackendStats(hb.backend_id);
        if (!st.ok()) return st.status();
        hb.counters = *st;
        auto bb = dp_->BackendBounces(hb.backend_id);
        if (!bb.ok()) return bb.status();
        hb.refused_syns = bb->refused;
      }
      pool.backends.push_back(std::move(hb));
    }
    in.pools.push_back(std::move(pool));
  }
  return in;
}

absl::Status RouterEngine::ApplyHealth(const std::vector<HealthDecision>& decisions,
                                       const std::vector<HealthRecord>& records) {
  const auto same_mark = [](const v1::HealthMark& a, const v1::HealthMark& b) {
    // The score alone does not make a mark different: it moves every
    // evaluation, and is kept only to show it after a restart.
    return a.in_service() == b.in_service() && a.ramp_percent() == b.ramp_percent() &&
           a.weight_score() == b.weight_score() && a.state() == b.state();
  };
  // Anything to store? (Checked first so that quiet evaluations do not take
  // the commit path at all.)
  bool any = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_.torn_down) return absl::OkStatus();
    for (const HealthDecision& d : decisions) {
      const v1::BackendOverride* o = FindOverride(*state_, d.vip, d.address);
      if (d.clear) {
        any = any || (o != nullptr && o->has_health());
      } else if (o == nullptr || !o->has_health() || !same_mark(o->health(), d.mark) ||
                 (d.pin && !o->pinned())) {
        any = true;
      }
      if (any) break;
    }
  }
  if (!any && records.empty()) return absl::OkStatus();
  Mutation m;
  m.automation = true;
  m.scoped = true;
  m.ids_changed = false;
  for (const HealthRecord& r : records) {
    m.audit.push_back({r.action, r.vip, r.backend, r.inputs_json});
    m.events.push_back(MakeEvent(r.action, r.vip, r.backend, r.message));
  }
  auto r = Commit(
      Actor{"automation"}, std::move(m),
      [&](v1::State& st, Mutation& mm) -> absl::Status {
        mm.changed = false;
        std::set<std::string> scope;
        for (const HealthDecision& d : decisions) {
          v1::Vip* vip = nullptr;
          v1::Backend* backend = nullptr;
          if (!FindBackend(st, d.vip, d.address, &vip, &backend).ok()) continue;
          v1::BackendOverride* o = FindOverrideMut(st, d.vip, d.address);
          if (d.clear) {
            if (o == nullptr || !o->has_health()) continue;
            o->clear_health();
          } else {
            if (o != nullptr && o->has_health() && same_mark(o->health(), d.mark) &&
                (!d.pin || o->pinned())) {
              continue;
            }
            if (o == nullptr) {
              o = st.add_overrides();
              *o->mutable_vip() = CanonicalVipKey(d.vip);
              o->set_address(CanonicalAddress(d.address));
            }
            *o->mutable_health() = d.mark;
            if (d.pin) o->set_pinned(true);
          }
          mm.changed = true;
          const std::string text = VipKeyText(vip->key());
          if (scope.insert(text).second) mm.scope.push_back(CanonicalVipKey(vip->key()));
        }
        PruneOverrides(st);
        return absl::OkStatus();
      },
      false, absl::StatusCode::kInternal);
  if (r.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const HealthRecord& rec : records) ++health_.health_actions[rec.action];
  }
  return r.status();
}

absl::Status RouterEngine::RelearnHealth(const v1::VipKey& vkey, const Actor& actor) {
  if (auto s = ValidateVipKey(vkey, FieldPath::Named("", "vip")); !s.ok()) return s;
  auto key = ToDataplaneKey(vkey);
  if (!key.ok()) return key.status();
  const std::string text = dataplane::VipKeyString(*key);
  v1::RelearnHealthRequest req;
  *req.mutable_vip() = vkey;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (VipIndex(*state_, *key) < 0) {
      return absl::NotFoundError(absl::StrCat("vip ", text, " does not exist"));
    }
    if (!state_->config().global().has_health()) {
      return absl::FailedPreconditionError(
          "health checking is off (global.health): there are no baselines to learn again");
    }
    ++relearn_requests_[*key];
  }
  Record(actor, "relearn_health", text, "", ToJson(req),
         absl::StrCat("vip ", text,
                      ": health checking learns its baselines again from the next evaluation "
                      "(a pool frozen by a shift that stays then unfreezes)"));
  return absl::OkStatus();
}

void RouterEngine::SetHealthView(HealthView view) {
  std::lock_guard<std::mutex> lock(mu_);
  health_view_ = std::move(view);
}

}  // namespace ballast::core
