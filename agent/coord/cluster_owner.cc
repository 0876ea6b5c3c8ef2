// ClusterNode's per-VIP ownership (ACTIVE_STANDBY VIPs; docs/cluster.md):
// two loops and Yield().
//
//  - The renew loop (every 100 ms) writes each owned VIP's data-plane
//    deadline (the lease deadline minus a margin) and stops a VIP whose
//    ownership was lost. It makes no etcd call, takes no engine lock and
//    writes no log line or audit record (it leaves notes for the sync
//    loop), so nothing etcd, the state's disk or the log does can hold a
//    healthy owner's renewal back until it fences itself.
//  - The sync loop (every 500 ms) follows the state's set of ACTIVE_STANDBY
//    VIPs, tries to acquire the ones nobody holds, releases the ones no
//    longer wanted, audits what the renew loop noticed, and publishes the
//    status. It reads the state before taking owner_mu_ (State() waits for
//    the engine's lock, which a commit holds across its store's disk or
//    etcd work), decides under the lock, calls etcd, installs the results
//    under the lock, and audits and logs after releasing it.
#include <chrono>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "agent/base/json.h"
#include "absl/strings/str_join.h"
#include "agent/coord/cluster.h"
#include "agent/core/log.h"
#include "agent/core/names.h"

namespace ballast::coord {

using core::Log;
using core::LogLevel;

namespace {

// The data-plane deadline for an ownership: its lease deadline minus
// `margin_ms`, in CLOCK_MONOTONIC ns (0 if that is before the epoch).
uint64_t DataplaneDeadline(const etcd::Ownership& own, int64_t margin_ms) {
  const auto d = own.deadline() - std::chrono::milliseconds(margin_ms);
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(d.time_since_epoch()).count();
  return ns > 0 ? static_cast<uint64_t>(ns) : 0;
}

}  // namespace

void ClusterNode::RenewLoop() {
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    OwnerRenew();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, start + std::chrono::milliseconds(100), [this] { return stop_; });
    if (stop_) return;
  }
}

void ClusterNode::OwnerLoop() {
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    OwnerSync();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, start + std::chrono::milliseconds(500), [this] { return stop_; });
    if (stop_) return;
  }
}

void ClusterNode::OwnerRenew() {
  std::lock_guard<std::mutex> olock(owner_mu_);
  const int64_t margin_ms = ttl_s_ * 1000 / 4;
  for (auto& [text, o] : owned_) {
    if (o.own != nullptr && (o.lost->load() || !o.own->held())) {
      (void)engine_->SetVipOwnerDeadline(o.key, 0);
      const absl::Status why = o.own->status();
      retired_.push_back(std::move(o.own));  // released by the sync loop, outside the lock
      o.lost->store(false);
      o.holder.clear();
      // Audited by the sync loop (the stop above is what counts, and it is
      // done): a log line here could block this thread on a stalled stderr.
      owner_notes_.push_back({"vip_lost", text,
                              base::JsonObject()
                                  .String("node", options_.config.node())
                                  .String("reason", std::string(why.message()))
                                  .Int("stopped_unix_ms", clock_->NowUnixMs())
                                  .Build(),
                              absl::StrCat("node ", options_.config.node(), " lost vip ", text,
                                           ": stopped forwarding it (", why.message(), ")"),
                              ""});
    }
    if (o.own == nullptr) continue;
    // Renew: the deadline follows the lease, a margin before it.
    const uint64_t w = DataplaneDeadline(*o.own, margin_ms);
    if (w == o.written_ns) continue;
    if (auto st = engine_->SetVipOwnerDeadline(o.key, w); st.ok()) {
      o.written_ns = w;
      o.dp_deadline = w;
    } else if (owner_notes_.size() < 64) {  // logged by the sync loop; retried next pass
      owner_notes_.push_back(
          {"", text, "", "writing the owner deadline failed", std::string(st.message())});
    }
    o.holder = options_.config.node();
  }
}

void ClusterNode::EmitOwnerNotes(const std::vector<OwnerNote>& notes) {
  std::map<std::string, int> failed_writes;  // by VIP: one line each per pass
  for (const OwnerNote& n : notes) {
    if (!n.action.empty()) {
      Audit(n.action, n.vip, "", n.inputs_json, n.message);
    } else if (failed_writes[n.vip]++ == 0) {
      Log(LogLevel::kWarning, n.message, {{"vip", n.vip}, {"error", n.error}});
    }
  }
}

void ClusterNode::OwnerSync() {
  const int64_t margin_ms = ttl_s_ * 1000 / 4;
  bool up;
  {
    std::lock_guard<std::mutex> lock(mu_);
    up = up_;
  }
  // The state before owner_mu_: State() waits for the engine's lock, which a
  // commit holds across its store's write (disk, etcd), and the renew loop
  // needs owner_mu_ every 100 ms.
  std::map<std::string, v1::VipKey> want;
  std::set<std::string> present;
  {
    const v1::State state = engine_->State();
    for (const v1::Vip& v : state.config().vips()) {
      const std::string text = core::VipKeyText(v.key());
      present.insert(text);
      if (v.ownership() == v1::ACTIVE_STANDBY) want[text] = v.key();
    }
  }
  std::vector<OwnerNote> notes;      // audited and logged after the lock
  std::vector<std::string> dropped;  // VIPs no longer active/standby (logged after the lock)
  // 1. Decide, under the lock: no etcd call here.
  struct Try {
    std::string text;
    v1::VipKey key;
    std::shared_ptr<std::atomic<bool>> lost;
  };
  std::vector<Try> acquire;
  std::vector<std::string> ask_holder;  // yielded VIPs: who holds them now
  std::vector<std::unique_ptr<etcd::Ownership>> release;
  {
    std::lock_guard<std::mutex> olock(owner_mu_);
    notes.swap(owner_notes_);
    // The set of ACTIVE_STANDBY VIPs follows the state.
    for (auto it = owned_.begin(); it != owned_.end();) {
      if (want.count(it->first) != 0) {
        ++it;
        continue;
      }
      // No longer ACTIVE_STANDBY (or gone): forwarded by every node again.
      if (present.count(it->first) != 0) (void)engine_->SetVipOwnerDeadline(it->second.key, {});
      if (it->second.own != nullptr) release.push_back(std::move(it->second.own));
      dropped.push_back(it->first);
      it = owned_.erase(it);
    }
    for (const auto& [text, key] : want) {
      if (owned_.count(text) == 0) owned_[text].key = key;
    }
    for (auto& r : retired_) release.push_back(std::move(r));
    retired_.clear();
    for (auto& [text, o] : owned_) {
      // Read back what the data plane holds (status, and keeping a standby
      // stopped: a VIP that became ACTIVE_STANDBY while it existed).
      auto dpo = engine_->GetVipOwner(o.key);
      if (dpo.ok()) {
        o.dp_deadline = dpo->deadline_ns;
        o.fenced = dpo->fenced;
        if (o.own == nullptr &&
            (!dpo->deadline_ns.has_value() || *dpo->deadline_ns > clock_->NowMonotonicNs())) {
          (void)engine_->SetVipOwnerDeadline(o.key, 0);
          o.dp_deadline = 0;
        }
      }
      const auto hold = hold_until_.find(text);
      const bool held_off = hold != hold_until_.end() && clock_->NowMonotonicNs() < hold->second;
      if (hold != hold_until_.end() && !held_off) hold_until_.erase(hold);
      if (o.own == nullptr && up && !frozen_.load() && dpo.ok() && !held_off) {
        acquire.push_back({text, o.key, o.lost});
      } else if (o.own == nullptr && held_off && up) {
        ask_holder.push_back(text);
      }
    }
  }

  EmitOwnerNotes(notes);
  notes.clear();
  for (const std::string& text : dropped) {
    Log(LogLevel::kInfo, "vip no longer active/standby", {{"vip", text}});
  }

  // 2. etcd, without the lock: the renew loop goes on meanwhile.
  for (auto& r : release) (void)r->Release();
  release.clear();
  struct Acquired {
    std::unique_ptr<etcd::Ownership> own;
    std::string holder;
  };
  std::map<std::string, Acquired> got;
  for (const Try& t : acquire) {
    etcd::OwnershipOptions oo;
    oo.ttl_seconds = ttl_s_;
    core::RouterEngine* engine = engine_;
    const v1::VipKey key = t.key;
    std::shared_ptr<std::atomic<bool>> lost = t.lost;
    oo.on_lost = [engine, key, lost](const absl::Status&) {
      (void)engine->SetVipOwnerDeadline(key, 0);  // stop now, not at the deadline
      lost->store(true);
    };
    etcd::KeyValue holder;
    auto own = etcd::Ownership::TryAcquire(*client_, Key(absl::StrCat("/owners/", t.text)),
                                           options_.config.node(), oo, &holder);
    if (own.ok()) got[t.text] = Acquired{std::move(*own), holder.value};
  }
  std::map<std::string, std::string> holders;
  for (const std::string& text : ask_holder) {
    auto h = client_->Get(Key(absl::StrCat("/owners/", text)));
    if (h.ok()) holders[text] = h->kvs.empty() ? "" : h->kvs[0].value;
  }

  // 3. Install, under the lock.
  std::vector<v1::VipOwnerStatus> st;
  {
    std::lock_guard<std::mutex> olock(owner_mu_);
    for (auto& [text, a] : got) {
      auto it = owned_.find(text);
      if (a.own == nullptr) {
        if (it != owned_.end()) it->second.holder = a.holder;
        continue;
      }
      if (it == owned_.end() || it->second.own != nullptr) {
        release.push_back(std::move(a.own));  // no longer wanted meanwhile
        continue;
      }
      if (!a.own->held()) continue;  // lost already: on_lost stopped it, the flag is set
      OwnedVip& o = it->second;
      o.own = std::move(a.own);
      o.written_ns = DataplaneDeadline(*o.own, margin_ms);
      (void)engine_->SetVipOwnerDeadline(o.key, o.written_ns);
      o.dp_deadline = o.written_ns;
      o.holder = options_.config.node();
      notes.push_back(
          {"vip_acquired", text,
           base::JsonObject()
               .String("node", options_.config.node())
               .Int("fence", o.own->fence().revision)
               .Int("margin_ms", margin_ms)
               .Build(),
           absl::StrCat("node ", options_.config.node(), " owns vip ", text,
                        " and forwards it (fencing token ", o.own->fence().revision, ")"),
           ""});
    }
    for (const auto& [text, holder] : holders) {
      auto it = owned_.find(text);
      if (it == owned_.end() || it->second.own != nullptr) continue;
      it->second.holder = holder;
      // Yielded: out of the contest until another node holds the VIP (the
      // hold-off did its job) or the hold-off passes.
      if (!holder.empty() && holder != options_.config.node()) hold_until_.erase(text);
    }
    const uint64_t now = clock_->NowMonotonicNs();
    for (const auto& [text, o] : owned_) {
      v1::VipOwnerStatus s;
      s.set_vip(text);
      s.set_owner(o.own != nullptr);
      s.set_holder(o.holder);
      if (o.dp_deadline.has_value()) {
        s.set_deadline_in_ms((static_cast<int64_t>(*o.dp_deadline) - static_cast<int64_t>(now)) /
                             1000000);
      }
      s.set_fenced(o.fenced);
      st.push_back(std::move(s));
    }
  }
  EmitOwnerNotes(notes);
  for (auto& r : release) (void)r->Release();
  std::lock_guard<std::mutex> lock(mu_);
  owner_status_ = std::move(st);
}

absl::StatusOr<v1::YieldVipResponse> ClusterNode::Yield(const v1::YieldVipRequest& req,
                                                        const core::Actor& actor) {
  const std::string text = core::VipKeyText(req.vip());
  const std::string& self = options_.config.node();
  if (req.hold_off_s() > 300) {
    return absl::InvalidArgumentError(
        absl::StrCat("hold_off_s: ", req.hold_off_s(), " is out of range 1..300 (0 = default)"));
  }
  if (req.reason().size() > 200) {
    return absl::InvalidArgumentError("reason: at most 200 characters");
  }
  const int64_t hold_s =
      req.hold_off_s() != 0 ? req.hold_off_s() : std::max<int64_t>(10, 2 * ttl_s_);
  bool exists = false;
  const v1::State state = engine_->State();
  for (const v1::Vip& v : state.config().vips()) {
    if (core::VipKeyText(v.key()) == text) {
      exists = true;
      if (v.ownership() != v1::ACTIVE_STANDBY) {
        return absl::FailedPreconditionError(
            absl::StrCat("vip ", text,
                         " is not ACTIVE_STANDBY: every node forwards it, there is no owner to "
                         "fail over (lbctl vip set-ownership ",
                         text, " active-standby)"));
      }
    }
  }
  if (!exists) return absl::NotFoundError(absl::StrCat("vip ", text, " does not exist"));
  if (frozen_.load()) {
    return absl::UnavailableError(
        absl::StrCat("node ", self, " is frozen (etcd unreachable): it changes nothing"));
  }
  // Someone must be able to take it over, or yielding just stops the VIP.
  std::vector<std::string> standbys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, r] : peers_) {
      if (name != self && !r.frozen()) standbys.push_back(name);
    }
  }
  std::unique_ptr<etcd::Ownership> mine;
  int64_t fenced_ms = 0, fence = 0;
  {
    std::lock_guard<std::mutex> olock(owner_mu_);
    auto it = owned_.find(text);
    if (it == owned_.end() || it->second.own == nullptr) {
      const std::string holder = it == owned_.end() ? "" : it->second.holder;
      return absl::FailedPreconditionError(
          absl::StrCat("node ", self, " does not own vip ", text,
                       " (holder: ", holder.empty() ? "none" : holder, "); ask the owner"));
    }
    if (standbys.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("no other live node could take vip ", text,
                                                        " over: yielding would stop it for ",
                                                        hold_s, " s"));
    }
    OwnedVip& o = it->second;
    // Stop forwarding first, then let a standby have the lease.
    if (auto s = engine_->SetVipOwnerDeadline(o.key, 0); !s.ok()) {
      return absl::InternalError(
          absl::StrCat("stopping vip ", text, " in the data plane failed: ", s.message()));
    }
    fenced_ms = clock_->NowUnixMs();
    hold_until_[text] = clock_->NowMonotonicNs() + static_cast<uint64_t>(hold_s) * 1'000'000'000;
    fence = o.own->fence().revision;
    mine = std::move(o.own);
    o.lost->store(false);
    o.holder.clear();
    o.written_ns = 0;
    o.dp_deadline = 0;
  }
  // The lease is released outside owner_mu_ (an etcd call).
  const absl::Status released = mine->Release();
  const std::string reason = req.reason().empty() ? "operator request" : req.reason();
  engine_->Record(
      actor, "vip_yielded", text, "",
      base::JsonObject()
          .String("node", self)
          .Int("fence", fence)
          .Int("hold_off_s", hold_s)
          .String("reason", reason)
          .String("standbys", absl::StrJoin(standbys, " "))
          .String("release", released.ok() ? std::string("ok") : std::string(released.message()))
          .Build(),
      absl::StrCat("node ", self, " gave vip ", text, " up on purpose (", reason,
                   "): stopped forwarding it, released its lease",
                   released.ok() ? ""
                                 : absl::StrCat(" (release failed: ", released.message(),
                                                "; the lease expires instead)"),
                   ", out of the contest for ", hold_s, " s"));
  Log(LogLevel::kWarning, "vip yielded on purpose",
      {{"vip", text}, {"reason", reason}, {"hold_off_s", hold_s}});
  v1::YieldVipResponse resp;
  resp.set_node(self);
  resp.set_fenced_unix_ms(fenced_ms);
  resp.set_hold_off_until_unix_ms(fenced_ms + hold_s * 1000);
  return resp;
}

}  // namespace ballast::coord
