// Reading a scenario's YAML: the typed map reader and the helpers that
// scenario.cc (ReadScenario, its faults and health params) and
// scenario_churn.cc (the router-churn sections) share. Internal to
// tools/lbsim; errors name the field, e.g. `faults[1].latency_factor:
// expected a number`.
#ifndef BALLAST_TOOLS_LBSIM_SCENARIO_READER_H_
#define BALLAST_TOOLS_LBSIM_SCENARIO_READER_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tools/lbsim/rng.h"
#include "yaml-cpp/yaml.h"

namespace ballast::lbsim::internal {

// A node for an error message: 'text', a list, a map or nothing.
std::string Describe(const YAML::Node& n);

// A duration: "250ms", "2s", "1.5m", or a number of seconds.
bool ParseDurationText(const std::string& s, absl::Duration* d);

// Reads one YAML map: typed getters that remember the first error, and a
// Finish() that rejects keys nobody asked for (a typo is an error, not a
// silently ignored setting).
class MapReader {
 public:
  MapReader(const YAML::Node& n, std::string where);

  bool Has(const char* key) {
    seen_.insert(key);
    return n_ && n_.IsMap() && n_[key] && !n_[key].IsNull();
  }
  YAML::Node Get(const char* key) {
    seen_.insert(key);
    return n_[key];
  }
  std::string Path(const std::string& key) const;

  void Fail(const std::string& key, const std::string& msg);

  void String(const char* key, std::string* out);
  void Double(const char* key, double* out, double lo, double hi);
  void Int(const char* key, int* out, int lo, int hi);
  void Uint64(const char* key, uint64_t* out);
  void Bool(const char* key, bool* out);
  // A duration: "250ms", "2s", "1.5m", or a number of seconds.
  void Duration(const char* key, absl::Duration* out, absl::Duration lo,
                absl::Duration hi = absl::InfiniteDuration());
  void IntList(const char* key, std::vector<int>* out);
  // Seconds or a distribution map (see Distribution).
  void Dist(const char* key, Distribution* out);

  absl::Status Finish();
  absl::Status status() const { return status_; }
  void Merge(const absl::Status& s) {
    if (status_.ok() && !s.ok()) status_ = s;
  }

 private:
  YAML::Node n_;
  std::string where_;
  std::set<std::string> seen_;
  absl::Status status_;
};

// Backend indices: a list of integers and "a-b" ranges, or "all".
absl::Status ReadBackendSet(const YAML::Node& v, const std::string& where, int count,
                            std::vector<int>* out);

}  // namespace ballast::lbsim::internal

#endif  // BALLAST_TOOLS_LBSIM_SCENARIO_READER_H_
