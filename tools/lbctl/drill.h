// The pure part of `lbctl drill` (docs/cluster.md, "Drills"): what the
// observations made during a drill mean. No I/O, no clock: every function
// takes the times (milliseconds since the failure was caused) it needs, so
// the rules are unit-tested on made-up sequences (drill_test.cc).
//
// The four numbers and their targets:
//   failover   failure -> the first rise of a standby's per-VIP forwarded
//              packet counter (no target; -1 = no traffic before the
//              timeout, which fails the drill);
//   stable     traffic moved -> the last change of the new owner's pool
//              (backends' states and effective weights, the Maglev table
//              hash), confirmed by `window` without a change; 0 = no change
//              after traffic moved; -1 = not stable before the timeout;
//              target <= 5 s;
//   flaps      backend state transitions during the drill on any node: the
//              automated decisions in the audit logs (demote, promote, pin)
//              plus every flip of a node's own in-service verdict; target 0;
//   differences configuration differences between the nodes at the end
//              (`lbctl config diff`); target 0.
#ifndef BALLAST_TOOLS_LBCTL_DRILL_H_
#define BALLAST_TOOLS_LBCTL_DRILL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ballast/v1/api.pb.h"

namespace ballast::lbctl {

inline constexpr int64_t kDrillStableTargetMs = 5000;  // the agent checks the same rule

// Which node traffic moved to, and when: the first rise of a standby's
// counter above its baseline (taken before the failure).
class TrafficWatch {
 public:
  void Baseline(const std::string& node, uint64_t packets) { baseline_[node] = packets; }
  // Records one reading; true when this is the first rise of any standby.
  bool Observe(const std::string& node, uint64_t packets, int64_t t_ms);
  bool moved() const { return moved_ms_.has_value(); }
  std::optional<int64_t> moved_ms() const { return moved_ms_; }
  const std::string& to() const { return to_; }

 private:
  std::map<std::string, uint64_t> baseline_;
  std::optional<int64_t> moved_ms_;
  std::string to_;
};

// The new owner's pool after traffic moved: stable once its signature has
// not changed for `window_ms`.
class PoolWatch {
 public:
  PoolWatch(int64_t traffic_ms, int64_t window_ms)
      : traffic_ms_(traffic_ms), window_ms_(window_ms) {}
  // One reading at t_ms (>= traffic_ms). The first one is the reference.
  // True when it differs from the previous reading (a change).
  bool Observe(int64_t t_ms, const std::string& signature);
  // Time from traffic moving to the pool's last change (0: no change), once
  // it has held for the window at now_ms; nullopt before.
  std::optional<int64_t> StableMs(int64_t now_ms) const;
  int changes() const { return changes_; }

 private:
  int64_t traffic_ms_;
  int64_t window_ms_;
  std::optional<std::string> last_;
  int64_t last_change_ms_ = -1;  // -1: none since traffic moved
  int changes_ = 0;
};

// A pool's signature: backends (address, state, effective weight) in
// address order, and the table hash.
std::string PoolSignature(const v1::VipStatus& vip, absl::string_view table_hash);

// Flips of each node's own in-service verdict per backend of one VIP, from
// its published observations (NodeRecord.observations), read repeatedly.
class VerdictWatch {
 public:
  explicit VerdictWatch(std::string vip) : vip_(std::move(vip)) {}
  void Observe(const v1::NodeRecord& record, int64_t t_ms);
  uint32_t flips() const { return static_cast<uint32_t>(notes_.size()); }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::string vip_;
  std::map<std::string, bool> in_service_;  // "node backend"
  std::vector<std::string> notes_;          // one per flip
};

// Audit actions that are backend state transitions (flaps).
bool IsFlapAction(absl::string_view action);

// The verdict: the same rule as the agent's RecordDrill check.
bool DrillPasses(const v1::DrillResult& r);

// The human report (several lines).
std::string FormatDrill(const v1::DrillResult& r, absl::string_view recorded_on);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_DRILL_H_
