#include "tools/lbctl/drill.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/lbctl/address.h"

namespace ballast::lbctl {

bool TrafficWatch::Observe(const std::string& node, uint64_t packets, int64_t t_ms) {
  if (moved_ms_.has_value()) return false;
  auto it = baseline_.find(node);
  if (it == baseline_.end()) {
    baseline_[node] = packets;  // no baseline: this reading is one
    return false;
  }
  if (packets <= it->second) return false;
  moved_ms_ = t_ms;
  to_ = node;
  return true;
}

bool PoolWatch::Observe(int64_t t_ms, const std::string& signature) {
  const bool changed = last_.has_value() && *last_ != signature;
  if (changed) {
    last_change_ms_ = t_ms;
    ++changes_;
  }
  last_ = signature;
  return changed;
}

std::optional<int64_t> PoolWatch::StableMs(int64_t now_ms) const {
  if (!last_.has_value()) return std::nullopt;
  const int64_t since = last_change_ms_ < 0 ? traffic_ms_ : last_change_ms_;
  if (now_ms - since < window_ms_) return std::nullopt;
  return last_change_ms_ < 0 ? 0 : std::max<int64_t>(0, last_change_ms_ - traffic_ms_);
}

std::string PoolSignature(const v1::VipStatus& vip, absl::string_view table_hash) {
  std::vector<std::string> parts;
  for (const v1::BackendStatus& b : vip.backends()) {
    parts.push_back(absl::StrCat(b.address(), " ", b.state(), " ", b.effective_weight()));
  }
  std::sort(parts.begin(), parts.end());
  return absl::StrCat(absl::StrJoin(parts, ","), " table ", table_hash);
}

void VerdictWatch::Observe(const v1::NodeRecord& record, int64_t t_ms) {
  for (const v1::Observation& o : record.observations()) {
    if (o.vip() != vip_) continue;
    const std::string k = absl::StrCat(record.node(), " ", o.backend());
    auto it = in_service_.find(k);
    if (it != in_service_.end() && it->second != o.in_service()) {
      notes_.push_back(absl::StrFormat("node %s: backend %s %s at +%.2f s (%s)", record.node(),
                                       o.backend(), o.in_service() ? "back in service" : "out",
                                       static_cast<double>(t_ms) / 1000.0, o.state()));
    }
    in_service_[k] = o.in_service();
  }
}

bool IsFlapAction(absl::string_view action) {
  return action == "demote" || action == "promote" || action == "pin";
}

bool DrillPasses(const v1::DrillResult& r) {
  return r.failover_ms() >= 0 && r.stable_ms() >= 0 && r.stable_ms() <= kDrillStableTargetMs &&
         r.flaps() == 0 && r.differences() == 0;
}

namespace {

std::string Seconds(int64_t ms) {
  return ms < 0 ? std::string("none") : absl::StrFormat("%.2f s", static_cast<double>(ms) / 1000.0);
}

}  // namespace

std::string FormatDrill(const v1::DrillResult& r, absl::string_view recorded_on) {
  const std::string to = r.to_node().empty() ? std::string("a standby") : r.to_node();
  const bool traffic = r.failover_ms() >= 0;
  const bool stable = r.stable_ms() >= 0 && r.stable_ms() <= kDrillStableTargetMs;
  std::string out =
      absl::StrFormat("drill of vip %s, mode %s: owner %s -> %s (stable window %s)\n",
                      FormatVipKey(r.vip()), r.mode(), r.from_node(),
                      r.to_node().empty() ? "nobody" : r.to_node(), Seconds(r.stable_window_ms()));
  const auto line = [&out](absl::string_view name, const std::string& value,
                           const std::string& what, absl::string_view target, bool ok) {
    absl::StrAppendFormat(&out, "  %-12s %-8s %-44s %-14s %s\n", name, value, what, target,
                          ok ? "PASS" : "FAIL");
  };
  line("failover", Seconds(r.failover_ms()),
       traffic ? absl::StrCat("failure -> traffic on ", to)
               : std::string("no traffic on any standby before the timeout"),
       "traffic moves", traffic);
  line("stable", Seconds(r.stable_ms()),
       r.stable_ms() < 0 ? std::string("the pool never held still for the window")
                         : absl::StrCat("traffic moved -> stable pool on ", to),
       "<= 5 s", stable);
  line("flaps", absl::StrCat(r.flaps()), "backend state transitions, every node", "0",
       r.flaps() == 0);
  line("differences", absl::StrCat(r.differences()), "configuration, between the nodes at the end",
       "0", r.differences() == 0);
  for (const std::string& n : r.notes()) absl::StrAppend(&out, "  note: ", n, "\n");
  absl::StrAppend(&out, "result: ", r.pass() ? "PASS" : "FAIL");
  if (!recorded_on.empty()) {
    absl::StrAppend(&out, " (recorded in the audit log of node ", recorded_on, " as `drill`)");
  }
  absl::StrAppend(&out, "\n");
  return out;
}

}  // namespace ballast::lbctl
