#include "agent/core/health_controller.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/base/json.h"
#include "agent/core/health_settings.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/health/relearn.h"
#include "agent/probes/spec.h"

namespace ballast::core {

namespace {

health::OperatorState OperatorStateOf(BackendMode m) {
  switch (m) {
    case BackendMode::kDraining:
      return health::OperatorState::kDraining;
    case BackendMode::kEvicted:
      return health::OperatorState::kEvicted;
    case BackendMode::kActive:
    case BackendMode::kPinned:  // health's own state; the machine knows it
      break;
  }
  return health::OperatorState::kActive;
}

std::string TargetId(const std::string& vip_text, const std::string& address) {
  return absl::StrCat(vip_text, " ", address);
}

health::CounterSnapshot SnapshotOf(const ballast_backend_stats& c, uint64_t refused_syns) {
  health::CounterSnapshot s;
  s.refused_syns = refused_syns;
  s.new_flows = c.new_flows;
  s.packets = c.packets;
  s.syn_retransmits = c.syn_retransmits;
  s.client_rsts = c.client_rsts;
  s.handshake_ns_sum = c.handshake_ns_sum;
  s.handshake_count = c.handshake_count;
  s.first_response_ns_sum = c.first_response_ns_sum;
  s.first_response_count = c.first_response_count;
  return s;
}

// The wall clock (the audit's times, e.g. cooldown_until_unix_ms, are read by
// people), never going backwards between evaluations: the health logic
// requires a non-decreasing `now`.
absl::Time Now(const Clock* clock, absl::Time* last) {
  const absl::Time t = std::max(absl::FromUnixMillis(clock->NowUnixMs()), *last);
  *last = t;
  return t;
}

// The agent's monotonic clock as an absl::Time (for durations only).
absl::Time MonotonicNow(const Clock* clock) {
  return absl::UnixEpoch() + absl::Nanoseconds(static_cast<int64_t>(clock->NowMonotonicNs()));
}

// How long a probe verdict stands without a newer one: until the next probe
// of the target has had its interval, jitter and timeout.
absl::Duration VerdictStandsFor(const v1::ProbeSpec& spec) {
  const uint32_t interval = probes::IntervalMsOf(spec);
  const uint32_t jitter = std::min<uint32_t>(spec.jitter_ms(), interval / 2);
  return absl::Milliseconds(interval + jitter + probes::TimeoutMsOf(spec));
}

}  // namespace

HealthController::HealthController(RouterEngine* engine, const Clock* clock,
                                   HealthControllerOptions options, ForwardHook forward_hook)
    : engine_(engine), clock_(clock), options_(options), forward_hook_(std::move(forward_hook)) {}

HealthController::~HealthController() { StopProbes(); }

void HealthController::StopProbes() {
  if (scheduler_ != nullptr) {
    scheduler_->Shutdown();
    scheduler_.reset();
  }
  target_defs_.clear();
}

uint32_t HealthController::EvalIntervalMs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return eval_interval_ms_;
}

bool HealthController::Enabled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return enabled_;
}

HealthCounters HealthController::Counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void HealthController::OnProbeResult(const std::string& id, const probes::ProbeResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  if (result.discarded) {  // the agent did not run for part of it: no verdict on the backend
    ++counters_.probes_discarded;
    last_probe_[id] = result.detail;
    return;
  }
  verdicts_.Add(id, result.ok, absl::FromChrono(result.latency), MonotonicNow(clock_));
  ++(result.ok ? counters_.probes_ok : counters_.probes_failed);
  if (!result.ok) ++probe_failures_[id];
  last_probe_[id] = absl::StrCat(result.ok ? "ok: " : "FAILED: ", result.detail);
}

ProbePlan PlanProbe(const v1::VipKey& vip, bool has_probe, const v1::ProbeSpec& probe) {
  ProbePlan p;
  p.port = static_cast<uint16_t>(probe.port() != 0 ? probe.port() : vip.port());
  if (p.port == 0) {
    p.none = "no probe port (a VIP of every port needs probe.port)";
  } else if (vip.protocol() == v1::UDP && probe.kind() != v1::ProbeSpec::UDP &&
             (!has_probe || probe.port() == 0)) {
    p.none = "no UDP probe (probe { kind: UDP udp_request: ... })";
  }
  return p;
}

absl::Status HealthController::SyncTargets(const HealthInputs& in) {
  std::map<std::string, probes::ProbeTarget> want;
  std::map<std::string, std::string> defs;
  unprobed_.clear();
  for (const HealthPool& pool : in.pools) {
    auto vip = IpAddress::Parse(pool.key.address());
    if (!vip.ok()) continue;
    for (const HealthBackend& b : pool.backends) {
      if (b.backend_id == 0) continue;
      const ProbePlan plan = PlanProbe(pool.key, b.has_probe, b.probe);
      if (!plan.none.empty()) {
        unprobed_[TargetId(pool.key_text, b.address)] = plan.none;
        continue;
      }
      auto addr = IpAddress::Parse(b.address);
      if (!addr.ok()) continue;
      probes::ProbeTarget t;
      t.vip = *vip;
      t.port = plan.port;
      t.backend = *addr;
      t.backend_id = b.backend_id;
      t.gue_port = pool.gue_port;
      t.spec = b.probe;
      const std::string id = TargetId(pool.key_text, b.address);
      defs[id] = absl::StrCat(t.backend_id, "|", t.port, "|", b.probe.SerializeAsString());
      want[id] = std::move(t);
    }
  }
  if (scheduler_ == nullptr) {
    probes::ProbeScheduler::Options o;
    o.workers = options_.probe_workers;
    o.mark_base = options_.mark_base;
    scheduler_ = std::make_unique<probes::ProbeScheduler>(
        o, [this](const std::string& id, const probes::ProbeTarget&, const probes::ProbeResult& r) {
          OnProbeResult(id, r);
        });
  }
  // Forwarding first, so that a new target's first probe finds its route.
  std::vector<probes::ProbeTarget> forwarded;
  for (const auto& [id, t] : want) {
    if (!t.spec.direct()) forwarded.push_back(t);
  }
  const auto same = [](const std::vector<probes::ProbeTarget>& a,
                       const std::vector<probes::ProbeTarget>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].backend_id != b[i].backend_id || a[i].backend != b[i].backend ||
          a[i].vip != b[i].vip || a[i].gue_port != b[i].gue_port) {
        return false;
      }
    }
    return true;
  };
  absl::Status first = absl::OkStatus();
  const auto note = [&first](const absl::Status& s) {
    if (!s.ok() && first.ok()) first = s;
  };
  // A forwarding failure still schedules the probes: they fail, and with
  // every backend failing at once the fleet guard holds the weights.
  if (forward_hook_ && !same(forwarded, forwarded_)) {
    absl::Status s = forward_hook_(forwarded);
    note(s);
    if (s.ok()) forwarded_ = forwarded;
  }
  for (auto it = target_defs_.begin(); it != target_defs_.end();) {
    if (want.count(it->first) == 0) {
      note(scheduler_->Remove(it->first));
      {
        std::lock_guard<std::mutex> lock(mu_);
        verdicts_.Forget(it->first);
        last_probe_.erase(it->first);
      }
      it = target_defs_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [id, t] : want) {
    auto it = target_defs_.find(id);
    if (it == target_defs_.end()) {
      absl::Status s = scheduler_->Add(id, t);
      note(s);
      if (s.ok()) target_defs_[id] = defs[id];
    } else if (it->second != defs[id]) {
      absl::Status s = scheduler_->Update(id, t);
      note(s);
      if (s.ok()) it->second = defs[id];
      std::lock_guard<std::mutex> lock(mu_);
      verdicts_.Forget(id);
    }
  }
  return first;
}

health::PoolState HealthController::PrepareState(const HealthPool& pool,
                                                 const health::Params& params, absl::Time now,
                                                 std::vector<HealthRecord>* records) {
  health::PoolState st;
  if (auto it = pools_.find(pool.key_text); it != pools_.end()) {
    st = it->second;
  } else {
    st.pool = pool.key_text;
  }
  bool added = false;
  for (const HealthBackend& b : pool.backends) {
    auto bs = std::find_if(st.backends.begin(), st.backends.end(),
                           [&](const health::BackendState& x) { return x.key == b.address; });
    if (bs == st.backends.end()) {
      if (!b.has_mark && b.mode != BackendMode::kPinned) continue;  // Next() adds it
      // Known to the engine from before this process: resume from its mark.
      health::BackendState n = health::NewBackendState(b.address, params);
      if (b.has_mark) {
        const v1::HealthMark& m = b.mark;
        n.in_service = m.in_service();
        n.score = static_cast<int>(std::min<uint32_t>(m.score(), 100));
        const int pct = static_cast<int>(std::clamp<uint32_t>(m.ramp_percent(), 1, 100));
        n.ramp_step = params.ramp_percents.size() - 1;
        for (size_t i = 0; i < params.ramp_percents.size(); ++i) {
          if (params.ramp_percents[i] >= pct) {
            n.ramp_step = i;
            break;
          }
        }
        n.applied_in_service = m.in_service();
        n.applied_ramp_percent = params.ramp_percents[n.ramp_step];
        n.applied_weight_score = static_cast<int>(std::min<uint32_t>(m.weight_score(), 100));
      }
      if (b.mode == BackendMode::kPinned) {
        n.pinned = true;
        n.in_service = false;
        n.applied_in_service = false;
      }
      st.backends.push_back(std::move(n));
      added = true;
      continue;
    }
    if (bs->pinned && b.mode != BackendMode::kPinned) {
      // The operator released it (lbctl backend release).
      auto rr = health::Release(st, b.address, now, params);
      if (rr.ok()) {
        st = std::move(rr->state);
        records->push_back({std::string(health::ActionKindName(rr->action.kind)), pool.key_text,
                            b.address, rr->action.inputs_json, rr->action.message});
      }
    } else if (!bs->pinned && b.mode == BackendMode::kPinned) {
      bs->pinned = true;
      bs->in_service = false;
      bs->applied_in_service = false;
    }
  }
  if (added) {
    std::sort(
        st.backends.begin(), st.backends.end(),
        [](const health::BackendState& x, const health::BackendState& y) { return x.key < y.key; });
  }
  return st;
}

absl::Status HealthController::Evaluate() {
  auto in = engine_->ReadHealthInputs();
  if (!in.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.evaluation_errors;
    return in.status();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    enabled_ = in->enabled;
    eval_interval_ms_ = in->enabled ? EvalIntervalOf(in->settings) : kDefaultEvalIntervalMs;
  }
  if (!in->enabled) {
    // Off: no probes, no marks, nominal weights.
    StopProbes();
    if (forward_hook_ && !forwarded_.empty()) {
      if (auto s = forward_hook_({}); s.ok()) forwarded_.clear();
    }
    pools_.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      verdicts_.Clear();
      last_probe_.clear();
      probe_failures_.clear();
    }
    history_.clear();
    std::vector<HealthDecision> clear;
    for (const HealthPool& pool : in->pools) {
      for (const HealthBackend& b : pool.backends) {
        if (!b.has_mark) continue;
        HealthDecision d;
        d.vip = pool.key;
        d.address = b.address;
        d.clear = true;
        clear.push_back(std::move(d));
      }
    }
    engine_->SetHealthView({});
    if (options_.timeline != nullptr) options_.timeline->Retain({});
    std::vector<HealthRecord> none;
    if (options_.decision_gate) options_.decision_gate(&clear, &none);
    return engine_->ApplyHealth(clear, none);
  }

  const health::Params params = HealthParamsOf(in->settings);
  absl::Status probe_status = SyncTargets(*in);
  if (!probe_status.ok()) {
    Log(LogLevel::kWarning, "probe targets not fully applied",
        {{"error", std::string(probe_status.message())}});
  }

  const absl::Time now = Now(clock_, &last_now_);
  const int64_t now_unix_ms = clock_->NowUnixMs();
  // Each target's probe verdict for this evaluation (probe_verdicts.h).
  std::map<std::string, health::ProbeSummary> probes;
  std::map<std::string, std::string> last_probe;
  std::map<std::string, uint64_t> probe_failures;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const absl::Time mono = MonotonicNow(clock_);
    for (const HealthPool& pool : in->pools) {
      for (const HealthBackend& b : pool.backends) {
        const std::string id = TargetId(pool.key_text, b.address);
        if (auto v = verdicts_.Take(id, mono, VerdictStandsFor(b.probe))) probes[id] = *v;
        if (auto f = probe_failures_.find(id); f != probe_failures_.end()) {
          probe_failures.insert(*f);
        }
      }
    }
    last_probe = last_probe_;
    // A backend no longer configured starts again from 0 if it comes back.
    probe_failures_ = probe_failures;
  }
  std::map<std::string, HealthHistory> next_history;

  std::vector<HealthDecision> decisions;
  std::vector<HealthRecord> records;
  HealthView view;
  std::map<std::string, health::PoolState> next_pools;
  std::map<std::string, uint64_t> next_relearned = relearned_;
  std::map<std::string, uint64_t> action_counts;
  absl::Status first_error = absl::OkStatus();
  std::vector<std::pair<TimelineKey, TimelinePoint>> points;

  for (const HealthPool& pool : in->pools) {
    health::PoolState prev = PrepareState(pool, params, now, &records);
    if (uint64_t& seen = next_relearned[pool.key_text]; seen != pool.relearn_requests) {
      // The operator accepted the pool's behaviour as its new normal.
      const bool was_frozen = prev.frozen;
      prev = health::Relearn(std::move(prev), params);
      seen = pool.relearn_requests;
      records.push_back(
          {"relearn", pool.key_text, "",
           base::JsonObject().Bool("was_frozen", was_frozen).Uint("requests", seen).Build(),
           absl::StrCat("baselines of ", pool.key_text, " learned again",
                        was_frozen
                            ? " (frozen: unfreezes once they are learned and its backends agree)"
                            : "",
                        ", as the operator asked")});
    }
    health::PoolInput input;
    input.pool = pool.key_text;
    for (const HealthBackend& b : pool.backends) {
      health::BackendInput bi;
      bi.key = b.address;
      bi.nominal_weight = b.nominal_weight;
      bi.operator_state = OperatorStateOf(b.mode);
      bi.unprobed = unprobed_.count(TargetId(pool.key_text, b.address)) > 0;
      if (auto p = probes.find(TargetId(pool.key_text, b.address)); p != probes.end()) {
        bi.probe = p->second;
      }
      // The passive signals are TCP's (SYN retransmissions, client RSTs,
      // handshake and first-response times, per new flow); a UDP flow has
      // none of them, so a UDP pool's counters would only ever say "fine".
      if (b.backend_id != 0 && pool.key.protocol() != v1::UDP) {
        bi.counters = SnapshotOf(b.counters, b.refused_syns);
      }
      input.backends.push_back(std::move(bi));
    }
    auto r = health::Next(prev, input, now, params);
    if (!r.ok()) {
      if (first_error.ok()) first_error = r.status();
      next_pools[pool.key_text] = prev;
      for (const HealthBackend& b : pool.backends) {  // unevaluated: their records stay
        const std::string hkey = BackendIdKey(pool.key, b.address);
        if (auto h = history_.find(hkey); h != history_.end()) next_history.insert(*h);
      }
      continue;
    }
    std::map<std::string, bool> acted;
    for (const health::Action& a : r->actions) {
      records.push_back({std::string(health::ActionKindName(a.kind)), pool.key_text, a.backend,
                         a.inputs_json, a.message});
      ++action_counts[std::string(health::ActionKindName(a.kind))];
      if (!a.backend.empty()) acted[a.backend] = true;
    }
    VipHealthView& vv = view.vips[pool.vip];
    vv.frozen = r->frozen;
    if (r->frozen) vv.frozen_since_unix_ms = absl::ToUnixMillis(r->state.frozen_since);
    for (size_t i = 0; i < r->backends.size() && i < pool.backends.size(); ++i) {
      const health::BackendOutput& out = r->backends[i];
      const HealthBackend& b = pool.backends[i];
      auto bs = std::find_if(r->state.backends.begin(), r->state.backends.end(),
                             [&](const health::BackendState& x) { return x.key == out.key; });
      if (bs == r->state.backends.end()) continue;
      HealthDecision d;
      d.vip = pool.key;
      d.address = b.address;
      d.mark.set_in_service(bs->applied_in_service);
      d.mark.set_ramp_percent(static_cast<uint32_t>(bs->applied_ramp_percent));
      d.mark.set_weight_score(static_cast<uint32_t>(bs->applied_weight_score));
      d.mark.set_score(static_cast<uint32_t>(out.score));
      d.mark.set_state(std::string(out.state_name));
      // Only a pin made in this evaluation: a backend that was pinned when
      // the inputs were read may have been released since (the operator's
      // `lbctl backend release`), and re-pinning it would undo that.
      d.pin = out.state == health::HealthState::kPinned && b.mode != BackendMode::kPinned;
      decisions.push_back(d);

      // A weight change that no action explains (the score moved within
      // its band) is an automated action too.
      const uint32_t before = b.effective_weight;
      if (out.effective_weight != before && !acted[out.key]) {
        records.push_back(
            {"health_weight", pool.key_text, b.address, out.evidence_json,
             absl::StrCat("effective weight ", before, " -> ", out.effective_weight, " (score ",
                          out.score, ", ", std::string(out.state_name), ")")});
        ++action_counts["health_weight"];
      }

      // The weight is the one the table uses as this evaluation begins, not
      // the machine's: the gate may hold the machine's change back or
      // overrule it (cluster mode), and a follower forwards the leader's.
      points.push_back({{pool.key_text, b.address},
                        {now_unix_ms, static_cast<uint32_t>(out.score), b.effective_weight}});

      BackendHealthView& bv = view.backends[BackendIdKey(pool.key, b.address)];
      bv.score = static_cast<uint32_t>(out.score);
      bv.state = std::string(out.state_name);
      bv.ramp_percent = static_cast<uint32_t>(out.ramp_percent);
      bv.conditions = out.conditions;
      const std::string id = TargetId(pool.key_text, b.address);
      if (auto u = unprobed_.find(id); u != unprobed_.end()) {
        // Nothing checks it but the passive signals: without them this
        // evaluation, nobody knows.
        bv.conditions.push_back("no_probe");
        bv.last_probe = u->second;
        if (!out.evaluated) bv.state = "unchecked";
      } else if (auto lp = last_probe.find(id); lp != last_probe.end()) {
        bv.last_probe = lp->second;
      }
      if (auto f = probe_failures.find(id); f != probe_failures.end())
        bv.probe_failures = f->second;
      const std::string hkey = BackendIdKey(pool.key, b.address);
      const HealthHistory& h = next_history[hkey] =
          NextHealthHistory(history_[hkey], bv.state, now_unix_ms);
      bv.since_unix_ms = h.since_unix_ms;
      bv.transitions = h.transitions;
      bv.down_ms = h.down_ms;
    }
    next_pools[pool.key_text] = std::move(r->state);
  }

  if (options_.decision_gate) options_.decision_gate(&decisions, &records);
  absl::Status applied = engine_->ApplyHealth(decisions, records);
  if (applied.ok()) {
    // Only a stored outcome becomes the machine's memory; after a failure the
    // next evaluation decides again from the same state.
    pools_ = std::move(next_pools);
    relearned_ = std::move(next_relearned);
    if (options_.timeline != nullptr) {
      std::set<TimelineKey> keys;
      for (const auto& [key, point] : points) {
        options_.timeline->Record(key, point);
        keys.insert(key);
      }
      options_.timeline->Retain(keys);
    }
  }
  // The record follows what the view shows, applied or not.
  history_ = std::move(next_history);
  engine_->SetHealthView(std::move(view));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.evaluations;
    counters_.last_evaluation_unix_ms = now_unix_ms;
    if (!applied.ok() || !first_error.ok()) ++counters_.evaluation_errors;
    for (const auto& [k, n] : action_counts) counters_.actions[k] += n;
  }
  if (!applied.ok()) return applied;
  return first_error;
}

}  // namespace ballast::core
