#include "tools/lbsim/runner.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ballast::lbsim {

std::vector<std::string> RunNames(const ScenarioFile& f) {
  std::vector<std::string> names;
  for (const auto& [name, node] : f.variants) names.push_back(name);
  if (names.empty()) names.push_back("");
  return names;
}

absl::StatusOr<Scenario> BuildScenario(const ScenarioFile& f, const std::string& variant,
                                       const Sets& sets) {
  YAML::Node root = CloneNode(f.base);
  std::vector<std::string> extra_expect;
  if (!variant.empty()) {
    const YAML::Node* v = nullptr;
    std::vector<std::string> names;
    for (const auto& [name, node] : f.variants) {
      names.push_back(name);
      if (name == variant) v = &node;
    }
    if (v == nullptr) {
      return absl::NotFoundError(absl::StrCat(
          f.path, ": no variant '", variant, "'",
          names.empty() ? " (it has none)"
                        : absl::StrCat(" (variants: ", absl::StrJoin(names, ", "), ")")));
    }
    if (!v->IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(f.path, ": variants.", variant, ": expected a map"));
    }
    for (const auto& kv : *v) {
      const std::string key = kv.first.Scalar();
      if (key == "set") {
        if (!kv.second.IsMap()) {
          return absl::InvalidArgumentError(
              absl::StrCat(f.path, ": variants.", variant, ".set: expected a map"));
        }
        for (const auto& s : kv.second) {
          auto path = TunablePath(s.first.Scalar());
          if (!path.ok()) return path.status();
          if (absl::Status st = SetPathNode(root, *path, s.second); !st.ok()) return st;
        }
      } else if (key == "expect") {
        if (!kv.second.IsSequence()) {
          return absl::InvalidArgumentError(
              absl::StrCat(f.path, ": variants.", variant, ".expect: expected a list"));
        }
        for (const auto& e : kv.second) extra_expect.push_back(e.Scalar());
      } else if (key != "description") {
        return absl::InvalidArgumentError(absl::StrCat(f.path, ": variants.", variant,
                                                       ": unknown key '", key,
                                                       "' (set, expect, description)"));
      }
    }
  }
  for (const auto& [name, value] : sets) {
    auto path = TunablePath(name);
    if (!path.ok()) return path.status();
    if (absl::Status st = SetPath(root, *path, value); !st.ok()) return st;
  }
  auto sc = ReadScenario(root);
  if (!sc.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path, variant.empty() ? "" : absl::StrCat(" (variant ", variant, ")"), ": ",
                     sc.status().message()));
  }
  sc->variant = variant;
  for (std::string& e : extra_expect) sc->expect.push_back(std::move(e));
  return sc;
}

absl::StatusOr<CheckOutcome> CheckFile(const ScenarioFile& f, const Sets& sets) {
  CheckOutcome out;
  std::map<std::string, MetricList> all;
  for (const std::string& name : RunNames(f)) {
    auto sc = BuildScenario(f, name, sets);
    if (!sc.ok()) return sc.status();
    auto r = Run(*sc);
    if (!r.ok()) return r.status();
    absl::StrAppend(&out.text, FormatReport(*sc, *r));
    std::map<std::string, MetricList> own = {{"", Metrics(*r)}};
    for (const std::string& check : sc->expect) {
      std::string detail;
      auto ok = EvalCheck(check, own, &detail);
      if (!ok.ok()) return ok.status();
      ++out.checks;
      out.passed = out.passed && *ok;
      absl::StrAppend(&out.text, "  expect  ", detail, "\n");
    }
    all[name] = own[""];
  }
  for (const std::string& check : f.compare) {
    std::string detail;
    auto ok = EvalCheck(check, all, &detail);
    if (!ok.ok()) return ok.status();
    ++out.checks;
    out.passed = out.passed && *ok;
    absl::StrAppend(&out.text, "compare  ", detail, "\n");
  }
  return out;
}

std::vector<std::string> SplitSweepValues(std::string_view list) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty() || !out.empty()) out.push_back(cur);
  return out;
}

absl::StatusOr<std::vector<SweepRow>> Sweep(const ScenarioFile& f, const std::string& variant,
                                            const Sets& sets, const std::string& tunable,
                                            const std::vector<std::string>& values,
                                            const SweepProgress& progress) {
  std::vector<SweepRow> rows;
  for (const std::string& v : values) {
    Sets s = sets;
    s.emplace_back(tunable, v);
    auto sc = BuildScenario(f, variant, s);
    if (!sc.ok()) return sc.status();
    auto r = Run(*sc);
    if (!r.ok()) return r.status();
    rows.push_back({v, Metrics(*r)});
    if (progress) progress(rows.size(), values.size(), v);
  }
  return rows;
}

}  // namespace ballast::lbsim
