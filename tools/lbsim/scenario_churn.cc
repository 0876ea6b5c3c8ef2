#include "tools/lbsim/scenario_churn.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace ballast::lbsim {

std::string_view EcmpModeName(EcmpMode m) {
  switch (m) {
    case EcmpMode::kHashThreshold:
      return "hash_threshold";
    case EcmpMode::kModulo:
      return "modulo";
    case EcmpMode::kResilient:
      return "resilient";
  }
  return "?";
}

std::string_view TableChangeKindName(TableChangeKind k) {
  switch (k) {
    case TableChangeKind::kWeight:
      return "weight";
    case TableChangeKind::kAdd:
      return "add";
    case TableChangeKind::kRemove:
      return "remove";
    case TableChangeKind::kDrain:
      return "drain";
    case TableChangeKind::kUndrain:
      return "undrain";
  }
  return "?";
}

std::string_view RouterEventKindName(RouterEventKind k) {
  switch (k) {
    case RouterEventKind::kWithdraw:
      return "withdraw";
    case RouterEventKind::kAnnounce:
      return "announce";
    case RouterEventKind::kRestart:
      return "restart";
    case RouterEventKind::kDead:
      return "dead";
    case RouterEventKind::kRevive:
      return "revive";
  }
  return "?";
}

namespace internal {
namespace {

// The agent's weight range (config.proto Backend.weight).
constexpr int kMaxAgentWeight = 1000;

absl::Status ReadTableChange(const YAML::Node& n, const std::string& where, const Scenario& sc,
                             TableChange* c) {
  MapReader m(n, where);
  std::string kind;
  m.String("kind", &kind);
  bool found = false;
  for (TableChangeKind k :
       {TableChangeKind::kWeight, TableChangeKind::kAdd, TableChangeKind::kRemove,
        TableChangeKind::kDrain, TableChangeKind::kUndrain}) {
    if (kind == TableChangeKindName(k)) {
      c->kind = k;
      found = true;
    }
  }
  if (!found) {
    m.Fail("kind", absl::StrCat("'", kind,
                                "' is not a table change (weight, add, remove, drain, undrain)"));
    return m.status();
  }
  m.Duration("at", &c->at, absl::ZeroDuration());
  if (!m.Has("backends")) {
    m.Fail("backends", "missing (a list of indices, ranges a-b, or all)");
    return m.status();
  }
  m.Merge(ReadBackendSet(m.Get("backends"), m.Path("backends"), sc.backends, &c->backends));
  int w = 0;
  if (c->kind == TableChangeKind::kWeight) {
    if (!m.Has("weight")) m.Fail("weight", "missing");
    m.Int("weight", &w, 0, kMaxAgentWeight);
  } else if (c->kind == TableChangeKind::kAdd) {
    m.Int("weight", &w, 0, kMaxAgentWeight);
  } else if (c->kind == TableChangeKind::kDrain) {
    m.Duration("deadline", &c->deadline, absl::Seconds(1), absl::Hours(24 * 7));
  }
  c->weight = static_cast<uint32_t>(w);
  return m.Finish();
}

absl::Status ReadRouterEvent(const YAML::Node& n, const std::string& where, const ChurnSpec& ch,
                             RouterEvent* e) {
  MapReader m(n, where);
  std::string kind;
  m.String("kind", &kind);
  bool found = false;
  for (RouterEventKind k :
       {RouterEventKind::kWithdraw, RouterEventKind::kAnnounce, RouterEventKind::kRestart,
        RouterEventKind::kDead, RouterEventKind::kRevive}) {
    if (kind == RouterEventKindName(k)) {
      e->kind = k;
      found = true;
    }
  }
  if (!found) {
    m.Fail("kind", absl::StrCat("'", kind,
                                "' is not a router event (withdraw, announce, restart, dead, "
                                "revive)"));
    return m.status();
  }
  m.Duration("at", &e->at, absl::ZeroDuration());
  if (!m.Has("router")) m.Fail("router", "missing (a router index)");
  m.Int("router", &e->router, 0, ch.routers - 1);
  e->detect = ch.detect;
  if (e->kind == RouterEventKind::kRestart) {
    m.Duration("down", &e->down, absl::Milliseconds(1), absl::Hours(24));
  } else if (e->kind == RouterEventKind::kDead) {
    m.Duration("detect", &e->detect, absl::ZeroDuration(), absl::Hours(1));
  }
  m.Bool("flush", &e->flush);
  return m.Finish();
}

}  // namespace

// The router-churn sections of the root map `m` (ChurnSpec).
absl::Status ReadChurn(MapReader& m, Scenario* sc) {
  ChurnSpec& ch = sc->churn;
  ch.enabled = m.Has("routers");
  const bool any = m.Has("long_lived") || m.Has("table_changes") || m.Has("router_events");
  if (!ch.enabled) {
    if (any || !ch.absent.empty()) {
      return absl::InvalidArgumentError(
          "routers: missing (long_lived, table_changes, router_events and backends.absent "
          "belong to the router-churn model, which a routers section turns on)");
    }
    return absl::OkStatus();
  }
  if (!sc->faults.empty()) {
    return absl::InvalidArgumentError(
        "faults: the router-churn model (routers) has no faults; use table_changes and "
        "router_events");
  }
  if (sc->weight > static_cast<uint32_t>(kMaxAgentWeight)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backends.weight: ", sc->weight, " is above the agent's ", kMaxAgentWeight));
  }
  {
    MapReader r(m.Get("routers"), "routers");
    r.Int("count", &ch.routers, 1, 64);
    std::string ecmp(EcmpModeName(ch.ecmp));
    r.String("ecmp", &ecmp);
    bool found = false;
    for (EcmpMode e : {EcmpMode::kHashThreshold, EcmpMode::kModulo, EcmpMode::kResilient}) {
      if (ecmp == EcmpModeName(e)) {
        ch.ecmp = e;
        found = true;
      }
    }
    if (!found) {
      r.Fail("ecmp", absl::StrCat("'", ecmp, "' is not hash_threshold, modulo or resilient"));
    }
    r.Duration("detect", &ch.detect, absl::ZeroDuration(), absl::Hours(1));
    r.Duration("tcp_idle", &ch.tcp_idle, absl::Seconds(1), absl::Hours(24));
    ch.announcing.clear();
    if (r.Has("announcing") && r.status().ok()) {
      r.Merge(
          ReadBackendSet(r.Get("announcing"), "routers.announcing", ch.routers, &ch.announcing));
    } else {
      for (int i = 0; i < ch.routers; ++i) ch.announcing.push_back(i);
    }
    if (absl::Status s = r.Finish(); !s.ok()) {
      // ReadBackendSet names backends; here they are routers.
      return absl::InvalidArgumentError(
          absl::StrReplaceAll(s.message(), {{"backend ", "router "}, {"backends ", "routers "}}));
    }
  }
  {
    MapReader l(m.Get("long_lived"), "long_lived");
    l.Int("count", &ch.connections, 1, 10000000);
    l.Dist("start", &ch.start);
    l.Duration("packet_interval", &ch.packet_interval, absl::Milliseconds(1), absl::Seconds(600));
    if (absl::Status s = l.Finish(); !s.ok()) return s;
  }
  if (m.Has("table_changes")) {
    const YAML::Node cs = m.Get("table_changes");
    if (!cs.IsSequence()) return absl::InvalidArgumentError("table_changes: expected a list");
    for (size_t i = 0; i < cs.size(); ++i) {
      TableChange c;
      if (absl::Status s = ReadTableChange(cs[i], absl::StrCat("table_changes[", i, "]"), *sc, &c);
          !s.ok()) {
        return s;
      }
      ch.table_changes.push_back(std::move(c));
    }
    std::stable_sort(ch.table_changes.begin(), ch.table_changes.end(),
                     [](const TableChange& a, const TableChange& b) { return a.at < b.at; });
  }
  if (m.Has("router_events")) {
    const YAML::Node es = m.Get("router_events");
    if (!es.IsSequence()) return absl::InvalidArgumentError("router_events: expected a list");
    for (size_t i = 0; i < es.size(); ++i) {
      RouterEvent e;
      if (absl::Status s = ReadRouterEvent(es[i], absl::StrCat("router_events[", i, "]"), ch, &e);
          !s.ok()) {
        return s;
      }
      ch.router_events.push_back(std::move(e));
    }
    std::stable_sort(ch.router_events.begin(), ch.router_events.end(),
                     [](const RouterEvent& a, const RouterEvent& b) { return a.at < b.at; });
  }
  if (static_cast<int>(ch.absent.size()) == sc->backends && ch.table_changes.empty()) {
    return absl::InvalidArgumentError("backends.absent: every backend is absent and none is added");
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace ballast::lbsim
