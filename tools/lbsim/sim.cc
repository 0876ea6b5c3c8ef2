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
#include "bpf/include/ballast_flow_hash.h"

namespace ballast::lbsim {

namespace {

using health::ActionKind;

constexpr int64_t kNs = 1000000000;
// A handshake under way is forgotten this long after its latest SYN (the
// data plane's syn_idle default); a later SYN then counts as a new flow.
constexpr int64_t kSynIdleNs = 5 * kNs;
// Simulated time 0 as the health logic sees it (any fixed instant works).
const absl::Time kEpoch = absl::FromUnixSeconds(1800000000);

int64_t Ns(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return INT64_MAX / 4;
  return absl::ToInt64Nanoseconds(d);
}
int64_t SecondsToNs(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

enum class Ev : uint8_t {
  kArrival = 0,     // a new logical connection
  kSynRetransmit,   // a = conn, b = gen
  kConnectTimeout,  // a = conn, b = gen
  kResponse,        // a = conn, b = gen
  kRequestTimeout,  // a = conn, b = gen
  kClose,           // a = conn, b = gen
  kRetry,           // a = conn, b = gen
  kProbe,           // a = observer * backends + backend
  kProbeOk,         // a = as kProbe, b = latency in microseconds
  kProbeFail,       // a = as kProbe
  kEval,
  kFault,       // a = index into the fault schedule
  kHangCheck,   // a = backend, b = hang epoch
  kDrainCheck,  // a = backend, b = drain epoch
};

struct Event {
  int64_t t;
  uint64_t seq;
  uint32_t a;
  uint32_t b;
  Ev type;
};
struct Later {
  bool operator()(const Event& x, const Event& y) const {
    return x.t != y.t ? x.t > y.t : x.seq > y.seq;
  }
};

enum class ConnState : uint8_t { kFree = 0, kSynSent, kAwaitResponse, kOpen, kRetryWait };
enum class Failure : uint8_t { kNew = 0, kRequest };

struct Conn {
  FlowRng rng;  // this connection's own draws
  uint64_t hash = 0;
  int64_t logical_start = 0;
  int64_t first_syn = 0;
  int64_t flow_start = 0;
  int64_t last_syn = 0;
  int64_t req_start = 0;
  int32_t backend = -1;
  uint32_t gen = 0;
  uint32_t live_pos = 0;
  uint8_t cls = 0;
  uint8_t syn_count = 0;
  uint8_t retries_left = 0;
  uint8_t router = 0;
  ConnState state = ConnState::kFree;
  bool measured = false;
  bool waiting = false;     // its request is stuck on a hung server
  bool remapped = false;    // counted in RunResult::remapped
  bool hit_faulty = false;  // counted in RunResult::hit_faulty
};

// One step of the fault schedule.
struct FaultStep {
  int64_t t;
  int backend;
  int fault;  // index into Scenario::faults
  bool start;
};

struct BackendSim {
  std::string key;
  int crash_refuse = 0;
  int crash_blackhole = 0;
  int hang = 0;
  int draining = 0;
  int bad = 0;  // active faults of its own that should steer traffic away
  uint32_t hang_epoch = 0;
  uint32_t drain_epoch = 0;
  std::vector<std::pair<int, std::pair<double, double>>> slow;  // fault -> (factor, loss)
  double factor = 1.0;
  double loss = 0.0;
  std::vector<int> blind;      // per observer
  std::vector<uint32_t> live;  // connections past their handshake
  uint32_t weight = 0;         // in the current table
  bool out = false;            // quorum: out of service
  bool split = false;          // quorum: in a split-view episode
  bool onset_open = false;
  bool onset_counted = false;
  bool steered = false;
  int64_t onset_t = 0;
  uint32_t onset_weight = 0;
  int timeline = -1;  // index into RunResult::timelines, or -1
};

struct ProbeAccum {
  health::ProbeSummary summary;
  bool has = false;
};

class Engine {
 public:
  explicit Engine(const Scenario& sc)
      : sc_(sc),
        traffic_rng_(StreamSeed(sc.seed, 1)),
        probe_rng_(StreamSeed(sc.seed, 2)),
        end_(Ns(sc.duration)),
        warmup_(Ns(sc.warmup)),
        rtt_(Ns(sc.rtt)),
        nb_(sc.backends),
        no_(sc.observers) {}

  absl::StatusOr<RunResult> Run();

 private:
  void Push(int64_t t, Ev type, uint32_t a = 0, uint32_t b = 0) {
    events_.push(Event{t, seq_++, a, b, type});
  }
  bool Current(const Event& e) const {
    const Conn& c = conns_[e.a];
    return c.state != ConnState::kFree && c.gen == e.b;
  }

  // Setup.
  absl::Status BuildFaultSchedule();
  void SetUpTimelines();

  // Traffic.
  void OnArrival(int64_t t);
  void StartAttempt(uint32_t ci, int64_t t);
  void SendSyn(uint32_t ci, int64_t t, bool first);
  void SynLost(uint32_t ci, int64_t t);
  void OnResponse(uint32_t ci, int64_t t);
  void OnRequestTimeout(uint32_t ci, int64_t t);
  void OnClose(uint32_t ci);
  void AttemptFailed(uint32_t ci, int64_t t, Failure why);
  void Broken(uint32_t ci, bool drain);
  void Succeed(uint32_t ci);
  void Free(uint32_t ci);
  uint32_t NewConn();
  void AddLive(uint32_t ci, int b);
  void RemoveLive(uint32_t ci);
  int Pick(uint64_t hash) const { return table_.empty() ? -1 : table_[hash % sc_.table_size]; }
  // Where a SYN goes after `last` did not take it, `first` being the
  // table's pick (bpf/lib/conntrack.h maglev_next_choice): the second and
  // third choices are the first two other backends at the table's slots
  // ballast_choice_hash(hash, seed) for seeds 1..BALLAST_CHOICE_SEEDS (the
  // data plane's own function); after first the second, after the second
  // the third, else first.
  int NextChoice(uint64_t hash, int first, int last) const;
  int64_t ServiceTime(Conn& c, const BackendSim& b);

  // Faults.
  void OnFault(const FaultStep& s, int64_t t);
  void Recompute(BackendSim& b);
  void BreakAll(int bi, int64_t t, bool drain);
  void StartHang(int bi, int64_t t);
  void EndHang(int bi, int64_t t);
  void UpdateOnset(int bi, int64_t t, bool was_bad);

  // Health.
  void OnProbe(uint32_t slot, int64_t t);
  void OnEval(int64_t t);
  absl::Status Program(const std::vector<uint32_t>& weights, int64_t t);

  const Scenario& sc_;
  Rng traffic_rng_;
  Rng probe_rng_;
  const int64_t end_;
  const int64_t warmup_;
  const int64_t rtt_;
  const int nb_;
  const int no_;

  std::priority_queue<Event, std::vector<Event>, Later> events_;
  uint64_t seq_ = 0;
  std::vector<Conn> conns_;
  std::vector<uint32_t> free_;
  std::vector<BackendSim> backends_;
  std::vector<FaultStep> schedule_;
  std::vector<int32_t> table_;  // backend index per slot, -1 = none
  std::vector<double> class_cdf_;

  // Per observer (router): counters and probes per backend; the machine.
  std::vector<std::vector<health::CounterSnapshot>> counters_;
  std::vector<std::vector<ProbeAccum>> probes_;
  std::vector<health::PoolState> states_;
  std::vector<health::BackendInput> input_template_;

  RunResult r_;
  absl::Status error_;
};

absl::Status Engine::BuildFaultSchedule() {
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

void Engine::SetUpTimelines() {
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

// ---- Connections ------------------------------------------------------------

uint32_t Engine::NewConn() {
  uint32_t ci;
  if (!free_.empty()) {
    ci = free_.back();
    free_.pop_back();
  } else {
    ci = static_cast<uint32_t>(conns_.size());
    conns_.emplace_back();
  }
  Conn& c = conns_[ci];
  const uint32_t gen = c.gen + 1;
  c = Conn{};
  c.gen = gen;
  return ci;
}

void Engine::Free(uint32_t ci) {
  Conn& c = conns_[ci];
  if (c.state == ConnState::kAwaitResponse || c.state == ConnState::kOpen) RemoveLive(ci);
  c.state = ConnState::kFree;
  ++c.gen;
  free_.push_back(ci);
}

void Engine::AddLive(uint32_t ci, int b) {
  std::vector<uint32_t>& live = backends_[b].live;
  conns_[ci].live_pos = static_cast<uint32_t>(live.size());
  live.push_back(ci);
}

void Engine::RemoveLive(uint32_t ci) {
  std::vector<uint32_t>& live = backends_[conns_[ci].backend].live;
  const uint32_t pos = conns_[ci].live_pos;
  const uint32_t last = live.back();
  live[pos] = last;
  conns_[last].live_pos = pos;
  live.pop_back();
}

void Engine::OnArrival(int64_t t) {
  // The next arrival first, so the traffic stream does not depend on what
  // happens to this connection.
  Push(t + std::max<int64_t>(1, SecondsToNs(traffic_rng_.Exponential(1.0 / sc_.rate))),
       Ev::kArrival);
  const uint32_t ci = NewConn();
  Conn& c = conns_[ci];
  c.logical_start = t;
  c.measured = t >= warmup_;
  c.retries_left = static_cast<uint8_t>(sc_.retries);
  const double u = traffic_rng_.Uniform01();
  c.cls = 0;
  while (c.cls + 1u < class_cdf_.size() && u >= class_cdf_[c.cls]) ++c.cls;
  c.rng = FlowRng(traffic_rng_.Bits());
  ++r_.total_connections;
  if (c.measured) ++r_.connections;
  StartAttempt(ci, t);
}

void Engine::StartAttempt(uint32_t ci, int64_t t) {
  Conn& c = conns_[ci];
  c.hash = c.rng.Bits();  // a new 5-tuple (source port)
  c.router = static_cast<uint8_t>((c.hash >> 40) % static_cast<uint64_t>(no_));
  c.first_syn = t;
  c.syn_count = 0;
  c.backend = -1;
  c.state = ConnState::kSynSent;
  if (c.measured) ++r_.attempts;
  SendSyn(ci, t, /*first=*/true);
}

int64_t Engine::ServiceTime(Conn& c, const BackendSim& b) {
  double s = sc_.classes[c.cls].latency.Sample(c.rng) * b.factor;
  int64_t ns = SecondsToNs(s) + rtt_;
  if (b.loss > 0 && c.rng.Bernoulli(b.loss)) ns += Ns(sc_.loss_penalty);
  return ns;
}

int Engine::NextChoice(uint64_t hash, int first, int last) const {
  int second = -1, third = -1;
  for (uint32_t seed = 1; seed <= BALLAST_CHOICE_SEEDS; ++seed) {
    const int id = Pick(ballast_choice_hash(static_cast<uint32_t>(hash), seed));
    if (id < 0 || id == first || id == second) continue;
    if (second < 0) {
      second = id;
      continue;
    }
    third = id;
    break;
  }
  if (last == first) return second >= 0 ? second : first;
  if (last == second) return third >= 0 ? third : first;
  return first;
}

// A SYN reaches the data plane (bpf/lib/conntrack.h conntrack_select).
void Engine::SendSyn(uint32_t ci, int64_t t, bool first) {
  Conn& c = conns_[ci];
  std::vector<health::CounterSnapshot>& ctr = counters_[c.router];
  const bool flow_alive = !first && c.backend >= 0 && t - c.last_syn <= kSynIdleNs;
  if (!flow_alive) {
    // A new flow: the table's pick.
    c.backend = Pick(c.hash);
    if (c.backend >= 0) {
      ++ctr[c.backend].new_flows;
      ++ctr[c.backend].packets;
      c.flow_start = t;
    }
  } else {
    // A retransmitted SYN: counted against the backend that did not answer;
    // it follows the current table unless re-steering is off.
    ++ctr[c.backend].syn_retransmits;
    ++ctr[c.backend].packets;
    if (c.measured) ++r_.syn_retransmits;
    const int first = Pick(c.hash);
    if (sc_.second_chance && first >= 0) {
      // The client's retransmission (syn_rto is above syn_retry_ms): the
      // next choice after the backend that did not answer.
      const int next = NextChoice(c.hash, first, c.backend);
      if (next != c.backend) {
        c.backend = next;
        c.flow_start = t;
        ++ctr[c.backend].new_flows;
        if (c.measured) ++r_.resteered_syns;
      }
    } else if (sc_.resteer) {
      const int now_pick = first;
      if (now_pick >= 0 && now_pick != c.backend) {
        c.backend = now_pick;
        c.flow_start = t;
        ++ctr[c.backend].new_flows;
        if (c.measured) ++r_.resteered_syns;
      }
    }
  }
  c.last_syn = t;
  int bounces = 0;                           // second-chance bounces of this SYN
  if (c.backend < 0) return SynLost(ci, t);  // no backend: nothing answers

  if (backends_[c.backend].bad > 0 && !c.hit_faulty) {
    c.hit_faulty = true;
    if (c.measured) ++r_.hit_faulty;
  }
  while (backends_[c.backend].crash_refuse > 0) {
    const int first = Pick(c.hash);
    if (!sc_.second_chance || bounces >= BALLAST_BOUNCES_MAX || first < 0) {
      // The host answers RST straight to the client (DSR: the data plane
      // sees no ACK, so the handshake stays incomplete).
      return AttemptFailed(ci, t + rtt_, Failure::kNew);
    }
    // Second chance: the host bounces the SYN back to its router (half a
    // round trip each way), which sends it to the next choice; with no
    // other choice, back to the same host as its last hop.
    ++ctr[c.backend].refused_syns;
    const int next = NextChoice(c.hash, first, c.backend);
    bounces = next == c.backend ? BALLAST_BOUNCES_MAX : bounces + 1;
    c.backend = next;
    ++ctr[c.backend].packets;
    if (c.measured) ++r_.bounced_syns;
    t += rtt_;
  }
  BackendSim& b = backends_[c.backend];
  if (b.crash_blackhole > 0 || (b.loss > 0 && c.rng.Bernoulli(b.loss))) {
    return SynLost(ci, t);
  }
  // Handshake: SYN-ACK to the client, its ACK back through the data plane.
  const int64_t hs = rtt_ + SecondsToNs(sc_.accept.Sample(c.rng) * b.factor);
  const int64_t ack = t + hs;
  ++ctr[c.backend].handshake_count;
  ctr[c.backend].handshake_ns_sum += static_cast<uint64_t>(ack - c.flow_start);
  ctr[c.backend].packets += 2;
  c.state = ConnState::kAwaitResponse;
  c.req_start = ack;
  AddLive(ci, c.backend);
  const int64_t timeout = ack + Ns(sc_.request_timeout);
  if (b.hang > 0) {
    c.waiting = true;
    return Push(timeout, Ev::kRequestTimeout, ci, c.gen);
  }
  const int64_t answer = ack + ServiceTime(c, b);
  if (answer > timeout) return Push(timeout, Ev::kRequestTimeout, ci, c.gen);
  Push(answer, Ev::kResponse, ci, c.gen);
}

void Engine::SynLost(uint32_t ci, int64_t t) {
  Conn& c = conns_[ci];
  (void)t;
  // SYNs at first_syn + rto * (2^k - 1), k = 1, 2, ...
  const int64_t rto = Ns(sc_.syn_rto);
  const int k = c.syn_count + 1;
  const int64_t next = k >= 30 ? INT64_MAX / 4 : c.first_syn + rto * ((int64_t{1} << k) - 1);
  const int64_t give_up = c.first_syn + Ns(sc_.connect_timeout);
  if (next >= give_up) return Push(give_up, Ev::kConnectTimeout, ci, c.gen);
  ++c.syn_count;
  Push(next, Ev::kSynRetransmit, ci, c.gen);
}

void Engine::OnResponse(uint32_t ci, int64_t t) {
  Conn& c = conns_[ci];
  health::CounterSnapshot& ctr = counters_[c.router][c.backend];
  ++ctr.first_response_count;
  ctr.first_response_ns_sum += static_cast<uint64_t>(t - c.req_start);
  ctr.packets += 2;
  if (c.measured) r_.latency_ns.Add(static_cast<uint64_t>(t - c.logical_start));
  c.state = ConnState::kOpen;
  c.waiting = false;
  const int64_t life = SecondsToNs(sc_.classes[c.cls].lifetime.Sample(c.rng));
  Push(t + std::max<int64_t>(1, life), Ev::kClose, ci, c.gen);
}

void Engine::OnRequestTimeout(uint32_t ci, int64_t t) {
  Conn& c = conns_[ci];
  // The client gives up and resets the connection.
  ++counters_[c.router][c.backend].client_rsts;
  ++counters_[c.router][c.backend].packets;
  AttemptFailed(ci, t, Failure::kRequest);
}

void Engine::OnClose(uint32_t ci) { Succeed(ci); }

void Engine::Succeed(uint32_t ci) {
  if (conns_[ci].measured) ++r_.succeeded;
  Free(ci);
}

void Engine::Broken(uint32_t ci, bool drain) {
  if (conns_[ci].measured) {
    ++r_.broken;
    if (drain) ++r_.broken_drain;
  }
  Free(ci);
}

void Engine::AttemptFailed(uint32_t ci, int64_t t, Failure why) {
  Conn& c = conns_[ci];
  if (c.retries_left > 0) {
    --c.retries_left;
    if (c.state == ConnState::kAwaitResponse || c.state == ConnState::kOpen) RemoveLive(ci);
    c.state = ConnState::kRetryWait;
    ++c.gen;
    Push(t + Ns(sc_.retry_backoff), Ev::kRetry, ci, c.gen);
    return;
  }
  if (c.measured) {
    if (why == Failure::kNew) {
      ++r_.failed_new;
    } else {
      ++r_.failed_request;
    }
  }
  Free(ci);
}

// ---- Faults -------------------------------------------------------------------

void Engine::Recompute(BackendSim& b) {
  b.factor = 1.0;
  double keep = 1.0;
  for (const auto& [f, fl] : b.slow) {
    b.factor *= fl.first;
    keep *= 1.0 - fl.second;
  }
  b.loss = 1.0 - keep;
}

// Every connection past its handshake on backend bi ends: the ones still
// waiting for their answer failed (and may retry), the answered ones broke.
void Engine::BreakAll(int bi, int64_t t, bool drain) {
  std::vector<uint32_t> live = backends_[bi].live;  // copy: Free() edits it
  for (uint32_t ci : live) {
    if (conns_[ci].state == ConnState::kAwaitResponse) {
      AttemptFailed(ci, t, Failure::kRequest);
    } else {
      Broken(ci, drain);
    }
  }
}

void Engine::StartHang(int bi, int64_t t) {
  BackendSim& b = backends_[bi];
  ++b.hang_epoch;
  for (uint32_t ci : b.live) {
    Conn& c = conns_[ci];
    if (c.state != ConnState::kAwaitResponse || c.waiting) continue;
    c.waiting = true;
    ++c.gen;  // the scheduled answer will not come
    Push(std::max(t, c.req_start + Ns(sc_.request_timeout)), Ev::kRequestTimeout, ci, c.gen);
  }
  // Answered connections stall; their clients give up after request_timeout.
  Push(t + Ns(sc_.request_timeout), Ev::kHangCheck, static_cast<uint32_t>(bi), b.hang_epoch);
}

void Engine::EndHang(int bi, int64_t t) {
  BackendSim& b = backends_[bi];
  ++b.hang_epoch;
  for (uint32_t ci : b.live) {
    Conn& c = conns_[ci];
    if (!c.waiting) continue;
    c.waiting = false;
    const int64_t timeout = c.req_start + Ns(sc_.request_timeout);
    const int64_t answer = t + ServiceTime(c, b);
    if (answer >= timeout) continue;  // its timeout event stands
    ++c.gen;
    Push(answer, Ev::kResponse, ci, c.gen);
  }
}

void Engine::UpdateOnset(int bi, int64_t t, bool was_bad) {
  BackendSim& b = backends_[bi];
  const bool bad = b.bad > 0;
  if (!was_bad && bad) {
    b.onset_open = b.weight > 0;
    b.onset_t = t;
    b.onset_weight = b.weight;
    b.steered = false;
    b.onset_counted = b.onset_open && t >= warmup_;
    if (b.onset_counted) ++r_.onsets;
  } else if (was_bad && !bad) {
    b.onset_open = false;
  }
}

void Engine::OnFault(const FaultStep& s, int64_t t) {
  const Fault& f = sc_.faults[s.fault];
  BackendSim& b = backends_[s.backend];
  const int d = s.start ? 1 : -1;
  const bool was_bad = b.bad > 0;
  switch (f.kind) {
    case FaultKind::kCrash:
    case FaultKind::kFlap:
    case FaultKind::kZone: {
      const bool was_down = b.crash_refuse + b.crash_blackhole > 0;
      (f.mode == CrashMode::kRefuse ? b.crash_refuse : b.crash_blackhole) += d;
      b.bad += d;
      if (s.start && !was_down) BreakAll(s.backend, t, false);
      break;
    }
    case FaultKind::kHang: {
      const bool was_hung = b.hang > 0;
      b.hang += d;
      b.bad += d;
      if (!was_hung && b.hang > 0) StartHang(s.backend, t);
      if (was_hung && b.hang == 0) EndHang(s.backend, t);
      break;
    }
    case FaultKind::kBrownout:
    case FaultKind::kSlowdown:
      if (s.start) {
        b.slow.push_back({s.fault, {f.latency_factor, f.loss}});
      } else {
        for (size_t i = 0; i < b.slow.size(); ++i) {
          if (b.slow[i].first == s.fault) {
            b.slow.erase(b.slow.begin() + static_cast<std::ptrdiff_t>(i));
            break;
          }
        }
      }
      if (f.kind == FaultKind::kBrownout) b.bad += d;
      Recompute(b);
      break;
    case FaultKind::kBlind:
      b.blind[f.observer] += d;
      break;
    case FaultKind::kDrain: {
      b.draining += d;
      ++b.drain_epoch;
      if (s.start && b.draining == 1) {
        Push(t + Ns(f.deadline), Ev::kDrainCheck, static_cast<uint32_t>(s.backend), b.drain_epoch);
      }
      // An operator's drain is programmed at once (lbctl backend drain).
      std::vector<uint32_t> w(nb_);
      for (int i = 0; i < nb_; ++i) w[i] = backends_[i].weight;
      w[s.backend] = b.draining > 0 ? 0 : (sc_.health ? w[s.backend] : sc_.weight);
      if (b.draining > 0 || !sc_.health) {
        if (absl::Status st = Program(w, t); !st.ok() && error_.ok()) error_ = st;
      }
      break;
    }
  }
  UpdateOnset(s.backend, t, was_bad);
}

// ---- Probes and evaluations ---------------------------------------------------

void Engine::OnProbe(uint32_t slot, int64_t t) {
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

absl::Status Engine::Program(const std::vector<uint32_t>& weights, int64_t t) {
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

void Engine::OnEval(int64_t t) {
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

absl::StatusOr<RunResult> Engine::Run() {
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

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  if (rank == 0) rank = 1;
  return v[rank - 1];
}

}  // namespace

absl::StatusOr<RunResult> Run(const Scenario& sc) {
  Engine e(sc);
  return e.Run();
}

std::vector<std::pair<std::string, double>> Metrics(const RunResult& r) {
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
