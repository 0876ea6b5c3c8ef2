#include "tools/lbsim/scenario_reader.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace ballast::lbsim::internal {

std::string Describe(const YAML::Node& n) {
  if (n.IsScalar()) return absl::StrCat("'", n.Scalar(), "'");
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return "nothing";
}

bool ParseDurationText(const std::string& s, absl::Duration* d) {
  double secs;
  if (absl::SimpleAtod(s, &secs)) {
    if (!std::isfinite(secs)) return false;
    *d = absl::Seconds(secs);
    return true;
  }
  return absl::ParseDuration(s, d);
}

MapReader::MapReader(const YAML::Node& n, std::string where) : n_(n), where_(std::move(where)) {
  if (n_ && !n_.IsNull() && !n_.IsMap())
    Fail("", absl::StrCat("expected a map, got ", Describe(n_)));
}

std::string MapReader::Path(const std::string& key) const {
  return where_.empty() ? key : absl::StrCat(where_, ".", key);
}

void MapReader::Fail(const std::string& key, const std::string& msg) {
  if (!status_.ok()) return;
  const std::string at = key.empty() ? where_ : Path(key);
  status_ = absl::InvalidArgumentError(at.empty() ? msg : absl::StrCat(at, ": ", msg));
}

void MapReader::String(const char* key, std::string* out) {
  if (!Has(key)) return;
  const YAML::Node v = n_[key];
  if (!v.IsScalar()) return Fail(key, absl::StrCat("expected text, got ", Describe(v)));
  *out = v.Scalar();
}

void MapReader::Double(const char* key, double* out, double lo, double hi) {
  if (!Has(key)) return;
  const YAML::Node v = n_[key];
  double d;
  if (!v.IsScalar() || !absl::SimpleAtod(v.Scalar(), &d) || !std::isfinite(d)) {
    return Fail(key, absl::StrCat("expected a number, got ", Describe(v)));
  }
  if (d < lo || d > hi) {
    return Fail(key, absl::StrCat(v.Scalar(), " is out of range ", lo, "..", hi));
  }
  *out = d;
}

void MapReader::Int(const char* key, int* out, int lo, int hi) {
  if (!Has(key)) return;
  const YAML::Node v = n_[key];
  int64_t i;
  if (!v.IsScalar() || !absl::SimpleAtoi(v.Scalar(), &i)) {
    return Fail(key, absl::StrCat("expected an integer, got ", Describe(v)));
  }
  if (i < lo || i > hi) {
    return Fail(key, absl::StrCat(v.Scalar(), " is out of range ", lo, "..", hi));
  }
  *out = static_cast<int>(i);
}

void MapReader::Uint64(const char* key, uint64_t* out) {
  if (!Has(key)) return;
  const YAML::Node v = n_[key];
  if (!v.IsScalar() || !absl::SimpleAtoi(v.Scalar(), out)) {
    return Fail(key, absl::StrCat("expected a non-negative integer, got ", Describe(v)));
  }
}

void MapReader::Bool(const char* key, bool* out) {
  if (!Has(key)) return;
  const YAML::Node v = n_[key];
  if (v.IsScalar() && (v.Scalar() == "true" || v.Scalar() == "yes" || v.Scalar() == "on")) {
    *out = true;
  } else if (v.IsScalar() && (v.Scalar() == "false" || v.Scalar() == "no" || v.Scalar() == "off")) {
    *out = false;
  } else {
    Fail(key, absl::StrCat("expected true or false, got ", Describe(v)));
  }
}

void MapReader::Duration(const char* key, absl::Duration* out, absl::Duration lo,
                         absl::Duration hi) {
  if (!Has(key)) return;
  const YAML::Node v = n_[key];
  absl::Duration d;
  if (!v.IsScalar() || !ParseDurationText(v.Scalar(), &d)) {
    return Fail(key, absl::StrCat("expected a duration such as 250ms or 2s, got ", Describe(v)));
  }
  if (d < lo || d > hi) {
    return Fail(key, absl::StrCat(v.Scalar(), " is out of range ", absl::FormatDuration(lo), "..",
                                  absl::FormatDuration(hi)));
  }
  *out = d;
}

void MapReader::IntList(const char* key, std::vector<int>* out) {
  if (!Has(key)) return;
  const YAML::Node v = n_[key];
  if (!v.IsSequence()) return Fail(key, absl::StrCat("expected a list, got ", Describe(v)));
  std::vector<int> r;
  for (const YAML::Node& e : v) {
    int64_t i;
    if (!e.IsScalar() || !absl::SimpleAtoi(e.Scalar(), &i) || i < -1000000 || i > 1000000) {
      return Fail(key, absl::StrCat("expected integers, got ", Describe(e)));
    }
    r.push_back(static_cast<int>(i));
  }
  *out = std::move(r);
}

void MapReader::Dist(const char* key, Distribution* out) {
  if (!Has(key)) return;
  const YAML::Node v = n_[key];
  if (v.IsScalar()) {
    absl::Duration d;
    if (!ParseDurationText(v.Scalar(), &d) || d < absl::ZeroDuration()) {
      return Fail(key, absl::StrCat("expected a duration or a distribution, got ", Describe(v)));
    }
    *out = Distribution::Constant(absl::ToDoubleSeconds(d));
    return;
  }
  MapReader m(v, Path(key));
  std::string kind = "constant";
  m.String("dist", &kind);
  Distribution d;
  absl::Duration a = absl::ZeroDuration(), b = absl::ZeroDuration();
  double sigma = 0, shape = 0;
  if (kind == "constant") {
    d.kind = Distribution::Kind::kConstant;
    m.Duration("value", &a, absl::ZeroDuration());
  } else if (kind == "exponential") {
    d.kind = Distribution::Kind::kExponential;
    m.Duration("mean", &a, absl::ZeroDuration());
  } else if (kind == "uniform") {
    d.kind = Distribution::Kind::kUniform;
    m.Duration("min", &a, absl::ZeroDuration());
    m.Duration("max", &b, absl::ZeroDuration());
    if (b < a) m.Fail("max", "is below min");
  } else if (kind == "lognormal") {
    d.kind = Distribution::Kind::kLogNormal;
    m.Duration("median", &a, absl::ZeroDuration());
    m.Double("sigma", &sigma, 0, 5);
  } else if (kind == "pareto") {
    d.kind = Distribution::Kind::kPareto;
    m.Duration("min", &a, absl::Nanoseconds(1));
    shape = 2;
    m.Double("shape", &shape, 0.1, 100);
  } else {
    m.Fail("dist", absl::StrCat("unknown distribution '", kind,
                                "' (constant, exponential, uniform, lognormal, pareto)"));
  }
  d.a = absl::ToDoubleSeconds(a);
  d.b = d.kind == Distribution::Kind::kUniform     ? absl::ToDoubleSeconds(b)
        : d.kind == Distribution::Kind::kLogNormal ? sigma
        : d.kind == Distribution::Kind::kPareto    ? shape
                                                   : 0;
  if (absl::Status s = m.Finish(); !s.ok()) {
    if (status_.ok()) status_ = s;
    return;
  }
  *out = d;
}

absl::Status MapReader::Finish() {
  if (status_.ok() && n_ && n_.IsMap()) {
    for (const auto& kv : n_) {
      const std::string k = kv.first.Scalar();
      if (seen_.count(k) == 0) {
        std::vector<std::string> known(seen_.begin(), seen_.end());
        Fail(k, absl::StrCat("unknown key (known here: ", absl::StrJoin(known, ", "), ")"));
        break;
      }
    }
  }
  return status_;
}

// Backend indices: a list of integers and "a-b" ranges, or "all".
absl::Status ReadBackendSet(const YAML::Node& v, const std::string& where, int count,
                            std::vector<int>* out) {
  std::vector<int> r;
  auto add_text = [&](const std::string& s) -> absl::Status {
    if (s == "all") {
      for (int i = 0; i < count; ++i) r.push_back(i);
      return absl::OkStatus();
    }
    std::vector<std::string> ab = absl::StrSplit(s, '-');
    int lo, hi;
    if (ab.size() == 1 && absl::SimpleAtoi(ab[0], &lo)) {
      hi = lo;
    } else if (ab.size() != 2 || !absl::SimpleAtoi(ab[0], &lo) || !absl::SimpleAtoi(ab[1], &hi) ||
               hi < lo) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": '", s, "' is not a backend index, a range a-b, or all"));
    }
    for (int i = lo; i <= hi; ++i) r.push_back(i);
    return absl::OkStatus();
  };
  if (v.IsScalar()) {
    if (absl::Status s = add_text(v.Scalar()); !s.ok()) return s;
  } else if (v.IsSequence()) {
    for (const YAML::Node& e : v) {
      if (!e.IsScalar())
        return absl::InvalidArgumentError(absl::StrCat(where, ": expected indices"));
      if (absl::Status s = add_text(e.Scalar()); !s.ok()) return s;
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a list of backend indices"));
  }
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  for (int i : r) {
    if (i < 0 || i >= count) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": backend ", i, " does not exist (backends 0..", count - 1, ")"));
    }
  }
  *out = std::move(r);
  return absl::OkStatus();
}

}  // namespace ballast::lbsim::internal
