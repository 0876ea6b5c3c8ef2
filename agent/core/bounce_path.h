// Where second-chance bounces arrive, and what the agent does about it
// (docs/dataplane.md, "Second chance").
//
// A backend sends a bounce back through its next hop towards the router.
// The agent takes the path to be symmetric: the bounce arrives on the
// device through which the router reaches the backend (a FIB lookup per
// backend address, made at the I/O edge: RouterEngine::RefreshBouncePaths
// with EngineOptions::route_lookup). The lb program must run there: on
// `interface`, a device in `extra_interfaces`, or one the agent attached by
// itself (unless global.no_auto_bounce_interfaces). Everything here is pure:
// facts, the agent's memory and the time in; what to attach or detach, and
// what to report, out. The engine does the I/O and keeps the memory.
#ifndef BALLAST_AGENT_CORE_BOUNCE_PATH_H_
#define BALLAST_AGENT_CORE_BOUNCE_PATH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/base/ip_address.h"
#include "ballast/v1/config.pb.h"

namespace ballast::core {

// What a route lookup found for one address: the device, or why none.
struct RouteFact {
  std::string device;  // the router's device towards the address; "" if none
  std::string error;   // no route, unreachable, an address of this router, ...
};
// One fact per address, in order. Called without the engine's lock.
using RouteLookup = std::function<std::vector<RouteFact>(const std::vector<IpAddress>&)>;

// The observation: the config's devices and what the FIB says.
struct BounceFacts {
  std::string interface;  // global.interface; "" = the agent attaches nothing
  std::set<std::string> extra_interfaces;
  bool automatic = true;                  // !global.no_auto_bounce_interfaces
  std::map<IpAddress, RouteFact> routes;  // one per backend address
};
BounceFacts BounceFactsOf(const v1::Global& global);

// The agent's memory between evaluations.
struct BounceState {
  std::set<std::string> attached;   // devices it attached for bounces
  std::set<std::string> inherited;  // recorded by its previous run, not yet settled
  struct Failure {
    std::string error;
    int64_t at_ms = 0;
  };
  std::map<std::string, Failure> failed;  // the last failed attach, per device
  std::set<std::string> warned;           // problems already logged (BounceReport keys)
};

// A failed attach is tried again after this long (or when the facts put
// the device out of need and back in).
inline constexpr int64_t kBounceAttachRetryMs = 60'000;

struct BouncePlan {
  std::set<std::string> attach;   // attach the lb program (a no-op where it runs)
  std::set<std::string> detach;   // attached for bounces, needed no more
  std::set<std::string> release;  // attached for bounces, now configured: forget, keep attached
  std::set<std::string> forget;   // failed attaches of devices needed no more
};
// Never detaches `interface` or a device of `extra_interfaces`.
BouncePlan PlanBounceDevices(const BounceState& state, const BounceFacts& facts, int64_t now_ms);

// Whether the device, on its way out of `interface` or `extra_interfaces`,
// should stay attached for bounces (the last facts route a backend there).
bool BouncesNeed(const BounceFacts& facts, const std::string& device);

struct BackendBouncePath {
  std::string device;
  bool ok = false;
  std::string via;      // ok: interface | extra_interfaces | automatic
  std::string problem;  // not ok: why
};
struct BounceReport {
  std::map<IpAddress, BackendBouncePath> backends;
  // One entry per problem to log: the device (or "route <address>" when
  // there is no route), its text and how many backends it concerns.
  struct Problem {
    std::string text;
    int backends = 0;
  };
  std::map<std::string, Problem> problems;
  std::vector<std::string> warn;       // keys of `problems` not logged before
  std::vector<std::string> recovered;  // keys logged before that are gone
};
// After the plan was carried out (state updated with its results).
BounceReport ReportBouncePaths(const BounceState& state, const BounceFacts& facts);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_BOUNCE_PATH_H_
