#include "agent/coord/drift.h"

#include "absl/strings/str_cat.h"

namespace ballast::coord {
namespace {

std::string Short(const std::string& hash) { return hash.substr(0, 12); }

}  // namespace

std::vector<std::string> ConfigDifferences(const v1::NodeRecord& self,
                                           const std::map<std::string, v1::NodeRecord>& all) {
  std::vector<std::string> out;
  for (const auto& [name, r] : all) {
    if (name == self.node()) continue;
    // Nodes at different revisions are catching up (Analyse counts a node
    // stuck behind as a difference after the grace period).
    if (r.state_revision() != self.state_revision()) continue;
    if (r.config_hash() != self.config_hash()) {
      out.push_back(absl::StrCat("node ", name, ": config hash ", Short(r.config_hash()),
                                 " (state revision ", r.state_revision(),
                                 ") != ", Short(self.config_hash()), " (node ", self.node(),
                                 ", revision ", self.state_revision(), ")"));
    }
    std::set<std::string> vips;
    for (const auto& [v, h] : r.table_hashes()) vips.insert(v);
    for (const auto& [v, h] : self.table_hashes()) vips.insert(v);
    for (const std::string& v : vips) {
      auto a = self.table_hashes().find(v);
      auto b = r.table_hashes().find(v);
      const std::string ha = a == self.table_hashes().end() ? "(none)" : a->second;
      const std::string hb = b == r.table_hashes().end() ? "(none)" : b->second;
      if (ha != hb) {
        out.push_back(absl::StrCat("node ", name, ": vip ", v, " Maglev table ", Short(hb),
                                   " != ", Short(ha), " (node ", self.node(), ")"));
      }
    }
  }
  return out;
}

DriftVerdict AssessDrift(DriftTracker* t, const v1::NodeRecord& self,
                         const std::map<std::string, v1::NodeRecord>& peers, bool up,
                         int64_t now_ms, int64_t grace_ms) {
  DriftVerdict v;
  if (up) {
    v.differences = ConfigDifferences(self, peers);
    std::map<std::string, std::pair<int64_t, int64_t>> seen;
    for (const auto& [name, r] : peers) {
      if (name == self.node()) continue;
      auto it = t->revision_seen.find(name);
      std::pair<int64_t, int64_t> at = {r.state_revision(), now_ms};
      if (it != t->revision_seen.end() && it->second.first == r.state_revision()) at = it->second;
      seen[name] = at;
      if (r.state_revision() < self.state_revision() && now_ms - at.second >= grace_ms) {
        v.differences.push_back(absl::StrCat("node ", name, ": behind at state revision ",
                                             r.state_revision(), " for ",
                                             (now_ms - at.second) / 1000, " s (node ", self.node(),
                                             ": ", self.state_revision(), ")"));
      }
    }
    t->revision_seen = std::move(seen);
  }
  if (v.differences.empty()) {
    t->since_ms.reset();
    t->alerted = false;
    return v;
  }
  if (!t->since_ms.has_value()) t->since_ms = now_ms;
  if (!t->alerted && now_ms - *t->since_ms >= grace_ms) {
    t->alerted = true;
    v.alert = true;
    v.lasted_ms = now_ms - *t->since_ms;
  }
  return v;
}

}  // namespace ballast::coord
