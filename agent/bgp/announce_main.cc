// ballast-announce: the Announcer (agent/bgp/announcer.h) as a small CLI, for
// the ECMP lab, the BGP end-to-end tests and operators debugging BIRD without
// an agent. It talks only to BIRD's control socket.
//
//   ballast-announce run --socket S --announce VIP... [--interval 1s]
//       SetDesired + Reconcile every interval, one JSON line per command sent
//       or error; SIGUSR1 = WithdrawAll (held), SIGUSR2 = release the hold,
//       SIGTERM/SIGINT = WithdrawAll("shutdown") and exit 0.
//   ballast-announce once --socket S [--announce VIP]... [--withdraw VIP]...
//       one Reconcile; exit 0 when BIRD matches, 1 otherwise.
//   ballast-announce status --socket S [--vip VIP]...
//   ballast-announce render VIP...     BIRD config for the VIPs' protocols
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/base/json.h"
#include "agent/bgp/announcer.h"

namespace {

namespace base = ballast::base;
using ballast::bgp::Announcer;
using ballast::bgp::ReconcileReport;
using ballast::bgp::VipPrefix;

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal.store(sig); }

std::string Now() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
}

// One JSON line per command the reconcile sent, and one for its error.
void PrintReport(const ReconcileReport& r) {
  for (const auto& c : r.changes) {
    printf("{\"time\":%s,\"action\":%s,\"protocol\":%s,\"reason\":%s,\"ok\":%s,\"error\":%s}\n",
           base::JsonQuote(Now()).c_str(),
           base::JsonQuote(c.step.enable ? "announce" : "withdraw").c_str(),
           base::JsonQuote(c.step.protocol).c_str(), base::JsonQuote(c.step.reason).c_str(),
           c.result.ok() ? "true" : "false", base::JsonQuote(c.result.message()).c_str());
  }
  if (!r.status.ok()) {
    printf("{\"time\":%s,\"error\":%s}\n", base::JsonQuote(Now()).c_str(),
           base::JsonQuote(r.status.ToString()).c_str());
  }
  fflush(stdout);
}

void PrintStatus(const ballast::bgp::AnnouncerStatus& s) {
  printf("bird: %s%s%s\n", s.bird_reachable ? "reachable " : "UNREACHABLE ", s.bird_version.c_str(),
         s.bird_error.empty() ? "" : (" (" + s.bird_error + ")").c_str());
  if (!s.hold_reason.empty()) printf("hold: %s\n", s.hold_reason.c_str());
  for (const auto& b : s.sessions) {
    printf("session %-16s %-6s %s\n", b.name.c_str(), b.state.c_str(), b.info.c_str());
  }
  for (const auto& v : s.vips) {
    printf("vip %-22s %-46s desired=%s bird=%s%s%s\n", v.vip.ToString().c_str(), v.protocol.c_str(),
           v.effective ? "announce" : "withdraw", ballast::bgp::BirdVipStateName(v.bird),
           v.error.empty() ? "" : " error: ", v.error.c_str());
  }
  for (const auto& o : s.orphans) printf("other %s\n", o.c_str());
}

bool ParseVips(const std::vector<std::string>& in, bool announce, std::map<VipPrefix, bool>* out) {
  for (const std::string& t : in) {
    auto v = VipPrefix::Parse(t);
    if (!v.ok()) {
      fprintf(stderr, "ballast-announce: %s\n", std::string(v.status().message()).c_str());
      return false;
    }
    (*out)[*v] = announce;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ballast-announce: announce and withdraw VIPs through BIRD's control socket"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ballast-announce ") + BALLAST_VERSION);
  std::string socket = "/run/bird/bird.ctl";
  std::vector<std::string> announce, withdraw, vips, render;
  std::string interval_text = "1s";
  double timeout_s = 5;

  auto* run = app.add_subcommand("run", "reconcile periodically until SIGTERM, then withdraw");
  auto* once = app.add_subcommand("once", "reconcile once");
  auto* status = app.add_subcommand("status", "show BIRD's view of the VIPs");
  auto* rend = app.add_subcommand("render", "print BIRD config for the VIPs' protocols");
  for (CLI::App* sc : {run, once, status}) {
    sc->add_option("--socket", socket, "BIRD control socket");
    sc->add_option("--timeout", timeout_s, "seconds per BIRD command");
  }
  run->add_option("--announce", announce, "VIP to announce (repeatable)");
  run->add_option("--interval", interval_text, "reconcile interval (e.g. 200ms, 1s)");
  once->add_option("--announce", announce, "VIP to announce (repeatable)");
  once->add_option("--withdraw", withdraw, "VIP to withdraw (repeatable)");
  status->add_option("--vip", vips, "VIP to show (repeatable)");
  rend->add_option("vips", render, "VIPs")->required();
  CLI11_PARSE(app, argc, argv);

  if (rend->parsed()) {
    std::map<VipPrefix, bool> m;
    if (!ParseVips(render, true, &m)) return 2;
    for (const auto& [v, a] : m) printf("%s\n", v.BirdStaticProtocol().c_str());
    return 0;
  }

  Announcer::Options opts;
  opts.bird.socket_path = socket;
  opts.bird.timeout = absl::Seconds(timeout_s);
  Announcer an(opts);
  std::map<VipPrefix, bool> desired;
  if (!ParseVips(announce, true, &desired) || !ParseVips(withdraw, false, &desired) ||
      !ParseVips(vips, false, &desired)) {
    return 2;
  }
  an.SetDesired(desired);

  if (status->parsed()) {
    // Observe only: a Reconcile with nothing desired would withdraw orphans,
    // so status reads through a plan that is never executed.
    ballast::bgp::BirdClient c(opts.bird);
    auto reply = c.Command("show protocols");
    if (!reply.ok()) {
      fprintf(stderr, "ballast-announce: %s\n", reply.status().ToString().c_str());
      return 1;
    }
    auto rows = ballast::bgp::ParseShowProtocols(*reply);
    if (!rows.ok()) {
      fprintf(stderr, "ballast-announce: %s\n", rows.status().ToString().c_str());
      return 1;
    }
    printf("bird: %s\n", c.version().c_str());
    for (const auto& r : *rows) {
      auto v = VipPrefix::FromProtocolName(r.name);
      if (r.proto == "BGP") {
        printf("session %-16s %-6s %s\n", r.name.c_str(), r.state.c_str(), r.info.c_str());
      } else if (v && (desired.empty() || desired.contains(*v))) {
        printf("vip %-22s %-46s %s\n", v->ToString().c_str(), r.name.c_str(),
               ballast::bgp::BirdVipStateName(ballast::bgp::StateOfRow(r)));
      }
    }
    return 0;
  }

  if (once->parsed()) {
    ReconcileReport r = an.Reconcile();
    PrintReport(r);
    PrintStatus(an.Status());
    return r.status.ok() ? 0 : 1;
  }

  absl::Duration interval;
  if (!absl::ParseDuration(interval_text, &interval) || interval <= absl::ZeroDuration()) {
    fprintf(stderr, "ballast-announce: bad --interval '%s'\n", interval_text.c_str());
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
  std::string last_error;
  for (;;) {
    const int sig = g_signal.exchange(0);
    if (sig == SIGTERM || sig == SIGINT) {
      ReconcileReport r = an.WithdrawAll("shutdown");
      PrintReport(r);
      return r.status.ok() ? 0 : 1;
    }
    ReconcileReport r;
    if (sig == SIGUSR1) {
      r = an.WithdrawAll("SIGUSR1");
    } else {
      if (sig == SIGUSR2) an.ReleaseHold();
      r = an.Reconcile();
    }
    // Repeated identical errors are printed once.
    const std::string err = r.status.ok() ? "" : r.status.ToString();
    if (!r.changes.empty() || err != last_error) PrintReport(r);
    last_error = err;
    // Sleep in slices so that a signal is acted on within 10 ms.
    const absl::Time wake = absl::Now() + interval;
    while (g_signal.load() == 0 && absl::Now() < wake) absl::SleepFor(absl::Milliseconds(10));
  }
}
