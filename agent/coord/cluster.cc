#include "agent/coord/cluster.h"

#include <algorithm>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/coord/hash.h"
#include "agent/base/json.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/health/quorum.h"

namespace ballast::coord {

using core::Log;
using core::LogLevel;

namespace {

constexpr char kActor[] = "coordination";
// How long etcd reads must fail before the node freezes (ClusterNode::Tick).
constexpr int64_t kFreezeAfterMs = 2000;

// This host's boot id ("" if unreadable): tells lbctl whether it runs on
// the same host as this agent.
std::string BootId() {
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string s;
    std::getline(in, s);
    return s;
  }();
  return id;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Create(ClusterOptions options) {
  std::unique_ptr<ClusterNode> n(new ClusterNode(std::move(options)));
  etcd::ClientOptions co;
  const v1::Cluster& cfg = n->options_.config;
  co.endpoints.assign(cfg.endpoints().begin(), cfg.endpoints().end());
  co.tls.ca_file = cfg.etcd_ca_file();
  co.tls.cert_file = cfg.etcd_cert_file();
  co.tls.key_file = cfg.etcd_key_file();
  co.tls.server_name = cfg.etcd_server_name();
  co.tls.allow_plaintext_remote = cfg.etcd_allow_plaintext_remote();
  co.username = cfg.etcd_username();
  if (!cfg.etcd_password_file().empty()) {
    std::ifstream in(cfg.etcd_password_file());
    if (!in || !std::getline(in, co.password) || co.password.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.etcd_password_file \"", cfg.etcd_password_file(),
                       "\": cannot be read, or its first line is empty"));
    }
  }
  // Short deadlines: a call that cannot finish within a tick or two means
  // "unreachable", and the node freezes rather than waits.
  co.call_timeout = absl::Seconds(2);
  co.attempt_timeout = absl::Milliseconds(800);
  co.connect_timeout = absl::Milliseconds(300);
  auto client = etcd::Client::Create(co);
  if (!client.ok()) return client.status();
  n->client_ = std::move(*client);
  EtcdStoreOptions so;
  so.prefix = n->prefix_;
  so.cache_file = n->options_.cache_file;
  ClusterNode* self = n.get();
  so.on_fenced = [self](const absl::Status& s) { self->OnFenced(s); };
  n->store_ = std::make_shared<EtcdStore>(*n->client_, so);
  return n;
}

ClusterNode::ClusterNode(ClusterOptions options)
    : options_(std::move(options)),
      prefix_(options_.config.prefix().empty() ? "/ballast" : options_.config.prefix()),
      ttl_s_(options_.config.lease_ttl_s() == 0 ? 10 : options_.config.lease_ttl_s()) {}

ClusterNode::~ClusterNode() { Stop(); }

std::string ClusterNode::Key(absl::string_view rest) const { return absl::StrCat(prefix_, rest); }

void ClusterNode::Start(core::RouterEngine* engine, const core::Clock* clock) {
  engine_ = engine;
  clock_ = clock;
  {
    std::lock_guard<std::mutex> lock(mu_);
    since_ms_ = clock_->NowUnixMs();
  }
  engine_->SetDiffProvider([this] { return Diff(); });
  engine_->SetYieldProvider(
      [this](const v1::YieldVipRequest& r, const core::Actor& a) { return Yield(r, a); });
  thread_ = std::thread([this] { Loop(); });
  owner_thread_ = std::thread([this] { OwnerLoop(); });
  renew_thread_ = std::thread([this] { RenewLoop(); });
}

void ClusterNode::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (owner_thread_.joinable()) owner_thread_.join();
  if (renew_thread_.joinable()) renew_thread_.join();
  if (engine_ != nullptr) engine_->SetYieldProvider(nullptr);
  std::vector<OwnerNote> notes;  // what the renew loop noticed last
  {
    std::lock_guard<std::mutex> olock(owner_mu_);
    notes.swap(owner_notes_);
    for (auto& [text, o] : owned_) {
      if (o.own == nullptr) continue;
      // Stop forwarding first, then let the standby have it.
      (void)engine_->SetVipOwnerDeadline(o.key, 0);
      (void)o.own->Release();
      o.own.reset();
    }
    owned_.clear();
    for (auto& r : retired_) (void)r->Release();
    retired_.clear();
  }
  if (engine_ != nullptr) EmitOwnerNotes(notes);
  if (watch_ != nullptr) watch_->Stop();
  watch_.reset();
  if (engine_ != nullptr) engine_->SetDiffProvider(nullptr);
  if (leader_.load() && election_ != nullptr) {
    if (auto f = store_->fence(); f.has_value()) (void)election_->Resign(*f);
  }
  leader_ = false;
  if (store_ != nullptr) store_->SetFence(std::nullopt);  // null when Create failed
  election_.reset();
  if (session_ != nullptr) (void)session_->Close();  // the node record goes with the lease
  session_.reset();
}

void ClusterNode::Audit(const std::string& action, const std::string& vip,
                        const std::string& backend, const std::string& inputs_json,
                        const std::string& message) {
  Log(action == "split_view" || action == "config_drift" || action == "fenced" ||
              action == "coordination_lost"
          ? LogLevel::kWarning
          : LogLevel::kInfo,
      message, {{"action", action}, {"vip", vip}, {"backend", backend}});
  engine_->Record(core::Actor{kActor}, action, vip, backend, inputs_json, message);
}

void ClusterNode::OnFenced(const absl::Status& s) {
  fenced_ = true;
  leader_ = false;
  Log(LogLevel::kWarning, "a fenced write was rejected: this node is no longer the leader",
      {{"error", std::string(s.message())}});
}

void ClusterNode::StepDown(const std::string& why, const std::string& action) {
  const bool was = leader_.exchange(false);
  if (store_ != nullptr) store_->SetFence(std::nullopt);  // null when Create failed
  if (was || action == "fenced") {
    Audit(action, "", "",
          base::JsonObject().String("node", options_.config.node()).String("reason", why).Build(),
          absl::StrCat("node ", options_.config.node(), " stepped down: ", why));
  }
}

void ClusterNode::Loop() {
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    Tick();
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    if (took > 2000) {
      // etcd slow (or unreachable): peers see this node's record age.
      Log(LogLevel::kWarning, "coordination tick slow", {{"ms", static_cast<int64_t>(took)}});
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, start + absl::ToChronoMilliseconds(options_.tick),
                   [this] { return stop_; });
    if (stop_) return;
  }
}

std::set<std::string> ClusterNode::OwnedVips() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (const v1::VipOwnerStatus& o : owner_status_) {
    if (o.owner()) out.insert(o.vip());
  }
  return out;
}

void ClusterNode::EnsureWatch() {
  if (watch_ != nullptr && !watch_dead_.load()) return;
  if (watch_ != nullptr) watch_->Stop();
  watch_.reset();
  watch_dead_ = false;
  etcd::WatchSpec spec;
  spec.key = store_->state_key();
  spec.start_revision = engine_->Health().store_revision + 1;
  auto w = client_->StartWatch(spec, [this](const etcd::WatchUpdate& u) { OnWatch(u); });
  if (w.ok()) watch_ = std::move(*w);
}

void ClusterNode::OnWatch(const etcd::WatchUpdate& u) {
  using K = etcd::WatchUpdate::Kind;
  if (u.kind == K::kCompacted || u.kind == K::kFailed) {
    watch_dead_ = true;  // the loop re-reads (every tick) and re-watches
    return;
  }
  if (u.kind != K::kEvents) return;
  for (auto it = u.events.rbegin(); it != u.events.rend(); ++it) {
    if (it->type != etcd::Event::Type::kPut) continue;
    v1::State st;
    if (!st.ParseFromString(it->kv.value)) {
      Log(LogLevel::kError, "the replicated state does not parse; not applied",
          {{"revision", it->kv.mod_revision}});
      return;
    }
    if (auto s = engine_->AdoptReplicated(st, it->kv.mod_revision, core::Actor{"replication"});
        !s.ok()) {
      Log(LogLevel::kError, "applying the replicated state failed",
          {{"error", std::string(s.message())}});
    }
    return;  // the newest put is the state
  }
}

void ClusterNode::Tick() {
  const int64_t now = clock_->NowUnixMs();
  // 1. The state (and whether etcd answers at all).
  auto got = client_->Get(store_->state_key());
  bool up = got.ok();
  if (!got.ok() && !IsUnreachable(got.status())) {
    Log(LogLevel::kWarning, "reading the replicated state failed",
        {{"error", std::string(got.status().message())}});
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (up != up_) {
      up_ = up;
      since_ms_ = now;
    }
  }
  if (!up) {
    // One failed read is not an outage: when the etcd member that leads
    // the raft group dies, reads stall until the others elect a new leader
    // (about a second), and one member of three lost must change nothing.
    // Frozen once the reads have failed for kFreezeAfterMs; until then a
    // change this node tries fails in etcd (and every write is fenced).
    const bool lasting = now - since_ms_ >= kFreezeAfterMs;
    if (lasting && !frozen_.load()) {
      frozen_ = true;
      Audit("coordination_lost", "", "",
            base::JsonObject().String("error", std::string(got.status().message())).Build(),
            absl::StrCat("etcd unreachable: frozen (forwarding on the last known state, no "
                         "changes): ",
                         got.status().message()));
    }
  } else {
    const uint64_t writes_before = engine_->Health().adopted_map_writes;
    if (got->kvs.size() == 1 && got->kvs[0].mod_revision > engine_->Health().store_revision) {
      v1::State st;
      if (st.ParseFromString(got->kvs[0].value)) {
        if (auto s =
                engine_->AdoptReplicated(st, got->kvs[0].mod_revision, core::Actor{"replication"});
            !s.ok()) {
          Log(LogLevel::kError, "applying the replicated state failed",
              {{"error", std::string(s.message())}});
        }
      }
    }
    if (frozen_.load()) {
      frozen_ = false;
      const uint64_t writes = engine_->Health().adopted_map_writes - writes_before;
      Audit(
          "coordination_restored", "", "",
          base::JsonObject()
              .Int("revision", engine_->Health().store_revision)
              .Uint("reread_map_writes", writes)
              .Build(),
          absl::StrCat("etcd reachable again: state at revision ", engine_->Health().store_revision,
                       " re-read (", writes, " map writes), changes resume"));
    }
    EnsureWatch();
  }

  // 2. Session and leadership.
  if (fenced_.exchange(false))
    StepDown("a fenced write was rejected (a newer leader exists)", "fenced");
  if (up) {
    if (leader_.load()) {
      // The fence, not our belief, decides: a fenced write every tick.
      std::optional<etcd::Fence> fence = store_->fence();
      if (fence.has_value()) {
        auto r = etcd::FencedTxn(
            *client_, *fence, {},
            {etcd::Op::Put(Key("/leader-beat"), absl::StrCat(options_.config.node(), " ", now))});
        if (!r.ok() && etcd::IsFenced(r.status())) {
          StepDown(absl::StrCat("its fenced write was rejected by etcd: ", r.status().message()),
                   "fenced");
        }
      }
    }
    if (session_ != nullptr && !session_->alive()) {
      if (leader_.load()) StepDown("its session (lease) was lost", "step_down");
      election_.reset();
      session_.reset();
    }
    if (session_ == nullptr) {
      etcd::SessionOptions so;
      so.ttl_seconds = ttl_s_;
      auto s = etcd::Session::Create(*client_, so);
      if (s.ok()) {
        session_ = std::move(*s);
        election_ = std::make_unique<etcd::Election>(*client_, Key("/leader"), session_->lease_id(),
                                                     options_.config.node());
      }
    }
    if (election_ != nullptr && !leader_.load() && !frozen_.load()) {
      auto f = election_->TryCampaign();
      if (f.ok() && f->has_value()) {
        store_->SetFence(**f);
        leader_ = true;
        Audit("leader_elected", "", "",
              base::JsonObject()
                  .String("node", options_.config.node())
                  .Int("fence", (*f)->revision)
                  .Build(),
              absl::StrCat("node ", options_.config.node(), " is the leader (fencing token ",
                           (*f)->revision, ")"));
      }
    }
    if (election_ != nullptr) {
      if (auto l = election_->Leader(); l.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        leader_name_ = l->has_value() ? (*l)->value : "";
      }
    }
    // 3. Publish ours, read everyone's.
    Publish();
    ReadPeers();
  } else if (session_ != nullptr && !session_->alive() && leader_.load()) {
    StepDown("its session (lease) was lost while etcd was unreachable", "step_down");
  }
  Analyse();
}

void ClusterNode::Publish() {
  v1::NodeRecord r;
  r.set_node(options_.config.node());
  r.set_unix_ms(clock_->NowUnixMs());
  // A consistent snapshot: the state, its revision and the tables read
  // back, with no replicated state applied in between (else read again).
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int64_t before = engine_->Health().store_revision;
    const v1::State state = engine_->State();
    r.set_config_hash(StateHash(state));
    r.set_state_revision(before);
    r.clear_table_hashes();
    // The tables are read back from the data plane when the maps were
    // written since the last read, and every 5 s regardless (a table that
    // changed under us shows then); otherwise the last read is published.
    const core::EngineHealth h = engine_->Health();
    const int64_t now = clock_->NowUnixMs();
    if (before != tables_revision_ || h.last_map_update_unix_ms != tables_map_update_ms_ ||
        now - tables_read_ms_ >= 5000) {
      tables_.clear();
      for (const v1::Vip& v : state.config().vips()) {
        auto t = engine_->ReadTable(v.key());
        tables_[core::VipKeyText(v.key())] =
            t.ok() ? TableHash(*t) : absl::StrCat("error: ", t.status().message());
      }
      tables_revision_ = before;
      tables_map_update_ms_ = h.last_map_update_unix_ms;
      tables_read_ms_ = now;
    }
    for (const auto& [vip, hash] : tables_) (*r.mutable_table_hashes())[vip] = hash;
    if (engine_->Health().store_revision == before) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const v1::Observation& o : observations_) *r.add_observations() = o;
  }
  r.set_leader(leader_.load());
  r.set_frozen(frozen_.load());
  r.set_agent_version(options_.agent_version);
  r.set_admin_socket(options_.admin_socket);
  r.set_admin_tcp(options_.admin_tcp);
  r.set_pid(static_cast<int64_t>(getpid()));
  r.set_boot_id(BootId());
  {
    std::lock_guard<std::mutex> lock(mu_);
    self_ = r;
  }
  if (session_ == nullptr) return;
  auto p = client_->Put(Key(absl::StrCat("/nodes/", options_.config.node())), DeterministicBytes(r),
                        session_->lease_id());
  if (!p.ok()) {
    Log(LogLevel::kWarning, "publishing the node record failed",
        {{"error", std::string(p.status().message())}});
  }
}

void ClusterNode::ReadPeers() {
  auto all = client_->GetPrefix(Key("/nodes/"));
  if (!all.ok()) return;
  std::map<std::string, v1::NodeRecord> peers;
  for (const etcd::KeyValue& kv : all->kvs) {
    v1::NodeRecord r;
    if (!r.ParseFromString(kv.value)) continue;
    peers[r.node()] = std::move(r);
  }
  std::lock_guard<std::mutex> lock(mu_);
  peers_ = std::move(peers);
}

void ClusterNode::Analyse() {
  const int64_t now = clock_->NowUnixMs();
  v1::NodeRecord self;
  std::map<std::string, v1::NodeRecord> peers;
  bool up;
  {
    std::lock_guard<std::mutex> lock(mu_);
    self = self_;
    peers = peers_;
    up = up_;
  }
  const int64_t grace_ms = 1000 * static_cast<int64_t>(options_.config.drift_alert_s() == 0
                                                           ? 5
                                                           : options_.config.drift_alert_s());
  const DriftVerdict drift = AssessDrift(&drift_, self, peers, up, now, grace_ms);
  if (drift.alert) {
    Audit("config_drift", "", "",
          base::JsonObject().Strings("differences", drift.differences).Build(),
          absl::StrCat("configuration differs between nodes for ", drift.lasted_ms,
                       " ms: ", absl::StrJoin(drift.differences, "; ")));
  }
  // Split views: every backend any live node judged.
  std::map<std::string, std::vector<health::ObserverVote>> votes;  // "vip backend"
  std::map<std::string, std::vector<std::string>> who;
  for (const auto& [name, r] : peers) {
    if (r.frozen()) continue;
    for (const v1::Observation& o : r.observations()) {
      const std::string k = absl::StrCat(o.vip(), " ", o.backend());
      votes[k].push_back(o.in_service() ? health::ObserverVote::kInService
                                        : health::ObserverVote::kOut);
      who[k].push_back(absl::StrCat(name, ":", o.state()));
    }
  }
  std::vector<std::string> alerts;
  std::set<std::string> split_now;
  for (const auto& [k, v] : votes) {
    const health::QuorumVerdict verdict = health::DecideQuorum(v);
    if (verdict.outcome != health::QuorumOutcome::kSplit) continue;
    split_now.insert(k);
    alerts.push_back(absl::StrCat("split_view ", k, " (", absl::StrJoin(who[k], " "), ")"));
    if (up && split_alerted_.count(k) == 0) {
      const size_t sp = k.find(' ');
      Audit("split_view", k.substr(0, sp), k.substr(sp + 1),
            base::JsonObject()
                .String("observers", absl::StrJoin(who[k], " "))
                .Int("out", verdict.out_votes)
                .Int("live", verdict.live)
                .Int("needed", verdict.needed)
                .Build(),
            absl::StrCat("observers disagree on ", k, ": ", verdict.out_votes, " of ", verdict.live,
                         " vote it out, ", verdict.needed, " needed; nothing changes (",
                         absl::StrJoin(who[k], " "), ")"));
    }
  }
  if (up) split_alerted_ = split_now;
  for (const std::string& d : drift.differences)
    alerts.push_back(absl::StrCat("config_difference ", d));

  v1::Coordination c;
  c.set_mode("cluster");
  c.set_node(options_.config.node());
  c.set_is_leader(leader_.load());
  c.set_frozen(frozen_.load());
  c.set_state_revision(engine_->Health().store_revision);
  c.set_config_hash(self.config_hash());
  c.set_differences(static_cast<uint32_t>(drift.differences.size()));
  c.set_split_views(static_cast<uint32_t>(split_now.size()));
  for (const std::string& a : alerts) c.add_alerts(a);
  {
    std::lock_guard<std::mutex> lock(mu_);
    differences_ = drift.differences;
    alerts_ = alerts;
    split_views_ = static_cast<uint32_t>(split_now.size());
    c.set_up(up_);
    c.set_since_unix_ms(since_ms_);
    c.set_leader(leader_name_);
    c.set_live_nodes(static_cast<uint32_t>(peers_.size()));
    for (const v1::VipOwnerStatus& o : owner_status_) *c.add_owners() = o;
  }
  engine_->SetCoordination(std::move(c));
}

void ClusterNode::Gate(std::vector<core::HealthDecision>* decisions,
                       std::vector<core::HealthRecord>* records) {
  // This node's observations (its own health machine's verdicts), published
  // with its record.
  std::vector<v1::Observation> obs;
  for (const auto& d : *decisions) {
    if (d.clear) continue;
    v1::Observation o;
    o.set_vip(core::VipKeyText(d.vip));
    o.set_backend(d.address);
    o.set_state(d.mark.state());
    o.set_in_service(d.mark.in_service() && !d.pin);
    o.set_score(d.mark.score());
    obs.push_back(std::move(o));
  }
  std::map<std::string, v1::NodeRecord> peers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    observations_ = obs;
    peers = peers_;
  }
  if (frozen_.load() || !leader_.load()) {
    // Only the leader writes decisions, and nobody while frozen.
    decisions->clear();
    records->clear();
    return;
  }
  // The leader: a backend leaves (or comes back into) service only as the
  // observer quorum says.
  const v1::State state = engine_->State();
  std::set<std::string> blocked;                   // "vip backend" whose change is held back
  std::vector<core::HealthRecord> quorum_records;  // the quorum's own decisions
  std::vector<core::HealthDecision> kept;
  for (const auto& d : *decisions) {
    const std::string vip = core::VipKeyText(d.vip);
    const std::string k = absl::StrCat(vip, " ", d.address);
    bool was_out = false;
    for (const v1::BackendOverride& o : state.overrides()) {
      if (core::VipKeyText(o.vip()) == vip && o.address() == d.address) {
        was_out = o.pinned() || (o.has_health() && !o.health().in_service());
      }
    }
    const bool wants_out = !d.clear && (!d.mark.in_service() || d.pin);
    std::vector<health::ObserverVote> votes;
    votes.push_back(wants_out ? health::ObserverVote::kOut : health::ObserverVote::kInService);
    std::vector<std::string> who = {absl::StrCat(options_.config.node(), ":", d.mark.state())};
    for (const auto& [name, r] : peers) {
      if (name == options_.config.node() || r.frozen()) continue;
      for (const v1::Observation& o : r.observations()) {
        if (o.vip() == vip && o.backend() == d.address) {
          votes.push_back(o.in_service() ? health::ObserverVote::kInService
                                         : health::ObserverVote::kOut);
          who.push_back(absl::StrCat(name, ":", o.state()));
        }
      }
    }
    const health::QuorumVerdict v = health::DecideQuorum(votes);
    const bool out = health::QuorumKeepsOut(was_out, v);
    if (out == wants_out || d.clear) {
      kept.push_back(d);  // this node's verdict is the quorum's
    } else if (out && !was_out) {
      // A quorum of the others votes it out although this node's own logic
      // keeps it: the quorum decides.
      core::HealthDecision q = d;
      q.mark.set_in_service(false);
      q.mark.set_state("down");
      kept.push_back(q);
      blocked.insert(k);  // this node's own records for it do not apply
      quorum_records.push_back(
          {"demote", vip, d.address,
           base::JsonObject()
               .String("quorum", "out")
               .Int("out", v.out_votes)
               .Int("live", v.live)
               .Int("needed", v.needed)
               .String("observers", absl::StrJoin(who, " "))
               .Build(),
           absl::StrCat("demoted by observer quorum: ", v.out_votes, " of ", v.live,
                        " observers vote it out (", absl::StrJoin(who, " "), ")")});
    } else {
      blocked.insert(k);  // no quorum for the change: nothing changes
    }
  }
  *decisions = std::move(kept);
  // This node's own records for a blocked backend do not apply; the
  // quorum's own records (above) do.
  records->erase(std::remove_if(records->begin(), records->end(),
                                [&](const core::HealthRecord& r) {
                                  return blocked.count(absl::StrCat(r.vip, " ", r.backend)) != 0;
                                }),
                 records->end());
  for (core::HealthRecord& r : quorum_records) records->push_back(std::move(r));
}

absl::StatusOr<v1::ConfigDiffResponse> ClusterNode::Diff() const {
  v1::ConfigDiffResponse out;
  out.set_mode("cluster");
  out.set_self(options_.config.node());
  std::lock_guard<std::mutex> lock(mu_);
  if (!up_) {
    return absl::UnavailableError(
        "etcd unreachable: the other nodes' records cannot be read (this node is frozen)");
  }
  std::map<std::string, v1::NodeRecord> all = peers_;
  all[self_.node()] = self_;
  for (const auto& [name, r] : all) *out.add_nodes() = r;
  for (const std::string& d : differences_) out.add_differences(d);
  return out;
}

}  // namespace ballast::coord
