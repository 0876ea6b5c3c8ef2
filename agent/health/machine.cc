#include "agent/health/machine.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "agent/base/strcat.h"
#include "agent/base/json.h"

namespace ballast::health {
namespace {

using base::AV;

constexpr size_t kProbeLatency = static_cast<size_t>(Signal::kProbeLatencyMs);

// Per-backend scratch of one evaluation.
struct Work {
  const BackendInput* in = nullptr;
  BackendState st;
  int prev_score = 100;
  int prev_steady = 100;  // SteadyScore() before this evaluation
  std::optional<CounterSnapshot> delta;
  bool counter_reset = false;
  absl::Duration interval = absl::ZeroDuration();  // between the two snapshots of `delta`
  PassiveValues passive;
  // Signal values this evaluation (passive + probe latency); nullopt = none.
  std::array<std::optional<double>, kNumSignals> value{};
  std::array<std::optional<SignalComparison>, kNumSignals> cmp{};
  std::array<double, kNumSignals> penalty{};
  std::optional<double> probe_pen;
  std::optional<double> passive_pen;
  double drift_pen = 0;
  // SYNs refused (bounced: no listener) in the interval, and whether they
  // reach Params::refused_demote: certain evidence, demote at once.
  uint64_t refused = 0;
  bool refused_now = false;
  ScoreResult score;
  bool unwell = false;
  uint32_t weight_before = 0;  // this input's weight under the previous applied values
  int good_streak_seen = 0;    // streaks after this evaluation, before any transition reset
  int bad_streak_seen = 0;
  std::vector<Action> actions;  // inputs_json filled at the end
};

std::string FormatPercent(int p) { return absl::StrCat(p, "%"); }

void AddAction(Work& w, ActionKind kind, absl::Time now, const std::string& pool,
               std::string message) {
  Action a;
  a.kind = kind;
  a.at = now;
  a.pool = pool;
  a.backend = w.st.key;
  a.message = std::move(message);
  w.actions.push_back(std::move(a));
}

void PruneFlaps(BackendState& st, absl::Time now, const Params& p) {
  auto& f = st.flaps;
  f.erase(std::remove_if(f.begin(), f.end(), [&](absl::Time t) { return now - t > p.flap_window; }),
          f.end());
}

absl::Duration CooldownFor(size_t flaps, const Params& p) {
  absl::Duration d = p.cooldown_base;
  for (size_t i = 1; i < flaps && d < p.max_cooldown; ++i) d *= 2;
  return std::min(d, p.max_cooldown);
}

base::JsonObject ComparisonJson(const SignalComparison& c, double penalty) {
  base::JsonObject o;
  o.Double("value", c.value);
  if (c.baseline) o.Double("baseline", *c.baseline);
  if (c.peer_median) o.Double("peer_median", *c.peer_median);
  if (c.vs_baseline) o.Double("vs_baseline", *c.vs_baseline);
  if (c.vs_peers) o.Double("vs_peers", *c.vs_peers);
  o.Double("penalty", penalty);
  return o;
}

std::string EvidenceJson(const Work& w, const BackendOutput& out, absl::Time now) {
  const BackendState& st = w.st;
  base::JsonObject o;
  o.Int("score", st.score)
      .Int("previous_score", w.prev_score)
      .Bool("evaluated", w.score.evaluated)
      .String("state", out.state_name)
      .Int("good_streak", w.good_streak_seen)
      .Int("bad_streak", w.bad_streak_seen)
      .Int("ramp_percent", out.ramp_percent)
      .Int("weight_score", out.weight_score)
      .Int("ramp_hold", st.hold)
      .Uint("nominal_weight", w.in->nominal_weight)
      .String("operator_state", OperatorStateName(w.in->operator_state))
      .Uint("effective_weight", out.effective_weight);
  if (w.in->probe) {
    const ProbeSummary& s = *w.in->probe;
    base::JsonObject pr;
    pr.Uint("successes", s.successes).Uint("failures", s.failures);
    if (auto ms = ProbeLatencyMs(s)) pr.Double("latency_ms_mean", *ms);
    // The signal: the median over the last kProbeLatencyWindow evaluations.
    if (w.cmp[kProbeLatency]) {
      pr.Object("latency_ms", ComparisonJson(*w.cmp[kProbeLatency], w.penalty[kProbeLatency]));
    }
    if (w.probe_pen) pr.Double("penalty", *w.probe_pen);
    o.Object("probe", pr);
  }
  if (w.in->counters) {
    base::JsonObject pa;
    if (w.delta) {
      const CounterSnapshot& d = *w.delta;
      base::JsonObject iv;
      iv.Double("ms", absl::ToDoubleMilliseconds(w.interval))
          .Uint("new_flows", d.new_flows)
          .Uint("packets", d.packets)
          .Uint("syn_retransmits", d.syn_retransmits)
          .Uint("client_rsts", d.client_rsts)
          .Uint("handshake_count", d.handshake_count)
          .Uint("first_response_count", d.first_response_count)
          .Uint("refused_syns", d.refused_syns);
      pa.Object("interval", iv);
      base::JsonObject sig;
      for (size_t i = 0; i < kNumPassiveSignals; ++i) {
        auto name = SignalName(static_cast<Signal>(i));
        if (w.cmp[i]) {
          base::JsonObject c = ComparisonJson(*w.cmp[i], w.penalty[i]);
          c.Uint("samples", w.passive.samples[i]);
          sig.Object(name, c);
        } else if (w.value[i]) {
          base::JsonObject c;
          c.Double("value", *w.value[i]).Uint("samples", w.passive.samples[i]);
          sig.Object(name, c);
        }
      }
      pa.Object("signals", sig);
    } else {
      pa.Bool("counter_reset", w.counter_reset);
    }
    if (w.passive_pen) pa.Double("penalty", *w.passive_pen);
    o.Object("passive", pa);
  }
  o.String("disagreement", DisagreementName(w.score.disagreement));
  o.Double("drift_penalty", w.drift_pen);
  o.Uint("flaps_in_window", st.flaps.size());
  if (st.cooldown_until > now)
    o.Int("cooldown_until_unix_ms", absl::ToUnixMillis(st.cooldown_until));
  o.Strings("conditions", out.conditions);
  return o.Build();
}

// Steps 1-3 of the file comment for all backends: values, comparisons, score.
void Observe(std::vector<Work>& work, absl::Time now, const Params& p) {
  for (Work& w : work) {
    if (w.in->counters) {
      if (w.st.last_counters) {
        w.delta = CounterDelta(*w.st.last_counters, *w.in->counters);
        w.counter_reset = !w.delta.has_value();
        w.interval = now - w.st.last_counters_at;
      }
      w.st.last_counters = w.in->counters;
      w.st.last_counters_at = now;
    }
    if (w.delta) {
      w.refused = w.delta->refused_syns;
      w.refused_now = w.refused >= static_cast<uint64_t>(p.refused_demote);
      w.passive = DerivePassive(*w.delta, p, w.interval);
      for (size_t i = 0; i < kNumPassiveSignals; ++i) w.value[i] = w.passive.value[i];
    }
    if (w.in->probe) {
      if (auto ms = ProbeLatencyMs(*w.in->probe)) {
        auto& recent = w.st.recent_probe_ms;
        if (!w.in->probe->carried || recent.empty()) {
          recent.push_back(*ms);
          if (recent.size() > kProbeLatencyWindow)
            recent.erase(recent.begin(), recent.end() - kProbeLatencyWindow);
        }
        w.value[kProbeLatency] = Median(recent);
      }
    }
  }
  // Per signal, every backend's value, sorted: each backend's peer median
  // is then a lookup (PeerMedian), O(N log N) per pool instead of O(N^2).
  std::array<std::vector<double>, kNumSignals> sorted;
  for (size_t s = 0; s < kNumSignals; ++s) {
    for (const Work& w : work) {
      if (w.value[s]) sorted[s].push_back(*w.value[s]);
    }
    std::sort(sorted[s].begin(), sorted[s].end());
  }
  for (Work& w : work) {
    for (size_t s = 0; s < kNumSignals; ++s) {
      if (!w.value[s]) continue;
      const Signal sig = static_cast<Signal>(s);
      SignalComparison c =
          Compare(sig, *w.value[s], w.st.baselines[s], PeerMedian(sorted[s], *w.value[s], p), p);
      if (c.severity) w.penalty[s] = SlowdownPenalty(*c.severity, p);
      if (c.vs_baseline) w.drift_pen = std::max(w.drift_pen, SlowdownPenalty(*c.vs_baseline, p));
      const bool anomalous = c.vs_baseline && *c.vs_baseline > p.slowdown_tolerance;
      w.st.baselines[s] = UpdateBaseline(w.st.baselines[s], *w.value[s], anomalous, p);
      w.cmp[s] = c;
    }
    for (size_t s = 0; s < kNumPassiveSignals; ++s) {
      if (w.cmp[s] && w.cmp[s]->severity) {
        w.passive_pen = std::max(w.passive_pen.value_or(0), w.penalty[s]);
      }
    }
    // Refused SYNs: the traffic's verdict is as bad as it gets, whatever the
    // ratios say (few samples, or none: a dead port completes no handshake).
    if (w.refused_now) w.passive_pen = 100.0;
    if (w.in->probe) {
      std::optional<double> lat_sev;
      if (w.cmp[kProbeLatency]) lat_sev = w.cmp[kProbeLatency]->severity;
      w.probe_pen = ProbePenalty(*w.in->probe, lat_sev, p);
    }
    w.score = ComputeScore(w.probe_pen, w.passive_pen, p);
    if (w.score.evaluated && !(w.probe_pen && w.passive_pen) &&
        w.st.disagreement.direction != Disagreement::kNone) {
      w.score.score = std::min(w.score.score, 100 - p.disagreement_penalty);
    }
    w.prev_score = w.st.score;
    w.prev_steady = SteadyScore(w.st);
    if (w.score.evaluated) {
      w.st.score = w.score.score;
      const auto window = static_cast<size_t>(p.weight_score_window);
      auto push = [window](std::vector<int>& recent, int v) {
        recent.push_back(v);
        if (recent.size() > window) recent.erase(recent.begin(), recent.end() - window);
      };
      push(w.st.recent_scores, w.score.score);
      push(w.st.recent_drift_scores,
           static_cast<int>(std::lround(std::clamp(100.0 - w.drift_pen, 0.0, 100.0))));
      w.st.drift_streak = 100.0 - w.drift_pen < p.good_score ? w.st.drift_streak + 1 : 0;
    }
  }
}

void ScoreBandAction(Work& w, absl::Time now, const std::string& pool, const Params& p) {
  if (!w.score.evaluated) return;
  // The steady score (what the weight uses), so that one noisy evaluation
  // does not write two records.
  const int steady = SteadyScore(w.st);
  const int before = ScoreBand(w.prev_steady, p);
  const int after = ScoreBand(steady, p);
  if (before == after) return;
  AddAction(w, ActionKind::kScoreBand, now, pool,
            absl::StrFormat("score %d (band %d), was %d (band %d)", steady, after, w.prev_steady,
                            before));
}

std::string DisagreementSentence(Disagreement d) {
  switch (d) {
    case Disagreement::kProbePassesTrafficFails:
      return "probes pass but real traffic is degraded";
    case Disagreement::kProbeFailsTrafficHealthy:
      return "probes fail but real traffic is healthy";
    case Disagreement::kNone:
      break;
  }
  return "no disagreement";
}

void DisagreementActions(Work& w, absl::Time now, const std::string& pool, const Params& p) {
  if (!w.score.evaluated) return;
  DisagreementEpisode& ep = w.st.disagreement;
  const Disagreement d = w.score.disagreement;
  auto clear = [&]() {
    if (ep.direction != Disagreement::kNone && ep.alerted) {
      AddAction(w, ActionKind::kDisagreementCleared, now, pool,
                absl::StrCat("disagreement ", AV(DisagreementName(ep.direction)), " ended after ",
                             absl::FormatDuration(now - ep.since)));
    }
    ep = DisagreementEpisode{};
  };
  if (d != Disagreement::kNone) {
    if (ep.direction != d) {
      clear();
      ep.direction = d;
      ep.since = now;
    }
    ep.settled = 0;
    if (!ep.alerted && now - ep.since >= p.disagreement_alert_after) {
      ep.alerted = true;
      AddAction(
          w, ActionKind::kDisagreement, now, pool,
          absl::StrCat("disagreement ", AV(DisagreementName(d)), ": ", DisagreementSentence(d),
                       " for ", absl::FormatDuration(now - ep.since), " (score ", w.st.score, ")"));
    }
  } else if (ep.direction != Disagreement::kNone) {
    if (++ep.settled >= kDisagreementEndAfter) clear();
  }
}

// Takes an in-service backend out (its weight to 0 at this evaluation),
// with the flap accounting of a promotion followed too soon by a demotion:
// a cooldown, and a pin after pin_flaps within pin_window.
void Demote(Work& w, absl::Time now, const std::string& pool, const Params& p, std::string msg) {
  BackendState& st = w.st;
  st.in_service = false;
  st.good_streak = st.bad_streak = st.hold = 0;
  const bool flap = st.last_promotion && now - *st.last_promotion <= p.flap_window;
  if (flap) {
    st.flaps.push_back(now);
    const size_t n = st.flaps.size();
    const absl::Duration cd = CooldownFor(n, p);
    st.cooldown_until = now + cd;
    absl::StrAppend(&msg, "; flap ", n, " within ", absl::FormatDuration(p.flap_window),
                    " of a promotion, cooldown ", absl::FormatDuration(cd));
    const auto in_pin = std::count_if(st.flaps.begin(), st.flaps.end(),
                                      [&](absl::Time t) { return now - t <= p.pin_window; });
    AddAction(w, ActionKind::kDemote, now, pool, std::move(msg));
    if (in_pin >= p.pin_flaps) {
      st.pinned = true;
      AddAction(w, ActionKind::kPin, now, pool,
                absl::StrFormat("pinned out after %d flaps within %s; it stays at weight 0 "
                                "until `lbctl backend release`",
                                static_cast<int>(in_pin), absl::FormatDuration(p.pin_window)));
    }
  } else {
    AddAction(w, ActionKind::kDemote, now, pool, std::move(msg));
  }
}

// Dead, not slow: every probe that finished in this evaluation failed, or
// the data plane saw SYNs refused (refused_demote).
bool LooksDead(const Work& w) {
  const std::optional<ProbeSummary>& probe = w.in->probe;
  return w.refused_now || (probe && probe->successes == 0 && probe->failures > 0);
}

std::string RefusedMessage(const Work& w, const Params& p) {
  return absl::StrFormat("%d SYNs refused in one evaluation (no listener; refused_demote %d)",
                         static_cast<int>(std::min<uint64_t>(w.refused, 1u << 30)),
                         p.refused_demote);
}

void Transition(Work& w, absl::Time now, const std::string& pool, const Params& p) {
  BackendState& st = w.st;
  if (w.score.evaluated) {
    if (st.score >= p.good_score) {
      ++st.good_streak;
      st.bad_streak = 0;
    } else if (st.score < p.bad_score) {
      ++st.bad_streak;
      st.good_streak = 0;
    } else {
      st.good_streak = 0;
      st.bad_streak = 0;
    }
  }
  w.good_streak_seen = st.good_streak;
  w.bad_streak_seen = st.bad_streak;
  if (st.pinned) return;
  const size_t last = p.ramp_percents.size() - 1;
  if (st.in_service) {
    if (st.bad_streak >= p.demote_after || w.refused_now) {
      const int streak = st.bad_streak;
      Demote(w, now, pool, p,
             streak >= p.demote_after
                 ? absl::StrFormat("demoted after %d consecutive bad evaluations (score %d)",
                                   streak, st.score)
                 : absl::StrCat("demoted at once: ", RefusedMessage(w, p)));
      return;
    }
    if (st.ramp_step < last && w.score.evaluated) {
      if (SteadyScore(st) < p.ramp_sag_score) {
        st.hold = 0;
        if (st.ramp_step > 0) {
          const int from = p.ramp_percents[st.ramp_step];
          --st.ramp_step;
          AddAction(
              w, ActionKind::kRampBack, now, pool,
              absl::StrFormat("ramp %s -> %s: score %d stayed below %d for %d evaluations",
                              FormatPercent(from), FormatPercent(p.ramp_percents[st.ramp_step]),
                              SteadyScore(st), p.ramp_sag_score, p.weight_score_window));
        }
      } else if (++st.hold >= p.ramp_hold) {
        const int from = p.ramp_percents[st.ramp_step];
        ++st.ramp_step;
        st.hold = 0;
        AddAction(w, ActionKind::kRampStep, now, pool,
                  absl::StrFormat("ramp %s -> %s after %d evaluations without a sag (score %d)",
                                  FormatPercent(from), FormatPercent(p.ramp_percents[st.ramp_step]),
                                  p.ramp_hold, st.score));
      }
    }
    return;
  }
  // Down. A backend nothing probes gets no data while down (no traffic):
  // each evaluation without data counts towards a trial, so that a backend
  // its traffic demoted is not left out for good. A trial that fails is a
  // flap like any other (cooldown, then pinned at pin_flaps).
  const bool trial = w.in->unprobed && !w.score.evaluated;
  if (trial) {
    ++st.good_streak;
    w.good_streak_seen = st.good_streak;
  }
  if ((w.score.evaluated || trial) && st.good_streak >= p.promote_after &&
      now >= st.cooldown_until) {
    const int streak = st.good_streak;
    st.in_service = true;
    st.ramp_step = 0;
    st.hold = 0;
    st.good_streak = st.bad_streak = 0;
    st.last_promotion = now;
    AddAction(w, ActionKind::kPromote, now, pool,
              trial ? absl::StrFormat("promoted for a trial after %d evaluations without data: "
                                      "nothing probes it, so only its traffic can show that it "
                                      "recovered; weight at %s of nominal",
                                      streak, FormatPercent(p.ramp_percents[0]))
                    : absl::StrFormat("promoted after %d consecutive good evaluations (score %d); "
                                      "weight at %s of nominal",
                                      streak, st.score, FormatPercent(p.ramp_percents[0])));
  }
}

std::vector<std::string> Conditions(const Work& w, bool frozen, absl::Time now, const Params& p) {
  std::vector<std::string> c;
  const BackendInput& in = *w.in;
  if (in.operator_state != OperatorState::kActive) {
    c.emplace_back(OperatorStateName(in.operator_state));
  }
  if (in.nominal_weight == 0) c.emplace_back("nominal_zero");
  if (in.probe && in.probe->failures > 0) c.emplace_back("probe_failures");
  if (w.penalty[kProbeLatency] > 0) c.emplace_back("probe_latency_ms_high");
  for (size_t i = 0; i < kNumPassiveSignals; ++i) {
    if (w.penalty[i] > 0)
      c.push_back(absl::StrCat(AV(SignalName(static_cast<Signal>(i))), "_high"));
  }
  if (w.refused > 0) c.emplace_back("refused_syns");
  if (w.counter_reset) c.emplace_back("counter_reset");
  if (w.delta && !w.passive.any()) c.emplace_back("low_traffic");
  if (!w.score.evaluated) c.emplace_back("no_data");
  if (w.st.disagreement.direction != Disagreement::kNone) {
    c.push_back(absl::StrCat("disagreement:", AV(DisagreementName(w.st.disagreement.direction))));
  }
  if (100.0 - w.drift_pen < p.good_score) c.emplace_back("drift_from_baseline");
  if (!w.st.in_service && !w.st.pinned && w.st.cooldown_until > now) c.emplace_back("cooldown");
  if (frozen) c.emplace_back("frozen");
  return c;
}

}  // namespace

std::string_view HealthStateName(HealthState s) {
  switch (s) {
    case HealthState::kHealthy:
      return "healthy";
    case HealthState::kDegraded:
      return "degraded";
    case HealthState::kRamping:
      return "ramping";
    case HealthState::kDown:
      return "down";
    case HealthState::kPinned:
      return "pinned";
  }
  return "unknown";
}

int SteadyScore(const BackendState& b) {
  if (b.recent_scores.empty()) return b.score;
  return *std::max_element(b.recent_scores.begin(), b.recent_scores.end());
}

int SteadyDriftScore(const BackendState& b) {
  if (b.recent_drift_scores.empty()) return 100;
  return *std::max_element(b.recent_drift_scores.begin(), b.recent_drift_scores.end());
}

HealthState StateOf(const BackendState& b, const Params& p) {
  if (b.pinned) return HealthState::kPinned;
  if (!b.in_service) return HealthState::kDown;
  if (b.ramp_step + 1 < p.ramp_percents.size()) return HealthState::kRamping;
  if (b.score < p.good_score) return HealthState::kDegraded;
  return HealthState::kHealthy;
}

BackendState NewBackendState(std::string key, const Params& p) {
  BackendState b;
  b.key = std::move(key);
  b.in_service = true;
  b.score = 100;
  b.ramp_step = p.new_backend_start == NewBackendStart::kRamping ? 0 : p.ramp_percents.size() - 1;
  b.applied_in_service = true;
  b.applied_ramp_percent = p.ramp_percents[b.ramp_step];
  b.applied_weight_score = 100;
  return b;
}

absl::StatusOr<Result> Next(const PoolState& prev, const PoolInput& input, absl::Time now,
                            const Params& p) {
  std::map<std::string_view, const BackendState*> old;
  for (const BackendState& b : prev.backends) old[b.key] = &b;

  std::vector<Work> work(input.backends.size());
  {
    std::map<std::string_view, size_t> seen;
    for (size_t i = 0; i < input.backends.size(); ++i) {
      const BackendInput& in = input.backends[i];
      if (in.key.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("pool ", input.pool, ": backend ", i, " has an empty key"));
      }
      if (!seen.emplace(in.key, i).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("pool ", input.pool, ": backend ", in.key, " appears twice in the input"));
      }
      work[i].in = &in;
      auto it = old.find(in.key);
      work[i].st = it != old.end() ? *it->second : NewBackendState(in.key, p);
      PruneFlaps(work[i].st, now, p);
      // Params may change between calls: keep the ramp step in range.
      work[i].st.ramp_step = std::min(work[i].st.ramp_step, p.ramp_percents.size() - 1);
      const BackendState& st = work[i].st;
      work[i].weight_before =
          EffectiveWeight(in.operator_state, in.nominal_weight, st.applied_in_service,
                          st.applied_ramp_percent, st.applied_weight_score);
    }
  }

  Observe(work, now, p);
  for (Work& w : work) w.st.down_streak = LooksDead(w) ? w.st.down_streak + 1 : 0;

  Result r;
  r.state.pool = input.pool;
  r.state.frozen = prev.frozen;
  r.state.frozen_since = prev.frozen_since;
  r.state.clear_streak = prev.clear_streak;
  r.state.relearn_hold = prev.relearn_hold;

  for (Work& w : work) {
    ScoreBandAction(w, now, input.pool, p);
    DisagreementActions(w, now, input.pool, p);
  }

  // Fleet guard.
  std::vector<std::string> unwell_keys;
  int drifting = 0;
  // Eligible backends that look dead now (for demotions while frozen,
  // below). Counted like `unwell`: any refused SYN, so that servers killed
  // at once, whose refusals do not all reach the threshold in the same
  // evaluation, are all counted.
  int looking_dead = 0;
  for (Work& w : work) {
    const bool eligible =
        w.in->operator_state == OperatorState::kActive && w.in->nominal_weight > 0;
    if (!eligible) continue;
    ++r.eligible;
    // The steady score, like the weight: one noisy evaluation of a healthy
    // backend must not freeze a pool in which another backend really died.
    // Any refused SYN counts, below refused_demote too: a serving backend
    // refuses none, and when every server dies at once their refusals do
    // not all reach the threshold in the same evaluation.
    w.unwell =
        SteadyScore(w.st) < p.good_score || SteadyDriftScore(w.st) < p.good_score || w.refused > 0;
    if (w.unwell) {
      ++r.unwell;
      unwell_keys.push_back(w.st.key);
    }
    if (LooksDead(w) || w.refused > 0) ++looking_dead;
    // Started drifting from its own baseline in this evaluation or the one
    // before. Noise does this to a few backends at a time, a fleet-wide
    // slowdown to most of them at once (milliseconds apart, so possibly
    // across two evaluations): counted on its own, it freezes at the first
    // evaluation of a slowdown, before any weight has moved. A backend that
    // has drifted for longer is not an onset: it counts as unwell above, and
    // counting it here too would let it plus one noisy peer freeze a pool
    // of three.
    if (w.score.evaluated && w.st.drift_streak >= 1 && w.st.drift_streak <= 2) ++drifting;
  }
  auto above = [&](int n) {
    return r.eligible > 0 && int64_t{n} * 100 > int64_t{p.fleet_guard_percent} * r.eligible;
  };
  const bool over = above(r.unwell) || above(drifting);
  auto guard_json = [&](const std::vector<std::string>& weights_restored) {
    base::JsonObject scores;
    for (const Work& w : work) {
      if (w.in->operator_state == OperatorState::kActive && w.in->nominal_weight > 0) {
        scores.Int(w.st.key, w.st.score);
      }
    }
    base::JsonObject o;
    o.Int("unwell", r.unwell)
        .Int("drifting_now", drifting)
        .Int("eligible", r.eligible)
        .Int("fleet_guard_percent", p.fleet_guard_percent)
        .Strings("unwell_backends", unwell_keys);
    if (!weights_restored.empty()) o.Strings("weights_restored", weights_restored);
    o.Object("scores", scores);
    return o.Build();
  };
  std::vector<Action> pool_actions;
  if (!r.state.frozen && over) {
    r.state.frozen = true;
    r.state.frozen_since = now;
    r.state.clear_streak = 0;
    std::vector<std::string> restored;
    for (Work& w : work) {
      if (w.st.applied_weight_score != w.st.prev_applied_weight_score) {
        w.st.applied_weight_score = w.st.prev_applied_weight_score;
        restored.push_back(w.st.key);
      }
    }
    std::string inputs = guard_json(restored);
    pool_actions.push_back(Action{
        ActionKind::kFreeze, now, input.pool, "",
        absl::StrFormat("fleet-wide degradation: %d of %d eligible backends unwell, %d "
                        "drifting from their baselines now (more than %d%%); weights frozen, "
                        "no automated changes in this pool%s",
                        r.unwell, r.eligible, drifting, p.fleet_guard_percent,
                        restored.empty() ? ""
                                         : absl::StrCat("; the last weight change of ",
                                                        absl::StrJoin(restored, ", "), " undone")),
        std::move(inputs)});
  } else if (r.state.frozen) {
    if (over) {
      r.state.clear_streak = 0;
    } else if (++r.state.clear_streak >= p.unfreeze_after && r.state.relearn_hold == 0) {
      pool_actions.push_back(
          Action{ActionKind::kUnfreeze, now, input.pool, "",
                 absl::StrFormat("fleet guard cleared: %d of %d eligible backends unwell for %d "
                                 "evaluations; automated changes resume after %s frozen",
                                 r.unwell, r.eligible, r.state.clear_streak,
                                 absl::FormatDuration(now - r.state.frozen_since)),
                 guard_json({})});
      r.state.frozen = false;
      r.state.frozen_since = absl::InfinitePast();
      r.state.clear_streak = 0;
    }
  }
  if (r.state.relearn_hold > 0) --r.state.relearn_hold;
  r.frozen = r.state.frozen;

  // A freeze holds weights because a pool-wide change makes the backends'
  // scores against their baselines and peers meaningless. A backend that
  // answers no probe (or refuses SYNs) while its peers answer is dead, not
  // slower than they are, and moving its traffic helps: it is demoted even
  // in a frozen pool, unless more than fleet_guard_percent of the pool looks
  // dead (the prober's own path is the likelier fault; moving cannot help).
  auto dead = [&](const Work& w) { return w.st.down_streak >= p.demote_after || w.refused_now; };
  const bool demote_dead = r.state.frozen && !above(looking_dead);

  for (Work& w : work) {
    if (r.state.frozen) {
      w.st.good_streak = w.st.bad_streak = w.st.hold = 0;
      if (demote_dead && w.st.in_service && !w.st.pinned && dead(w)) {
        Demote(w, now, input.pool, p,
               absl::StrFormat(
                   "demoted although the pool is frozen: %s; %d of %d eligible backends look dead",
                   w.refused_now ? RefusedMessage(w, p)
                                 : absl::StrFormat("every probe failed for %d evaluations in a row",
                                                   w.st.down_streak),
                   looking_dead, r.eligible));
        w.st.applied_in_service = false;
      }
    } else {
      Transition(w, now, input.pool, p);
      w.st.applied_in_service = w.st.in_service;
      w.st.applied_ramp_percent = p.ramp_percents[w.st.ramp_step];
      w.st.prev_applied_weight_score = w.st.applied_weight_score;
      w.st.applied_weight_score = NextWeightScore(w.st.applied_weight_score, SteadyScore(w.st), p);
    }
  }

  // Outputs, evidence, actions in order: per-backend observation and
  // transition actions grouped by backend in input order, pool actions first.
  r.actions = std::move(pool_actions);
  r.backends.reserve(work.size());
  for (Work& w : work) {
    BackendOutput out;
    out.key = w.st.key;
    out.score = w.st.score;
    out.evaluated = w.score.evaluated;
    out.state = StateOf(w.st, p);
    out.state_name = HealthStateName(out.state);
    out.ramp_percent = w.st.applied_ramp_percent;
    out.weight_score = w.st.applied_weight_score;
    out.effective_weight =
        EffectiveWeight(w.in->operator_state, w.in->nominal_weight, w.st.applied_in_service,
                        w.st.applied_ramp_percent, w.st.applied_weight_score);
    out.conditions = Conditions(w, r.state.frozen, now, p);
    if (!w.actions.empty() || out.effective_weight != w.weight_before) {
      out.evidence_json = EvidenceJson(w, out, now);
    }
    for (Action& a : w.actions) {
      a.inputs_json = out.evidence_json;
      r.actions.push_back(std::move(a));
    }
    r.backends.push_back(std::move(out));
  }

  r.state.backends.reserve(work.size());
  for (Work& w : work) r.state.backends.push_back(std::move(w.st));
  std::sort(r.state.backends.begin(), r.state.backends.end(),
            [](const BackendState& a, const BackendState& b) { return a.key < b.key; });
  return r;
}

absl::StatusOr<ReleaseResult> Release(const PoolState& prev, std::string_view backend,
                                      absl::Time now, const Params& p) {
  ReleaseResult r{prev, {}};
  auto it = std::find_if(r.state.backends.begin(), r.state.backends.end(),
                         [&](const BackendState& b) { return b.key == backend; });
  if (it == r.state.backends.end()) {
    return absl::NotFoundError(
        absl::StrCat("pool ", prev.pool, ": no backend ", AV(backend), " to release"));
  }
  if (!it->pinned) {
    return absl::FailedPreconditionError(absl::StrCat(
        "pool ", prev.pool, ": backend ", AV(backend), " is not pinned (state ",
        AV(HealthStateName(StateOf(*it, p))), "); only a pinned backend can be released"));
  }
  const size_t flaps = it->flaps.size();
  it->pinned = false;
  it->in_service = false;
  it->flaps.clear();
  it->cooldown_until = absl::InfinitePast();
  it->last_promotion.reset();
  it->good_streak = it->bad_streak = it->hold = 0;
  it->ramp_step = 0;

  base::JsonObject o;
  o.Int("score", it->score).Uint("flaps_forgotten", flaps).String("state", "down");
  r.action = Action{ActionKind::kRelease,
                    now,
                    prev.pool,
                    std::string(backend),
                    absl::StrFormat("released by the operator: now down, promoted again after %d "
                                    "consecutive good evaluations",
                                    p.promote_after),
                    o.Build()};
  return r;
}

}  // namespace ballast::health
