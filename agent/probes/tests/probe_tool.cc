// probe_tool: drives a ProbeForwarder and single probes from the shell, for
// the namespace test (probe_netns_test.sh). Runs in the router namespace.
//
//   probe_tool attach --dev D --src4 A --src6 A [--pin-dir P]
//   probe_tool target --id N --addr A [--gue-port N] [--pin-dir P]   program a target
//   probe_tool untarget --id N [--pin-dir P]
//   probe_tool stats [--pin-dir P]                        verdict counters
//   probe_tool detach --dev D [--pin-dir P]
//   probe_tool run --vip A --port N --backend A --id N --spec TEXTPROTO [--direct]
//                                                         one probe; exit 0 if ok
//   probe_tool schedule --vip A --port N --targets ID=ADDR,... --spec TEXTPROTO --ms T
//                                                         a ProbeScheduler for T ms;
//                                                         prints "ID ok=N fail=M" per target
// Every command but `run` reopens the forwarder from its pinned maps.
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <string>

#include <google/protobuf/text_format.h>

#include "agent/probes/forwarder.h"
#include "agent/probes/scheduler.h"
#include "agent/probes/spec.h"

using namespace ballast;
using namespace ballast::probes;

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "probe_tool: %s\n", what.c_str());
  return 2;
}

IpAddress Addr(const std::map<std::string, std::string>& a, const std::string& k,
               const std::string& def) {
  auto it = a.find(k);
  auto parsed = IpAddress::Parse(it == a.end() ? def : it->second);
  if (!parsed.ok()) {
    std::fprintf(stderr, "probe_tool: --%s: %s\n", k.c_str(),
                 std::string(parsed.status().message()).c_str());
    std::exit(2);
  }
  return *parsed;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Fail("usage: see the file comment of probe_tool.cc");
  const std::string cmd = argv[1];
  std::map<std::string, std::string> a;
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) return Fail("unexpected argument " + k);
    k.erase(0, 2);
    if (k == "direct") {
      a.insert_or_assign(k, std::string(1, '1'));  // not = "1": GCC 12 -O3's false -Wrestrict
    } else if (i + 1 < argc) {
      a[k] = argv[++i];
    } else {
      return Fail("--" + k + " needs a value");
    }
  }

  if (cmd == "run") {
    ProbeTarget t;
    t.vip = Addr(a, "vip", "0.0.0.0");
    t.backend = Addr(a, "backend", "0.0.0.0");
    t.port = static_cast<uint16_t>(std::stoi(a["port"]));
    t.backend_id = static_cast<uint32_t>(std::stoul(a.count("id") ? a["id"] : "0"));
    if (!google::protobuf::TextFormat::ParseFromString(a["spec"], &t.spec)) {
      return Fail("--spec is not a ProbeSpec in text format");
    }
    if (a.count("direct")) t.spec.set_direct(true);
    auto prober = MakeProber(t.spec);
    if (!prober.ok()) return Fail(std::string(prober.status().message()));
    const Endpoint ep = EndpointOf(t, BALLAST_PROBE_MARK_BASE);
    const ProbeResult r =
        (*prober)->Run(ep, Clock::now() + std::chrono::milliseconds(TimeoutMsOf(t.spec)));
    std::printf("%s %s\n", r.ok ? "ok" : "FAIL", r.detail.c_str());
    return r.ok ? 0 : 1;
  }

  if (cmd == "schedule") {
    v1::ProbeSpec spec;
    if (!google::protobuf::TextFormat::ParseFromString(a["spec"], &spec)) {
      return Fail("--spec is not a ProbeSpec in text format");
    }
    std::mutex mu;
    std::map<std::string, std::pair<int, int>> counts;
    std::map<std::string, std::string> last;
    ProbeScheduler sched({.workers = 2},
                         [&](const std::string& id, const ProbeTarget&, const ProbeResult& r) {
                           std::lock_guard<std::mutex> lock(mu);
                           (r.ok ? counts[id].first : counts[id].second)++;
                           last[id] = r.detail;
                         });
    std::string list = a["targets"];
    while (!list.empty()) {
      const size_t comma = list.find(',');
      const std::string item = list.substr(0, comma);
      list = comma == std::string::npos ? "" : list.substr(comma + 1);
      const size_t eq = item.find('=');
      if (eq == std::string::npos) return Fail("--targets wants ID=ADDR,...");
      ProbeTarget t;
      t.vip = Addr(a, "vip", "0.0.0.0");
      t.port = static_cast<uint16_t>(std::stoi(a["port"]));
      t.backend_id = static_cast<uint32_t>(std::stoul(item.substr(0, eq)));
      auto backend = IpAddress::Parse(item.substr(eq + 1));
      if (!backend.ok()) return Fail(std::string(backend.status().message()));
      t.backend = *backend;
      t.spec = spec;
      if (absl::Status s = sched.Add(item.substr(0, eq), t); !s.ok()) {
        return Fail(std::string(s.message()));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(a["ms"])));
    sched.Shutdown();
    for (const auto& [id, c] : counts) {
      std::printf("%s ok=%d fail=%d last=%s\n", id.c_str(), c.first, c.second, last[id].c_str());
    }
    return 0;
  }

  ProbeForwarder::Options o;
  o.device = a.count("dev") ? a["dev"] : "lo";
  if (a.count("pin-dir")) o.pin_dir = a["pin-dir"];
  o.src4 = Addr(a, "src4", "0.0.0.0");
  o.src6 = Addr(a, "src6", "::");
  // Open() rewrites probe_settings: every command passes the same sources.
  auto f = ProbeForwarder::Open(o);
  if (!f.ok()) return Fail(std::string(f.status().message()));
  absl::Status s;
  if (cmd == "attach") {
    s = (*f)->Attach();
  } else if (cmd == "detach") {
    s = (*f)->Detach();
  } else if (cmd == "target") {
    ProbeForwarder::Target t{Addr(a, "addr", "")};
    if (a.count("gue-port")) t.gue_port = static_cast<uint16_t>(std::stoul(a["gue-port"]));
    s = (*f)->SetTarget(static_cast<uint32_t>(std::stoul(a["id"])), t);
  } else if (cmd == "untarget") {
    s = (*f)->RemoveTarget(static_cast<uint32_t>(std::stoul(a["id"])));
  } else if (cmd == "stats") {
    auto st = (*f)->Stats();
    if (!st.ok()) return Fail(std::string(st.status().message()));
    static const char* kNames[] = {
        "pass",        "encap_tx",    "encap_redirect", "encap_neigh", "drop_no_target",
        "drop_not_ip", "drop_family", "drop_no_source", "drop_encap",  "drop_fib"};
    static_assert(sizeof(kNames) / sizeof(kNames[0]) == BALLAST_PROBE_V_MAX);
    for (int i = 0; i < BALLAST_PROBE_V_MAX; ++i) {
      std::printf("%s=%llu\n", kNames[i], static_cast<unsigned long long>((*st)[i]));
    }
  } else {
    return Fail("unknown command " + cmd);
  }
  if (!s.ok()) return Fail(std::string(s.message()));
  return 0;
}
