#include "agent/core/bounce_path.h"

#include "absl/strings/str_cat.h"

namespace ballast::core {
namespace {

// The operator's devices (the engine attaches `extra_interfaces` only
// beside an `interface`).
bool Configured(const BounceFacts& facts, const std::string& device) {
  return !facts.interface.empty() &&
         (device == facts.interface || facts.extra_interfaces.count(device) != 0);
}

// Devices a backend is reached through that the operator did not configure.
std::set<std::string> Needed(const BounceFacts& facts) {
  std::set<std::string> needed;
  if (facts.interface.empty()) return needed;
  for (const auto& [addr, route] : facts.routes) {
    if (!route.device.empty() && !Configured(facts, route.device)) needed.insert(route.device);
  }
  return needed;
}

}  // namespace

BounceFacts BounceFactsOf(const v1::Global& global) {
  BounceFacts facts;
  facts.interface = global.interface();
  facts.extra_interfaces = {global.extra_interfaces().begin(), global.extra_interfaces().end()};
  facts.automatic = !global.no_auto_bounce_interfaces();
  return facts;
}

BouncePlan PlanBounceDevices(const BounceState& state, const BounceFacts& facts, int64_t now_ms) {
  BouncePlan plan;
  const std::set<std::string> needed = facts.automatic ? Needed(facts) : std::set<std::string>{};
  for (const std::set<std::string>* mine : {&state.attached, &state.inherited}) {
    for (const std::string& dev : *mine) {
      if (Configured(facts, dev)) {
        plan.release.insert(dev);
      } else if (needed.count(dev) == 0) {
        plan.detach.insert(dev);
      }
    }
  }
  for (const std::string& dev : needed) {
    if (state.attached.count(dev) != 0) continue;
    // An inherited device still needed is attached again: a no-op where
    // the program still runs, a repair where someone removed it.
    auto f = state.failed.find(dev);
    if (f != state.failed.end() && now_ms - f->second.at_ms < kBounceAttachRetryMs) continue;
    plan.attach.insert(dev);
  }
  for (const auto& [dev, failure] : state.failed) {
    if (needed.count(dev) == 0) plan.forget.insert(dev);
  }
  return plan;
}

bool BouncesNeed(const BounceFacts& facts, const std::string& device) {
  if (!facts.automatic || facts.interface.empty()) return false;
  for (const auto& [addr, route] : facts.routes) {
    if (route.device == device) return true;
  }
  return false;
}

BounceReport ReportBouncePaths(const BounceState& state, const BounceFacts& facts) {
  BounceReport report;
  if (facts.interface.empty()) return report;
  for (const auto& [addr, route] : facts.routes) {
    BackendBouncePath& p = report.backends[addr];
    p.device = route.device;
    std::string key;
    if (route.device.empty()) {
      key = absl::StrCat("route ", addr.ToString());
      p.problem = absl::StrCat("bounces_unreachable: no route to the backend (", route.error, ")");
    } else if (route.device == facts.interface) {
      p.ok = true;
      p.via = "interface";
    } else if (facts.extra_interfaces.count(route.device) != 0) {
      p.ok = true;
      p.via = "extra_interfaces";
    } else if (state.attached.count(route.device) != 0) {
      p.ok = true;
      p.via = "automatic";
    } else {
      key = route.device;
      std::string why = "not attached yet";
      if (!facts.automatic) {
        why = "global.no_auto_bounce_interfaces is set";
      } else if (auto f = state.failed.find(route.device); f != state.failed.end()) {
        why = absl::StrCat("attaching it failed: ", f->second.error);
      }
      p.problem = absl::StrCat("bounces_unreachable: device ", route.device,
                               " runs no lb program (", why, ")");
    }
    if (key.empty()) continue;
    BounceReport::Problem& problem = report.problems[key];
    problem.text = p.problem;
    ++problem.backends;
  }
  for (const auto& [key, problem] : report.problems) {
    if (state.warned.count(key) == 0) report.warn.push_back(key);
  }
  for (const std::string& key : state.warned) {
    if (report.problems.count(key) == 0) report.recovered.push_back(key);
  }
  return report;
}

}  // namespace ballast::core
