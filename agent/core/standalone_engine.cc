#include "agent/core/standalone_engine.h"

#include <bpf/bpf.h>

#include <chrono>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/diff.h"
#include "agent/core/file_store.h"
#include "agent/core/ids.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/core/validate.h"
#include "agent/dataplane/verdict.h"
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include "absl/strings/string_view.h"

namespace ballast::core {
namespace {

std::string ToJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

bool SettingsEqual(const dataplane::Settings& a, const dataplane::Settings& b) {
  return a.src4 == b.src4 && a.src6 == b.src6 && a.policy == b.policy &&
         a.tcp_idle_ns == b.tcp_idle_ns && a.udp_idle_ns == b.udp_idle_ns &&
         a.linger_ns == b.linger_ns && a.syn_idle_ns == b.syn_idle_ns &&
         a.syn_retry_ns == b.syn_retry_ns && a.syn_reuse_idle_ns == b.syn_reuse_idle_ns &&
         a.fib_ttl_ns == b.fib_ttl_ns && a.icmp_too_big_per_s == b.icmp_too_big_per_s &&
         a.icmp_too_big_burst == b.icmp_too_big_burst;
}

// Map contents read back carry deadlines converted through two clocks, so
// compare them with a tolerance.
bool BackendClose(const BackendImage& a, const BackendImage& b) {
  return a.addr == b.addr && a.state == b.state &&
         std::llabs(a.drain_deadline_unix_ms - b.drain_deadline_unix_ms) <= 1000;
}

ballast_vip_key MarkerKey(const IpAddress& addr) {
  ballast_vip_key k = {};
  std::memcpy(k.addr, addr.bytes().data(), sizeof(k.addr));
  k.port = 0;
  k.proto = BALLAST_VIP_ADDR_MARKER;
  k.family = addr.family();
  return k;
}

absl::Status MapErrno(int err, absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(err)));
}

// Canonical request parts.
std::string Canon(const std::string& address) { return CanonicalAddress(address); }

absl::Status Annotate(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

v1::Event MakeEvent(std::string kind, std::string vip, std::string backend, std::string message) {
  v1::Event e;
  e.set_kind(std::move(kind));
  e.set_vip(std::move(vip));
  e.set_backend(std::move(backend));
  e.set_message(std::move(message));
  return e;
}

v1::BackendOverride* FindOverrideMut(v1::State& state, const v1::VipKey& vip,
                                     const std::string& address) {
  const std::string want = BackendIdKey(vip, address);
  for (v1::BackendOverride& o : *state.mutable_overrides()) {
    if (BackendIdKey(o.vip(), o.address()) == want) return &o;
  }
  return nullptr;
}

void EraseOverride(v1::State& state, const v1::VipKey& vip, const std::string& address) {
  const std::string want = BackendIdKey(vip, address);
  auto* o = state.mutable_overrides();
  for (int i = 0; i < o->size(); ++i) {
    if (BackendIdKey(o->Get(i).vip(), o->Get(i).address()) == want) {
      o->DeleteSubrange(i, 1);
      return;
    }
  }
}

v1::Vip* FindVip(v1::State& state, const v1::VipKey& key);

// Drops overrides of backends the config no longer has, and overrides that
// hold nothing. O(overrides x backends of their VIP).
void PruneOverrides(v1::State& state) {
  auto* o = state.mutable_overrides();
  for (int i = o->size() - 1; i >= 0; --i) {
    const v1::BackendOverride& x = o->Get(i);
    bool keep = x.drain_deadline_unix_ms() != 0 || x.evicted() || x.pinned() || x.has_health();
    if (keep) {
      keep = false;
      if (const v1::Vip* v = FindVip(state, x.vip()); v != nullptr) {
        const std::string want = CanonicalAddress(x.address());
        for (const v1::Backend& b : v->backends()) {
          keep = keep || CanonicalAddress(b.address()) == want;
        }
      }
    }
    if (!keep) o->DeleteSubrange(i, 1);
  }
}

v1::Vip* FindVip(v1::State& state, const v1::VipKey& key) {
  const std::string want = VipKeyText(key);
  for (v1::Vip& v : *state.mutable_config()->mutable_vips()) {
    if (VipKeyText(v.key()) == want) return &v;
  }
  return nullptr;
}

absl::string_view AttachModeText(dataplane::AttachMode m) {
  switch (m) {
    case dataplane::AttachMode::kNative:
      return "native";
    case dataplane::AttachMode::kGeneric:
      return "generic";
    case dataplane::AttachMode::kAuto:
      return "auto";
  }
  return "auto";
}

}  // namespace

// ---- construction ----------------------------------------------------------------

StandaloneEngine::StandaloneEngine(std::unique_ptr<dataplane::Dataplane> dp, EngineOptions options,
                                   const Clock* clock, std::unique_ptr<AuditLog> audit)
    : dp_(std::move(dp)),
      options_(std::move(options)),
      clock_(clock),
      audit_(std::move(audit)),
      store_(options_.store != nullptr ? options_.store
                                       : std::make_shared<FileStore>(options_.state_file)) {}

StandaloneEngine::~StandaloneEngine() = default;

absl::StatusOr<std::unique_ptr<StandaloneEngine>> StandaloneEngine::Start(
    std::unique_ptr<dataplane::Dataplane> dp, const EngineOptions& options, const Clock* clock,
    const v1::Config& initial) {
  if (dp == nullptr) return absl::InvalidArgumentError("no data plane");
  auto audit = AuditLog::Open(options.audit_log, options.audit_max_bytes);
  if (!audit.ok()) return audit.status();
  std::unique_ptr<StandaloneEngine> e(
      new StandaloneEngine(std::move(dp), options, clock, std::move(*audit)));
  std::lock_guard<std::mutex> lock(e->mu_);
  e->health_.started_unix_ms = clock->NowUnixMs();

  auto loaded = e->store_->Load();
  v1::State state;
  if (!loaded.ok() && loaded.status().code() == absl::StatusCode::kNotFound) {
    if (auto s = ValidateConfig(initial, FieldPath::Index("initial")); !s.ok()) return s;
    *state.mutable_config() = CanonicalConfig(initial);
    if (auto s = AssignIds(&state); !s.ok()) return s;
    state.set_generation(1);
    auto saved = e->store_->Save(state, 0, WriteKind::kOperator);
    if (saved.ok()) {
      e->revision_ = *saved;
      Log(LogLevel::kInfo, "first start: state initialised from the config's initial section",
          {{"store", e->store_->Describe()}, {"vips", state.config().vips_size()}});
    } else if (saved.status().code() == absl::StatusCode::kAborted) {
      // Another node initialised the shared store first: its state wins.
      loaded = e->store_->Load();
    } else {
      return Annotate(saved.status(), "saving the initial state");
    }
  }
  if (loaded.ok()) {
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
         {"vips", state.config().vips_size()}});
  } else if (loaded.status().code() != absl::StatusCode::kNotFound) {
    return loaded.status();
  }

  if (auto s = e->ReconcileLocked(state, &e->health_.start_reconcile); !s.ok()) {
    return Annotate(s, "reconciling the data plane with the state");
  }
  e->state_ = std::make_unique<v1::State>(std::move(state));
  e->health_.generation = e->state_->generation();
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
       {"attached", st.attached}});
  return e;
}

// ---- programming -------------------------------------------------------------------

absl::Status StandaloneEngine::Program(const Image& from, const BuiltImage& built,
                                       const std::set<std::string>* scope, ProgramStats* stats) {
  const Image& to = built.image;
  const auto in_scope = [scope](const std::string& text) {
    return scope == nullptr || scope->count(text) != 0;
  };
  dataplane::Dataplane& dp = *dp_;
  const int64_t now_ms = clock_->NowUnixMs();
  const uint64_t now_ns = clock_->NowMonotonicNs();

  if (!SettingsEqual(from.settings, to.settings)) {
    if (auto s = dp.SetSettings(to.settings); !s.ok()) return s;
    ++stats->settings;
  }
  // Backends first, so that a new table never names a backend the map lacks.
  for (const auto& [id, b] : to.backends) {
    auto it = from.backends.find(id);
    if (it != from.backends.end() && BackendClose(it->second, b)) continue;
    const uint64_t deadline_ns = b.state == BALLAST_BACKEND_DRAINING && b.drain_deadline_unix_ms > 0
                                     ? ToMonotonicNs(b.drain_deadline_unix_ms, now_ms, now_ns)
                                     : 0;
    if (auto s = dp.SetBackend(id, b.addr, b.state, deadline_ns); !s.ok()) return s;
    ++stats->backends_set;
  }
  // VIPs that go away (or whose id changes) before tables are written, so a
  // reused vip_id never has its new table deleted.
  for (const auto& [k, v] : from.vips) {
    if (!in_scope(k)) continue;
    auto it = to.vips.find(k);
    if (it != to.vips.end() && it->second.vip_id == v.vip_id) continue;
    if (auto s = dp.DeleteVip(v.key); !s.ok() && s.code() != absl::StatusCode::kNotFound) return s;
    ++stats->vips_deleted;
  }
  for (const auto& [k, v] : to.vips) {
    auto it = from.vips.find(k);
    const bool same = it != from.vips.end() && it->second.vip_id == v.vip_id &&
                      it->second.table_size == v.table_size &&
                      it->second.table_hash == v.table_hash;
    if (same) continue;
    auto t = built.tables.find(v.vip_id);
    if (t != built.tables.end()) {
      if (auto s = dp.SetTable(v.vip_id, t->second); !s.ok()) return s;
    } else {
      auto table = BuildTableOf(v);  // one table at a time (start-up)
      if (!table.ok()) return table.status();
      if (TableHash(*table) != v.table_hash) {
        return absl::InternalError(absl::StrCat("the table of vip ", k, " is not deterministic"));
      }
      if (auto s = dp.SetTable(v.vip_id, *table); !s.ok()) return s;
    }
    ++stats->tables_set;
  }
  for (const auto& [k, v] : to.vips) {
    auto it = from.vips.find(k);
    if (it != from.vips.end() && it->second.vip_id == v.vip_id) {
      // An existing VIP that is (now) ACTIVE_STANDBY but forwarded without
      // a fence (switched at runtime): stopped here, in the same pass as the
      // state change; the owner loop starts it once it holds the lease. One
      // already in owned mode is the owner loop's (a deadline, maybe live).
      if (!options_.vip_ownership || !v.active_standby) continue;
      auto owner = dp.GetVipOwner(v.key);
      if (!owner.ok()) return owner.status();
      if (owner->deadline_ns.has_value()) continue;
      if (auto s = dp.SetVipOwnerDeadline(v.key, 0); !s.ok()) return s;
      ++stats->owners_stopped;
      continue;
    }
    dataplane::VipOptions vo;
    if (options_.vip_ownership && v.active_standby) vo.owner_deadline_if_new = 0;  // stopped
    if (auto s = dp.UpsertVip(v.key, v.vip_id, vo); !s.ok()) return s;
    ++stats->vips_upserted;
  }
  // Backends that go away last: no table names them any more. (A backend
  // id belongs to one VIP, so in a scoped pass the candidates are the ids
  // the scoped VIPs had.)
  std::vector<uint32_t> candidates;
  if (scope == nullptr) {
    for (const auto& [id, b] : from.backends) candidates.push_back(id);
  } else {
    for (const std::string& text : *scope) {
      auto it = from.vips.find(text);
      if (it == from.vips.end()) continue;
      for (const maglev::Backend& b : it->second.inputs) candidates.push_back(b.id);
    }
  }
  for (uint32_t id : candidates) {
    if (to.backends.count(id) != 0 || from.backends.count(id) == 0) continue;
    if (auto s = dp.ClearBackend(id); !s.ok()) return s;
    ++stats->backends_cleared;
  }
  // Attachment: attach where the config says (a no-op when our program
  // already runs there); detach only from a device the config moved away from.
  if (!to.interface.empty() && to.interface != attached_if_) {
    if (auto s = dp.Attach(to.interface, options_.attach_mode); !s.ok()) {
      return Annotate(s, absl::StrCat("attaching to ", to.interface));
    }
    ++stats->attached;
    if (!attached_if_.empty()) {
      if (auto s = dp.Detach(attached_if_); !s.ok() && s.code() != absl::StatusCode::kNotFound) {
        Log(LogLevel::kWarning, "could not detach from the previous interface",
            {{"interface", attached_if_}, {"error", std::string(s.message())}});
      }
      ++stats->detached;
    }
    attached_if_ = to.interface;
  } else if (to.interface.empty() && !attached_if_.empty()) {
    if (auto s = dp.Detach(attached_if_); !s.ok() && s.code() != absl::StatusCode::kNotFound) {
      return Annotate(s, absl::StrCat("detaching from ", attached_if_));
    }
    ++stats->detached;
    attached_if_.clear();
  }
  return ProgramExtraInterfaces(
      dp, to.interface.empty() ? std::set<std::string>{} : to.extra_interfaces, stats);
}

absl::Status StandaloneEngine::ProgramExtraInterfaces(dataplane::Dataplane& dp,
                                                      const std::set<std::string>& want,
                                                      ProgramStats* stats) {
  for (const std::string& dev : want) {
    if (attached_extra_.count(dev) != 0) continue;
    if (auto s = dp.Attach(dev, options_.attach_mode); !s.ok()) {
      return Annotate(s, absl::StrCat("attaching to ", dev, " (extra_interfaces)"));
    }
    ++stats->attached;
    attached_extra_.insert(dev);
  }
  for (auto it = attached_extra_.begin(); it != attached_extra_.end();) {
    if (want.count(*it) != 0) {
      ++it;
      continue;
    }
    if (auto s = dp.Detach(*it); !s.ok() && s.code() != absl::StatusCode::kNotFound) {
      return Annotate(s, absl::StrCat("detaching from ", *it, " (extra_interfaces)"));
    }
    ++stats->detached;
    it = attached_extra_.erase(it);
  }
  return absl::OkStatus();
}

absl::Status StandaloneEngine::ReconcileLocked(const v1::State& state, ProgramStats* stats) {
  auto actual = ReadImage(*dp_, clock_->NowUnixMs(), clock_->NowMonotonicNs());
  if (!actual.ok()) return Annotate(actual.status(), "reading the data plane's maps");
  auto built = BuildImage(state, nullptr, nullptr, /*keep_tables=*/false);
  if (!built.ok()) return built.status();
  // The attachment is not part of what the maps say; on start-up the
  // engine has attached nothing yet, and Attach() is a no-op where our
  // program already runs.
  actual->interface = attached_if_;
  actual->extra_interfaces = attached_extra_;
  if (auto s = Program(*actual, *built, nullptr, stats); !s.ok()) return s;
  // UpsertVip/DeleteVip keep one address marker per VIP address; a marker
  // left behind by something else (no VIP uses its address) is removed here.
  const int vips_fd = dp_->map_fd("vips");
  for (const IpAddress& a : actual->vip_addresses) {
    if (built->image.vip_addresses.count(a) != 0) continue;
    const ballast_vip_key k = MarkerKey(a);
    if (bpf_map_delete_elem(vips_fd, &k) != 0 && errno != ENOENT) {
      return MapErrno(errno,
                      absl::StrCat("deleting the stray VIP address marker of ", a.ToString()));
    }
    ++stats->markers_deleted;
  }
  image_ = std::move(built->image);
  return absl::OkStatus();
}

// ---- commit --------------------------------------------------------------------------

absl::StatusOr<StandaloneEngine::CommitResult> StandaloneEngine::CommitLocked(
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
  std::set<std::string> scope_texts;
  if (m.scoped) {
    for (const v1::VipKey& k : m.scope) {
      scope_texts.insert(VipKeyText(k));
      int index = -1;
      for (int i = 0; i < next.config().vips_size(); ++i) {
        if (VipKeyText(next.config().vips(i).key()) == VipKeyText(k)) index = i;
      }
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
  if (dry_run) return result;
  const int64_t check_us = us_since(t0);

  auto built = BuildImage(next, &image_, m.scoped ? &scope_texts : nullptr);
  if (!built.ok()) return absl::Status(whole_state_code, built.status().message());
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
  const int64_t base_revision = revision_;
  const int64_t save_us = us_since(t0);
  ProgramStats stats;
  absl::Status programmed = Program(image_, *built, m.scoped ? &scope_texts : nullptr, &stats);
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
    ApplyDelta(built->image, scope_texts, &image_);
  } else {
    image_ = std::move(built->image);
  }
  health_.generation = state_->generation();
  health_.last_map_update_unix_ms = clock_->NowUnixMs();
  result.generation = state_->generation();
  return result;
}

absl::StatusOr<StandaloneEngine::CommitResult> StandaloneEngine::Commit(
    const Actor& actor, Mutation m, const Change& change, bool dry_run,
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
  if (!dry_run) Finish(actor, m, r.status(), r.ok() ? r->generation : health_.generation);
  return r;
}

void StandaloneEngine::Finish(const Actor& actor, const Mutation& m, const absl::Status& result,
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
    if (auto s = audit_->Append(rec); !s.ok()) {
      // Loud: the change stands (it is applied), its record does not.
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++health_.audit_append_failures;
        health_.last_audit_error = std::string(s.message());
      }
      Log(LogLevel::kError, "audit record lost: the change was applied unaudited",
          {{"action", a.action},
           {"actor", rec.actor()},
           {"vip", a.vip},
           {"backend", a.backend},
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

absl::Status StandaloneEngine::FindBackend(v1::State& state, const v1::VipKey& vip,
                                           const std::string& address, v1::Vip** vip_out,
                                           v1::Backend** backend_out) {
  v1::Vip* v = FindVip(state, vip);
  if (v == nullptr)
    return absl::NotFoundError(absl::StrCat("vip ", VipKeyText(vip), " does not exist"));
  const std::string want = Canon(address);
  for (v1::Backend& b : *v->mutable_backends()) {
    if (Canon(b.address()) == want) {
      if (vip_out != nullptr) *vip_out = v;
      if (backend_out != nullptr) *backend_out = &b;
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(absl::StrCat("vip ", VipKeyText(vip), " has no backend ", address));
}

// ---- VIPs ----------------------------------------------------------------------------

absl::Status StandaloneEngine::AddVip(const v1::Vip& vip, const Actor& actor) {
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

absl::Status StandaloneEngine::DeleteVip(const v1::VipKey& vkey, const Actor& actor) {
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
        auto* vips = st.mutable_config()->mutable_vips();
        for (int i = 0; i < vips->size(); ++i) {
          if (VipKeyText(vips->Get(i).key()) == key) {
            vips->DeleteSubrange(i, 1);
            return absl::OkStatus();
          }
        }
        return absl::NotFoundError(absl::StrCat("vip ", key, " does not exist"));
      },
      false, absl::StatusCode::kFailedPrecondition);
  return r.status();
}

std::vector<v1::Vip> StandaloneEngine::ListVips() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {state_->config().vips().begin(), state_->config().vips().end()};
}

// ---- backends ------------------------------------------------------------------------

absl::Status StandaloneEngine::AddBackend(const v1::VipKey& vkey, const v1::Backend& backend,
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
  m.events.push_back(MakeEvent("backend_added", key, Canon(backend.address()),
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
        const std::string addr = Canon(backend.address());
        for (const v1::Backend& b : v->backends()) {
          if (Canon(b.address()) == addr) {
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

StandaloneEngine::Mutation StandaloneEngine::BackendMutation(
    const v1::VipKey& vkey, const std::string& address, std::string_view action,
    const google::protobuf::Message& request, bool ids_changed) {
  Mutation m;
  m.audit.push_back({std::string(action), VipKeyText(vkey), address, ToJson(request)});
  m.scoped = true;
  m.scope.push_back(CanonicalVipKey(vkey));
  m.ids_changed = ids_changed;
  return m;
}

absl::Status StandaloneEngine::ChangeBackend(const Actor& actor, Mutation m, const v1::VipKey& vkey,
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

absl::Status StandaloneEngine::DeleteBackend(const v1::VipKey& vkey, const std::string& address,
                                             const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::DeleteBackendRequest req;
  *req.mutable_vip() = vkey;
  req.set_address(address);
  Mutation m = BackendMutation(vkey, address, "delete_backend", req, /*ids_changed=*/true);
  m.events.push_back(MakeEvent("backend_deleted", key, Canon(address),
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

absl::Status StandaloneEngine::SetWeight(const v1::VipKey& vkey, const std::string& address,
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
        mm.events.push_back(MakeEvent("weight_changed", key, Canon(address),
                                      absl::StrCat("weight ", old_weight, " -> ", weight)));
        return absl::OkStatus();
      });
}

absl::Status StandaloneEngine::Drain(const v1::VipKey& vkey, const std::string& address,
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
          o->set_address(Canon(address));
        }
        o->set_drain_deadline_unix_ms(deadline);
        o->set_evicted(false);
        mm.events.push_back(MakeEvent(
            "backend_drained", key, Canon(address),
            absl::StrCat("draining: no new flows; existing flows may stay ", secs, " s")));
        return absl::OkStatus();
      });
}

absl::Status StandaloneEngine::Undrain(const v1::VipKey& vkey, const std::string& address,
                                       const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::UndrainRequest req;
  *req.mutable_vip() = vkey;
  req.set_address(address);
  Mutation m = BackendMutation(vkey, address, "undrain", req, /*ids_changed=*/false);
  m.events.push_back(MakeEvent("backend_undrained", key, Canon(address),
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

absl::Status StandaloneEngine::Release(const v1::VipKey& vkey, const std::string& address,
                                       const Actor& actor) {
  const std::string key = VipKeyText(vkey);
  v1::ReleaseRequest req;
  *req.mutable_vip() = vkey;
  req.set_address(address);
  Mutation m = BackendMutation(vkey, address, "release", req, /*ids_changed=*/false);
  m.events.push_back(
      MakeEvent("backend_released", key, Canon(address), "released from flap damping"));
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

v1::Config StandaloneEngine::GetConfig() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_->config();
}

absl::StatusOr<v1::ApplyConfigResponse> StandaloneEngine::ApplyConfig(const v1::Config& config,
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

// ---- status ---------------------------------------------------------------------------

absl::StatusOr<v1::StatusResponse> StandaloneEngine::GetStatus() const {
  v1::StatusResponse out;
  dataplane::Settings timeouts;
  std::string attached_if;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = StatusLocked(&out); !s.ok()) return s;
    out.set_audit_append_failures(health_.audit_append_failures);
    out.set_last_audit_error(health_.last_audit_error);
    if (health_.torn_down) return out;
    timeouts = image_.settings;
    attached_if = attached_if_;
  }
  // The data plane's counters are read outside mu_ too (a few hundred map
  // reads for a few hundred backends): ids are those of the moment above.
  if (absl::Status s = ReadCounters(attached_if, &out); !s.ok()) return s;
  // The connection table is read outside mu_ (a million entries take about
  // half a second), so writers and other readers of the engine do not wait
  // for it; scans take turns among themselves. Backends whose id changed
  // meanwhile show the new id's count: status is a view of a moment.
  std::lock_guard<std::mutex> scan(flow_scan_mu_);
  std::vector<uint64_t> flows(BALLAST_MAX_BACKENDS, 0);  // by backend id
  auto seen = CountLiveFlows(timeouts, &flows, &out);
  if (!seen.ok()) return seen.status();
  const size_t scan_limit =
      options_.flow_scan_limit != 0 ? options_.flow_scan_limit : std::numeric_limits<size_t>::max();
  out.set_flows_read(*seen);
  out.set_flows_partial(*seen >= scan_limit);
  for (v1::VipStatus& vs : *out.mutable_vips()) {
    for (v1::BackendStatus& bs : *vs.mutable_backends()) {
      if (bs.backend_id() < flows.size()) bs.set_flows(flows[bs.backend_id()]);
    }
  }
  return out;
}

absl::StatusOr<size_t> StandaloneEngine::CountLiveFlows(const dataplane::Settings& set,
                                                        std::vector<uint64_t>* flows,
                                                        v1::StatusResponse* out) const {
  // Live flows per backend id: entries not yet expired by their state's
  // timeout.
  const uint64_t now_ns = clock_->NowMonotonicNs();
  auto count_flow = [&](const ballast_flow_key&, const ballast_flow& f) {
    uint64_t ttl = set.tcp_idle_ns;
    switch (f.state) {
      case BALLAST_FLOW_SYN_SENT:
        ttl = set.syn_idle_ns;
        break;
      case BALLAST_FLOW_CLOSING:
        ttl = set.linger_ns;
        break;
      case BALLAST_FLOW_UDP:
        ttl = set.udp_idle_ns;
        break;
      default:
        break;
    }
    if (f.last_seen_ns + ttl + BALLAST_TOUCH_NS < now_ns || f.backend_id >= flows->size()) return;
    ++(*flows)[f.backend_id];
  };
  const size_t scan_limit =
      options_.flow_scan_limit != 0 ? options_.flow_scan_limit : std::numeric_limits<size_t>::max();
  size_t seen = 0;
  for (const char* map : dataplane::Dataplane::kFlowMaps) {
    auto n = dp_->ForEachFlowIn(map, scan_limit - seen, count_flow);
    if (!n.ok()) return n.status();
    seen += *n;
    v1::FlowTable& t = *out->add_flow_tables();
    t.set_map(map);
    t.set_entries(*n);
    if (auto cap = dp_->MapCapacity(map); cap.ok()) t.set_capacity(*cap);
    if (seen >= scan_limit) break;
  }
  return seen;
}

absl::Status StandaloneEngine::StatusLocked(v1::StatusResponse* status) const {
  v1::StatusResponse& out = *status;
  out.set_config_generation(state_->generation());
  out.set_last_map_update_unix_ms(health_.last_map_update_unix_ms);
  out.set_interface(state_->config().global().interface());
  out.set_agent_version(options_.agent_version);
  *out.mutable_coordination() = coordination_;
  if (out.coordination().mode().empty()) out.mutable_coordination()->set_mode("standalone");
  if (announcement_.enabled()) *out.mutable_announcement() = announcement_;
  if (health_.torn_down) return absl::OkStatus();

  std::map<std::string, const v1::BackendOverride*> overrides;
  for (const v1::BackendOverride& o : state_->overrides()) {
    overrides[BackendIdKey(o.vip(), o.address())] = &o;
  }
  for (const v1::Vip& vip : state_->config().vips()) {
    v1::VipStatus* vs = out.add_vips();
    *vs->mutable_key() = vip.key();
    vs->set_name(vip.name());
    const uint32_t vip_id = VipIdOf(*state_, vip.key());
    vs->set_vip_id(vip_id);
    vs->set_table_size(EffectiveTableSize(vip));
    if (auto h = health_view_.vips.find(VipKeyText(vip.key())); h != health_view_.vips.end()) {
      vs->set_frozen(h->second.frozen);
      vs->set_frozen_since_unix_ms(h->second.frozen_since_unix_ms);
    }
    const VipImage* vi = nullptr;
    if (auto it = image_.vips.find(VipKeyText(vip.key())); it != image_.vips.end()) {
      vi = &it->second;
    }
    for (const v1::Backend& b : vip.backends()) {
      v1::BackendStatus* bs = vs->add_backends();
      const std::string bkey = BackendIdKey(vip.key(), b.address());
      const auto id_it = state_->ids().find(bkey);
      const uint32_t id = id_it == state_->ids().end() ? 0 : id_it->second;
      const auto o_it = overrides.find(bkey);
      const BackendView view =
          ViewFromOverride(o_it == overrides.end() ? nullptr : o_it->second, b);
      bs->set_address(b.address());
      bs->set_backend_id(id);
      bs->set_nominal_weight(view.nominal_weight);
      bs->set_effective_weight(view.effective_weight);
      bs->set_state(std::string(BackendModeName(view.mode)));
      bs->set_drain_deadline_unix_ms(view.drain_deadline_unix_ms);
      bs->set_score(100);
      if (state_->config().global().has_health()) {
        if (auto h = health_view_.backends.find(bkey); h != health_view_.backends.end()) {
          bs->set_score(h->second.score);
          bs->set_health(h->second.state);
          bs->set_ramp_percent(h->second.ramp_percent);
          for (const std::string& c : h->second.conditions) bs->add_conditions(c);
          bs->set_last_probe(h->second.last_probe);
        } else if (o_it != overrides.end() && o_it->second->has_health()) {
          // Not evaluated since this agent started: what was last decided.
          const v1::HealthMark& mark = o_it->second->health();
          bs->set_score(mark.score());
          bs->set_health(mark.state());
          bs->set_ramp_percent(mark.ramp_percent());
        }
      }
      if (vi != nullptr) {
        if (auto it = vi->slots.find(id); it != vi->slots.end()) bs->set_table_slots(it->second);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status StandaloneEngine::ReadCounters(const std::string& attached_if,
                                            v1::StatusResponse* status) const {
  v1::StatusResponse& out = *status;
  if (!attached_if.empty()) {
    if (auto mode = dp_->AttachedMode(attached_if); mode.ok()) {
      out.set_attach_mode(std::string(AttachModeText(*mode)));
    }
  }
  auto verdicts = dp_->Verdicts();
  if (!verdicts.ok()) return verdicts.status();
  for (int v = 0; v < BALLAST_V_MAX; ++v) {
    (*out.mutable_verdicts())[std::string(
        dataplane::VerdictName(static_cast<ballast_verdict>(v)))] = (*verdicts)[v];
  }
  auto limited = dp_->IcmpTooBigLimited();
  if (!limited.ok()) return limited.status();
  out.set_icmp_too_big_limited(*limited);
  for (v1::VipStatus& vs : *out.mutable_vips()) {
    auto vst = dp_->VipStats(vs.vip_id());
    if (!vst.ok()) return vst.status();
    vs.set_packets(vst->packets);
    vs.set_bytes(vst->bytes);
    vs.set_dropped(vst->dropped);
    for (v1::BackendStatus& b : *vs.mutable_backends()) {
      const uint32_t id = b.backend_id();
      v1::BackendStatus* bs = &b;
      auto st = dp_->BackendStats(id);
      if (!st.ok()) return st.status();
      v1::BackendCounters* c = bs->mutable_counters();
      c->set_new_flows(st->new_flows);
      c->set_packets(st->packets);
      c->set_bytes(st->bytes);
      c->set_syn_retransmits(st->syn_retransmits);
      c->set_client_rsts(st->client_rsts);
      c->set_handshake_ns_sum(st->handshake_ns_sum);
      c->set_handshake_count(st->handshake_count);
      c->set_first_response_ns_sum(st->first_response_ns_sum);
      c->set_first_response_count(st->first_response_count);
      c->set_resteered_away(st->resteered_away);
      auto bb = dp_->BackendBounces(id);
      if (!bb.ok()) return bb.status();
      c->set_refused_syns(bb->refused);
      c->set_second_chance_syns(bb->received);
    }
  }
  return absl::OkStatus();
}

// ---- audit, events, teardown ------------------------------------------------------------

absl::StatusOr<std::vector<v1::AuditRecord>> StandaloneEngine::QueryAudit(int64_t since_unix_ms,
                                                                          uint32_t limit) const {
  return audit_->Query(since_unix_ms, limit);
}

absl::StatusOr<size_t> StandaloneEngine::PruneAudit(uint32_t days) {
  if (days == 0) return 0;
  return audit_->Prune(clock_->NowUnixMs() - static_cast<int64_t>(days) * 86'400'000);
}

uint64_t StandaloneEngine::Subscribe(EventSink sink) {
  std::lock_guard<std::mutex> lock(sinks_mu_);
  const uint64_t h = next_sink_++;
  sinks_[h] = std::move(sink);
  return h;
}

void StandaloneEngine::Unsubscribe(uint64_t handle) {
  std::lock_guard<std::mutex> lock(sinks_mu_);
  sinks_.erase(handle);
}

absl::Status StandaloneEngine::Teardown(const Actor& actor) {
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
      gen = health_.generation;
    }
  }
  shutdown_ = true;
  Finish(actor, m, s, gen);
  return s;
}

bool StandaloneEngine::ShutdownRequested() const { return shutdown_.load(); }

// ---- tick -------------------------------------------------------------------------------

absl::StatusOr<uint64_t> StandaloneEngine::ExpireHandshakes() {
  std::lock_guard<std::mutex> lock(mu_);
  if (health_.torn_down) return 0;
  return dp_->ExpireHandshakes();
}

absl::StatusOr<int> StandaloneEngine::Tick() {
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
          mm.audit.push_back(
              {"evict", vip, o.address(),
               absl::StrCat("{\"drain_deadline_unix_ms\":", o.drain_deadline_unix_ms(),
                            ",\"now_unix_ms\":", now, "}")});
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

absl::StatusOr<StandaloneEngine::HealthInputs> StandaloneEngine::ReadHealthInputs() const {
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
    pool.key = vip.key();
    pool.key_text = VipKeyText(vip.key());
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

absl::Status StandaloneEngine::ApplyHealth(const std::vector<HealthDecision>& decisions,
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
              o->set_address(Canon(d.address));
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

void StandaloneEngine::SetHealthView(HealthView view) {
  std::lock_guard<std::mutex> lock(mu_);
  health_view_ = std::move(view);
}

// ---- accessors -------------------------------------------------------------------------

// ---- cluster mode -------------------------------------------------------------------------

absl::Status StandaloneEngine::AdoptReplicated(const v1::State& incoming, int64_t revision,
                                               const Actor& actor) {
  std::string from_generation;
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
    auto built = BuildImage(incoming, &image_, nullptr);
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
    from_generation = absl::StrCat(state_->generation());
    state_ = std::make_unique<v1::State>(incoming);
    image_ = std::move(built->image);
    revision_ = revision;
    health_.store_revision = revision_;
    health_.generation = state_->generation();
    health_.last_map_update_unix_ms = clock_->NowUnixMs();
    ++health_.adopted;
    health_.adopted_map_writes += static_cast<uint64_t>(stats.map_writes());
    store_->Adopted(*state_, revision_);
  }
  Mutation m;
  m.audit.push_back({"replicated_state", "", "",
                     absl::StrCat("{\"revision\":", revision, ",\"generation_from\":",
                                  from_generation, ",\"generation\":", incoming.generation(),
                                  ",\"map_writes\":", stats.map_writes(), "}")});
  m.events.push_back(MakeEvent(
      "replicated_state", "", "",
      absl::StrCat("state revision ", revision, " applied (", stats.map_writes(), " map writes)")));
  Finish(actor, m, absl::OkStatus(), incoming.generation());
  return absl::OkStatus();
}

absl::Status StandaloneEngine::RefreshFromStore(const Actor& actor) {
  absl::StatusOr<StoredState> loaded;
  {
    std::lock_guard<std::mutex> lock(mu_);
    loaded = store_->Load();
  }
  if (!loaded.ok()) return loaded.status();
  return AdoptReplicated(loaded->state, loaded->revision, actor);
}

void StandaloneEngine::Record(const Actor& actor, const std::string& action, const std::string& vip,
                              const std::string& backend, const std::string& inputs_json,
                              const std::string& message) {
  Mutation m;
  m.audit.push_back({action, vip, backend, inputs_json});
  m.events.push_back(MakeEvent(action, vip, backend, message));
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation = health_.generation;
  }
  Finish(actor, m, absl::OkStatus(), generation);
}

void StandaloneEngine::SetCoordination(v1::Coordination view) {
  std::lock_guard<std::mutex> lock(mu_);
  coordination_ = std::move(view);
}

void StandaloneEngine::SetAnnouncement(v1::Announcement view) {
  std::lock_guard<std::mutex> lock(mu_);
  announcement_ = std::move(view);
}

void StandaloneEngine::SetDiffProvider(DiffProvider provider) {
  std::lock_guard<std::mutex> lock(mu_);
  diff_provider_ = std::move(provider);
}

void StandaloneEngine::SetYieldProvider(YieldProvider provider) {
  std::lock_guard<std::mutex> lock(mu_);
  yield_provider_ = std::move(provider);
}

absl::StatusOr<v1::YieldVipResponse> StandaloneEngine::YieldVip(const v1::YieldVipRequest& req,
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

absl::Status StandaloneEngine::SetVipOwnership(const v1::VipKey& vkey, v1::VipOwnership ownership,
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
        for (v1::Vip& v : *st.mutable_config()->mutable_vips()) {
          if (VipKeyText(v.key()) != key) continue;
          if (v.ownership() == ownership) {
            mut.changed = false;
          } else {
            v.set_ownership(ownership);
          }
          return absl::OkStatus();
        }
        return absl::NotFoundError(absl::StrCat("vip ", key, " does not exist"));
      },
      false, absl::StatusCode::kFailedPrecondition);
  return r.status();
}

absl::Status StandaloneEngine::RecordDrill(const v1::DrillResult& result, const Actor& actor) {
  if (auto s = ValidateVipKey(result.vip(), FieldPath::Named("", "result.vip")); !s.ok()) return s;
  const std::string key = VipKeyText(result.vip());
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
    bool found = false;
    for (const v1::Vip& v : state_->config().vips()) found = found || VipKeyText(v.key()) == key;
    if (!found) return absl::NotFoundError(absl::StrCat("vip ", key, " does not exist"));
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

absl::StatusOr<v1::ConfigDiffResponse> StandaloneEngine::ConfigDiff() const {
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

EngineHealth StandaloneEngine::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return health_;
}

v1::State StandaloneEngine::State() const {
  std::lock_guard<std::mutex> lock(mu_);
  return *state_;
}

absl::StatusOr<Image> StandaloneEngine::ReadDataplane() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ReadImage(*dp_, clock_->NowUnixMs(), clock_->NowMonotonicNs());
}

absl::StatusOr<std::vector<uint32_t>> StandaloneEngine::ReadTable(const v1::VipKey& vip) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t id = VipIdOf(*state_, vip);
  if (id == 0) return absl::NotFoundError(absl::StrCat("vip ", VipKeyText(vip), " does not exist"));
  return dp_->GetTable(id);
}

absl::Status StandaloneEngine::SetVipOwnerDeadline(const v1::VipKey& vip,
                                                   std::optional<uint64_t> monotonic_ns) {
  auto key = ToDataplaneKey(vip);
  if (!key.ok()) return key.status();
  return dp_->SetVipOwnerDeadline(*key, monotonic_ns);
}

absl::StatusOr<dataplane::VipOwner> StandaloneEngine::GetVipOwner(const v1::VipKey& vip) const {
  auto key = ToDataplaneKey(vip);
  if (!key.ok()) return key.status();
  return dp_->GetVipOwner(*key);
}

}  // namespace ballast::core
