#include "tools/lbsim/scenario.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/maglev/maglev.h"
#include "tools/lbsim/scenario_churn.h"
#include "tools/lbsim/scenario_reader.h"

namespace ballast::lbsim {

std::string_view FaultKindName(FaultKind k) {
  switch (k) {
    case FaultKind::kCrash:
      return "crash";
    case FaultKind::kHang:
      return "hang";
    case FaultKind::kBrownout:
      return "brownout";
    case FaultKind::kFlap:
      return "flap";
    case FaultKind::kZone:
      return "zone";
    case FaultKind::kSlowdown:
      return "slowdown";
    case FaultKind::kBlind:
      return "blind";
    case FaultKind::kDrain:
      return "drain";
  }
  return "?";
}

namespace {

using internal::MapReader;
using internal::ReadBackendSet;

// ---- The health::Params fields, by their docs/health.md names -------------

using ParamMember =
    std::variant<int health::Params::*, double health::Params::*, absl::Duration health::Params::*,
                 std::vector<int> health::Params::*>;
struct ParamField {
  const char* name;
  ParamMember member;
};

const ParamField kParamFields[] = {
    {"good_score", &health::Params::good_score},
    {"bad_score", &health::Params::bad_score},
    {"demote_after", &health::Params::demote_after},
    {"promote_after", &health::Params::promote_after},
    {"ramp_percents", &health::Params::ramp_percents},
    {"ramp_hold", &health::Params::ramp_hold},
    {"ramp_sag_score", &health::Params::ramp_sag_score},
    {"flap_window", &health::Params::flap_window},
    {"cooldown_base", &health::Params::cooldown_base},
    {"max_cooldown", &health::Params::max_cooldown},
    {"pin_flaps", &health::Params::pin_flaps},
    {"pin_window", &health::Params::pin_window},
    {"fleet_guard_percent", &health::Params::fleet_guard_percent},
    {"unfreeze_after", &health::Params::unfreeze_after},
    {"probe_failure_penalty", &health::Params::probe_failure_penalty},
    {"slowdown_tolerance", &health::Params::slowdown_tolerance},
    {"penalty_per_doubling", &health::Params::penalty_per_doubling},
    {"max_slowdown_penalty", &health::Params::max_slowdown_penalty},
    {"disagreement_penalty", &health::Params::disagreement_penalty},
    {"disagreement_min_penalty", &health::Params::disagreement_min_penalty},
    {"disagreement_alert_after", &health::Params::disagreement_alert_after},
    {"score_bands", &health::Params::score_bands},
    {"weight_score_step", &health::Params::weight_score_step},
    {"weight_score_window", &health::Params::weight_score_window},
    {"min_samples", &health::Params::min_samples},
    {"refused_demote", &health::Params::refused_demote},
    {"min_peers", &health::Params::min_peers},
    {"baseline_min_intervals", &health::Params::baseline_min_intervals},
    {"baseline_alpha", &health::Params::baseline_alpha},
    {"baseline_alpha_anomalous", &health::Params::baseline_alpha_anomalous},
    {"ratio_floor", &health::Params::ratio_floor},
    {"latency_floor_ms", &health::Params::latency_floor_ms},
};

// Short names of the other tunables, with their paths.
const std::pair<const char*, const char*> kOtherTunables[] = {
    {"probe_interval", "health.probe_interval"},
    {"probe_timeout", "health.probe_timeout"},
    {"eval_interval", "health.eval_interval"},
    {"observers", "health.observers"},
    {"new_backend_start", "health.params.new_backend_start"},
    {"rate", "traffic.rate"},
    {"table_size", "dataplane.table_size"},
    {"resteer", "dataplane.resteer"},
    {"second_chance", "dataplane.second_chance"},
    {"retries", "client.retries"},
    {"connect_timeout", "client.connect_timeout"},
    {"request_timeout", "client.request_timeout"},
    {"seed", "seed"},
    {"duration", "duration"},
    {"ecmp", "routers.ecmp"},
    {"detect", "routers.detect"},
    {"packet_interval", "long_lived.packet_interval"},
};

absl::Status ReadParams(const YAML::Node& n, health::Params* p) {
  MapReader m(n, "health.params");
  for (const ParamField& f : kParamFields) {
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(p->*member)>;
          if constexpr (std::is_same_v<T, int>) {
            m.Int(f.name, &(p->*member), -1000000000, 1000000000);
          } else if constexpr (std::is_same_v<T, double>) {
            m.Double(f.name, &(p->*member), -1e12, 1e12);
          } else if constexpr (std::is_same_v<T, absl::Duration>) {
            m.Duration(f.name, &(p->*member), absl::ZeroDuration());
          } else {
            m.IntList(f.name, &(p->*member));
          }
        },
        f.member);
  }
  std::string start;
  m.String("new_backend_start", &start);
  if (start == "ramping") {
    p->new_backend_start = health::NewBackendStart::kRamping;
  } else if (start == "healthy") {
    p->new_backend_start = health::NewBackendStart::kHealthy;
  } else if (!start.empty()) {
    m.Fail("new_backend_start", absl::StrCat("'", start, "' is not healthy or ramping"));
  }
  if (absl::Status s = m.Finish(); !s.ok()) return s;
  if (absl::Status s = health::ValidateParams(*p); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("health.params: ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status ReadFault(const YAML::Node& n, const std::string& where, const Scenario& sc,
                       Fault* f) {
  MapReader m(n, where);
  std::string kind;
  m.String("kind", &kind);
  bool found = false;
  for (FaultKind k :
       {FaultKind::kCrash, FaultKind::kHang, FaultKind::kBrownout, FaultKind::kFlap,
        FaultKind::kZone, FaultKind::kSlowdown, FaultKind::kBlind, FaultKind::kDrain}) {
    if (kind == FaultKindName(k)) {
      f->kind = k;
      found = true;
    }
  }
  if (!found) {
    m.Fail("kind", absl::StrCat("'", kind,
                                "' is not a fault kind (crash, hang, brownout, flap, zone, "
                                "slowdown, blind, drain)"));
    return m.status();
  }
  m.Duration("at", &f->at, absl::ZeroDuration());
  m.Duration("for", &f->length, absl::Nanoseconds(1));
  const bool needs_backends = f->kind != FaultKind::kZone && f->kind != FaultKind::kSlowdown;
  if (needs_backends) {
    if (!m.Has("backends")) {
      m.Fail("backends", "missing (a list of indices, ranges a-b, or all)");
      return m.status();
    }
    m.Merge(ReadBackendSet(m.Get("backends"), m.Path("backends"), sc.backends, &f->backends));
  }
  switch (f->kind) {
    case FaultKind::kCrash:
    case FaultKind::kFlap:
    case FaultKind::kZone: {
      std::string mode = "refuse";
      m.String("mode", &mode);
      if (mode == "refuse") {
        f->mode = CrashMode::kRefuse;
      } else if (mode == "blackhole") {
        f->mode = CrashMode::kBlackhole;
      } else {
        m.Fail("mode", absl::StrCat("'", mode, "' is not refuse or blackhole"));
      }
      if (f->kind == FaultKind::kCrash) {
        // handled below with hang and brownout
      } else if (f->kind == FaultKind::kFlap) {
        m.Duration("up", &f->up, absl::Milliseconds(1));
        m.Duration("down", &f->down, absl::Milliseconds(1));
        m.Int("cycles", &f->cycles, 1, 100000);
      } else {
        m.Int("zone", &f->zone, 0, sc.zones - 1);
        for (int i = 0; i < sc.backends; ++i) {
          if (i % sc.zones == f->zone) f->backends.push_back(i);
        }
      }
      break;
    }
    case FaultKind::kHang:
      break;
    case FaultKind::kBrownout:
    case FaultKind::kSlowdown:
      m.Double("latency_factor", &f->latency_factor, 0.01, 1000);
      m.Double("loss", &f->loss, 0, 1);
      if (f->kind == FaultKind::kSlowdown) {
        for (int i = 0; i < sc.backends; ++i) f->backends.push_back(i);
      }
      break;
    case FaultKind::kBlind:
      m.Int("observer", &f->observer, 0, sc.observers - 1);
      break;
    case FaultKind::kDrain:
      m.Duration("deadline", &f->deadline, absl::ZeroDuration());
      break;
  }
  if (f->kind == FaultKind::kCrash || f->kind == FaultKind::kHang ||
      f->kind == FaultKind::kBrownout) {
    f->recurring = m.Has("mttf");
    if (f->recurring) {
      m.Duration("mttf", &f->mttf, absl::Milliseconds(1));
      m.Duration("mttr", &f->mttr, absl::Milliseconds(1));
    } else if (m.Has("mttr")) {
      m.Fail("mttr", "needs mttf (recurring episodes)");
    }
  }
  return m.Finish();
}

std::vector<std::string> SplitPath(std::string_view path) {
  return absl::StrSplit(std::string(path), '.', absl::SkipEmpty());
}

void SetIn(YAML::Node node, const std::vector<std::string>& parts, size_t i,
           const YAML::Node& value) {
  if (i + 1 == parts.size()) {
    node[parts[i]] = value;
    return;
  }
  YAML::Node child = node[parts[i]];
  if (!child.IsMap()) child = YAML::Node(YAML::NodeType::Map);
  SetIn(child, parts, i + 1, value);
}

absl::Status ReadStringList(const YAML::Node& n, const std::string& where,
                            std::vector<std::string>* out) {
  if (!n || n.IsNull()) return absl::OkStatus();
  if (!n.IsSequence()) return absl::InvalidArgumentError(absl::StrCat(where, ": expected a list"));
  for (const YAML::Node& e : n) {
    if (!e.IsScalar()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": expected text entries"));
    }
    out->push_back(e.Scalar());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> TunablePath(std::string_view name_view) {
  const std::string name(name_view);
  if (name.find('.') != std::string::npos) return name;
  for (const ParamField& f : kParamFields) {
    if (name == f.name) return absl::StrCat("health.params.", name);
  }
  for (const auto& [n, p] : kOtherTunables) {
    if (name == n) return std::string(p);
  }
  for (const char* top : {"name", "description", "outcome", "seed", "duration", "warmup", "traffic",
                          "client", "network", "backends", "dataplane", "health", "faults", "plot",
                          "expect", "routers", "long_lived", "table_changes", "router_events"}) {
    if (name == top) return name;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown tunable '", name, "' (known: ", absl::StrJoin(TunableNames(), ", "),
                   "; or a full path such as health.params.demote_after)"));
}

std::vector<std::string> TunableNames() {
  std::vector<std::string> r;
  for (const ParamField& f : kParamFields) r.push_back(f.name);
  for (const auto& [n, p] : kOtherTunables) r.push_back(n);
  return r;
}

YAML::Node CloneNode(const YAML::Node& n) { return YAML::Clone(n); }

absl::Status SetPathNode(YAML::Node root, std::string_view path, const YAML::Node& value) {
  const std::vector<std::string> parts = SplitPath(path);
  if (parts.empty()) return absl::InvalidArgumentError("empty path");
  SetIn(root, parts, 0, YAML::Clone(value));
  return absl::OkStatus();
}

absl::Status SetPath(YAML::Node root, std::string_view path, std::string_view value) {
  const std::vector<std::string> parts = SplitPath(path);
  if (parts.empty()) return absl::InvalidArgumentError("empty path");
  YAML::Node v;
  try {
    v = YAML::Load(std::string(value));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(path), "=", std::string(value), ": ", e.msg));
  }
  SetIn(root, parts, 0, v);
  return absl::OkStatus();
}

absl::StatusOr<ScenarioFile> ParseScenarioText(const std::string& text, const std::string& name) {
  ScenarioFile f;
  f.path = name;
  try {
    f.base = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", e.what()));
  }
  if (!f.base.IsMap()) return absl::InvalidArgumentError(absl::StrCat(name, ": expected a map"));
  if (YAML::Node v = f.base["variants"]; v) {
    if (!v.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": variants: expected a map"));
    }
    for (const auto& kv : v) f.variants.emplace_back(kv.first.Scalar(), YAML::Clone(kv.second));
    f.base.remove("variants");
  }
  if (YAML::Node c = f.base["compare"]; c) {
    if (absl::Status s = ReadStringList(c, absl::StrCat(name, ": compare"), &f.compare); !s.ok()) {
      return s;
    }
    f.base.remove("compare");
  }
  return f;
}

absl::StatusOr<ScenarioFile> LoadScenarioFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read scenario ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseScenarioText(ss.str(), path);
}

absl::StatusOr<Scenario> ReadScenario(const YAML::Node& root) {
  Scenario sc;
  sc.params.latency_floor_ms = 10;  // lbagent's default (agent/core/health_settings.h)
  MapReader m(root, "");
  m.String("name", &sc.name);
  m.String("description", &sc.description);
  m.String("outcome", &sc.outcome);
  m.Uint64("seed", &sc.seed);
  m.Duration("duration", &sc.duration, absl::Seconds(1), absl::Hours(24));
  m.Duration("warmup", &sc.warmup, absl::ZeroDuration(), absl::Hours(24));
  if (absl::Status s = ReadStringList(m.Get("expect"), "expect", &sc.expect); !s.ok()) return s;

  {
    MapReader t(m.Get("traffic"), "traffic");
    t.Double("rate", &sc.rate, 0.001, 1e8);
    if (t.Has("classes")) {
      const YAML::Node cs = t.Get("classes");
      if (!cs.IsSequence() || cs.size() == 0 || cs.size() > 16) {
        t.Fail("classes", "expected a list of 1..16 classes");
      } else {
        sc.classes.clear();
        for (size_t i = 0; i < cs.size(); ++i) {
          TrafficClass c;
          c.name = absl::StrCat("class", i);
          MapReader cr(cs[i], absl::StrCat("traffic.classes[", i, "]"));
          cr.String("name", &c.name);
          cr.Double("share", &c.share, 0, 1e9);
          cr.Dist("lifetime", &c.lifetime);
          cr.Dist("latency", &c.latency);
          t.Merge(cr.Finish());
          sc.classes.push_back(c);
        }
      }
    }
    m.Merge(t.Finish());
  }
  {
    MapReader c(m.Get("client"), "client");
    c.Duration("syn_rto", &sc.syn_rto, absl::Milliseconds(1), absl::Seconds(120));
    c.Duration("connect_timeout", &sc.connect_timeout, absl::Milliseconds(1), absl::Seconds(600));
    c.Duration("request_timeout", &sc.request_timeout, absl::Milliseconds(1), absl::Seconds(600));
    c.Int("retries", &sc.retries, 0, 10);
    c.Duration("retry_backoff", &sc.retry_backoff, absl::ZeroDuration(), absl::Seconds(600));
    m.Merge(c.Finish());
  }
  {
    MapReader n(m.Get("network"), "network");
    n.Duration("rtt", &sc.rtt, absl::ZeroDuration(), absl::Seconds(10));
    n.Duration("loss_penalty", &sc.loss_penalty, absl::ZeroDuration(), absl::Seconds(60));
    m.Merge(n.Finish());
  }
  {
    MapReader b(m.Get("backends"), "backends");
    b.Int("count", &sc.backends, 1, 10000);
    int w = static_cast<int>(sc.weight);
    b.Int("weight", &w, 1, 1000000);
    sc.weight = static_cast<uint32_t>(w);
    b.Int("zones", &sc.zones, 1, 1000);
    b.Dist("accept", &sc.accept);
    b.Dist("probe_latency", &sc.probe_latency);
    if (b.Has("absent") && b.status().ok()) {
      b.Merge(ReadBackendSet(b.Get("absent"), "backends.absent", sc.backends, &sc.churn.absent));
    }
    m.Merge(b.Finish());
  }
  {
    MapReader d(m.Get("dataplane"), "dataplane");
    int ts = static_cast<int>(sc.table_size);
    d.Int("table_size", &ts, 3, 16777213);
    sc.table_size = static_cast<uint32_t>(ts);
    d.Bool("resteer", &sc.resteer);
    d.Bool("second_chance", &sc.second_chance);
    m.Merge(d.Finish());
  }
  bool eval_given = false, timeout_given = false;
  {
    MapReader h(m.Get("health"), "health");
    h.Bool("enabled", &sc.health);
    h.Duration("probe_interval", &sc.probe_interval, absl::Milliseconds(10), absl::Seconds(600));
    timeout_given = h.Has("probe_timeout");
    h.Duration("probe_timeout", &sc.probe_timeout, absl::Milliseconds(1), absl::Seconds(600));
    eval_given = h.Has("eval_interval");
    h.Duration("eval_interval", &sc.eval_interval, absl::Milliseconds(10), absl::Seconds(600));
    std::string probe = "http";
    h.String("probe", &probe);
    if (probe == "http") {
      sc.probe = ProbeKind::kHttp;
    } else if (probe == "tcp") {
      sc.probe = ProbeKind::kTcp;
    } else {
      h.Fail("probe", absl::StrCat("'", probe, "' is not http or tcp"));
    }
    h.Bool("passive", &sc.passive);
    h.Int("observers", &sc.observers, 1, 16);
    if (h.status().ok()) h.Merge(ReadParams(h.Get("params"), &sc.params));
    m.Merge(h.Finish());
  }
  // The agent evaluates once per probe interval unless told otherwise, and a
  // probe's timeout is at most its interval (config.proto ProbeSpec).
  if (!eval_given) sc.eval_interval = sc.probe_interval;
  if (!timeout_given) sc.probe_timeout = std::min(absl::Milliseconds(500), sc.probe_interval);
  if (sc.probe_timeout > sc.probe_interval) {
    m.Fail("health.probe_timeout", "must not exceed health.probe_interval");
  }
  if (!m.status().ok()) return m.status();

  if (m.Has("faults")) {
    const YAML::Node fs = m.Get("faults");
    if (!fs.IsSequence()) {
      m.Fail("faults", "expected a list");
    } else {
      for (size_t i = 0; i < fs.size() && m.status().ok(); ++i) {
        Fault f;
        m.Merge(ReadFault(fs[i], absl::StrCat("faults[", i, "]"), sc, &f));
        sc.faults.push_back(std::move(f));
      }
    }
  }
  if (m.status().ok()) m.Merge(internal::ReadChurn(m, &sc));
  {
    MapReader p(m.Get("plot"), "plot");
    if (p.Has("backends")) {
      p.Merge(ReadBackendSet(p.Get("backends"), "plot.backends", sc.backends, &sc.plot_backends));
    }
    m.Merge(p.Finish());
  }
  if (absl::Status s = m.Finish(); !s.ok()) return s;
  if (sc.name.empty()) return absl::InvalidArgumentError("name: missing");
  if (sc.churn.enabled) {
    sc.warmup = absl::ZeroDuration();  // the churn model counts everything
  } else if (sc.warmup >= sc.duration) {
    return absl::InvalidArgumentError("warmup: must be below duration");
  }
  if (!maglev::IsPrime(sc.table_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataplane.table_size: ", sc.table_size, " is not prime (e.g. 65537, 4099)"));
  }
  if (sc.backends > static_cast<int>(sc.table_size)) {
    return absl::InvalidArgumentError("dataplane.table_size: smaller than the number of backends");
  }
  double shares = 0;
  for (const TrafficClass& c : sc.classes) shares += c.share;
  if (shares <= 0) return absl::InvalidArgumentError("traffic.classes: the shares sum to 0");
  return sc;
}

}  // namespace ballast::lbsim
