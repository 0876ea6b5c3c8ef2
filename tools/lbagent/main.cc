// lbagent: owns ballast's data plane on a router.
//
//   lbagent --config FILE                  run the agent
//   lbagent --check-config FILE            validate FILE and exit
//   lbagent --teardown [--config FILE]     detach the program everywhere in this
//                                          network namespace, unpin the maps, exit
//   lbagent --dump-state FILE              print a state file as protobuf text
//   lbagent --version
//
// Running: opens the data plane (adopting the pinned program and maps of a
// previous run), restores the state (or the config's `initial` on the first
// start), reconciles the maps with it, attaches the program to
// global.interface if it is not attached (and, looking up the backends'
// routes, to the devices their second-chance bounces arrive on: again after
// each state change and every 10 s), then serves the admin API and the
// metrics endpoint and runs the drain-deadline tick. With a `bgp` section it
// announces each VIP through BIRD (agent/bgp/agent_announcer.h, docs/bgp.md).
// SIGTERM/SIGINT stop the agent: first every VIP is withdrawn from BGP, then
// the agent exits and leaves the program attached and the maps pinned:
// forwarding goes on, and the next start adopts them. Only an explicit teardown
// (`lbagent --teardown`, `lbctl teardown --yes`) detaches and unpins.
// SIGHUP re-reads the config file: the admin API's TLS files, CRL and
// identities, and `initial` when it changed (reload.h); a bad reload changes
// nothing.
// Under systemd (Type=notify) it reports READY=1 once it serves, and pings
// the watchdog from the main loop (systemd_notify.h).
//
// Logs: one JSON object per line on stderr. Exit codes: 0 ok, 1 runtime
// failure, 2 bad usage or bad config file.
#include <httplib.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <google/protobuf/text_format.h>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/api/server.h"
#include "agent/api/unix_listener.h"
#include "agent/bgp/agent_announcer.h"
#include "agent/coord/cluster.h"
#include "agent/coord/etcd_store.h"
#include "agent/core/agent_config.h"
#include "agent/core/clock.h"
#include "agent/core/file_util.h"
#include "agent/core/log.h"
#include "agent/core/health_controller.h"
#include "agent/core/metrics.h"
#include "agent/core/router_engine.h"
#include "agent/core/state_store.h"
#include "agent/dataplane/dataplane.h"
#include "agent/probes/forwarder.h"
#include "agent/probes/rtnl.h"
#include "tools/lbagent/metrics_server.h"
#include "tools/lbagent/reload.h"
#include "tools/lbagent/systemd_notify.h"

namespace ballast {
namespace {

using core::Log;
using core::LogLevel;

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

constexpr char kUsage[] =
    "usage:\n"
    "  lbagent --config FILE [--log-level debug|info|warning|error]\n"
    "  lbagent --check-config FILE\n"
    "  lbagent --teardown [--config FILE]\n"
    "  lbagent --dump-state FILE\n"
    "  lbagent --version\n";

struct Args {
  std::string config;
  std::string check_config;
  std::string dump_state;
  bool teardown = false;
  bool version = false;
  LogLevel log_level = LogLevel::kInfo;
};

bool ParseArgs(int argc, char** argv, Args* a, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) {
        *error = absl::StrCat(arg, " needs a value");
        return false;
      }
      *out = argv[++i];
      return true;
    };
    if (arg == "--config") {
      if (!value(&a->config)) return false;
    } else if (arg == "--check-config") {
      if (!value(&a->check_config)) return false;
    } else if (arg == "--dump-state") {
      if (!value(&a->dump_state)) return false;
    } else if (arg == "--teardown") {
      a->teardown = true;
    } else if (arg == "--version") {
      a->version = true;
    } else if (arg == "--log-level") {
      std::string level;
      if (!value(&level)) return false;
      if (level == "debug") {
        a->log_level = LogLevel::kDebug;
      } else if (level == "info") {
        a->log_level = LogLevel::kInfo;
      } else if (level == "warning") {
        a->log_level = LogLevel::kWarning;
      } else if (level == "error") {
        a->log_level = LogLevel::kError;
      } else {
        *error = absl::StrCat("--log-level ", level, ": expected debug, info, warning or error");
        return false;
      }
    } else if (arg == "-h" || arg == "--help") {
      fputs(kUsage, stdout);
      exit(kExitOk);
    } else {
      *error = absl::StrCat("unknown argument ", arg);
      return false;
    }
  }
  const int modes = !a->check_config.empty() + !a->dump_state.empty() + a->teardown + a->version +
                    (!a->config.empty() && !a->teardown);
  if (modes != 1) {
    *error = "give exactly one of --config, --check-config, --teardown, --dump-state, --version";
    return false;
  }
  return true;
}

// The router's FIB for second chance's bounce paths (core/bounce_path.h).
std::vector<core::RouteFact> LookUpRoutes(const std::vector<IpAddress>& addrs) {
  std::vector<core::RouteFact> facts;
  for (probes::rtnl::RouteDevice& r : probes::rtnl::RouteDevices(addrs)) {
    facts.push_back({std::move(r.device), std::move(r.error)});
  }
  return facts;
}

// Looks again where second-chance bounces arrive (RefreshBouncePaths) at
// most every kBounceRefresh, and sooner (at most once a second) after a
// state change; logs a failure when it changes.
class BounceRefresher {
 public:
  explicit BounceRefresher(core::RouterEngine* engine) : engine_(engine) {}
  void MaybeRefresh() {
    const auto now = std::chrono::steady_clock::now();
    const uint64_t generation = engine_->Health().generation;
    const bool changed = generation != generation_;
    if (last_ && now - *last_ < (changed ? std::chrono::seconds(1) : kBounceRefresh)) return;
    last_ = now;
    generation_ = generation;
    const absl::Status s = engine_->RefreshBouncePaths();
    const std::string err = s.ok() ? "" : std::string(s.message());
    if (err != last_error_ && !err.empty()) {
      Log(LogLevel::kWarning, "bounce paths: refresh failed", {{"error", err}});
    }
    last_error_ = err;
  }

 private:
  static constexpr std::chrono::seconds kBounceRefresh{10};
  core::RouterEngine* const engine_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  uint64_t generation_ = 0;
  std::string last_error_;
};

dataplane::AttachMode AttachModeOf(const std::string& m) {
  if (m == "native") return dataplane::AttachMode::kNative;
  if (m == "generic") return dataplane::AttachMode::kGeneric;
  return dataplane::AttachMode::kAuto;
}

int CheckConfig(const std::string& path) {
  auto config = core::LoadAgentConfig(path);
  if (!config.ok()) {
    fprintf(stderr, "%s\n", std::string(config.status().message()).c_str());
    return kExitUsage;
  }
  auto seed = core::FixedFlowHashSeed(*config);
  if (!seed.ok()) {
    fprintf(stderr, "%s: %s\n", path.c_str(), std::string(seed.status().message()).c_str());
    return kExitUsage;
  }
  int backends = 0;
  for (const v1::Vip& v : config->initial().vips()) backends += v.backends_size();
  printf("%s: ok (initial config: %d VIPs, %d backends)\n", path.c_str(),
         config->initial().vips_size(), backends);
  if (config->has_cluster()) {
    const v1::Cluster& c = config->cluster();
    std::string endpoints;
    for (const std::string& e : c.endpoints()) endpoints += (endpoints.empty() ? "" : ",") + e;
    printf(
        "cluster mode: node %s, etcd %s, prefix %s, lease TTL %u s; the state lives in etcd "
        "(the state file is a cache; `initial` is used only if etcd holds no state yet)\n",
        c.node().c_str(), endpoints.c_str(), c.prefix().empty() ? "/ballast" : c.prefix().c_str(),
        c.lease_ttl_s() == 0 ? 10u : c.lease_ttl_s());
  }
  if (config->has_bgp()) {
    const v1::Bgp b = bgp::BgpWithDefaults(config->bgp());
    printf(
        "bgp: announces the VIPs through BIRD at %s every %u ms (BIRD timeout %u ms); hold file "
        "%s; a deleted VIP address is dropped here until %u ms after its route is withdrawn\n",
        b.bird_socket().c_str(), b.interval_ms(), b.bird_timeout_ms(), b.hold_file().c_str(),
        b.withdraw_grace_ms());
  } else {
    printf("bgp: off (no bgp section): this agent announces no VIP\n");
  }
  printf("flow hash seed: %s\n",
         !seed->has_value() ? "the state's own (secret; replicated in cluster mode)"
         : (*seed)->current ? "from flow_hash_seed_file (secret)"
                            : "public (standalone with bgp and no flow_hash_seed_file)");
  return kExitOk;
}

int DumpState(const std::string& path) {
  core::StateStore store(path);
  auto state = store.Load();
  if (!state.ok() && state.status().code() == absl::StatusCode::kDataLoss) {
    // A cluster node's state cache (protobuf text, verified).
    auto cached = coord::EtcdStore::ReadCache(path);
    if (cached.ok()) {
      printf("# state cache (cluster mode), etcd revision %lld\n",
             static_cast<long long>(cached->revision));
      state = std::move(cached->state);
    } else if (cached.status().code() == absl::StatusCode::kDataLoss &&
               absl::StrContains(cached.status().message(), "modified")) {
      state = cached.status();
    }
  }
  if (!state.ok()) {
    fprintf(stderr, "%s\n", std::string(state.status().message()).c_str());
    return state.status().code() == absl::StatusCode::kDataLoss ? kExitUsage : kExitRuntime;
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(*state, &text);
  fputs(text.c_str(), stdout);
  return kExitOk;
}

int Teardown(const std::string& config_path) {
  std::string pin_dir = BALLAST_PIN_DIR;
  if (!config_path.empty()) {
    auto config = core::LoadAgentConfig(config_path);
    if (!config.ok()) {
      fprintf(stderr, "%s\n", std::string(config.status().message()).c_str());
      return kExitUsage;
    }
    pin_dir = core::WithDefaults(*config).pin_dir();
  }
  auto dp = dataplane::Dataplane::OpenPinned(pin_dir);
  if (!dp.ok()) {
    if (dp.status().code() == absl::StatusCode::kNotFound) {
      printf("nothing is pinned under %s: no ballast data plane to tear down\n", pin_dir.c_str());
      return kExitOk;
    }
    fprintf(stderr, "opening the pinned data plane under %s: %s\n", pin_dir.c_str(),
            std::string(dp.status().message()).c_str());
    return kExitRuntime;
  }
  if (absl::Status s = (*dp)->Teardown(); !s.ok()) {
    fprintf(stderr, "teardown: %s\n", std::string(s.message()).c_str());
    return kExitRuntime;
  }
  printf(
      "ballast's XDP program was detached from every device of this network namespace and %s "
      "was removed. The state file is kept: the next start programs the same config again.\n",
      pin_dir.c_str());
  return kExitOk;
}

// Runs HealthController::Evaluate() every EvalIntervalMs() on its own
// thread until Stop(). Errors are logged when they change (not once per
// evaluation).
class HealthLoop {
 public:
  HealthLoop(core::RouterEngine* engine, const core::Clock* clock, const v1::AgentConfig& config,
             core::HealthControllerOptions options)
      : engine_(engine),
        forwarding_(config.probe_forwarding()),
        // A sibling of pin_dir: the data plane's teardown unpins everything in
        // pin_dir and removes it; probe forwarding is torn down by Stop().
        probe_pin_dir_(config.pin_dir() + "-probe"),
        controller_(engine, clock, std::move(options),
                    [this](const std::vector<probes::ProbeTarget>& t) { return Forward(t); }),
        thread_([this] { Loop(); }) {
    if (!forwarding_.gateway4().empty() || !forwarding_.gateway6().empty()) {
      Log(LogLevel::kWarning,
          "probe_forwarding: gateway4/gateway6 are ignored (probes leave through a pseudo next "
          "hop with a permanent neighbour entry, so no host is on every probe's path)",
          {{"gateway4", forwarding_.gateway4()}, {"gateway6", forwarding_.gateway6()}});
    }
  }
  ~HealthLoop() { Stop(); }
  // Stops evaluating; after a teardown also removes the probe forwarding
  // (tc filter, rules, routes, pins). Otherwise it stays for the next agent.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (forwarder_ != nullptr && engine_->Health().torn_down) {
      if (auto s = forwarder_->Detach(); !s.ok()) {
        Log(LogLevel::kWarning, "probe forwarding teardown incomplete",
            {{"error", std::string(s.message())}});
      }
    }
    forwarder_.reset();
  }

 private:
  // The via-VIP probe targets into the tc forwarder (opened and attached
  // on first use). Runs on the health thread only.
  absl::Status Forward(const std::vector<probes::ProbeTarget>& targets) {
    if (forwarding_.device().empty()) {
      if (targets.empty()) return absl::OkStatus();
      return absl::FailedPreconditionError(
          "probes via the VIP need probe_forwarding { device ... } in the agent config "
          "(or probe { direct: true } on the backends)");
    }
    if (forwarder_ == nullptr) {
      if (targets.empty()) return absl::OkStatus();
      const v1::Global g = engine_->GetConfig().global();
      probes::ProbeForwarder::Options o;
      o.device = forwarding_.device();
      if (auto a = IpAddress::Parse(g.source_v4()); a.ok()) o.src4 = *a;
      if (auto a = IpAddress::Parse(g.source_v6()); a.ok()) o.src6 = *a;
      o.pin_dir = probe_pin_dir_;
      o.manage_routing = !forwarding_.external_routing();
      auto f = probes::ProbeForwarder::Open(o);
      if (!f.ok()) return f.status();
      if (auto s = (*f)->Attach(); !s.ok()) return s;
      forwarder_ = std::move(*f);
      Log(LogLevel::kInfo, "probe forwarding attached",
          {{"device", forwarding_.device()}, {"pin_dir", probe_pin_dir_}});
    }
    std::map<uint32_t, probes::ProbeForwarder::Target> want;
    for (const probes::ProbeTarget& t : targets) {
      want.emplace(t.backend_id, probes::ProbeForwarder::Target{t.backend, t.gue_port});
    }
    auto have = forwarder_->Targets();
    if (!have.ok()) return have.status();
    for (const auto& [id, target] : *have) {
      if (want.count(id) == 0) {
        if (auto s = forwarder_->RemoveTarget(id); !s.ok()) return s;
      }
    }
    for (const auto& [id, target] : want) {
      auto it = have->find(id);
      if (it != have->end() && it->second == target) continue;
      if (auto s = forwarder_->SetTarget(id, target); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  void Loop() {
    std::string last_error;
    bool was_enabled = false;
    for (;;) {
      const auto start = std::chrono::steady_clock::now();
      absl::Status s = controller_.Evaluate();
      const bool enabled = controller_.Enabled();
      if (enabled != was_enabled) {
        Log(LogLevel::kInfo, enabled ? "health checking on" : "health checking off",
            {{"eval_interval_ms", controller_.EvalIntervalMs()}});
        was_enabled = enabled;
      }
      const std::string err = s.ok() ? "" : std::string(s.message());
      if (err != last_error) {
        if (!err.empty()) {
          Log(LogLevel::kError, "health evaluation failed", {{"error", err}});
        } else {
          Log(LogLevel::kInfo, "health evaluation recovered");
        }
        last_error = err;
      }
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, start + std::chrono::milliseconds(controller_.EvalIntervalMs()),
                     [this] { return stop_; });
      if (stop_) return;
    }
  }

  core::RouterEngine* const engine_;
  const v1::ProbeForwarding forwarding_;
  const std::string probe_pin_dir_;
  std::unique_ptr<probes::ProbeForwarder> forwarder_;  // health thread only (and Stop())
  core::HealthController controller_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after everything above exists
};

// Removes, when a start fails, the data plane that start created (the
// pinned program and maps, its attachments), so that the next start is a
// first one again rather than a restart adopting them (with this start's
// flow_capacity, say). One that was adopted stays: it was forwarding
// before this start and goes on.
class FreshDataplaneGuard {
 public:
  FreshDataplaneGuard(std::string pin_dir, bool fresh)
      : pin_dir_(std::move(pin_dir)), armed_(fresh) {}
  FreshDataplaneGuard(const FreshDataplaneGuard&) = delete;
  FreshDataplaneGuard& operator=(const FreshDataplaneGuard&) = delete;
  void Started() { armed_ = false; }
  ~FreshDataplaneGuard() {
    if (!armed_) return;
    auto dp = dataplane::Dataplane::OpenPinned(pin_dir_);
    absl::Status s = dp.ok() ? (*dp)->Teardown() : dp.status();
    if (s.ok() || s.code() == absl::StatusCode::kNotFound) {
      Log(LogLevel::kInfo, "the start failed: the data plane it created was removed",
          {{"pin_dir", pin_dir_}});
    } else {
      Log(LogLevel::kWarning,
          "the start failed and removing the data plane it created failed too; `lbagent "
          "--teardown` removes it",
          {{"pin_dir", pin_dir_}, {"error", std::string(s.message())}});
    }
  }

 private:
  const std::string pin_dir_;
  bool armed_;
};

int Run(const std::string& config_path) {
  auto loaded = core::LoadAgentConfig(config_path);
  if (!loaded.ok()) {
    Log(LogLevel::kError, "refusing to start: bad config file",
        {{"config", config_path}, {"error", std::string(loaded.status().message())}});
    return kExitUsage;
  }
  const v1::AgentConfig config = core::WithDefaults(*loaded);

  // Signals are taken synchronously by the main loop; every thread started
  // from here on inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  Log(LogLevel::kInfo, "starting",
      {{"version", BALLAST_VERSION},
       {"config", config_path},
       {"pin_dir", config.pin_dir()},
       {"state_file", config.state_file()}});
  dataplane::Options dpo;
  dpo.pin_dir = config.pin_dir();
  dpo.flow_capacity = config.flow_capacity();
  auto dp = dataplane::Dataplane::Open(dpo);
  if (!dp.ok()) {
    Log(LogLevel::kError, "refusing to start: cannot open the data plane",
        {{"error", std::string(dp.status().message())}});
    return kExitRuntime;
  }
  const bool adopted = (*dp)->adopted();
  // Declared before everything that uses the data plane: destroyed after.
  FreshDataplaneGuard fresh_guard(config.pin_dir(), !adopted);
  // Cluster mode: the state lives in etcd (agent/coord/cluster.h); the state
  // file is only its cache.
  std::unique_ptr<coord::ClusterNode> cluster;
  if (config.has_cluster()) {
    coord::ClusterOptions co;
    co.config = config.cluster();
    co.cache_file = config.state_file();
    co.agent_version = BALLAST_VERSION;
    co.admin_socket = config.admin().socket_path().empty() ? api::kDefaultSocketPath
                                                           : config.admin().socket_path();
    co.admin_tcp = config.admin().tcp_listen();
    auto node = coord::ClusterNode::Create(co);
    if (!node.ok()) {
      Log(LogLevel::kError, "refusing to start: cluster",
          {{"error", std::string(node.status().message())}});
      return kExitUsage;
    }
    cluster = std::move(*node);
    Log(LogLevel::kInfo, "cluster mode",
        {{"node", config.cluster().node()}, {"store", cluster->store()->Describe()}});
  }
  core::SystemClock clock;
  core::EngineOptions eo;
  eo.state_file = config.state_file();
  eo.audit_log = config.audit_log();
  eo.audit_max_bytes = uint64_t{config.audit_max_mb()} << 20;
  eo.attach_mode = AttachModeOf(config.attach_mode());
  eo.agent_version = BALLAST_VERSION;
  if (cluster != nullptr) eo.store = cluster->store();
  eo.vip_ownership = cluster != nullptr;
  eo.route_lookup = LookUpRoutes;
  eo.bounce_devices_file = core::DirOf(config.state_file()) + "/bounce-interfaces";
  // The VIP addresses are announced: a deleted one is held until withdrawn.
  eo.retire_addresses = config.has_bgp();
  // A first start's state is stored once the agent serves (below).
  eo.defer_initial_save = true;
  auto fixed_seed = core::FixedFlowHashSeed(config);
  if (!fixed_seed.ok()) {
    Log(LogLevel::kError, "refusing to start",
        {{"error", std::string(fixed_seed.status().message())}});
    return kExitUsage;
  }
  eo.fixed_flow_hash_seed = *fixed_seed;
  if (eo.fixed_flow_hash_seed && !eo.fixed_flow_hash_seed->current) {
    Log(LogLevel::kWarning,
        "standalone with bgp and no flow_hash_seed_file: flows hash with the public seed, the one "
        "every router of an ECMP group shares without one; set the same flow_hash_seed_file on "
        "each (docs/dataplane.md, \"The flow hash seed\")",
        {});
  }
  auto engine = core::RouterEngine::Start(std::move(*dp), eo, &clock, config.initial());
  if (!engine.ok()) {
    Log(LogLevel::kError, "refusing to start", {{"error", std::string(engine.status().message())}});
    return engine.status().code() == absl::StatusCode::kDataLoss ? kExitUsage : kExitRuntime;
  }
  if (auto pruned = (*engine)->PruneAudit(config.audit_retention_days()); !pruned.ok()) {
    Log(LogLevel::kWarning, "audit log pruning failed",
        {{"error", std::string(pruned.status().message())}});
  }

  // The status page's score and weight timelines (health checking feeds
  // them, the metrics listener's /status shows them).
  core::Timeline timeline;
  std::unique_ptr<lbagent::MetricsServer> metrics;
  if (!config.metrics_listen().empty()) {
    auto m = lbagent::MetricsServer::Start(config.metrics_listen(), engine->get(), &timeline,
                                           config.status_page());
    if (!m.ok()) {
      Log(LogLevel::kError, "refusing to start", {{"error", std::string(m.status().message())}});
      return kExitRuntime;
    }
    metrics = std::move(*m);
  }
  api::AdminServerOptions ao;
  ao.log = [](absl::string_view level, absl::string_view message) {
    const LogLevel l = level == "error"     ? LogLevel::kError
                       : level == "warning" ? LogLevel::kWarning
                                            : LogLevel::kInfo;
    Log(l, std::string(message), {{"component", "api"}});
  };
  auto admin = api::StartAdminServer(**engine, config.admin(), ao);
  if (!admin.ok()) {
    Log(LogLevel::kError, "refusing to start: admin API",
        {{"error", std::string(admin.status().message())}});
    return kExitRuntime;
  }
  // Everything that can refuse the start has run: only now does a first
  // start store its state (before, a failed start left a state file and
  // the next start ignored the config's `initial`).
  if (auto s = (*engine)->SaveInitialState(); !s.ok()) {
    Log(LogLevel::kError, "refusing to start", {{"error", std::string(s.message())}});
    return kExitRuntime;
  }
  fresh_guard.Started();
  Log(LogLevel::kInfo, "running",
      {{"adopted_program", adopted},
       {"interface", config.initial().global().interface()},
       {"socket", (*admin)->socket_path()},
       {"metrics", config.metrics_listen()},
       {"generation", (*engine)->Health().generation}});

  // Health checking: its own thread, one evaluation per configured interval
  // (global.health; off when absent).
  if (cluster != nullptr) cluster->Start(engine->get(), &clock);
  core::HealthControllerOptions hco;
  hco.timeline = &timeline;
  if (cluster != nullptr) {
    coord::ClusterNode* node = cluster.get();
    hco.decision_gate = [node](std::vector<core::HealthDecision>* d,
                               std::vector<core::HealthRecord>* r) { node->Gate(d, r); };
  }
  HealthLoop health_loop(engine->get(), &clock, config, std::move(hco));

  // BGP announcement (bgp section; off when absent).
  std::unique_ptr<bgp::AgentAnnouncer> announcer;
  if (config.has_bgp()) {
    bgp::AgentAnnouncer::Options bo;
    bo.config = config.bgp();
    bo.pin_dir = config.pin_dir();
    bo.engine = engine->get();
    if (cluster != nullptr) {
      coord::ClusterNode* node = cluster.get();
      bo.owned = [node] { return node->OwnedVips(); };
    }
    announcer = bgp::AgentAnnouncer::Start(std::move(bo));
    Log(LogLevel::kInfo, "bgp announcement on", {{"bird_socket", config.bgp().bird_socket()}});
  }

  // Where the backends' bounces arrive: attached (or warned about) before
  // the agent says it is ready.
  BounceRefresher bounces(engine->get());
  bounces.MaybeRefresh();

  // systemd: ready once the data plane is attached and programmed (Start
  // did both) and the admin socket listens; then the watchdog.
  lbagent::SystemdNotifier systemd;
  const auto served = [&engine] {
    return absl::StrCat("serving ", (*engine)->State().config().vips_size(), " VIPs, generation ",
                        (*engine)->Health().generation);
  };
  systemd.Ready(served());
  std::optional<std::chrono::steady_clock::time_point> last_ping;
  v1::AgentConfig file_config = config;  // the file as last read (SIGHUP)

  // The main loop: signals, the drain-deadline tick, daily audit pruning,
  // the watchdog.
  const timespec tick = {0, 200'000'000};
  auto last_prune = std::chrono::steady_clock::now();
  auto last_expire = last_prune;
  std::string reason = "teardown requested through the API";
  while (!(*engine)->ShutdownRequested()) {
    // Pinged only from here, and only once the engine answers (Health()
    // takes its lock): a main loop or an engine that hangs stops the pings
    // and systemd restarts the agent (forwarding goes on meanwhile).
    if (systemd.watchdog().has_value() &&
        lbagent::WatchdogDue(last_ping, std::chrono::steady_clock::now(), *systemd.watchdog())) {
      (void)(*engine)->Health();
      systemd.WatchdogPing();
      last_ping = std::chrono::steady_clock::now();
    }
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      reason = sig == SIGTERM ? "SIGTERM" : "SIGINT";
      break;
    }
    if (sig == SIGHUP) {
      systemd.Reloading();
      auto outcome =
          lbagent::ReloadConfig(config_path, &file_config, **engine, **admin, cluster != nullptr);
      systemd.Ready(outcome.ok()
                        ? absl::StrCat(served(), "; ", *outcome)
                        : absl::StrCat(served(), "; reload refused: ", outcome.status().message()));
    }
    // Drain deadlines are automated decisions: in a cluster only the leader
    // writes them (and nobody while frozen).
    const bool decides = cluster == nullptr || (cluster->IsLeader() && !cluster->Frozen());
    if (decides) {
      if (auto n = (*engine)->Tick(); !n.ok()) {
        Log(LogLevel::kError, "drain deadline tick failed",
            {{"error", std::string(n.status().message())}});
      }
    }
    bounces.MaybeRefresh();
    // Handshake slots older than syn_idle are freed well before their 32-bit
    // time wraps (18 minutes), so an abandoned one never looks fresh again.
    if (std::chrono::steady_clock::now() - last_expire > std::chrono::minutes(1)) {
      last_expire = std::chrono::steady_clock::now();
      if (auto n = (*engine)->ExpireHandshakes(); !n.ok()) {
        Log(LogLevel::kError, "freeing expired handshake slots failed",
            {{"error", std::string(n.status().message())}});
      }
    }
    if (std::chrono::steady_clock::now() - last_prune > std::chrono::hours(24)) {
      last_prune = std::chrono::steady_clock::now();
      (void)(*engine)->PruneAudit(config.audit_retention_days());
    }
  }
  // Withdraw first, while everything else still runs: the ToR moves this
  // router's flows to the others (same Maglev tables, same backends) and the
  // program, left attached, still forwards what is in flight.
  systemd.Stopping(reason);
  if (announcer != nullptr) (void)announcer->Shutdown(reason);
  const bool torn_down = (*engine)->Health().torn_down;
  Log(LogLevel::kInfo, "stopping",
      {{"reason", reason},
       {"data_plane", torn_down ? "torn down (detached and unpinned)"
                                : "left attached and pinned: forwarding continues"}});
  (*admin)->Shutdown();
  health_loop.Stop();
  if (cluster != nullptr) cluster->Stop();
  metrics.reset();
  engine->reset();  // closes our fds only; the attachment and pins stay
  return kExitOk;
}

}  // namespace
}  // namespace ballast

int main(int argc, char** argv) {
  // Memory: large buffers (Maglev tables are 256 KiB at the default size)
  // always come from mmap and go back to the kernel when freed, instead of
  // glibc raising its mmap threshold and keeping them in the heap; and the
  // API's worker threads share two arenas instead of one each.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_ARENA_MAX, 2);
  ballast::Args args;
  std::string error;
  if (!ballast::ParseArgs(argc, argv, &args, &error)) {
    fprintf(stderr, "lbagent: %s\n%s", error.c_str(), ballast::kUsage);
    return ballast::kExitUsage;
  }
  ballast::core::SetMinLogLevel(args.log_level);
  ballast::core::SetJournalPriorityPrefix(
      ballast::core::IsJournalStream(2, getenv("JOURNAL_STREAM")));
  if (args.version) {
    printf("lbagent %s\n", BALLAST_VERSION);
    return ballast::kExitOk;
  }
  if (!args.check_config.empty()) return ballast::CheckConfig(args.check_config);
  if (!args.dump_state.empty()) return ballast::DumpState(args.dump_state);
  if (args.teardown) return ballast::Teardown(args.config);
  return ballast::Run(args.config);
}
