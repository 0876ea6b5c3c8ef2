#include "agent/bgp/announce_policy.h"

#include "absl/strings/str_cat.h"

namespace ballast::bgp {
namespace {

// Why one VIP may (true) or may not be forwarded by this node.
bool MayForward(const VipInput& v, const PolicyInput& in, std::string* why) {
  if (!in.cluster_mode || !v.active_standby) {
    *why = absl::StrCat("data plane healthy, ", v.key, " forwarded here");
    return true;
  }
  if (!v.owner) {
    *why = absl::StrCat(v.key, " is active/standby and this node is not its owner");
    return false;
  }
  if (!v.deadline_ns.has_value() || *v.deadline_ns <= in.now_ns) {
    *why = absl::StrCat(v.key,
                        ": owner deadline passed (lease lost or fenced), the data plane stops it");
    return false;
  }
  *why = absl::StrCat("data plane healthy, this node owns ", v.key, " (deadline in ",
                      (*v.deadline_ns - in.now_ns) / 1000000, " ms)");
  return true;
}

}  // namespace

std::map<VipPrefix, AnnounceDecision> DecideAnnouncements(const PolicyInput& in,
                                                          std::vector<std::string>* errors) {
  std::map<VipPrefix, AnnounceDecision> out;
  for (const VipInput& v : in.vips) {
    absl::StatusOr<VipPrefix> prefix = VipPrefix::Parse(v.address);
    if (!prefix.ok()) {
      if (errors != nullptr) {
        errors->push_back(absl::StrCat("VIP ", v.key, ": ", prefix.status().message()));
      }
      continue;
    }
    AnnounceDecision& d = out[*prefix];  // starts withdrawn, no reason
    if (!in.shutdown.empty()) {
      d = {false, absl::StrCat("agent shutting down (", in.shutdown, ")")};
      continue;
    }
    if (!in.hold.empty()) {
      d = {false, absl::StrCat("operator hold: ", in.hold)};
      continue;
    }
    if (!in.dataplane.healthy) {
      d = {false, absl::StrCat("data plane unhealthy: ", in.dataplane.problem)};
      continue;
    }
    if (d.announce) continue;  // another VIP on this address already announces it
    std::string why;
    const bool may = MayForward(v, in, &why);
    if (may || d.reason.empty()) d = {may, why};
  }
  for (const std::string& a : in.retired) {
    absl::StatusOr<VipPrefix> prefix = VipPrefix::Parse(a);
    if (!prefix.ok()) {
      if (errors != nullptr) {
        errors->push_back(absl::StrCat("retired VIP address ", a, ": ", prefix.status().message()));
      }
      continue;
    }
    if (out.count(*prefix) != 0) continue;  // a VIP uses it again
    out[*prefix] = {false, "no VIP uses it any more"};
  }
  return out;
}

}  // namespace ballast::bgp
