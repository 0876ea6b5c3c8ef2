#include "tools/lbsim/report.h"

#include <cmath>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ballast::lbsim {

namespace {

std::string Pct(uint64_t n, uint64_t of) {
  if (of == 0) return "-";
  return absl::StrFormat("%.4f%%", 100.0 * static_cast<double>(n) / static_cast<double>(of));
}

// A number as a check or CSV cell shows it: integers plainly, else 6
// significant digits.
std::string Num(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return absl::StrFormat("%.0f", v);
  }
  return absl::StrFormat("%.6g", v);
}

}  // namespace

std::optional<double> FindMetric(const MetricList& m, const std::string& name) {
  for (const auto& [k, v] : m) {
    if (k == name) return v;
  }
  return std::nullopt;
}

namespace {

std::string ChurnReport(const Scenario& sc, const RunResult& r) {
  const ChurnResult& c = r.churn;
  std::string out;
  absl::StrAppendFormat(
      &out,
      "scenario %s%s  seed %d  %d routers (ECMP %s)  %d backends  %d long-lived connections  "
      "%gs\n",
      r.scenario, r.variant.empty() ? "" : absl::StrCat(" / ", r.variant), r.seed, c.routers,
      c.ecmp, sc.backends, c.connections, r.duration_s);
  absl::StrAppendFormat(&out,
                        "  table changes      %d (commits that changed the table), %d slots "
                        "moved; %s of the slots differ from time 0; versions kept: %d\n",
                        r.tables, r.slots_moved, Pct(c.slots_changed, c.table_size), c.versions);
  absl::StrAppendFormat(&out,
                        "  router changes     %d (of the set of routers announcing the VIP)\n",
                        c.router_changes);
  absl::StrAppendFormat(&out, "  established        %d of %d\n", c.established, c.connections);
  absl::StrAppendFormat(&out,
                        "  moved by ECMP      %d  %s  (to a router without their entry, which "
                        "adopted them)\n",
                        c.moved, Pct(c.moved, c.established));
  absl::StrAppendFormat(&out,
                        "  slot changed       %d  %s  (the table's pick at the end is not their "
                        "backend)\n",
                        c.slot_changed, Pct(c.slot_changed, c.established));
  absl::StrAppendFormat(&out, "  reset without      %d  %s  (established second chance off)\n",
                        c.without.reset, Pct(c.without.reset, c.established));
  absl::StrAppendFormat(
      &out,
      "  reset with         %d  %s  (on: %d reached their backend through the slot's history, "
      "%.2f hops each on average, at most %d)\n",
      c.with.reset, Pct(c.with.reset, c.established), c.with.saved,
      c.with.saved == 0 ? 0.0
                        : static_cast<double>(c.with.hops) / static_cast<double>(c.with.saved),
      c.with.hops_max);
  absl::StrAppendFormat(&out,
                        "  cut                %d at a drain deadline, %d on a removed backend; "
                        "%d open at the end\n",
                        c.with.cut_drain, c.with.cut_removed, c.with.open_at_end);
  absl::StrAppendFormat(&out,
                        "  stalled            %d (packets lost to a dead router before its "
                        "withdrawal; longest %.2f s)\n",
                        c.stalled, c.stall_max_s);
  return out;
}

}  // namespace

std::string FormatReport(const Scenario& sc, const RunResult& r) {
  if (r.churn.enabled) return ChurnReport(sc, r);
  const MetricList m = Metrics(r);
  auto get = [&](const char* name) { return FindMetric(m, name).value_or(0); };
  std::string out;
  absl::StrAppendFormat(
      &out, "scenario %s%s  seed %d  %d backends  %.0f conn/s  %gs (counted from %gs)\n",
      r.scenario, r.variant.empty() ? "" : absl::StrCat(" / ", r.variant), r.seed, sc.backends,
      sc.rate, r.duration_s, r.warmup_s);
  const uint64_t decided = r.connections - r.unresolved;
  absl::StrAppendFormat(&out, "  connections        %d (%d attempts; %d unresolved at the end)\n",
                        r.connections, r.attempts, r.unresolved);
  absl::StrAppendFormat(&out, "  succeeded          %d  %s\n", r.succeeded,
                        Pct(r.succeeded, decided));
  absl::StrAppendFormat(&out, "  failed new         %d  %s  (no handshake)\n", r.failed_new,
                        Pct(r.failed_new, decided));
  absl::StrAppendFormat(&out, "  failed request     %d  %s  (handshake, no answer)\n",
                        r.failed_request, Pct(r.failed_request, decided));
  absl::StrAppendFormat(
      &out, "  broken             %d  %s  (answered, then cut; %d at a drain deadline)\n", r.broken,
      Pct(r.broken, decided), r.broken_drain);
  absl::StrAppendFormat(&out,
                        "  hit a faulty one   %d  %s  (reached a backend during its own fault)\n",
                        r.hit_faulty, Pct(r.hit_faulty, r.connections));
  absl::StrAppendFormat(&out, "  latency ms         p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f\n",
                        get("latency_p50_ms"), get("latency_p90_ms"), get("latency_p99_ms"),
                        get("latency_p999_ms"));
  if (r.onsets > 0) {
    absl::StrAppendFormat(&out,
                          "  time to steer s    p50 %.2f  p90 %.2f  max %.2f  (%d of %d faults "
                          "steered before they ended)\n",
                          get("steer_p50_s"), get("steer_p90_s"), get("steer_max_s"),
                          r.steer_s.size(), r.onsets);
  } else {
    absl::StrAppend(&out, "  time to steer s    - (no fault of a single backend)\n");
  }
  std::vector<std::string> acts;
  for (const auto& [k, n] : r.actions) acts.push_back(absl::StrCat(k, " ", n));
  absl::StrAppendFormat(&out, "  actions            %s\n",
                        acts.empty() ? "none" : absl::StrJoin(acts, ", "));
  absl::StrAppendFormat(&out, "  flaps              %d   taken out %d   evaluations %d", r.flaps,
                        r.taken_out, r.evaluations);
  if (sc.observers > 1) {
    absl::StrAppendFormat(&out, "   observers %d   split views %d", sc.observers, r.split_views);
  }
  absl::StrAppend(&out, "\n");
  absl::StrAppendFormat(&out,
                        "  rebalancing        %d tables, %d slots moved (%.2f%% of M per table), "
                        "%d open connections kept by the connection table\n",
                        r.tables, r.slots_moved,
                        r.tables == 0 ? 0.0
                                      : 100.0 * static_cast<double>(r.slots_moved) /
                                            static_cast<double>(r.tables) / sc.table_size,
                        r.remapped);
  absl::StrAppendFormat(&out,
                        "  SYN retransmits    %d (%d re-steered to another backend); %d SYNs "
                        "bounced by a dead server's host (second chance)\n",
                        r.syn_retransmits, r.resteered_syns, r.bounced_syns);
  return out;
}

absl::StatusOr<bool> EvalCheck(const std::string& check,
                               const std::map<std::string, MetricList>& sets, std::string* detail) {
  static const char* const kOps[] = {"<=", ">=", "==", "!=", "<", ">"};
  std::vector<std::string> tok = absl::StrSplit(check, ' ', absl::SkipWhitespace());
  if (tok.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("check '", check, "': expected '<metric> <op> <value>'"));
  }
  const std::string op = tok[1];
  bool known_op = false;
  for (const char* o : kOps) known_op |= op == o;
  if (!known_op) {
    return absl::InvalidArgumentError(
        absl::StrCat("check '", check, "': unknown operator '", op, "'"));
  }
  auto operand = [&](const std::string& s) -> absl::StatusOr<double> {
    double v;
    if (absl::SimpleAtod(s, &v)) return v;
    std::string set, name = s;
    if (auto dot = s.find('.'); dot != std::string::npos) {
      set = s.substr(0, dot);
      name = s.substr(dot + 1);
    }
    auto it = sets.find(set);
    if (it == sets.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("check '", check, "': no run named '", set, "'"));
    }
    if (auto m = FindMetric(it->second, name)) return *m;
    return absl::InvalidArgumentError(
        absl::StrCat("check '", check, "': unknown metric '", name, "'"));
  };
  auto l = operand(tok[0]);
  if (!l.ok()) return l.status();
  auto r = operand(tok[2]);
  if (!r.ok()) return r.status();
  bool ok = false;
  if (op == "<") ok = *l < *r;
  if (op == "<=") ok = *l <= *r;
  if (op == ">") ok = *l > *r;
  if (op == ">=") ok = *l >= *r;
  if (op == "==") ok = *l == *r;
  if (op == "!=") ok = *l != *r;
  *detail = absl::StrCat(check, ": ", Num(*l), " vs ", Num(*r), ok ? " (ok)" : " FAILED");
  return ok;
}

const std::vector<std::string>& SweepColumns() {
  static const std::vector<std::string> kColumns = {
      "success_fraction", "failed_new",      "failed_request", "broken",      "hit_faulty",
      "latency_p99_ms",   "steer_p50_s",     "steer_max_s",    "steered",     "onsets",
      "actions_demote",   "actions_promote", "flaps",          "actions_pin", "actions_freeze",
      "tables",           "slots_moved"};
  return kColumns;
}

const std::vector<std::string>& ChurnSweepColumns() {
  static const std::vector<std::string> kColumns = {"established",
                                                    "moved",
                                                    "slot_changed",
                                                    "reset_without",
                                                    "reset_without_fraction",
                                                    "reset_with",
                                                    "reset_with_fraction",
                                                    "saved",
                                                    "hops_mean",
                                                    "hops_max",
                                                    "cut_drain",
                                                    "stalled",
                                                    "tables",
                                                    "slots_moved",
                                                    "versions"};
  return kColumns;
}

std::string FormatChurnTable(const std::vector<SweepRow>& rows) {
  auto pct = [](double n, double of) {
    return of == 0 ? std::string("-") : absl::StrFormat("%.1f%%", 100.0 * n / of);
  };
  std::string out =
      "| sequence | connections | moved by ECMP | slot changed | reset without | reset with | "
      "hops mean / max |\n|---|---|---|---|---|---|---|\n";
  for (const SweepRow& row : rows) {
    auto get = [&](const char* name) { return FindMetric(row.metrics, name).value_or(0); };
    const double n = get("established");
    absl::StrAppendFormat(
        &out, "| %s | %s | %s | %s | %s (%s) | %s (%s) | %s |\n", row.value, Num(n),
        pct(get("moved"), n), pct(get("slot_changed"), n), Num(get("reset_without")),
        pct(get("reset_without"), n), Num(get("reset_with")), pct(get("reset_with"), n),
        get("saved") == 0 ? std::string("-")
                          : absl::StrFormat("%.2f / %s", get("hops_mean"), Num(get("hops_max"))));
  }
  return out;
}

std::string FormatSweepTable(const std::string& tunable, const std::vector<SweepRow>& rows) {
  const bool churn = !rows.empty() && FindMetric(rows[0].metrics, "reset_without").has_value();
  const std::vector<std::string>& cols = churn ? ChurnSweepColumns() : SweepColumns();
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head = {tunable};
  for (const std::string& c : cols) head.push_back(c);
  cells.push_back(head);
  for (const SweepRow& row : rows) {
    std::vector<std::string> line = {row.value};
    for (const std::string& c : cols) {
      const double v = FindMetric(row.metrics, c).value_or(0);
      if (c == "success_fraction" || c.ends_with("_fraction")) {
        line.push_back(absl::StrFormat("%.6f", v));
      } else if (c.ends_with("_s") || c.ends_with("_ms")) {
        line.push_back(absl::StrFormat("%.2f", v));
      } else {
        line.push_back(Num(v));
      }
    }
    cells.push_back(line);
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  std::string out;
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) {
      if (i > 0) out += "  ";
      if (i == 0) {
        absl::StrAppend(&out, line[i], std::string(width[i] - line[i].size(), ' '));
      } else {
        absl::StrAppend(&out, std::string(width[i] - line[i].size(), ' '), line[i]);
      }
    }
    out += "\n";
  }
  return out;
}

std::string FormatSweepCsv(const std::string& tunable, const std::vector<SweepRow>& rows) {
  std::string out = tunable;
  if (!rows.empty()) {
    for (const auto& [k, v] : rows[0].metrics) absl::StrAppend(&out, ",", k);
  }
  out += "\n";
  for (const SweepRow& row : rows) {
    // A value with a comma (a list) is quoted.
    if (row.value.find(',') != std::string::npos) {
      absl::StrAppend(&out, "\"", row.value, "\"");
    } else {
      out += row.value;
    }
    for (const auto& [k, v] : row.metrics) absl::StrAppend(&out, ",", Num(v));
    out += "\n";
  }
  return out;
}

}  // namespace ballast::lbsim
