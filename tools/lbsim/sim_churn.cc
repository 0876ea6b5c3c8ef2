#include "tools/lbsim/sim_churn.h"

#include <algorithm>
#include <map>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ballast_abi.h"
#include "tools/lbsim/churn_agent.h"
#include "tools/lbsim/rng.h"
#include "tools/lbsim/sim_engine.h"

namespace ballast::lbsim::internal {

namespace {

constexpr int64_t kOn = INT64_MAX;  // Entry::left: the connection is on that router now

int64_t EpochMs() { return absl::ToUnixMillis(kEpoch); }
int64_t UnixMs(int64_t t) { return EpochMs() + t / 1000000; }

struct Snapshot {
  int64_t t = 0;
  ProgrammedTable p;
};

// One change of a router's routing state.
struct Step {
  enum Kind : uint8_t { kWithdraw = 0, kAnnounce, kDie, kRevive };
  int64_t t = 0;
  int router = 0;
  Kind kind = kWithdraw;
  bool flush = false;
};

enum class CState : uint8_t { kPending = 0, kOpen, kReset, kCut };

struct CConn {
  uint64_t mhash = 0;  // the flow hash the Maglev slot comes from
  uint64_t ehash = 0;  // the ToR's ECMP hash (another function of the 5-tuple)
  int64_t start = 0;
  int64_t phase = 0;   // its packets: opened + phase + k * packet_interval
  int64_t opened = 0;  // when its handshake completed
  int64_t stall_from = -1;
  int32_t backend = -1;
  int32_t router = -1;
  uint32_t gen = 0;
  int syn_tries = 0;
  CState state = CState::kPending;
  bool moved = false;
  bool stalled = false;
};

struct Entry {
  int32_t backend = -1;
  int64_t left = kOn;
};

enum class CEv : uint8_t { kSnapshot = 0, kStep, kSyn, kPacket };
struct CEvent {
  int64_t t;
  uint64_t seq;
  uint32_t a;
  uint32_t b;
  CEv type;
};
struct CLater {
  bool operator()(const CEvent& x, const CEvent& y) const {
    return x.t != y.t ? x.t > y.t : x.seq > y.seq;
  }
};

// The figures both passes share (from the one with the mechanism).
struct Common {
  uint64_t established = 0;
  uint64_t moved = 0;
  uint64_t slot_changed = 0;
  uint64_t stalled = 0;
  int64_t stall_max = 0;
  uint64_t router_changes = 0;
  std::vector<ActionRecord> log;
};

class Pass {
 public:
  Pass(const Scenario& sc, const std::vector<Snapshot>& snaps, const std::vector<Step>& steps,
       std::vector<CConn> conns, bool esc)
      : sc_(sc),
        ch_(sc.churn),
        snaps_(snaps),
        steps_(steps),
        conns_(std::move(conns)),
        esc_(esc),
        end_(Ns(sc.duration)),
        interval_(Ns(sc.churn.packet_interval)),
        ecmp_(sc.churn.ecmp, sc.churn.routers) {}

  void Run(ChurnOutcome* out, Common* common);

 private:
  void Push(int64_t t, CEv type, uint32_t a = 0, uint32_t b = 0) {
    if (t < end_) events_.push(CEvent{t, seq_++, a, b, type});
  }
  void OnSnapshot(size_t i, int64_t t);
  void OnStep(const Step& s, int64_t t);
  void OnSyn(uint32_t ci, int64_t t);
  void OnPacket(uint32_t ci, int64_t t);
  void Reroute(int64_t t);
  void StallStart(CConn& c, int64_t t);
  void StallEnd(CConn& c, int64_t t);
  bool Usable(int b, int64_t t) const { return b >= 0 && cur_->p.backends[b].Usable(UnixMs(t)); }
  // bounce.h esc_next: the backend after `at` in `chain` that can take the
  // flow (not `at`, not a repeat of the pick), or -1.
  int EscNext(const int chain[], int at, int64_t t) const;
  int64_t NextPacket(const CConn& c, int64_t t) const {
    const int64_t base = c.opened + c.phase;
    if (t <= base) return base;
    return base + (t - base + interval_ - 1) / interval_ * interval_;
  }

  const Scenario& sc_;
  const ChurnSpec& ch_;
  const std::vector<Snapshot>& snaps_;
  const std::vector<Step>& steps_;
  std::vector<CConn> conns_;
  const bool esc_;
  const int64_t end_;
  const int64_t interval_;
  Ecmp ecmp_;
  const Snapshot* cur_ = nullptr;
  std::vector<bool> announced_;
  std::vector<bool> dead_;
  std::vector<std::vector<Entry>> entries_;  // [router][connection]
  std::priority_queue<CEvent, std::vector<CEvent>, CLater> events_;
  uint64_t seq_ = 0;
  ChurnOutcome out_;
  Common common_;
};

void Pass::StallStart(CConn& c, int64_t t) {
  if (c.stall_from >= 0) return;
  c.stall_from = t;
  if (!c.stalled) {
    c.stalled = true;
    ++common_.stalled;
  }
}

void Pass::StallEnd(CConn& c, int64_t t) {
  if (c.stall_from < 0) return;
  common_.stall_max = std::max(common_.stall_max, t - c.stall_from);
  c.stall_from = -1;
}

void Pass::OnSnapshot(size_t i, int64_t t) {
  const Snapshot* prev = cur_;
  cur_ = &snaps_[i];
  // A backend no longer usable (a drain deadline passed, removed): its
  // flows are re-steered by the table and the backend they reach resets
  // them, whatever router they are on.
  for (CConn& c : conns_) {
    if (c.state != CState::kOpen || Usable(c.backend, t)) continue;
    c.state = CState::kCut;
    const DataplaneBackend& was = prev->p.backends[c.backend];
    if (was.configured && was.state == BALLAST_BACKEND_DRAINING) {
      ++out_.cut_drain;
    } else {
      ++out_.cut_removed;
    }
  }
}

void Pass::OnStep(const Step& s, int64_t t) {
  const std::vector<bool> before = announced_;
  std::string what;
  switch (s.kind) {
    case Step::kWithdraw:
      announced_[s.router] = false;
      what = "withdraws the VIP";
      break;
    case Step::kAnnounce:
      announced_[s.router] = true;
      what = "announces the VIP";
      break;
    case Step::kDie:
      dead_[s.router] = true;
      what = "dies (its packets are lost until it is withdrawn)";
      for (CConn& c : conns_) {
        if (c.state == CState::kOpen && c.router == s.router) StallStart(c, t);
      }
      break;
    case Step::kRevive:
      dead_[s.router] = false;
      announced_[s.router] = true;
      what = "is back and announces the VIP";
      break;
  }
  if (s.flush) {
    for (Entry& e : entries_[s.router]) e = Entry{};
    what += "; its connection table is lost";
  }
  std::vector<std::string> on;
  for (int r = 0; r < ch_.routers; ++r) {
    if (announced_[r]) on.push_back(absl::StrCat(r));
  }
  common_.log.push_back({t / 1e9, "router", absl::StrCat("r", s.router),
                         absl::StrCat("router ", s.router, " ", what, " (announcing: ",
                                      on.empty() ? "none" : absl::StrJoin(on, ", "), ")"),
                         ""});
  if (announced_ != before) {
    ++common_.router_changes;
    Reroute(t);
  }
}

void Pass::Reroute(int64_t t) {
  ecmp_.Set(announced_);
  for (uint32_t i = 0; i < conns_.size(); ++i) {
    CConn& c = conns_[i];
    if (c.state != CState::kOpen) continue;
    const int r = ecmp_.Route(c.ehash);
    if (r == c.router) continue;
    if (c.router >= 0) {
      Entry& e = entries_[c.router][i];
      if (e.backend >= 0 && e.left == kOn) e.left = t;
    }
    c.router = r;
    ++c.gen;
    if (r < 0 || dead_[r]) {
      StallStart(c, t);
      continue;
    }
    Push(NextPacket(c, t), CEv::kPacket, i, c.gen);
  }
}

void Pass::OnSyn(uint32_t ci, int64_t t) {
  CConn& c = conns_[ci];
  const int r = ecmp_.Route(c.ehash);
  const int pick = cur_->p.table.empty() ? -1 : cur_->p.table[c.mhash % cur_->p.table.size()];
  if (r < 0 || dead_[r] || pick < 0) {
    // Lost (no route, a dead router) or dropped (no backend): the client
    // retransmits after 1 s, 2 s, 4 s ...
    const int64_t rto = Ns(sc_.syn_rto) << std::min(c.syn_tries, 20);
    ++c.syn_tries;
    Push(t + rto, CEv::kSyn, ci);
    return;
  }
  c.state = CState::kOpen;
  c.backend = pick;
  c.router = r;
  c.opened = t;
  entries_[r][ci] = Entry{pick, kOn};
  ++common_.established;
}

int Pass::EscNext(const int chain[], int at, int64_t t) const {
  int pos = -1;
  for (int i = 0; i <= BALLAST_HISTORY_DEPTH; ++i) {
    if (pos < 0 && chain[i] == at) pos = i;
  }
  for (int i = 0; i <= BALLAST_HISTORY_DEPTH; ++i) {
    const int b = chain[i];
    if (i <= pos || b < 0 || b == at || (i > 0 && b == chain[0])) continue;
    if (Usable(b, t)) return b;
  }
  return -1;
}

void Pass::OnPacket(uint32_t ci, int64_t t) {
  CConn& c = conns_[ci];
  const int r = c.router;
  if (r < 0 || dead_[r]) return;
  StallEnd(c, t);
  Entry& e = entries_[r][ci];
  if (e.backend >= 0 && (e.left == kOn || t - e.left <= Ns(ch_.tcp_idle))) {
    e.left = kOn;  // the router holds the flow: its recorded backend
    return;
  }
  // No entry: adopted on the table's current pick.
  ++out_.adopted;
  if (!c.moved) {
    c.moved = true;
    ++common_.moved;
  }
  const ProgrammedTable& p = cur_->p;
  const uint32_t slot = static_cast<uint32_t>(c.mhash % p.table.size());
  const int pick = p.table[slot];
  e = Entry{pick, kOn};
  if (pick == c.backend) return;
  bool saved = false;
  uint64_t hops = 0;
  if (esc_ && pick >= 0) {
    int chain[BALLAST_HISTORY_DEPTH + 1];
    chain[0] = pick;
    bool marked = false;  // esc_history_differs
    for (int i = 0; i < BALLAST_HISTORY_DEPTH; ++i) {
      chain[i + 1] = p.HistoryAt(slot, i);
      marked = marked || (chain[i + 1] >= 0 && chain[i + 1] != pick);
    }
    // The pick has no socket and bounces the packet; the router moves the
    // flow along the chain, one hop per bounce.
    for (int at = pick; marked;) {
      if (at == c.backend) {
        saved = true;
        break;
      }
      const int next = hops < BALLAST_ESC_HOPS_MAX ? EscNext(chain, at, t) : -1;
      ++hops;
      if (next < 0) break;  // back to the pick, unmarked: its RST
      at = next;
    }
  }
  if (saved) {
    e.backend = c.backend;
    ++out_.saved;
    out_.hops += hops;
    out_.hops_max = std::max(out_.hops_max, hops);
    return;
  }
  c.state = CState::kReset;
  ++out_.reset;
}

void Pass::Run(ChurnOutcome* out, Common* common) {
  announced_.assign(ch_.routers, false);
  dead_.assign(ch_.routers, false);
  for (int r : ch_.announcing) announced_[r] = true;
  entries_.assign(ch_.routers, std::vector<Entry>(conns_.size()));
  ecmp_.Set(announced_);
  cur_ = &snaps_[0];
  for (size_t i = 1; i < snaps_.size(); ++i) Push(snaps_[i].t, CEv::kSnapshot, i);
  for (size_t i = 0; i < steps_.size(); ++i) Push(steps_[i].t, CEv::kStep, i);
  for (uint32_t i = 0; i < conns_.size(); ++i) Push(conns_[i].start, CEv::kSyn, i);
  while (!events_.empty()) {
    const CEvent e = events_.top();
    events_.pop();
    switch (e.type) {
      case CEv::kSnapshot:
        OnSnapshot(e.a, e.t);
        break;
      case CEv::kStep:
        OnStep(steps_[e.a], e.t);
        break;
      case CEv::kSyn:
        OnSyn(e.a, e.t);
        break;
      case CEv::kPacket:
        if (conns_[e.a].state == CState::kOpen && conns_[e.a].gen == e.b) OnPacket(e.a, e.t);
        break;
    }
  }
  const ProgrammedTable& last = cur_->p;
  for (CConn& c : conns_) {
    if (c.state == CState::kOpen) ++out_.open_at_end;
    if (c.state == CState::kOpen && c.stall_from >= 0) StallEnd(c, end_);
    if (c.state != CState::kPending && last.table[c.mhash % last.table.size()] != c.backend) {
      ++common_.slot_changed;
    }
  }
  *out = out_;
  if (common != nullptr) *common = std::move(common_);
}

std::string Indices(const std::vector<int>& v) { return absl::StrJoin(v, ","); }

std::string DescribeChange(const TableChange& c) {
  const std::string who =
      absl::StrCat(c.backends.size() > 1 ? "backends " : "backend ", Indices(c.backends));
  switch (c.kind) {
    case TableChangeKind::kWeight:
      return absl::StrCat(who, ": weight ", c.weight);
    case TableChangeKind::kAdd:
      return c.weight == 0 ? absl::StrCat(who, " added")
                           : absl::StrCat(who, " added (weight ", c.weight, ")");
    case TableChangeKind::kRemove:
      return absl::StrCat(who, " removed");
    case TableChangeKind::kDrain:
      return absl::StrCat(who, " drained (deadline ", absl::FormatDuration(c.deadline), ")");
    case TableChangeKind::kUndrain:
      return absl::StrCat(who, " undrained");
  }
  return who;
}

}  // namespace

absl::StatusOr<RunResult> RunChurn(const Scenario& sc) {
  const ChurnSpec& ch = sc.churn;
  const int64_t end = Ns(sc.duration);
  RunResult r;
  r.scenario = sc.name;
  r.variant = sc.variant;
  r.seed = sc.seed;
  r.duration_s = absl::ToDoubleSeconds(sc.duration);
  r.warmup_s = 0;

  // The agent's commits, and what every router programs after each.
  std::vector<Snapshot> snaps;
  auto agent = VipAgent::Create(sc.backends, sc.weight, ch.absent, sc.table_size, EpochMs());
  if (!agent.ok()) return agent.status();
  snaps.push_back({0, agent->programmed()});
  std::multimap<int64_t, int> evictions;  // deadline -> backend, in drain order
  auto commit = [&](int64_t t, const std::string& what) {
    const ProgrammedTable& p = agent->programmed();
    snaps.push_back({t, p});
    if (p.slots_moved > 0) {
      ++r.tables;
      r.slots_moved += p.slots_moved;
    }
    r.action_log.push_back(
        {t / 1e9, "table", "",
         absl::StrFormat(
             "%s: %d slots moved (%.2f%%); versions kept: %d", what, p.slots_moved,
             100.0 * static_cast<double>(p.slots_moved) / static_cast<double>(p.table.size()),
             p.versions),
         ""});
  };
  auto evict_until = [&](int64_t limit, bool inclusive) -> absl::Status {
    while (!evictions.empty()) {
      auto it = evictions.begin();
      if (it->first > limit || (!inclusive && it->first == limit)) break;
      const int64_t t = it->first;
      const int b = it->second;
      evictions.erase(it);
      auto done = agent->Evict(b, UnixMs(t));
      if (!done.ok()) return done.status();
      if (*done) commit(t, absl::StrCat("backend ", b, " evicted (its drain deadline passed)"));
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < ch.table_changes.size(); ++i) {
    const TableChange& c = ch.table_changes[i];
    const int64_t t = Ns(c.at);
    if (t >= end) break;
    if (absl::Status s = evict_until(t, true); !s.ok()) return s;
    if (absl::Status s = agent->Apply(c, UnixMs(t)); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("table_changes[", i, "] (", DescribeChange(c), " at ",
                                       absl::FormatDuration(c.at), "): ", s.message()));
    }
    commit(t, DescribeChange(c));
    if (c.kind == TableChangeKind::kDrain) {
      for (int b : c.backends) evictions.emplace(t + Ns(c.deadline), b);
    }
  }
  if (absl::Status s = evict_until(end, false); !s.ok()) return s;
  if (snaps.back().p.table.empty()) return absl::InternalError("no table");

  // The routers' steps.
  std::vector<Step> steps;
  for (const RouterEvent& e : ch.router_events) {
    const int64_t t = Ns(e.at);
    switch (e.kind) {
      case RouterEventKind::kWithdraw:
        steps.push_back({t, e.router, Step::kWithdraw, e.flush});
        break;
      case RouterEventKind::kAnnounce:
        steps.push_back({t, e.router, Step::kAnnounce, e.flush});
        break;
      case RouterEventKind::kRestart:
        steps.push_back({t, e.router, Step::kWithdraw, false});
        steps.push_back({t + Ns(e.down), e.router, Step::kAnnounce, e.flush});
        break;
      case RouterEventKind::kDead:
        steps.push_back({t, e.router, Step::kDie, false});
        steps.push_back({t + Ns(e.detect), e.router, Step::kWithdraw, e.flush});
        break;
      case RouterEventKind::kRevive:
        steps.push_back({t, e.router, Step::kRevive, e.flush});
        break;
    }
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const Step& a, const Step& b) { return a.t < b.t; });

  // The population: each connection's own draws.
  std::vector<CConn> conns(ch.connections);
  const uint64_t base = StreamSeed(sc.seed, 7);
  for (int i = 0; i < ch.connections; ++i) {
    FlowRng rng(StreamSeed(base, static_cast<uint64_t>(i)));
    CConn& c = conns[i];
    c.mhash = rng.Bits();
    c.ehash = rng.Bits();
    c.start = SecondsToNs(ch.start.Sample(rng));
    c.phase = static_cast<int64_t>(rng.Uniform01() * static_cast<double>(Ns(ch.packet_interval)));
  }

  Common common;
  Pass without(sc, snaps, steps, conns, /*esc=*/false);
  without.Run(&r.churn.without, nullptr);
  Pass with(sc, snaps, steps, std::move(conns), /*esc=*/true);
  with.Run(&r.churn.with, &common);

  ChurnResult& cr = r.churn;
  cr.enabled = true;
  cr.routers = ch.routers;
  cr.ecmp = std::string(EcmpModeName(ch.ecmp));
  cr.connections = static_cast<uint64_t>(ch.connections);
  cr.established = common.established;
  cr.moved = common.moved;
  cr.slot_changed = common.slot_changed;
  cr.stalled = common.stalled;
  cr.stall_max_s = static_cast<double>(common.stall_max) / 1e9;
  cr.router_changes = common.router_changes;
  cr.versions = snaps.back().p.versions;
  cr.table_size = static_cast<uint32_t>(snaps.back().p.table.size());
  for (size_t s = 0; s < snaps.back().p.table.size(); ++s) {
    if (snaps.back().p.table[s] != snaps.front().p.table[s]) ++cr.slots_changed;
  }
  r.connections = cr.connections;
  r.total_connections = cr.connections;
  for (ActionRecord& a : common.log) r.action_log.push_back(std::move(a));
  std::stable_sort(r.action_log.begin(), r.action_log.end(),
                   [](const ActionRecord& a, const ActionRecord& b) { return a.t < b.t; });
  return r;
}

}  // namespace ballast::lbsim::internal
