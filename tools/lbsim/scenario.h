// A scenario: everything one lbsim run needs, loaded from a YAML file.
//
// The file format is documented in tools/lbsim/README.md; every scenario in
// tools/lbsim/scenarios/ is an example. In short:
//
//   name, description, outcome (prose: the expected qualitative outcome)
//   seed, duration, warmup
//   traffic:   rate (new connections/s, Poisson), classes (share, lifetime,
//              latency distributions)
//   client:    syn_rto, connect_timeout, request_timeout, retries, retry_backoff
//   network:   rtt
//   backends:  count, weight, zones, accept (handshake time), probe_latency
//   dataplane: table_size, resteer, second_chance
//   health:    enabled, probe_interval, probe_timeout, probe (http | tcp),
//              eval_interval, passive, observers, params: {every health::Params
//              field by its docs/health.md name}
//   faults:    a list, each with a kind (crash, hang, brownout, flap, zone,
//              slowdown, blind, drain) and its fields
//   routers, long_lived, table_changes, router_events: the router-churn
//              model instead (ChurnSpec below)
//   plot:      backends (indices shown in the timeline SVG)
//   expect:    checks on this run's metrics, e.g. "success_fraction >= 0.999"
//   variants:  named overrides of the above (each a map of "path: value",
//              plus its own expect), run one after another
//   compare:   checks across variants, e.g. "avoid.success_fraction <
//              resteer.success_fraction"
//
// Overrides (--set path=value, --sweep name=a,b,c, variants) are applied to
// the YAML tree before it is read, so anything a file can say can be swept.
// A short name (see TunablePath) stands for its full path, e.g.
// demote_after -> health.params.demote_after.
//
// Plain value types; functions are pure except LoadScenarioFile (reads a file).
#ifndef BALLAST_TOOLS_LBSIM_SCENARIO_H_
#define BALLAST_TOOLS_LBSIM_SCENARIO_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/health/params.h"
#include "tools/lbsim/rng.h"
#include "yaml-cpp/yaml.h"

namespace ballast::lbsim {

struct TrafficClass {
  std::string name;
  double share = 1.0;  // relative weight among classes
  // How long the connection stays open after its first response (seconds).
  Distribution lifetime = Distribution::Exponential(0.05);
  // The backend's time to produce the first response (seconds), before any
  // fault's slowdown.
  Distribution latency = Distribution::Constant(0.01);
};

enum class CrashMode : uint8_t {
  kRefuse = 0,  // the host answers SYNs (and established segments) with RST at once
  kBlackhole,   // the host is gone: SYNs and segments are lost
};

enum class ProbeKind : uint8_t {
  kHttp = 0,  // a request with a response: sees hangs and slow responses
  kTcp,       // a TCP connect: the kernel answers even when the server hangs
};

enum class FaultKind : uint8_t {
  // crash, hang and brownout happen once, from `at` for `for`, or, when
  // `mttf` is given, recur in that window: up ~ Exp(mttf), faulty ~ Exp(mttr).
  kCrash = 0,  // fail-fast crash (and recovery); `mode` refuse or blackhole
  kHang,       // the server stops answering; the kernel still completes handshakes
  kBrownout,   // latency x latency_factor, packet loss `loss`
  kFlap,       // down for `down`, up for `up`, `cycles` times
  kZone,       // every backend of one zone down together
  kSlowdown,   // every backend latency x latency_factor (fleet-wide)
  kBlind,      // one observer's probes to the backends fail (a probe-path fault)
  kDrain,      // operator: drain with a deadline, undrain after `for` if given
};
std::string_view FaultKindName(FaultKind k);

struct Fault {
  FaultKind kind = FaultKind::kCrash;
  std::vector<int> backends;  // backend indices (zone: the zone's; slowdown: all)
  absl::Duration at = absl::ZeroDuration();
  absl::Duration length = absl::InfiniteDuration();  // "for"
  // crash, hang, brownout: recurring episodes when set
  bool recurring = false;
  absl::Duration mttf = absl::Seconds(20);
  absl::Duration mttr = absl::Seconds(1);
  // crash, flap, zone
  CrashMode mode = CrashMode::kRefuse;
  // brownout, slowdown
  double latency_factor = 1.0;
  double loss = 0.0;
  // flap
  absl::Duration up = absl::Seconds(10);
  absl::Duration down = absl::Seconds(5);
  int cycles = 1;
  // zone
  int zone = 0;
  // blind
  int observer = 0;
  // drain
  absl::Duration deadline = absl::Seconds(300);
};

// ---- Router churn (a `routers` section) ----------------------------------
//
// A scenario with a `routers` section runs the router-churn model
// (sim_churn.cc) instead of the traffic/health engine: several routers
// behind ECMP, one VIP, a population of long-lived connections, a schedule
// of table changes (each one commit of the agent's state, as one lbctl
// command) and of router events, with the connections reset counted with
// and without established second chance.

// How the ToR spreads flows over the routers announcing the VIP.
enum class EcmpMode : uint8_t {
  // Linux's multipath routes (fib_multipath_hash_policy=1): the 31-bit flow
  // hash space split into one contiguous range per nexthop, in order; a
  // change of the nexthop set moves every range boundary.
  kHashThreshold = 0,
  kModulo,     // nexthop = hash % N
  kResilient,  // 128 buckets; a change moves only the buckets it must
};
std::string_view EcmpModeName(EcmpMode m);

enum class TableChangeKind : uint8_t {
  kWeight = 0,  // the backends' nominal weight := weight
  kAdd,         // the backends configured (weight, default backends.weight)
  kRemove,      // the backends deleted from the config
  kDrain,       // drained with `deadline` (evicted by the agent when it passes)
  kUndrain,
};
std::string_view TableChangeKindName(TableChangeKind k);

struct TableChange {
  TableChangeKind kind = TableChangeKind::kWeight;
  absl::Duration at = absl::ZeroDuration();
  std::vector<int> backends;
  uint32_t weight = 0;                           // weight, add (0 on add: backends.weight)
  absl::Duration deadline = absl::Seconds(300);  // drain
};

enum class RouterEventKind : uint8_t {
  kWithdraw = 0,  // the router withdraws the VIP (operator hold, agent stopped)
  kAnnounce,      // it announces the VIP (joins)
  kRestart,       // its agent stops (withdraws) and starts again after `down`
  kDead,          // its host dies: packets to it lost until withdrawn after `detect`
  kRevive,        // a dead host is back and announces again
};
std::string_view RouterEventKindName(RouterEventKind k);

struct RouterEvent {
  RouterEventKind kind = RouterEventKind::kWithdraw;
  absl::Duration at = absl::ZeroDuration();
  int router = 0;
  absl::Duration down = absl::Seconds(1);           // restart
  absl::Duration detect = absl::Milliseconds(300);  // dead (default routers.detect)
  bool flush = false;  // the router's connection table is lost (a reboot)
};

struct ChurnSpec {
  bool enabled = false;  // the scenario has a `routers` section
  int routers = 3;
  EcmpMode ecmp = EcmpMode::kHashThreshold;
  std::vector<int> announcing;                      // at time 0 (default: all)
  absl::Duration detect = absl::Milliseconds(300);  // BFD: a dead host's withdrawal
  absl::Duration tcp_idle = absl::Seconds(300);     // a router forgets a flow idle this long
  // Long-lived connections: each opens at its start time (SYN) and sends a
  // packet every packet_interval (random phase) until the end.
  int connections = 600;
  Distribution start = {Distribution::Kind::kUniform, 0.0, 1.0};
  absl::Duration packet_interval = absl::Milliseconds(200);
  std::vector<int> absent;                 // backends not configured at time 0 (added later)
  std::vector<TableChange> table_changes;  // in time order (stable)
  std::vector<RouterEvent> router_events;  // in time order (stable)
};

struct Scenario {
  std::string name;
  std::string variant;  // set when the run is one of the file's variants
  std::string description;
  std::string outcome;  // the expected qualitative outcome, in words
  uint64_t seed = 1;
  absl::Duration duration = absl::Seconds(60);
  // Connections that arrive before warmup are simulated but not counted, and
  // actions before it are not counted either (baselines are learned then).
  absl::Duration warmup = absl::Seconds(10);

  // Traffic.
  double rate = 1000;  // new connections per second
  std::vector<TrafficClass> classes = {TrafficClass{"short"}};

  // Client behaviour (Linux-like TCP).
  absl::Duration syn_rto = absl::Seconds(1);  // first SYN retransmission; doubles
  absl::Duration connect_timeout = absl::Seconds(3);
  absl::Duration request_timeout = absl::Seconds(2);  // first response, and stalls after it
  int retries = 0;  // application retries on a new connection after a failure before a response
  absl::Duration retry_backoff = absl::ZeroDuration();
  absl::Duration rtt = absl::Microseconds(500);
  // A lost response segment costs this much more (the server's retransmission).
  absl::Duration loss_penalty = absl::Milliseconds(200);

  // Backends.
  int backends = 3;
  uint32_t weight = 100;
  int zones = 1;                                               // backend i is in zone i % zones
  Distribution accept = Distribution::Constant(0.0001);        // adds to the handshake
  Distribution probe_latency = Distribution::Constant(0.002);  // an HTTP probe's answer

  // Data plane.
  uint32_t table_size = 65537;
  bool resteer = true;  // a retransmitted SYN follows the current table
  // Second chance (docs/dataplane.md): a SYN to a host whose server is dead
  // (crash mode refuse) is bounced to the flow's next choice, at most twice,
  // and counted as refused (health's refused_demote); a retransmitted SYN
  // goes to the next choice rather than the backend that did not answer.
  bool second_chance = true;

  // Health checking.
  bool health = true;
  absl::Duration probe_interval = absl::Milliseconds(200);
  absl::Duration probe_timeout = absl::Milliseconds(150);
  ProbeKind probe = ProbeKind::kHttp;
  absl::Duration eval_interval = absl::Milliseconds(200);
  bool passive = true;
  int observers = 1;
  health::Params params;  // lbsim default latency_floor_ms = 10, as lbagent

  // Router churn (`routers`, `long_lived`, `table_changes`, `router_events`,
  // `backends.absent`).
  ChurnSpec churn;

  std::vector<Fault> faults;
  std::vector<int> plot_backends;

  std::vector<std::string> expect;
};

// A file: the base scenario, its variants and the cross-variant checks.
struct ScenarioFile {
  std::string path;
  YAML::Node base;  // the tree with the variants and compare removed
  std::vector<std::pair<std::string, YAML::Node>> variants;  // name -> overrides (file order)
  std::vector<std::string> compare;
};

// The full path of a short tunable name (a health::Params field,
// probe_interval, eval_interval, probe_timeout, rate, ...); a name with a
// dot is already a path and is returned as is. Error: an unknown short name.
absl::StatusOr<std::string> TunablePath(std::string_view name);
// The short names TunablePath knows, in a fixed order (for --help).
std::vector<std::string> TunableNames();

// Sets `path` (dots between keys) in `root` to `value` (parsed as YAML, so
// "3", "250ms", "[5, 100]" and "false" all work). Creates missing maps.
absl::Status SetPath(YAML::Node root, std::string_view path, std::string_view value);
absl::Status SetPathNode(YAML::Node root, std::string_view path, const YAML::Node& value);

absl::StatusOr<ScenarioFile> LoadScenarioFile(const std::string& path);
absl::StatusOr<ScenarioFile> ParseScenarioText(const std::string& text, const std::string& name);

// Reads a tree (after overrides) into a Scenario, checking every field and
// rejecting unknown keys; errors name the field, e.g.
// "faults[1].latency_factor: -2 is out of range (> 0)".
absl::StatusOr<Scenario> ReadScenario(const YAML::Node& root);

// A deep copy (YAML::Node copies share their tree).
YAML::Node CloneNode(const YAML::Node& n);

}  // namespace ballast::lbsim

#endif  // BALLAST_TOOLS_LBSIM_SCENARIO_H_
