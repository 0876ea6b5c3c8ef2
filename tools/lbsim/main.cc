// lbsim: replays faults through ballast's own health and Maglev code in
// simulated time. See tools/lbsim/README.md and docs/tuning.md.
//
//   lbsim run SCENARIO.yaml [--variant V] [--set NAME=VALUE]... [--seed N]
//                           [--svg FILE] [--metrics]
//   lbsim check SCENARIO.yaml... [--set NAME=VALUE]...
//   lbsim sweep SCENARIO.yaml --sweep NAME=a,b,c [--variant V] [--csv FILE]
//                             [--svg FILE] [--plot METRIC,...]
//   lbsim SCENARIO.yaml [--sweep ...]      (run, or sweep with --sweep)
//   lbsim tunables
//
// Exit codes: 0 success, 1 a check failed, 2 bad usage or scenario.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tools/lbsim/report.h"
#include "tools/lbsim/runner.h"
#include "tools/lbsim/scenario.h"
#include "tools/lbsim/sim.h"
#include "tools/lbsim/svg.h"

namespace ballast::lbsim {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage = R"(usage: lbsim COMMAND SCENARIO.yaml [options]

commands:
  run       run the scenario (each variant, or --variant V) and print the report (router
            churn with several variants: also a table of them)
  check     run every variant, evaluate the file's expect/compare checks; exit 1 if one fails
  sweep     one run per value of --sweep NAME=a,b,c; a table on stdout, CSV to --csv
  tunables  list the short names --set and --sweep accept
  (no command: run, or sweep when --sweep is given)

options:
  --variant V          the file's variant to use (run, sweep)
  --set NAME=VALUE     override a tunable or a path (e.g. health.params.demote_after=5);
                       VALUE is YAML: 3, 250ms, false, [5,20,100]; repeatable
  --seed N             same as --set seed=N
  --sweep NAME=a,b,c   the values to sweep (brackets keep commas: ramp_percents=[10,100],[5,100])
  --csv FILE           sweep CSV (default: <scenario>-<name>.csv in the current directory)
  --svg FILE           run: score/weight timeline; sweep: curves of --plot metrics
  --plot M1,M2,...     sweep metrics to draw (default success_fraction,steer_p50_s,flaps,
                       actions_demote,failed_new,latency_p99_ms; router churn:
                       reset_without_fraction,reset_with_fraction,moved_fraction,
                       slot_changed_fraction)
  --metrics            run: also print every metric as "name value"
  --actions            run: also print the health actions (not score bands), with times;
                       router churn: the table commits and router changes
  --verbose            with --actions: score bands too, and each action's inputs (JSON)
)";

struct Options {
  std::string command;
  std::vector<std::string> files;
  std::string variant;
  Sets sets;
  std::string sweep;
  std::string csv;
  std::string svg;
  std::string plot = "success_fraction,steer_p50_s,flaps,actions_demote,failed_new,latency_p99_ms";
  bool plot_given = false;
  bool metrics = false;
  bool actions = false;
  bool verbose = false;
};

int Usage(const std::string& msg) {
  if (!msg.empty()) std::cerr << "lbsim: " << msg << "\n\n";
  std::cerr << kUsage;
  return kExitUsage;
}

int Fail(const absl::Status& s) {
  std::cerr << "lbsim: " << s.message() << "\n";
  return kExitUsage;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::cerr << "lbsim: cannot write " << path << "\n";
    return false;
  }
  return true;
}

bool SplitAssign(const std::string& s, std::string* name, std::string* value) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  *name = s.substr(0, eq);
  *value = s.substr(eq + 1);
  return true;
}

std::string SvgPathFor(const std::string& svg, const std::string& variant, bool several) {
  if (!several || variant.empty()) return svg;
  const size_t dot = svg.rfind(".svg");
  if (dot == std::string::npos) return absl::StrCat(svg, "-", variant);
  return absl::StrCat(svg.substr(0, dot), "-", variant, ".svg");
}

int CmdRun(const Options& o) {
  if (o.files.size() != 1) return Usage("run takes one scenario file");
  auto f = LoadScenarioFile(o.files[0]);
  if (!f.ok()) return Fail(f.status());
  std::vector<std::string> names =
      o.variant.empty() ? RunNames(*f) : std::vector<std::string>{o.variant};
  std::vector<SweepRow> churn;  // router-churn runs: one row each
  for (const std::string& name : names) {
    auto sc = BuildScenario(*f, name, o.sets);
    if (!sc.ok()) return Fail(sc.status());
    auto r = Run(*sc);
    if (!r.ok()) return Fail(r.status());
    std::cout << FormatReport(*sc, *r);
    if (r->churn.enabled) churn.push_back({name.empty() ? sc->name : name, Metrics(*r)});
    if (o.actions) {
      for (const ActionRecord& a : r->action_log) {
        if (a.kind == "score_band" && !o.verbose) continue;
        std::cout << absl::StrFormat("  %9.3fs  %-20s %-8s %s\n", a.t, a.kind, a.backend,
                                     a.message);
        if (o.verbose) std::cout << "             " << a.inputs_json << "\n";
      }
    }
    if (o.metrics) {
      for (const auto& [k, v] : Metrics(*r)) std::cout << "  " << k << " " << v << "\n";
    }
    if (!o.svg.empty()) {
      const std::string path = SvgPathFor(o.svg, name, names.size() > 1);
      if (!WriteFile(path, TimelineSvg(*sc, *r))) return kExitUsage;
      std::cout << "  timeline -> " << path << "\n";
    }
  }
  if (churn.size() > 1) {
    std::cout << "\nlong-lived connections reset, without and with established second chance "
                 "(% of the established):\n"
              << FormatChurnTable(churn);
  }
  return kExitOk;
}

int CmdCheck(const Options& o) {
  if (o.files.empty()) return Usage("check takes one or more scenario files");
  bool all = true;
  for (const std::string& file : o.files) {
    auto f = LoadScenarioFile(file);
    if (!f.ok()) return Fail(f.status());
    auto c = CheckFile(*f, o.sets);
    if (!c.ok()) return Fail(c.status());
    std::cout << c->text;
    std::cout << file << ": " << (c->passed ? "ok" : "FAILED") << " (" << c->checks << " checks)\n";
    all = all && c->passed;
  }
  return all ? kExitOk : kExitCheckFailed;
}

int CmdSweep(const Options& o) {
  if (o.files.size() != 1) return Usage("sweep takes one scenario file");
  std::string name, list;
  if (!SplitAssign(o.sweep, &name, &list)) return Usage("--sweep needs NAME=a,b,c");
  auto path = TunablePath(name);
  if (!path.ok()) return Fail(path.status());
  const std::vector<std::string> values = SplitSweepValues(list);
  if (values.empty()) return Usage("--sweep needs at least one value");
  auto f = LoadScenarioFile(o.files[0]);
  if (!f.ok()) return Fail(f.status());
  if (o.variant.empty() && !f->variants.empty()) {
    return Usage(absl::StrCat(o.files[0], " has variants (", absl::StrJoin(RunNames(*f), ", "),
                              "): choose one with --variant"));
  }
  // A progress line per run on stderr: a sweep of many values takes a while.
  const absl::Time started = absl::Now();
  auto rows = Sweep(*f, o.variant, o.sets, name, values,
                    [&](size_t done, size_t total, const std::string& value) {
                      std::cerr << "lbsim: sweep " << name << ": " << done << "/" << total
                                << " done (" << name << "=" << value << "), "
                                << absl::FormatDuration(
                                       absl::Trunc(absl::Now() - started, absl::Milliseconds(100)))
                                << " elapsed\n";
                    });
  if (!rows.ok()) return Fail(rows.status());
  auto base = BuildScenario(*f, o.variant, o.sets);
  if (!base.ok()) return Fail(base.status());
  std::cout << "sweep " << name << " on " << base->name
            << (o.variant.empty() ? "" : " / " + o.variant) << " (seed " << base->seed << ")\n";
  std::cout << FormatSweepTable(name, *rows);
  std::string csv = o.csv;
  if (csv.empty()) csv = absl::StrCat(base->name, "-", name, ".csv");
  if (!WriteFile(csv, FormatSweepCsv(name, *rows))) return kExitUsage;
  std::cout << "csv -> " << csv << "\n";
  if (!o.svg.empty()) {
    std::string plot = o.plot;
    if (!o.plot_given && FindMetric(rows->front().metrics, "reset_without")) {
      plot = "reset_without_fraction,reset_with_fraction,moved_fraction,slot_changed_fraction";
    }
    std::vector<std::string> metrics = absl::StrSplit(plot, ',', absl::SkipEmpty());
    for (const std::string& m : metrics) {
      if (!FindMetric(rows->front().metrics, m))
        return Usage(absl::StrCat("--plot: unknown metric ", m));
    }
    const std::string title = absl::StrCat("lbsim sweep of ", name, " on ", base->name,
                                           o.variant.empty() ? "" : absl::StrCat(" / ", o.variant));
    if (!WriteFile(o.svg, SweepSvg(title, name, *rows, metrics))) return kExitUsage;
    std::cout << "svg -> " << o.svg << "\n";
  }
  return kExitOk;
}

int Main(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  // Option table: name, takes a value, what to do with it.
  struct Opt {
    const char* name;
    std::function<bool(const std::string&)> apply;
  };
  const Opt opts[] = {
      {"--variant",
       [&](const std::string& v) {
         o.variant = v;
         return true;
       }},
      {"--set",
       [&](const std::string& v) {
         std::string n, val;
         if (!SplitAssign(v, &n, &val)) return false;
         o.sets.emplace_back(n, val);
         return true;
       }},
      {"--seed",
       [&](const std::string& v) {
         uint64_t s;
         if (!absl::SimpleAtoi(v, &s)) return false;
         o.sets.emplace_back("seed", v);
         return true;
       }},
      {"--sweep",
       [&](const std::string& v) {
         o.sweep = v;
         return true;
       }},
      {"--csv",
       [&](const std::string& v) {
         o.csv = v;
         return true;
       }},
      {"--svg",
       [&](const std::string& v) {
         o.svg = v;
         return true;
       }},
      {"--plot",
       [&](const std::string& v) {
         o.plot = v;
         o.plot_given = true;
         return true;
       }},
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help" || a == "help") {
      std::cout << kUsage;
      return kExitOk;
    }
    if (a == "--version") {
      std::cout << "lbsim " << BALLAST_VERSION << "\n";
      return kExitOk;
    }
    if (a == "--metrics") {
      o.metrics = true;
      continue;
    }
    if (a == "--actions") {
      o.actions = true;
      continue;
    }
    if (a == "--verbose") {
      o.verbose = true;
      continue;
    }
    if (a.rfind("--", 0) == 0) {
      std::string name = a, value;
      bool inline_value = false;
      if (const size_t eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      const Opt* opt = nullptr;
      for (const Opt& x : opts) {
        if (name == x.name) opt = &x;
      }
      if (opt == nullptr) return Usage(absl::StrCat("unknown option ", a));
      if (!inline_value) {
        if (i + 1 >= args.size()) return Usage(absl::StrCat(name, " needs a value"));
        value = args[++i];
      }
      if (!opt->apply(value)) return Usage(absl::StrCat("bad value for ", name, ": ", value));
      continue;
    }
    if (o.command.empty() && o.files.empty() &&
        (a == "run" || a == "check" || a == "sweep" || a == "tunables")) {
      o.command = a;
      continue;
    }
    o.files.push_back(a);
  }
  if (o.command.empty()) o.command = o.sweep.empty() ? "run" : "sweep";
  if (o.command == "tunables") {
    for (const std::string& n : TunableNames()) std::cout << n << " -> " << *TunablePath(n) << "\n";
    return kExitOk;
  }
  if (o.command == "run") {
    if (!o.sweep.empty()) return CmdSweep(o);
    return CmdRun(o);
  }
  if (o.command == "check") return CmdCheck(o);
  if (o.sweep.empty()) return Usage("sweep needs --sweep NAME=a,b,c");
  return CmdSweep(o);
}

}  // namespace
}  // namespace ballast::lbsim

int main(int argc, char** argv) { return ballast::lbsim::Main(argc, argv); }
