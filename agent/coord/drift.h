// Configuration drift between the nodes of a cluster, decided from their
// published records and the time alone (no I/O, no clock: the caller passes
// `now`). ClusterNode::Analyse calls it each pass and audits `alert`.
//
// A difference is a node at this node's state revision with another config
// or Maglev table hash, or a node stuck at an older revision for at least
// the grace period. A drift episode alerts once, when differences have been
// seen for grace_ms without a pass that saw none; a pass with none ends it.
// Values only; thread-safety is the caller's.
#ifndef BALLAST_AGENT_COORD_DRIFT_H_
#define BALLAST_AGENT_COORD_DRIFT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ballast/v1/agent.pb.h"

namespace ballast::coord {

// What AssessDrift remembers between passes.
struct DriftTracker {
  // Per peer: the state revision it last published and since when (ms).
  std::map<std::string, std::pair<int64_t, int64_t>> revision_seen;
  std::optional<int64_t> since_ms;  // the open episode's start
  bool alerted = false;             // the open episode was alerted
};

struct DriftVerdict {
  std::vector<std::string> differences;  // this pass's, one line each
  bool alert = false;                    // audit config_drift now (once per episode)
  int64_t lasted_ms = 0;                 // the episode's age, when alert
};

// Differences between `self` and every other record at the same state
// revision (one line each): a different config or table hash.
std::vector<std::string> ConfigDifferences(const v1::NodeRecord& self,
                                           const std::map<std::string, v1::NodeRecord>& all);

// One pass. `up`: this node sees the store (drift means nothing otherwise:
// no differences, and the episode ends). `peers` may include `self`.
DriftVerdict AssessDrift(DriftTracker* t, const v1::NodeRecord& self,
                         const std::map<std::string, v1::NodeRecord>& peers, bool up,
                         int64_t now_ms, int64_t grace_ms);

}  // namespace ballast::coord

#endif  // BALLAST_AGENT_COORD_DRIFT_H_
