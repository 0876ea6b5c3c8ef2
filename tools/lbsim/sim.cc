#include "tools/lbsim/sim.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>

#include "absl/strings/str_format.h"
#include "agent/health/action.h"
#include "agent/health/machine.h"
#include "agent/health/quorum.h"
#include "agent/maglev/maglev.h"
#include "tools/lbsim/sim_churn.h"
#include "tools/lbsim/sim_engine.h"
#include "bpf/include/ballast_flow_hash.h"

namespace ballast::lbsim {
namespace internal {

absl::Status Simulation::BuildFaultSchedule() {
  for (size_t fi = 0; fi < sc_.faults.size(); ++fi) {
    const Fault& f = sc_.faults[fi];
    const int64_t at = Ns(f.at);
    const int64_t until =
        std::min(end_, f.length == absl::InfiniteDuration() ? end_ : at + Ns(f.length));
    const int fault = static_cast<int>(fi);
    auto span = [&](int b, int64_t from, int64_t to) {
      if (from >= end_) return;
      schedule_.push_back({from, b, fault, true});
      if (to < end_) schedule_.push_back({to, b, fault, false});
    };
    for (int b : f.backends) {
      switch (f.kind) {
        case FaultKind::kCrash:
        case FaultKind::kHang:
        case FaultKind::kBrownout: {
          if (!f.recurring) {
            span(b, at, until);
            break;
          }
          Rng rng(StreamSeed(sc_.seed,
                             1000 + static_cast<uint64_t>(fi) * 100003 + static_cast<uint64_t>(b)));
          const double mttf = absl::ToDoubleSeconds(f.mttf);
          const double mttr = absl::ToDoubleSeconds(f.mttr);
          int64_t t = at;
          while (true) {
            t += SecondsToNs(rng.Exponential(mttf));
            if (t >= until) break;
            const int64_t up_at =
                std::min(until, t + std::max<int64_t>(1, SecondsToNs(rng.Exponential(mttr))));
            span(b, t, up_at);
            t = up_at;
          }
          break;
        }
        case FaultKind::kFlap: {
          const int64_t down = Ns(f.down), up = Ns(f.up);
          for (int c = 0; c < f.cycles; ++c) {
            const int64_t from = at + c * (down + up);
            if (from >= until) break;
            span(b, from, std::min(until, from + down));
          }
          break;
        }
        case FaultKind::kZone:
        case FaultKind::kSlowdown:
        case FaultKind::kBlind:
        case FaultKind::kDrain:
          span(b, at, until);
          break;
      }
    }
  }
  std::stable_sort(schedule_.begin(), schedule_.end(),
                   [](const FaultStep& x, const FaultStep& y) { return x.t < y.t; });
  for (size_t i = 0; i < schedule_.size(); ++i) {
    Push(schedule_[i].t, Ev::kFault, static_cast<uint32_t>(i));
  }
  return absl::OkStatus();
}

void Simulation::SetUpTimelines() {
  std::vector<int> plot = sc_.plot_backends;
  if (plot.empty()) {
    // The backends with faults of their own, at most six; else the first three.
    for (const Fault& f : sc_.faults) {
      if (f.kind == FaultKind::kSlowdown) continue;
      for (int b : f.backends) {
        if (std::find(plot.begin(), plot.end(), b) == plot.end()) plot.push_back(b);
      }
    }
    std::sort(plot.begin(), plot.end());
    if (plot.size() > 6) plot.resize(6);
    for (int b = 0; plot.size() < 3 && b < nb_; ++b) {
      if (std::find(plot.begin(), plot.end(), b) == plot.end()) plot.push_back(b);
    }
    std::sort(plot.begin(), plot.end());
  }
  for (int b : plot) {
    backends_[b].timeline = static_cast<int>(r_.timelines.size());
    BackendTimeline tl;
    tl.backend = b;
    tl.key = backends_[b].key;
    r_.timelines.push_back(std::move(tl));
  }
  // Fault spans, merged per backend and kind from the schedule.
  std::vector<std::vector<int64_t>> open(nb_, std::vector<int64_t>(sc_.faults.size(), -1));
  for (const FaultStep& s : schedule_) {
    const int tl = backends_[s.backend].timeline;
    if (tl < 0) continue;
    if (s.start) {
      open[s.backend][s.fault] = s.t;
    } else if (open[s.backend][s.fault] >= 0) {
      r_.timelines[tl].faults.push_back({open[s.backend][s.fault] / 1e9, s.t / 1e9,
                                         std::string(FaultKindName(sc_.faults[s.fault].kind))});
      open[s.backend][s.fault] = -1;
    }
  }
  for (int b = 0; b < nb_; ++b) {
    const int tl = backends_[b].timeline;
    if (tl < 0) continue;
    for (size_t f = 0; f < sc_.faults.size(); ++f) {
      if (open[b][f] >= 0) {
        r_.timelines[tl].faults.push_back(
            {open[b][f] / 1e9, end_ / 1e9, std::string(FaultKindName(sc_.faults[f].kind))});
      }
    }
    std::stable_sort(r_.timelines[tl].faults.begin(), r_.timelines[tl].faults.end(),
                     [](const FaultSpan& x, const FaultSpan& y) { return x.from < y.from; });
  }
}

// ---- Probes and evaluations ---------------------------------------------------

void Simulation::OnProbe(uint32_t slot, int64_t t) {
  Push(t + Ns(sc_.probe_interval), Ev::kProbe, slot);
  const int o = static_cast<int>(slot) / nb_;
  const BackendSim& b = backends_[slot % nb_];
  const int64_t timeout = Ns(sc_.probe_timeout);
  // The probe's outcome as it would be seen from observer o.
  int64_t latency = -1;  // -1: fails at its timeout; -2: refused at once
  if (b.blind[o] > 0 || b.crash_blackhole > 0) {
    latency = -1;
  } else if (b.crash_refuse > 0) {
    latency = -2;
  } else if (b.loss > 0 && probe_rng_.Bernoulli(b.loss)) {
    latency = -1;  // its SYN or request was lost: the retransmission comes too late
  } else if (sc_.probe == ProbeKind::kTcp) {
    latency = rtt_ + SecondsToNs(sc_.accept.Sample(probe_rng_) * b.factor);
  } else if (b.hang > 0) {
    latency = -1;
  } else {
    latency = rtt_ + SecondsToNs(sc_.probe_latency.Sample(probe_rng_) * b.factor);
  }
  if (latency > timeout) latency = -1;
  if (latency >= 0) {
    Push(t + latency, Ev::kProbeOk, slot,
         static_cast<uint32_t>(std::min<int64_t>(latency / 1000, UINT32_MAX)));
  } else {
    Push(latency == -2 ? t + rtt_ : t + timeout, Ev::kProbeFail, slot);
  }
}

absl::Status Simulation::Program(const std::vector<uint32_t>& weights, int64_t t) {
  bool same = !table_.empty();
  for (int i = 0; i < nb_ && same; ++i) same = weights[i] == backends_[i].weight;
  if (same) return absl::OkStatus();
  std::vector<maglev::Backend> in;
  in.reserve(nb_);
  for (int i = 0; i < nb_; ++i) {
    in.push_back(maglev::Backend{static_cast<uint32_t>(i + 1), backends_[i].key, weights[i]});
  }
  auto table = maglev::BuildTable(in, sc_.table_size);
  if (!table.ok()) return table.status();
  std::vector<int32_t> next(table->size());
  uint64_t moved = 0;
  for (size_t s = 0; s < next.size(); ++s) {
    next[s] = static_cast<int32_t>((*table)[s]) - 1;
    if (!table_.empty() && next[s] != table_[s]) ++moved;
  }
  const bool first = table_.empty();
  table_ = std::move(next);
  for (int i = 0; i < nb_; ++i) backends_[i].weight = weights[i];
  if (first) return absl::OkStatus();
  if (t >= warmup_) {
    ++r_.tables;
    r_.slots_moved += moved;
  }
  // Established connections whose slot now points elsewhere: the connection
  // table keeps them where they are.
  for (int i = 0; i < nb_; ++i) {
    for (uint32_t ci : backends_[i].live) {
      Conn& c = conns_[ci];
      if (!c.remapped && table_[c.hash % sc_.table_size] != i) {
        c.remapped = true;
        if (c.measured) ++r_.remapped;
      }
    }
    BackendSim& b = backends_[i];
    if (b.onset_open && !b.steered &&
        static_cast<uint64_t>(b.weight) * 10 <= static_cast<uint64_t>(b.onset_weight) * 7) {
      b.steered = true;
      if (b.onset_counted) r_.steer_s.push_back(static_cast<double>(t - b.onset_t) / 1e9);
    }
  }
  return absl::OkStatus();
}

void Simulation::OnEval(int64_t t) {
  Push(t + Ns(sc_.eval_interval), Ev::kEval);
  const absl::Time now = kEpoch + absl::Nanoseconds(t);
  const bool count = t >= warmup_;
  std::vector<health::Result> results;
  results.reserve(no_);
  for (int o = 0; o < no_; ++o) {
    health::PoolInput in;
    in.pool = "vip";
    in.backends = input_template_;
    for (int i = 0; i < nb_; ++i) {
      health::BackendInput& bi = in.backends[i];
      bi.operator_state = backends_[i].draining > 0 ? health::OperatorState::kDraining
                                                    : health::OperatorState::kActive;
      if (probes_[o][i].has) bi.probe = probes_[o][i].summary;
      if (sc_.passive) bi.counters = counters_[o][i];
      probes_[o][i] = ProbeAccum{};
    }
    auto r = health::Next(states_[o], in, now, sc_.params);
    if (!r.ok()) {
      if (error_.ok()) error_ = r.status();
      return;
    }
    states_[o] = r->state;
    results.push_back(*std::move(r));
  }
  if (count) ++r_.evaluations;
  const health::Result& lead = results[0];
  for (const health::Action& a : lead.actions) {
    r_.action_log.push_back({t / 1e9, std::string(health::ActionKindName(a.kind)), a.backend,
                             a.message, a.inputs_json});
  }
  if (count) {
    for (const health::Action& a : lead.actions) {
      ++r_.actions[std::string(health::ActionKindName(a.kind))];
      if (a.kind != ActionKind::kDemote) continue;
      for (const health::BackendState& s : lead.state.backends) {
        if (s.key == a.backend && !s.flaps.empty() && s.flaps.back() == now) ++r_.flaps;
      }
    }
  }
  std::vector<uint32_t> weights(nb_);
  std::vector<health::ObserverVote> votes(no_);
  for (int i = 0; i < nb_; ++i) {
    BackendSim& b = backends_[i];
    if (no_ == 1) {
      const health::HealthState st = lead.backends[i].state;
      const bool out = st == health::HealthState::kDown || st == health::HealthState::kPinned;
      if (out && !b.out && count) ++r_.taken_out;
      b.out = out;
      weights[i] = lead.backends[i].effective_weight;
      continue;
    }
    for (int o = 0; o < no_; ++o) {
      const health::HealthState st = results[o].backends[i].state;
      votes[o] = st == health::HealthState::kDown || st == health::HealthState::kPinned
                     ? health::ObserverVote::kOut
                     : health::ObserverVote::kInService;
    }
    const health::QuorumVerdict v = health::DecideQuorum(votes);
    const bool out = health::QuorumKeepsOut(b.out, v);
    if (out && !b.out && count) ++r_.taken_out;
    const bool split = v.outcome == health::QuorumOutcome::kSplit;
    if (split && !b.split && count) ++r_.split_views;
    b.split = split;
    b.out = out;
    if (out) {
      weights[i] = 0;
    } else if (v.outcome == health::QuorumOutcome::kInService) {
      weights[i] = lead.backends[i].effective_weight;
    } else {
      weights[i] = b.weight;  // a split view changes nothing
    }
  }
  if (absl::Status s = Program(weights, t); !s.ok() && error_.ok()) error_ = s;
  for (int i = 0; i < nb_; ++i) {
    const int tl = backends_[i].timeline;
    if (tl < 0) continue;
    r_.timelines[tl].points.push_back({t / 1e9, lead.backends[i].score, backends_[i].weight,
                                       static_cast<uint8_t>(lead.backends[i].state)});
  }
}

absl::StatusOr<RunResult> Simulation::Run() {
  r_.scenario = sc_.name;
  r_.variant = sc_.variant;
  r_.seed = sc_.seed;
  r_.duration_s = absl::ToDoubleSeconds(sc_.duration);
  r_.warmup_s = absl::ToDoubleSeconds(sc_.warmup);

  backends_.resize(nb_);
  input_template_.resize(nb_);
  for (int i = 0; i < nb_; ++i) {
    backends_[i].key = absl::StrFormat("be%04d", i);  // sorts like the index
    backends_[i].blind.assign(no_, 0);
    input_template_[i].key = backends_[i].key;
    input_template_[i].nominal_weight = sc_.weight;
  }
  counters_.assign(no_, std::vector<health::CounterSnapshot>(nb_));
  probes_.assign(no_, std::vector<ProbeAccum>(nb_));
  states_.assign(no_, health::PoolState{});
  double total = 0;
  for (const TrafficClass& c : sc_.classes) total += c.share;
  double acc = 0;
  for (const TrafficClass& c : sc_.classes) {
    acc += c.share / total;
    class_cdf_.push_back(acc);
  }

  if (absl::Status s = Program(std::vector<uint32_t>(nb_, sc_.weight), 0); !s.ok()) return s;
  if (absl::Status s = BuildFaultSchedule(); !s.ok()) return s;
  SetUpTimelines();
  Push(0, Ev::kArrival);
  if (sc_.health) {
    const int64_t interval = Ns(sc_.probe_interval);
    for (int o = 0; o < no_; ++o) {
      for (int i = 0; i < nb_; ++i) {
        // The scheduler spreads the first probes over the first interval.
        const int64_t first =
            static_cast<int64_t>(probe_rng_.Uniform01() * static_cast<double>(interval));
        Push(first, Ev::kProbe, static_cast<uint32_t>(o * nb_ + i));
      }
    }
    Push(Ns(sc_.eval_interval), Ev::kEval);
  }

  while (!events_.empty() && error_.ok()) {
    const Event e = events_.top();
    if (e.t >= end_) break;
    events_.pop();
    ++r_.events;
    switch (e.type) {
      case Ev::kArrival:
        OnArrival(e.t);
        break;
      case Ev::kSynRetransmit:
        if (Current(e)) SendSyn(e.a, e.t, /*first=*/false);
        break;
      case Ev::kConnectTimeout:
        if (Current(e)) AttemptFailed(e.a, e.t, Failure::kNew);
        break;
      case Ev::kResponse:
        if (Current(e)) OnResponse(e.a, e.t);
        break;
      case Ev::kRequestTimeout:
        if (Current(e)) OnRequestTimeout(e.a, e.t);
        break;
      case Ev::kClose:
        if (Current(e)) OnClose(e.a);
        break;
      case Ev::kRetry:
        if (Current(e)) StartAttempt(e.a, e.t);
        break;
      case Ev::kProbe:
        OnProbe(e.a, e.t);
        break;
      case Ev::kProbeOk: {
        ProbeAccum& p = probes_[e.a / nb_][e.a % nb_];
        p.has = true;
        ++p.summary.successes;
        p.summary.success_latency_sum += absl::Microseconds(e.b);
        break;
      }
      case Ev::kProbeFail: {
        ProbeAccum& p = probes_[e.a / nb_][e.a % nb_];
        p.has = true;
        ++p.summary.failures;
        break;
      }
      case Ev::kEval:
        OnEval(e.t);
        break;
      case Ev::kFault:
        OnFault(schedule_[e.a], e.t);
        break;
      case Ev::kHangCheck: {
        BackendSim& b = backends_[e.a];
        if (b.hang > 0 && b.hang_epoch == e.b) {
          std::vector<uint32_t> live = b.live;
          for (uint32_t ci : live) {
            if (conns_[ci].state != ConnState::kOpen) continue;
            ++counters_[conns_[ci].router][e.a].client_rsts;
            Broken(ci, false);
          }
        }
        break;
      }
      case Ev::kDrainCheck: {
        BackendSim& b = backends_[e.a];
        // The deadline passed: the data plane re-steers the backend's flows,
        // and the backend they land on answers with RST.
        if (b.draining > 0 && b.drain_epoch == e.b) BreakAll(static_cast<int>(e.a), e.t, true);
        break;
      }
    }
  }
  if (!error_.ok()) return error_;
  // What is left: open connections have not failed; the others are undecided.
  for (const Conn& c : conns_) {
    if (c.state == ConnState::kFree || !c.measured) continue;
    if (c.state == ConnState::kOpen) {
      ++r_.succeeded;
    } else {
      ++r_.unresolved;
    }
  }
  return std::move(r_);
}

}  // namespace internal

namespace {

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  if (rank == 0) rank = 1;
  return v[rank - 1];
}

}  // namespace

absl::StatusOr<RunResult> Run(const Scenario& sc) {
  if (sc.churn.enabled) return internal::RunChurn(sc);
  internal::Simulation e(sc);
  return e.Run();
}

std::vector<std::pair<std::string, double>> Metrics(const RunResult& r) {
  if (r.churn.enabled) return internal::ChurnMetrics(r);
  std::vector<std::pair<std::string, double>> m;
  const uint64_t decided = r.connections - r.unresolved;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  m.emplace_back("success_fraction", decided == 0 ? 0.0 : d(r.succeeded) / d(decided));
  m.emplace_back("connections", d(r.connections));
  m.emplace_back("succeeded", d(r.succeeded));
  m.emplace_back("failed_new", d(r.failed_new));
  m.emplace_back("failed_request", d(r.failed_request));
  m.emplace_back("broken", d(r.broken));
  m.emplace_back("broken_drain", d(r.broken_drain));
  m.emplace_back("unresolved", d(r.unresolved));
  m.emplace_back("attempts", d(r.attempts));
  m.emplace_back("hit_faulty", d(r.hit_faulty));
  m.emplace_back("latency_p50_ms", d(r.latency_ns.Quantile(0.5)) / 1e6);
  m.emplace_back("latency_p90_ms", d(r.latency_ns.Quantile(0.9)) / 1e6);
  m.emplace_back("latency_p99_ms", d(r.latency_ns.Quantile(0.99)) / 1e6);
  m.emplace_back("latency_p999_ms", d(r.latency_ns.Quantile(0.999)) / 1e6);
  m.emplace_back("onsets", d(r.onsets));
  m.emplace_back("steered", d(r.steer_s.size()));
  m.emplace_back("steer_p50_s", Quantile(r.steer_s, 0.5));
  m.emplace_back("steer_p90_s", Quantile(r.steer_s, 0.9));
  m.emplace_back("steer_max_s", Quantile(r.steer_s, 1.0));
  using health::ActionKind;
  for (ActionKind k :
       {ActionKind::kScoreBand, ActionKind::kDemote, ActionKind::kPromote, ActionKind::kRampStep,
        ActionKind::kRampBack, ActionKind::kPin, ActionKind::kRelease, ActionKind::kFreeze,
        ActionKind::kUnfreeze, ActionKind::kDisagreement, ActionKind::kDisagreementCleared}) {
    const std::string name(health::ActionKindName(k));
    auto it = r.actions.find(name);
    m.emplace_back("actions_" + name, it == r.actions.end() ? 0.0 : d(it->second));
  }
  m.emplace_back("flaps", d(r.flaps));
  m.emplace_back("evaluations", d(r.evaluations));
  m.emplace_back("taken_out", d(r.taken_out));
  m.emplace_back("split_views", d(r.split_views));
  m.emplace_back("tables", d(r.tables));
  m.emplace_back("slots_moved", d(r.slots_moved));
  m.emplace_back("remapped", d(r.remapped));
  m.emplace_back("syn_retransmits", d(r.syn_retransmits));
  m.emplace_back("resteered_syns", d(r.resteered_syns));
  m.emplace_back("bounced_syns", d(r.bounced_syns));
  return m;
}

}  // namespace ballast::lbsim
