#include "tools/lbctl/drill_run.h"

#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/base/status_macros.h"
#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tools/lbctl/address.h"
#include "tools/lbctl/drill.h"
#include "tools/lbctl/duration.h"
#include "tools/lbctl/format.h"

namespace ballast::lbctl {
namespace {

// One node of the cluster as the drill sees it.
struct Node {
  std::string name;
  v1::NodeRecord record;
  std::unique_ptr<Client> client;
};

// --mode stop: the stopped agent, continued by the signal handler if lbctl
// is interrupted (^C, SIGTERM) in the middle of the drill.
std::atomic<pid_t> g_stopped{0};

void ContinueAndExit(int sig) {
  const pid_t pid = g_stopped.load();
  if (pid > 0) kill(pid, SIGCONT);
  signal(sig, SIG_DFL);
  raise(sig);
}

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

int64_t MsSince(absl::Time t0) { return absl::ToInt64Milliseconds(absl::Now() - t0); }

absl::StatusOr<v1::StatusResponse> GetStatus(Client& c) {
  v1::StatusResponse r;
  BALLAST_RETURN_IF_ERROR(
      c.Call(c.status(), &v1::Status::Stub::GetStatus, v1::StatusRequest(), &r));
  return r;
}

absl::StatusOr<v1::ConfigDiffResponse> GetDiff(Client& c) {
  v1::ConfigDiffResponse r;
  BALLAST_RETURN_IF_ERROR(
      c.Call(c.config(), &v1::ConfigService::Stub::ConfigDiff, v1::ConfigDiffRequest(), &r));
  return r;
}

const v1::VipStatus* FindVip(const v1::StatusResponse& st, const std::string& text) {
  for (const v1::VipStatus& v : st.vips()) {
    if (FormatVipKey(v.key()) == text) return &v;
  }
  return nullptr;
}

// The per-VIP forwarded packet counter (fenced drops are not forwarded).
absl::StatusOr<uint64_t> Packets(Client& c, const std::string& vip) {
  auto st = GetStatus(c);
  if (!st.ok()) return st.status();
  const v1::VipStatus* v = FindVip(*st, vip);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat("vip ", vip, " is gone"));
  return v->packets();
}

// Where to reach node `name`: --node NAME=ADDR, else its NodeRecord (the
// unix socket when lbctl uses one, the TCP listener with --addr).
absl::StatusOr<Target> TargetOf(const Target& base, const std::vector<std::string>& overrides,
                                const v1::NodeRecord& r) {
  Target t = base;
  for (const std::string& o : overrides) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == o.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--node ", o, ": expected NAME=ADDR (a unix socket path or HOST:PORT)"));
    }
    if (o.substr(0, eq) != r.node()) continue;
    absl::string_view addr = absl::string_view(o).substr(eq + 1);
    if (absl::ConsumePrefix(&addr, "unix:") || absl::StartsWith(addr, "/")) {
      t.addr.clear();
      t.socket = std::string(addr);
    } else {
      t.addr = std::string(addr);
    }
    return t;
  }
  if (base.addr.empty()) {
    if (r.admin_socket().empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "node ", r.node(), " publishes no admin socket (an older lbagent?); give --node ",
          r.node(), "=PATH"));
    }
    t.socket = r.admin_socket();
    return t;
  }
  if (r.admin_tcp().empty() || absl::StartsWith(r.admin_tcp(), "0.0.0.0:") ||
      absl::StartsWith(r.admin_tcp(), "[::]:")) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", r.node(), " publishes no reachable admin TCP address (\"",
                     r.admin_tcp(), "\"); give --node ", r.node(), "=HOST:PORT"));
  }
  t.addr = r.admin_tcp();
  return t;
}

}  // namespace

// A progress line on stderr, so that a person sees where a drill of up to
// --timeout is and stdout keeps only the result.
void Progress(absl::string_view line) {
  std::fprintf(stderr, "lbctl drill: %.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

absl::Status RunDrill(Session& s, const Args& a, std::FILE* out) {
  // ---- input ----
  auto key = ParseVipKey(a.vip);
  if (!key.ok()) return key.status();
  const std::string vip = FormatVipKey(*key);
  if (a.drill_mode != "fence" && a.drill_mode != "stop") {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode ", a.drill_mode,
                     ": fence (the owner gives the VIP up over the API) or stop (SIGSTOP to "
                     "the owner's lbagent, on this host)"));
  }
  auto timeout = ParseDuration(a.drill_timeout, "--timeout");
  if (!timeout.ok()) return timeout.status();
  auto window = ParseDuration(a.stable_window, "--stable-window");
  if (!window.ok()) return window.status();
  if (*timeout < absl::Seconds(5) || *timeout > absl::Minutes(5)) {
    return absl::InvalidArgumentError("drill --timeout: 5s..5m");
  }
  if (*window < absl::Milliseconds(200) || *window >= *timeout) {
    return absl::InvalidArgumentError("--stable-window: at least 200ms and shorter than --timeout");
  }
  const int64_t timeout_ms = absl::ToInt64Milliseconds(*timeout);
  const int64_t window_ms = absl::ToInt64Milliseconds(*window);

  // ---- who is who ----
  auto self_client = s.client();
  if (!self_client.ok()) return self_client.status();
  Client& self = **self_client;
  auto st = GetStatus(self);
  if (!st.ok()) return st.status();
  if (st->coordination().mode() != "cluster") {
    return absl::FailedPreconditionError(
        "this lbagent runs standalone: a drill fails a VIP over between cluster nodes");
  }
  if (st->coordination().frozen()) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", st->coordination().node(),
                     " is frozen (etcd unreachable): fix coordination before drilling"));
  }
  if (FindVip(*st, vip) == nullptr) {
    return absl::NotFoundError(absl::StrCat("vip ", vip, " does not exist"));
  }
  const v1::VipOwnerStatus* own = nullptr;
  for (const v1::VipOwnerStatus& o : st->coordination().owners()) {
    if (o.vip() == vip) own = &o;
  }
  if (own == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("vip ", vip,
                     " is not ACTIVE_STANDBY: every node forwards it, there is no owner to fail "
                     "over (lbctl vip set-ownership ",
                     vip, " active-standby)"));
  }
  if (own->holder().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("nobody owns vip ", vip, " now: nothing to fail over"));
  }
  const std::string owner = own->holder();
  auto diff = GetDiff(self);
  if (!diff.ok()) return diff.status();
  std::map<std::string, Node> nodes;
  for (const v1::NodeRecord& r : diff->nodes()) {
    Node n;
    n.name = r.node();
    n.record = r;
    auto t = TargetOf(s.target(), a.drill_nodes, r);
    if (!t.ok()) return t.status();
    t->timeout = std::min(s.target().timeout, absl::Seconds(2));
    auto c = Client::Connect(*t);
    if (!c.ok()) {
      return absl::UnavailableError(absl::StrCat("node ", r.node(), ": ", c.status().message()));
    }
    n.client = std::move(*c);
    nodes[n.name] = std::move(n);
  }
  if (nodes.count(owner) == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the owner ", owner, " of vip ", vip, " publishes no node record (dead?)"));
  }
  std::vector<std::string> standbys;
  for (const auto& [name, n] : nodes) {
    if (name != owner && !n.record.frozen()) standbys.push_back(name);
  }
  if (standbys.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no live, unfrozen standby for vip ", vip, ": nobody could take it over"));
  }
  Client& owner_c = *nodes[owner].client;
  const v1::NodeRecord owner_rec = nodes[owner].record;
  if (a.drill_mode == "stop") {
    const std::string boot = ReadLine("/proc/sys/kernel/random/boot_id");
    if (owner_rec.pid() <= 0 || owner_rec.boot_id().empty() || owner_rec.boot_id() != boot) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--mode stop signals the owner's lbagent, which must run on this host: owner ", owner,
          " runs elsewhere (boot id ", owner_rec.boot_id(), ", here ", boot,
          "). Run the drill on the owner's host, or use --mode fence"));
    }
    const std::string comm = ReadLine(absl::StrCat("/proc/", owner_rec.pid(), "/comm"));
    if (comm != "lbagent") {
      return absl::FailedPreconditionError(absl::StrCat("owner ", owner, " says it is pid ",
                                                        owner_rec.pid(), " but that is \"", comm,
                                                        "\", not lbagent: refusing to signal it"));
    }
  }

  Progress(absl::StrCat("vip ", vip, ": owner ", owner, ", standbys ", absl::StrJoin(standbys, ","),
                        "; looking for traffic through ", owner));
  // ---- checks: traffic through the owner, the standbys' baselines ----
  TrafficWatch traffic;
  for (const std::string& n : standbys) {
    auto p = Packets(*nodes[n].client, vip);
    if (!p.ok())
      return absl::UnavailableError(absl::StrCat("node ", n, ": ", p.status().message()));
    traffic.Baseline(n, *p);
  }
  {
    auto p0 = Packets(owner_c, vip);
    if (!p0.ok()) {
      return absl::UnavailableError(absl::StrCat("owner ", owner, ": ", p0.status().message()));
    }
    bool live = false;
    for (int i = 0; i < 30 && !live; ++i) {
      absl::SleepFor(absl::Milliseconds(100));
      auto p = Packets(owner_c, vip);
      live = p.ok() && *p > *p0;
    }
    if (!live) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no traffic through owner ", owner, " on vip ", vip,
          " in 3 s: the drill measures traffic moving and does not generate any; start "
          "traffic first"));
    }
  }
  // A standby that already forwards the VIP would make the measurement
  // meaningless (and is a bug of its own).
  for (const std::string& n : standbys) {
    auto p = Packets(*nodes[n].client, vip);
    if (p.ok() && traffic.Observe(n, *p, 0)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "standby ", n, " forwards vip ", vip, " before the drill: two forwarders? not drilling"));
    }
  }
  const int diffs_before = diff->differences_size();

  Progress(absl::StrCat("traffic through ", owner, "; failing it over: ",
                        a.drill_mode == "fence" ? "asking it to yield the VIP"
                                                : absl::StrCat("SIGSTOP to pid ", owner_rec.pid()),
                        " (observing for up to ", timeout_ms / 1000, " s)"));
  // ---- the failure ----
  v1::DrillResult result;
  *result.mutable_vip() = *key;
  result.set_mode(a.drill_mode);
  result.set_from_node(owner);
  result.set_stable_window_ms(window_ms);
  const absl::Time t0 = absl::Now();
  result.set_started_unix_ms(absl::ToUnixMillis(t0));
  pid_t stopped = 0;
  absl::Cleanup cont = [&stopped] {
    if (stopped > 0) kill(stopped, SIGCONT);
    g_stopped = 0;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
  };
  if (a.drill_mode == "fence") {
    v1::YieldVipRequest req;
    *req.mutable_vip() = *key;
    // hold_off_s 0: the owner's default (until another node holds the
    // VIP, at most max(10 s, 2 x TTL)).
    req.set_reason("drill");
    v1::YieldVipResponse resp;
    if (absl::Status ys =
            owner_c.Call(owner_c.cluster(), &v1::ClusterOps::Stub::YieldVip, req, &resp);
        !ys.ok()) {
      // The peer's error, said as the peer's: lbctl's message names the node it ran against.
      return absl::Status(ys.code(), absl::StrCat("owner ", owner, " (", owner_c.target(),
                                                  ") refused or failed to yield: ", ys.message()));
    }
  } else {
    stopped = static_cast<pid_t>(owner_rec.pid());
    g_stopped = stopped;
    signal(SIGINT, ContinueAndExit);
    signal(SIGTERM, ContinueAndExit);
    if (kill(stopped, SIGSTOP) != 0) {
      const int e = errno;
      stopped = 0;
      return absl::PermissionDeniedError(absl::StrCat(
          "SIGSTOP to owner ", owner, " (pid ", owner_rec.pid(), ") failed: ", std::strerror(e)));
    }
  }

  // ---- observe ----
  VerdictWatch verdicts(vip);
  std::optional<PoolWatch> pool;
  std::string last_sig;
  std::optional<int64_t> stable;
  int64_t next_verdicts_ms = 0;
  int64_t next_progress_ms = 0;
  std::vector<std::string> notes;
  while (MsSince(t0) < timeout_ms) {
    const absl::Time tick = absl::Now();
    if (!traffic.moved()) {
      for (const std::string& n : standbys) {
        auto p = Packets(*nodes[n].client, vip);
        if (p.ok() && traffic.Observe(n, *p, MsSince(t0))) {
          pool.emplace(*traffic.moved_ms(), window_ms);
          Progress(absl::StrCat("traffic moved to ", n, " after ", *traffic.moved_ms(),
                                " ms; waiting for its pool to hold still for ", window_ms, " ms"));
          break;
        }
      }
    }
    if (traffic.moved()) {
      Client& to = *nodes[traffic.to()].client;
      auto ts = GetStatus(to);
      auto td = GetDiff(to);
      if (ts.ok() && td.ok() && FindVip(*ts, vip) != nullptr) {
        std::string table;
        for (const v1::NodeRecord& r : td->nodes()) {
          if (r.node() == traffic.to()) {
            auto h = r.table_hashes().find(vip);
            if (h != r.table_hashes().end()) table = h->second;
          }
        }
        const int64_t t = MsSince(t0);
        const std::string sig = PoolSignature(*FindVip(*ts, vip), table);
        if (pool->Observe(t, sig) && notes.size() < 16) {
          notes.push_back(absl::StrCat("the pool on ", traffic.to(), " changed at +", t / 1000.0,
                                       " s: ", last_sig, " -> ", sig));
        }
        last_sig = sig;
        stable = pool->StableMs(t);
        if (stable.has_value()) {
          Progress(absl::StrCat("the pool on ", traffic.to(), " is stable from +", *stable,
                                " ms; reading every node's audit log and config differences"));
          break;
        }
      }
    }
    if (MsSince(t0) >= next_verdicts_ms) {
      next_verdicts_ms = MsSince(t0) + 250;
      // Any live standby has every node's record (the stopped owner's stays
      // until its lease expires, unchanged).
      auto d = GetDiff(*nodes[standbys.front()].client);
      if (d.ok()) {
        for (const v1::NodeRecord& r : d->nodes()) verdicts.Observe(r, MsSince(t0));
      }
    }
    if (MsSince(t0) >= next_progress_ms) {
      if (next_progress_ms > 0) {
        Progress(absl::StrCat("+", MsSince(t0) / 1000, " s of ", timeout_ms / 1000, " s: ",
                              traffic.moved() ? "waiting for a stable pool on " + traffic.to()
                                              : std::string("no standby forwards it yet")));
      }
      next_progress_ms = MsSince(t0) + 5000;
    }
    absl::SleepFor(absl::Milliseconds(40) - (absl::Now() - tick));
  }
  const int64_t end_ms = MsSince(t0);

  // ---- the end ----
  if (stopped > 0) {
    kill(stopped, SIGCONT);
    stopped = 0;
    g_stopped = 0;
    absl::SleepFor(absl::Seconds(1));  // one coordination tick to republish
  }
  result.set_to_node(traffic.to());
  result.set_failover_ms(traffic.moved_ms().value_or(-1));
  result.set_stable_ms(stable.value_or(-1));
  if (traffic.moved() && !stable.has_value()) {
    notes.push_back(absl::StrCat("the pool on ", traffic.to(), " changed ",
                                 pool.has_value() ? pool->changes() : 0,
                                 " times and never held still for the window"));
  }
  // Flaps: automated transitions in every node's audit log, and flips of
  // every node's own verdict.
  uint32_t flaps = verdicts.flips();
  for (const std::string& n : verdicts.notes()) notes.push_back(n);
  for (auto& [name, n] : nodes) {
    v1::QueryAuditRequest q;
    q.set_since_unix_ms(result.started_unix_ms());
    v1::QueryAuditResponse r;
    if (absl::Status qs = n.client->Call(n.client->audit(), &v1::Audit::Stub::QueryAudit, q, &r);
        !qs.ok()) {
      notes.push_back(absl::StrCat("node ", name, ": audit log not read: ", qs.message()));
      continue;
    }
    for (const v1::AuditRecord& rec : r.records()) {
      if (!IsFlapAction(rec.action()) || rec.vip() != vip) continue;
      ++flaps;
      notes.push_back(absl::StrCat("node ", name, ": ", rec.action(), " of backend ", rec.backend(),
                                   " at +", (rec.unix_ms() - result.started_unix_ms()) / 1000.0,
                                   " s"));
    }
  }
  result.set_flaps(flaps);
  // Differences: the largest count any node reports.
  int differences = 0;
  for (auto& [name, n] : nodes) {
    auto d = GetDiff(*n.client);
    if (!d.ok()) {
      notes.push_back(
          absl::StrCat("node ", name, ": config diff not read: ", d.status().message()));
      continue;
    }
    if (d->differences_size() > differences) {
      differences = d->differences_size();
      for (const std::string& line : d->differences()) {
        notes.push_back(absl::StrCat("difference seen by ", name, ": ", line));
      }
    }
  }
  result.set_differences(static_cast<uint32_t>(differences));
  if (diffs_before > 0) {
    notes.push_back(absl::StrCat(diffs_before, " differences already before the drill"));
  }
  if (!traffic.moved()) {
    notes.push_back(absl::StrCat("no standby's counter for vip ", vip, " rose within ",
                                 timeout_ms / 1000, " s: is traffic reaching the standbys?"));
  }
  notes.push_back(absl::StrCat("observed for ", end_ms / 1000.0, " s"));
  for (std::string& n : notes) {
    if (n.size() > 500) n.resize(500);
  }
  if (notes.size() > 64) notes.resize(64);
  for (const std::string& n : notes) result.add_notes(n);
  result.set_pass(DrillPasses(result));

  v1::RecordDrillRequest rec;
  *rec.mutable_result() = result;
  v1::Empty empty;
  const absl::Status recorded =
      self.Call(self.cluster(), &v1::ClusterOps::Stub::RecordDrill, rec, &empty);
  if (a.json) {
    std::string j;
    google::protobuf::util::JsonPrintOptions jo;
    jo.add_whitespace = true;
    jo.always_print_primitive_fields = true;  // a 0 is a number here, not an absent one
    if (auto js = google::protobuf::util::MessageToJsonString(result, &j, jo); !js.ok()) {
      return absl::InternalError(absl::StrCat("printing the result: ", js.ToString()));
    }
    std::fputs(j.c_str(), out);
  } else {
    std::fputs(FormatDrill(result, recorded.ok() ? st->coordination().node() : "").c_str(), out);
  }
  std::fflush(out);
  if (!recorded.ok()) {
    return absl::Status(recorded.code(),
                        absl::StrCat("the drill ran (", result.pass() ? "PASS" : "FAIL",
                                     ") but recording it failed: ", recorded.message()));
  }
  if (!result.pass()) {
    return absl::UnknownError("drill FAIL: the numbers above miss their targets");
  }
  return absl::OkStatus();
}

}  // namespace ballast::lbctl
