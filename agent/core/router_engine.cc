// RouterEngine: construction and start-up, the commit transaction, events
// and teardown (router_engine.h).
#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "agent/core/engine_util.h"
#include "agent/core/file_store.h"
#include "agent/core/ids.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/core/router_engine.h"

#include "agent/core/table_history.h"
#include "agent/core/validate.h"

namespace ballast::core {

using namespace engine_util;  // NOLINT: the engine's own helpers

// ---- construction ----------------------------------------------------------------

RouterEngine::RouterEngine(std::unique_ptr<dataplane::DataplanePort> dp, EngineOptions options,
                           const Clock* clock, std::unique_ptr<AuditLog> audit)
    : dp_(std::move(dp)),
      options_(std::move(options)),
      clock_(clock),
      audit_(std::move(audit)),
      store_(options_.store != nullptr ? options_.store
                                       : std::make_shared<FileStore>(options_.state_file)) {}

RouterEngine::~RouterEngine() = default;

absl::StatusOr<std::unique_ptr<RouterEngine>> RouterEngine::Start(
    std::unique_ptr<dataplane::DataplanePort> dp, const EngineOptions& options, const Clock* clock,
    const v1::Config& initial) {
  if (dp == nullptr) return absl::InvalidArgumentError("no data plane");
  AuditLogOptions ao;
  ao.max_bytes = options.audit_max_bytes;
  ao.sync = options.audit_sync;
  auto audit = AuditLog::Open(options.audit_log, std::move(ao));
  if (!audit.ok()) return audit.status();
  std::unique_ptr<RouterEngine> e(
      new RouterEngine(std::move(dp), options, clock, std::move(*audit)));
  std::unique_lock<std::mutex> lock(e->mu_);
  e->health_.started_unix_ms = clock->NowUnixMs();

  auto loaded = e->store_->Load();
  v1::State state;
  // A first start stores its state only once the data plane runs it
  // (below, or SaveInitialState()): a start that fails leaves nothing that
  // would make the next one ignore `initial`.
  const bool first_start = !loaded.ok() && loaded.status().code() == absl::StatusCode::kNotFound;
  if (first_start) {
    if (auto s = ValidateConfig(initial, FieldPath::Index("initial")); !s.ok()) return s;
    *state.mutable_config() = CanonicalConfig(initial);
    if (auto s = AssignIds(&state); !s.ok()) return s;
    auto seed = e->DrawSeed();
    if (!seed.ok()) return seed.status();
    *state.mutable_flow_hash_seed() = FirstFlowHashSeed(*seed, clock->NowUnixMs());
    if (auto s = UpdateQuicState(&state, nullptr, clock->NowUnixMs(), options.quic_key_source);
        !s.ok()) {
      return s;
    }
    state.set_generation(1);
    Log(LogLevel::kInfo, "first start: the state comes from the config's initial section",
        {{"store", e->store_->Describe()}, {"vips", state.config().vips_size()}});
  } else if (loaded.ok()) {
    state = std::move(loaded->state);
    e->revision_ = loaded->revision;
    if (auto s = ValidateState(state); !s.ok()) {
      return absl::DataLossError(absl::StrCat(
          e->store_->Describe(), " holds an invalid state (", s.message(),
          "); refusing to start. Inspect it with `lbagent --dump-state ", options.state_file, "`"));
    }
    Log(LogLevel::kInfo, "state loaded",
        {{"store", e->store_->Describe()},
         {"source", loaded->source},
         {"revision", loaded->revision},
         {"generation", state.generation()},
         {"vips", state.config().vips_size()},
         {"initial",
          "not used: the stored state is the truth (a reload applies a changed "
          "initial section)"}});
    if (!options.fixed_flow_hash_seed && SeedIsPublic(state.flow_hash_seed())) {
      Log(LogLevel::kWarning,
          "the state has no flow hash seed (made by an earlier build): flows hash with the public "
          "seed, so a stranger can aim crafted tuples at one handshake slot or adopted-flow set; "
          "run `lbctl flow-hash rotate` once every router runs this build (docs/security.md)",
          {});
    }
  } else {
    return loaded.status();
  }

  e->bounce_.inherited = LoadBounceDevices(options.bounce_devices_file);
  if (auto s = e->ReconcileLocked(state, &e->health_.start_reconcile); !s.ok()) {
    return Annotate(s, first_start ? "reconciling the data plane with the config's initial "
                                     "section (nothing was stored: the next start uses it again)"
                                   : "reconciling the data plane with the state");
  }
  e->initial_unsaved_ = first_start;
  e->state_ = std::make_unique<v1::State>(std::move(state));
  e->health_.generation = e->state_->generation();
  e->generation_ = e->health_.generation;
  e->health_.store_revision = e->revision_;
  e->health_.last_map_update_unix_ms = clock->NowUnixMs();
  const ProgramStats& st = e->health_.start_reconcile;
  Log(LogLevel::kInfo, "data plane reconciled with the state",
      {{"adopted_program", e->dp_->adopted()},
       {"settings", st.settings},
       {"backends_set", st.backends_set},
       {"backends_cleared", st.backends_cleared},
       {"vips_upserted", st.vips_upserted},
       {"vips_deleted", st.vips_deleted},
       {"tables_set", st.tables_set},
       {"quic_set", st.quic_set},
       {"attached", st.attached}});
  lock.unlock();
  if (!options.defer_initial_save) {
    if (auto s = e->SaveInitialState(); !s.ok()) return s;
  }
  return e;
}

absl::Status RouterEngine::SaveInitialState() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initial_unsaved_) return absl::OkStatus();
    auto saved = store_->Save(*state_, 0, WriteKind::kOperator);
    if (saved.ok()) {
      initial_unsaved_ = false;
      revision_ = *saved;
      health_.store_revision = revision_;
      Log(LogLevel::kInfo, "first start: state initialised from the config's initial section",
          {{"store", store_->Describe()}, {"vips", state_->config().vips_size()}});
      return absl::OkStatus();
    }
    if (saved.status().code() != absl::StatusCode::kAborted) {
      return Annotate(saved.status(), "saving the initial state (nothing was stored)");
    }
    initial_unsaved_ = false;
  }
  // Another node initialised the shared store first: its state wins.
  Log(LogLevel::kInfo, "first start: another node initialised the shared store first; adopting it",
      {{"store", store_->Describe()}});
  return RefreshFromStore(Actor{"replication"});
}

// ---- commit --------------------------------------------------------------------------

absl::StatusOr<RouterEngine::CommitResult> RouterEngine::CommitLocked(
    Mutation& m, const Change& change, bool dry_run, absl::StatusCode whole_state_code) {
  if (health_.torn_down) {
    return absl::FailedPreconditionError(
        "the data plane was torn down; the agent is stopping and accepts no changes");
  }
  // Phase timings for the debug log (telemetry only, not decisions).
  const auto t0 = std::chrono::steady_clock::now();
  const auto us_since = [](std::chrono::steady_clock::time_point t) {
    return static_cast<int64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t)
            .count());
  };
  // The copy the change is made on. The ids map is most of the state (one
  // long key per backend) and only changes when VIPs or backends come or go:
  // otherwise `next` borrows it (an O(1) swap) and gives it back unless the
  // commit succeeds.
  auto next_owner = std::make_unique<v1::State>();
  v1::State& next = *next_owner;
  next.set_generation(state_->generation());
  *next.mutable_config() = state_->config();
  *next.mutable_overrides() = state_->overrides();
  *next.mutable_table_history() = state_->table_history();
  *next.mutable_flow_hash_seed() = state_->flow_hash_seed();
  *next.mutable_quic() = state_->quic();
  const bool borrow_ids = m.scoped && !m.ids_changed;
  struct IdsLoan {
    v1::State* owner;
    v1::State* borrower;
    bool out = false;
    void Lend() {
      owner->mutable_ids()->swap(*borrower->mutable_ids());
      out = true;
    }
    void GiveBack() {
      if (out) owner->mutable_ids()->swap(*borrower->mutable_ids());
      out = false;
    }
    ~IdsLoan() { GiveBack(); }
  } loan{state_.get(), &next};
  if (borrow_ids) {
    loan.Lend();
  } else {
    *next.mutable_ids() = state_->ids();
  }
  const int64_t copy_us = us_since(t0);
  if (auto s = change(next, m); !s.ok()) return s;
  CommitResult result;
  result.diff = m.diff;
  result.generation = state_->generation();
  if (!m.changed) return result;  // no-op: nothing to persist or program
  PruneOverrides(next);
  std::set<dataplane::VipKey> scope_keys;
  if (m.scoped) {
    for (const v1::VipKey& k : m.scope) {
      // The change validated its key (a key that does not parse names no
      // VIP, and is in no image).
      auto key = ToDataplaneKey(k);
      if (!key.ok()) return absl::Status(whole_state_code, key.status().message());
      scope_keys.insert(*key);
      const int index = VipIndex(next, *key);
      if (auto s = ValidateVipChange(next.config(), index, FieldPath::Named()); !s.ok()) {
        return absl::Status(whole_state_code, s.message());
      }
      if (m.ids_changed) {
        const v1::Vip* vip = index < 0 ? nullptr : &next.config().vips(index);
        if (auto s = UpdateIdsOfVip(&next, k, vip); !s.ok()) return s;
      }
    }
  } else {
    if (auto s = ValidateConfig(next.config(), FieldPath::Named()); !s.ok()) {
      return absl::Status(whole_state_code, s.message());
    }
    if (auto s = AssignIds(&next); !s.ok()) return s;
  }
  // QUIC VIPs' server IDs and configurations follow the config (quic_ids.h).
  if (auto s = UpdateQuicState(&next, m.scoped ? &scope_keys : nullptr, clock_->NowUnixMs(),
                               options_.quic_key_source);
      !s.ok()) {
    return s;
  }
  if (dry_run) return result;
  const int64_t check_us = us_since(t0);

  auto built = Build(next, &image_, m.scoped ? &scope_keys : nullptr);
  if (!built.ok()) return absl::Status(whole_state_code, built.status().message());
  // The tables this change replaces become history (established second
  // chance), in the state every router reads.
  const std::set<dataplane::VipKey> history_changed = RecordTableChanges(
      image_, built->image, m.scoped ? &scope_keys : nullptr, clock_->NowUnixMs(), &next);
  if (!history_changed.empty()) {
    if (auto s = RefreshHistories(next, history_changed, &*built); !s.ok()) {
      return absl::Status(whole_state_code, s.message());
    }
  }
  const int64_t build_us = us_since(t0);
  next.set_generation(state_->generation() + 1);
  const WriteKind kind = m.automation ? WriteKind::kAutomation : WriteKind::kOperator;
  auto saved = store_->Save(next, revision_, kind);
  if (!saved.ok()) {
    const absl::Status& s = saved.status();
    if (s.code() == absl::StatusCode::kAborted || s.code() == absl::StatusCode::kUnavailable ||
        s.code() == absl::StatusCode::kFailedPrecondition) {
      return s;  // the store's own words (another writer won, unreachable, not the leader)
    }
    return Annotate(s, "persisting the new state (nothing was changed)");
  }
  initial_unsaved_ = false;  // stored now, whatever programming does
  const int64_t base_revision = revision_;
  const int64_t save_us = us_since(t0);
  ProgramStats stats;
  absl::Status programmed = Program(image_, *built, m.scoped ? &scope_keys : nullptr, &stats);
  const int64_t program_us = us_since(t0);
  Log(LogLevel::kDebug, "commit phases (cumulative us)",
      {{"copy", copy_us},
       {"check", check_us},
       {"build", build_us},
       {"save", save_us},
       {"program", program_us},
       {"tables_set", stats.tables_set}});
  if (auto s = programmed; !s.ok()) {
    loan.GiveBack();
    ++health_.map_update_errors;
    Log(LogLevel::kError, "programming the data plane failed; restoring the previous state",
        {{"error", std::string(s.message())}});
    auto restored = store_->Save(*state_, *saved, kind);
    absl::Status restore = restored.status();
    revision_ = restored.ok() ? *restored : base_revision;
    ProgramStats ignored;
    if (restore.ok()) restore = ReconcileLocked(*state_, &ignored);
    if (!restore.ok()) {
      Log(LogLevel::kError, "restoring the previous state failed",
          {{"error", std::string(restore.message())}});
      return absl::InternalError(
          absl::StrCat("programming the data plane: ", s.message(),
                       "; restoring the previous state also failed: ", restore.message()));
    }
    return absl::Status(
        // The contract's codes: FAILED_PRECONDITION (e.g. the device is gone)
        // or INTERNAL (everything else the data plane can report).
        s.code() == absl::StatusCode::kFailedPrecondition ? s.code() : absl::StatusCode::kInternal,
        absl::StrCat("programming the data plane: ", s.message(),
                     " (the previous state was restored)"));
  }
  loan.out = false;  // the new state keeps the ids
  state_ = std::move(next_owner);
  revision_ = *saved;
  health_.store_revision = revision_;
  if (m.scoped) {
    ApplyDelta(built->image, scope_keys, &image_);
  } else {
    image_ = std::move(built->image);
  }
  health_.generation = state_->generation();
  generation_ = health_.generation;
  health_.last_map_update_unix_ms = clock_->NowUnixMs();
  result.generation = state_->generation();
  return result;
}

absl::StatusOr<RouterEngine::CommitResult> RouterEngine::Commit(const Actor& actor, Mutation m,
                                                                const Change& change, bool dry_run,
                                                                absl::StatusCode whole_state_code) {
  absl::StatusOr<CommitResult> r;
  // A shared store (cluster) refuses a change built on a state another
  // writer has replaced (ABORTED): re-read it, adopt it, and make the change
  // again on top of it. The operator's request is re-validated each time.
  for (int attempt = 0;; ++attempt) {
    Mutation tried = m;
    {
      std::lock_guard<std::mutex> lock(mu_);
      r = CommitLocked(tried, change, dry_run, whole_state_code);
    }
    if (r.ok() || r.status().code() != absl::StatusCode::kAborted || m.automation || attempt >= 4) {
      m = std::move(tried);
      break;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++health_.commit_conflicts;
    }
    Log(LogLevel::kInfo, "another writer changed the replicated state first; retrying on top of it",
        {{"attempt", attempt + 1}, {"error", std::string(r.status().message())}});
    if (auto s = RefreshFromStore(Actor{"replication"}); !s.ok()) {
      r = s;
      break;
    }
  }
  if (!dry_run) Finish(actor, m, r.status(), r.ok() ? r->generation : generation_.load());
  return r;
}

void RouterEngine::Finish(const Actor& actor, const Mutation& m, const absl::Status& result,
                          uint64_t generation) {
  const int64_t now = clock_->NowUnixMs();
  for (const AuditEntry& a : m.audit) {
    v1::AuditRecord rec;
    rec.set_unix_ms(now);
    rec.set_actor(actor.name.empty() ? "unknown" : actor.name);
    rec.set_action(a.action);
    rec.set_vip(a.vip);
    rec.set_backend(a.backend);
    rec.set_inputs_json(a.inputs_json);
    rec.set_result(result.ok() ? "ok" : std::string(result.ToString()));
    // Queued, never waited for (the log's writer thread writes it): the
    // cluster's owner audits under its renewal lock. A record lost later
    // (write error) is counted and logged by the log.
    if (auto s = audit_->Append(rec); !s.ok()) {
      // Loud: the change stands (it is applied), its record does not.
      Log(LogLevel::kError, "audit record dropped: the change was applied unaudited",
          {{"action", a.action},
           {"actor", rec.actor()},
           {"vip", a.vip},
           {"backend", a.backend},
           {"audit_records_dropped_total", audit_->stats().dropped},
           {"error", std::string(s.message())}});
    }
    if (result.ok()) {
      Log(LogLevel::kInfo, a.action,
          {{"actor", rec.actor()},
           {"vip", a.vip},
           {"backend", a.backend},
           {"generation", generation}});
    } else {
      Log(LogLevel::kWarning, absl::StrCat(a.action, " rejected"),
          {{"actor", rec.actor()},
           {"vip", a.vip},
           {"backend", a.backend},
           {"error", std::string(result.message())}});
    }
  }
  if (!result.ok()) return;
  std::vector<EventSink> sinks;
  {
    std::lock_guard<std::mutex> lock(sinks_mu_);
    for (const auto& [h, s] : sinks_) sinks.push_back(s);
  }
  for (v1::Event e : m.events) {
    e.set_unix_ms(now);
    e.set_generation(generation);
    for (const EventSink& s : sinks) s(e);
  }
}

// ---- audit, events, teardown ------------------------------------------------------------

absl::StatusOr<std::vector<v1::AuditRecord>> RouterEngine::QueryAudit(int64_t since_unix_ms,
                                                                      uint32_t limit) const {
  return audit_->Query(since_unix_ms, limit);
}

void RouterEngine::FlushAudit() { audit_->Flush(); }

absl::StatusOr<size_t> RouterEngine::PruneAudit(uint32_t days) {
  if (days == 0) return 0;
  return audit_->Prune(clock_->NowUnixMs() - static_cast<int64_t>(days) * 86'400'000);
}

uint64_t RouterEngine::Subscribe(EventSink sink) {
  std::lock_guard<std::mutex> lock(sinks_mu_);
  const uint64_t h = next_sink_++;
  sinks_[h] = std::move(sink);
  return h;
}

void RouterEngine::Unsubscribe(uint64_t handle) {
  std::lock_guard<std::mutex> lock(sinks_mu_);
  sinks_.erase(handle);
}

absl::Status RouterEngine::Teardown(const Actor& actor) {
  Mutation m;
  v1::TeardownRequest req;
  req.set_confirm(true);
  m.audit.push_back({"teardown", "", "", ToJson(req)});
  m.events.push_back(MakeEvent("teardown", "", "", "data plane detached and unpinned"));
  absl::Status s;
  uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_.torn_down) {
      s = absl::FailedPreconditionError("the data plane is already torn down");
    } else {
      s = dp_->Teardown();
      health_.torn_down = true;  // even a partial teardown: stop programming
      attached_if_.clear();
      attached_extra_.clear();
      bounce_ = {};  // detached with everything else
      bounce_view_.clear();
      retired_.clear();
      if (auto b = SaveBounceDevices(); !b.ok()) {
        Log(LogLevel::kWarning, "teardown: could not remove the record of bounce devices",
            {{"error", std::string(b.message())}});
      }
      gen = health_.generation;
    }
  }
  shutdown_ = true;
  Finish(actor, m, s, gen);
  return s;
}

bool RouterEngine::ShutdownRequested() const { return shutdown_.load(); }

// ---- accessors -------------------------------------------------------------------------

EngineHealth RouterEngine::Health() const {
  EngineHealth h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    h = health_;
  }
  const AuditLog::Stats audit = audit_->stats();
  h.audit_append_failures = audit.failed;
  h.audit_records_dropped = audit.dropped;
  h.last_audit_error = audit.last_error;
  return h;
}

v1::State RouterEngine::State() const {
  std::lock_guard<std::mutex> lock(mu_);
  return *state_;
}

absl::StatusOr<Image> RouterEngine::ReadDataplane() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ReadImage(*dp_, clock_->NowUnixMs(), clock_->NowMonotonicNs());
}

absl::StatusOr<std::vector<uint32_t>> RouterEngine::ReadTable(const v1::VipKey& vip) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t id = VipIdOf(*state_, vip);
  if (id == 0) return absl::NotFoundError(absl::StrCat("vip ", VipKeyText(vip), " does not exist"));
  return dp_->GetTable(id);
}

}  // namespace ballast::core
