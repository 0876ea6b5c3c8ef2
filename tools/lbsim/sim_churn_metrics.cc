#include "tools/lbsim/sim_churn.h"

#include <string>
#include <utility>
#include <vector>

namespace ballast::lbsim::internal {

std::vector<std::pair<std::string, double>> ChurnMetrics(const RunResult& r) {
  const ChurnResult& c = r.churn;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  auto frac = [&](uint64_t n) { return c.established == 0 ? 0.0 : d(n) / d(c.established); };
  const std::vector<double> values = {
      d(c.connections),
      d(c.established),
      d(c.moved),
      frac(c.moved),
      d(c.slot_changed),
      frac(c.slot_changed),
      d(c.without.reset),
      frac(c.without.reset),
      d(c.with.reset),
      frac(c.with.reset),
      d(c.with.saved),
      d(c.with.hops),
      c.with.saved == 0 ? 0.0 : d(c.with.hops) / d(c.with.saved),
      d(c.with.hops_max),
      d(c.with.adopted),
      d(c.with.cut_drain),
      d(c.with.cut_removed),
      d(c.with.open_at_end),
      d(c.stalled),
      c.stall_max_s,
      d(r.tables),
      d(r.slots_moved),
      c.table_size == 0 ? 0.0 : d(c.slots_changed) / d(c.table_size),
      static_cast<double>(c.versions),
      d(c.router_changes),
  };
  const std::vector<std::string>& names = ChurnMetricNames();
  std::vector<std::pair<std::string, double>> m;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i)
    m.emplace_back(names[i], values[i]);
  return m;
}

}  // namespace ballast::lbsim::internal

namespace ballast::lbsim {

const std::vector<std::string>& ChurnMetricNames() {
  static const std::vector<std::string> kNames = {"connections",
                                                  "established",
                                                  "moved",
                                                  "moved_fraction",
                                                  "slot_changed",
                                                  "slot_changed_fraction",
                                                  "reset_without",
                                                  "reset_without_fraction",
                                                  "reset_with",
                                                  "reset_with_fraction",
                                                  "saved",
                                                  "hops",
                                                  "hops_mean",
                                                  "hops_max",
                                                  "adopted",
                                                  "cut_drain",
                                                  "cut_removed",
                                                  "open_at_end",
                                                  "stalled",
                                                  "stall_max_s",
                                                  "tables",
                                                  "slots_moved",
                                                  "slots_changed_fraction",
                                                  "versions",
                                                  "router_changes"};
  return kNames;
}

}  // namespace ballast::lbsim
