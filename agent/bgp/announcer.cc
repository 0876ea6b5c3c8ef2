#include "agent/bgp/announcer.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace ballast::bgp {

const char* BirdVipStateName(BirdVipState s) {
  switch (s) {
    case BirdVipState::kUnknown:
      return "unknown";
    case BirdVipState::kMissing:
      return "missing";
    case BirdVipState::kAnnounced:
      return "announced";
    case BirdVipState::kWithdrawn:
      return "withdrawn";
    case BirdVipState::kChanging:
      return "changing";
    case BirdVipState::kConflict:
      return "conflict";
  }
  return "?";
}

BirdVipState StateOfRow(const ProtocolRow& row) {
  if (row.proto != "Static") return BirdVipState::kConflict;
  if (row.state == "up") return BirdVipState::kAnnounced;
  if (row.state == "down") return BirdVipState::kWithdrawn;
  return BirdVipState::kChanging;
}

std::vector<Step> PlanReconcile(const std::map<VipPrefix, bool>& want,
                                const std::vector<ProtocolRow>& rows) {
  std::map<std::string, bool> want_by_name;
  for (const auto& [vip, announce] : want) want_by_name[vip.ProtocolName()] = announce;
  std::vector<Step> withdraw, announce;
  std::set<std::string> seen;
  for (const ProtocolRow& row : rows) {
    if (!absl::StartsWith(row.name, kProtocolPrefix)) continue;
    if (!seen.insert(row.name).second) continue;
    const BirdVipState st = StateOfRow(row);
    if (st == BirdVipState::kConflict) continue;  // not ours to touch; reported
    auto it = want_by_name.find(row.name);
    if (it == want_by_name.end()) {
      if (row.state != "down") {
        withdraw.push_back({row.name, false,
                            VipPrefix::FromProtocolName(row.name)
                                ? "not a desired VIP"
                                : "ballast_vip_* protocol that names no VIP"});
      }
      continue;
    }
    // "stop"/"flush": going down (disabled); enabling it now brings it back
    // up as soon as it is down. "start": enabled and coming up.
    if (it->second && row.state != "up" && row.state != "start") {
      announce.push_back({row.name, true, "desired and not announced"});
    } else if (!it->second && row.state != "down") {
      withdraw.push_back({row.name, false, "announced but not desired"});
    }
  }
  auto by_name = [](const Step& a, const Step& b) { return a.protocol < b.protocol; };
  std::sort(withdraw.begin(), withdraw.end(), by_name);
  std::sort(announce.begin(), announce.end(), by_name);
  withdraw.insert(withdraw.end(), announce.begin(), announce.end());
  return withdraw;
}

Announcer::Announcer(Options options)
    : clock_(std::move(options.clock)), client_(std::move(options.bird)) {}

void Announcer::SetDesired(std::map<VipPrefix, bool> desired) {
  absl::MutexLock l(&mu_);
  desired_ = std::move(desired);
  std::map<VipPrefix, VipStatus> next;
  for (const auto& [vip, announce] : desired_) {
    VipStatus s;
    if (auto it = vips_.find(vip); it != vips_.end()) s = it->second;
    s.vip = vip;
    s.protocol = vip.ProtocolName();
    s.desired = announce;
    s.effective = announce && hold_.empty();
    next.emplace(vip, std::move(s));
  }
  vips_ = std::move(next);
}

void Announcer::ReleaseHold() {
  absl::MutexLock l(&mu_);
  hold_.clear();
  status_.hold_reason.clear();
  for (auto& [vip, s] : vips_) s.effective = s.desired;
}

ReconcileReport Announcer::WithdrawAll(std::string reason) {
  {
    absl::MutexLock l(&mu_);
    hold_ = reason.empty() ? "withdraw all" : std::move(reason);
    status_.hold_reason = hold_;
    for (auto& [vip, s] : vips_) s.effective = false;
  }
  return Reconcile();
}

std::map<VipPrefix, bool> Announcer::Want() const {
  std::map<VipPrefix, bool> want;
  for (const auto& [vip, announce] : desired_) want[vip] = announce && hold_.empty();
  return want;
}

void Announcer::Unreachable(const absl::Status& s) {
  status_.bird_reachable = false;
  status_.bird_error = std::string(s.message());
  for (auto& [vip, v] : vips_) {
    if (v.bird != BirdVipState::kUnknown) v.last_change = clock_();
    v.bird = BirdVipState::kUnknown;
    v.bird_since.clear();
  }
  status_.sessions.clear();
}

absl::StatusOr<std::vector<ProtocolRow>> Announcer::Observe() {
  absl::StatusOr<Reply> reply = client_.Command("show protocols");
  if (!reply.ok()) return reply.status();
  absl::StatusOr<std::vector<ProtocolRow>> rows = ParseShowProtocols(*reply);
  if (!rows.ok()) return rows.status();
  status_.bird_reachable = true;
  status_.bird_version = client_.version();
  status_.bird_error.clear();
  status_.sessions.clear();
  status_.orphans.clear();
  std::map<std::string, const ProtocolRow*> by_name;
  for (const ProtocolRow& row : *rows) {
    by_name.emplace(row.name, &row);
    if (row.proto == "BGP") status_.sessions.push_back({row.name, row.state, row.info});
  }
  for (auto& [vip, v] : vips_) {
    BirdVipState st = BirdVipState::kMissing;
    v.bird_since.clear();
    if (auto it = by_name.find(v.protocol); it != by_name.end()) {
      st = StateOfRow(*it->second);
      v.bird_since = it->second->since;
    }
    if (st != v.bird) v.last_change = clock_();
    v.bird = st;
  }
  for (const ProtocolRow& row : *rows) {
    if (!absl::StartsWith(row.name, kProtocolPrefix)) continue;
    auto vip = VipPrefix::FromProtocolName(row.name);
    if (!vip || !vips_.contains(*vip)) {
      status_.orphans.push_back(absl::StrCat(row.name, " (", row.state, ")"));
    }
  }
  return rows;
}

ReconcileReport Announcer::Reconcile() {
  absl::MutexLock l(&mu_);
  ReconcileReport report;
  status_.last_reconcile = clock_();
  absl::StatusOr<std::vector<ProtocolRow>> rows = Observe();
  if (!rows.ok()) {
    Unreachable(rows.status());
    report.status = rows.status();
    return report;
  }
  const std::map<VipPrefix, bool> want = Want();
  for (auto& [vip, v] : vips_) v.error.clear();
  for (const Step& step : PlanReconcile(want, *rows)) {
    const std::string cmd = absl::StrCat(step.enable ? "enable " : "disable ", step.protocol);
    absl::StatusOr<Reply> r = client_.Command(cmd);
    report.changes.push_back({step, r.status()});
    if (!r.ok()) {
      if (report.status.ok()) report.status = r.status();
      if (auto vip = VipPrefix::FromProtocolName(step.protocol); vip && vips_.contains(*vip)) {
        vips_[*vip].error = std::string(r.status().message());
      }
      if (r.status().code() == absl::StatusCode::kUnavailable ||
          r.status().code() == absl::StatusCode::kDeadlineExceeded) {
        Unreachable(r.status());
        return report;
      }
    }
  }
  // Confirm. A protocol may pass through start/stop/flush for a moment: look
  // again a few times (bounded, 100 ms) before calling that a problem.
  for (int i = 0; i < 6 && !report.changes.empty(); ++i) {
    if (i > 0) absl::SleepFor(absl::Milliseconds(20));
    rows = Observe();
    if (!rows.ok()) {
      Unreachable(rows.status());
      if (report.status.ok()) report.status = rows.status();
      return report;
    }
    bool settling = false;
    for (const auto& [vip, v] : vips_) settling |= v.bird == BirdVipState::kChanging;
    if (!settling) break;
  }
  // Anything still out of line is an error a person can act on.
  std::vector<std::string> problems;
  for (auto& [vip, v] : vips_) {
    const bool want_up = want.at(vip);
    if (v.bird == BirdVipState::kMissing && want_up) {
      v.error = absl::StrCat("BIRD's config has no protocol ", v.protocol, " for VIP ",
                             vip.ToString(), "; declare it: ", vip.BirdStaticProtocol());
    } else if (v.bird == BirdVipState::kConflict) {
      v.error = absl::StrCat("BIRD protocol ", v.protocol,
                             " is not a static protocol; the announcer leaves it alone");
    } else if (v.error.empty() && want_up != (v.bird == BirdVipState::kAnnounced) &&
               !(v.bird == BirdVipState::kMissing && !want_up)) {
      v.error = absl::StrCat("BIRD shows ", v.protocol, " as ", BirdVipStateName(v.bird), ", want ",
                             want_up ? "announced" : "withdrawn");
    }
    if (!v.error.empty()) problems.push_back(absl::StrCat(vip.ToString(), ": ", v.error));
  }
  if (report.status.ok() && !problems.empty()) {
    report.status = absl::FailedPreconditionError(absl::StrJoin(problems, "; "));
  }
  return report;
}

AnnouncerStatus Announcer::Status() const {
  absl::MutexLock l(&mu_);
  AnnouncerStatus s = status_;
  for (const auto& [vip, v] : vips_) s.vips.push_back(v);
  return s;
}

}  // namespace ballast::bgp
