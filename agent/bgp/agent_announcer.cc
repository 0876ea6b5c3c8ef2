#include "agent/bgp/agent_announcer.h"

#include <sys/stat.h>

#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "agent/bgp/dataplane_probe.h"
#include "agent/base/json.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/core/validate.h"
#include "agent/dataplane/dataplane.h"

namespace ballast::bgp {
namespace {

using core::Log;
using core::LogLevel;

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

}  // namespace

v1::Bgp BgpWithDefaults(const v1::Bgp& in) {
  v1::Bgp out = in;
  if (out.interval_ms() == 0) out.set_interval_ms(250);
  if (out.bird_timeout_ms() == 0) out.set_bird_timeout_ms(2000);
  if (out.hold_file().empty()) out.set_hold_file("/run/ballast/bgp-hold");
  if (out.withdraw_grace_ms() == 0) out.set_withdraw_grace_ms(core::kDefaultWithdrawGraceMs);
  return out;
}

std::unique_ptr<AgentAnnouncer> AgentAnnouncer::Start(Options options) {
  options.config = BgpWithDefaults(options.config);
  std::unique_ptr<AgentAnnouncer> a(new AgentAnnouncer(std::move(options)));
  a->thread_ = std::thread([p = a.get()] { p->Loop(); });
  return a;
}

namespace {
Announcer::Options AnnouncerOptions(const v1::Bgp& c) {
  Announcer::Options o;
  o.bird.socket_path = c.bird_socket();
  o.bird.timeout = absl::Milliseconds(c.bird_timeout_ms());
  return o;
}
}  // namespace

AgentAnnouncer::AgentAnnouncer(Options options)
    : options_(std::move(options)), announcer_(AnnouncerOptions(options_.config)) {
  status_.set_enabled(true);
  status_.set_bird_socket(options_.config.bird_socket());
}

AgentAnnouncer::~AgentAnnouncer() { (void)Shutdown("agent stopping"); }

void AgentAnnouncer::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

absl::Status AgentAnnouncer::Shutdown(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_) return absl::OkStatus();
    shut_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  absl::Status s = Pass(reason.empty() ? "agent stopping" : reason);
  if (s.ok()) {
    Log(LogLevel::kInfo, "bgp: every VIP withdrawn for shutdown", {{"reason", reason}});
  } else {
    Log(LogLevel::kError, "bgp: withdrawing the VIPs for shutdown failed",
        {{"reason", reason},
         {"error", std::string(s.message())},
         {"note",
          "BIRD keeps announcing until its session to the ToR ends or lbagent runs again"}});
  }
  return s;
}

v1::Announcement AgentAnnouncer::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void AgentAnnouncer::Loop() {
  const auto interval = std::chrono::milliseconds(options_.config.interval_ms());
  for (;;) {
    (void)Pass("");
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, interval, [this] { return stop_ || kicked_; });
    kicked_ = false;
    if (stop_) return;
  }
}

PolicyInput AgentAnnouncer::Gather(const std::string& shutdown,
                                   std::map<IpAddress, uint64_t>* retired) {
  PolicyInput in;
  *retired = options_.engine->RetiredAddresses();
  for (const auto& [a, since] : *retired) in.retired.push_back(a.ToString());
  in.shutdown = shutdown;
  struct stat sb;
  if (stat(options_.config.hold_file().c_str(), &sb) == 0) {
    in.hold = absl::StrCat("hold file ", options_.config.hold_file(), " exists");
  }
  const v1::Config config = options_.engine->GetConfig();
  in.dataplane = ProbeDataplane(options_.pin_dir, config.global().interface());
  in.cluster_mode = static_cast<bool>(options_.owned);
  in.now_ns = dataplane::Dataplane::MonotonicNowNs();
  std::set<std::string> owned;
  if (in.cluster_mode) owned = options_.owned();
  for (const v1::Vip& v : config.vips()) {
    VipInput vi;
    vi.key = core::VipKeyText(v.key());
    vi.address = v.key().address();
    vi.active_standby = v.ownership() == v1::ACTIVE_STANDBY;
    if (in.cluster_mode && vi.active_standby) {
      vi.owner = owned.count(vi.key) != 0;
      if (auto o = options_.engine->GetVipOwner(v.key()); o.ok()) vi.deadline_ns = o->deadline_ns;
    }
    in.vips.push_back(std::move(vi));
  }
  return in;
}

std::map<VipPrefix, std::string> AgentAnnouncer::ReleaseRetired(
    const std::map<IpAddress, uint64_t>& retired, const AnnouncerStatus& bird, uint64_t now_ns) {
  std::map<VipPrefix, BirdVipState> observed;
  std::map<VipPrefix, IpAddress> address_of;
  for (const auto& [a, since] : retired) {
    absl::StatusOr<VipPrefix> p = VipPrefix::Parse(a.ToString());
    if (!p.ok()) continue;
    observed[*p] = BirdVipState::kUnknown;  // until BIRD shows it
    address_of.emplace(*p, a);
  }
  for (const VipStatus& v : bird.vips) {
    // Only a desired withdrawal counts: an address a VIP uses again is not
    // retired any more (the engine no longer lists it next pass).
    if (auto it = observed.find(v.vip); it != observed.end() && !v.desired) it->second = v.bird;
  }
  ReleasePlan plan = PlanAddressRelease(release_memory_, observed, now_ns,
                                        uint64_t{options_.config.withdraw_grace_ms()} * 1'000'000);
  release_memory_ = std::move(plan.next);
  if (plan.release.empty()) return plan.held;
  std::map<IpAddress, uint64_t> go;
  for (const VipPrefix& p : plan.release) {
    const IpAddress& a = address_of.at(p);
    go[a] = retired.at(a);
  }
  auto released = options_.engine->ReleaseRetiredAddresses(go);
  if (!released.ok()) {
    Log(LogLevel::kError, "bgp: releasing retired VIP addresses failed (retrying next pass)",
        {{"error", std::string(released.status().message())}});
    for (const VipPrefix& p : plan.release) {
      plan.held[p] = absl::StrCat("no VIP uses it; releasing its marker failed: ",
                                  released.status().message());
    }
    return plan.held;
  }
  for (const IpAddress& a : *released) {
    Log(LogLevel::kInfo, "bgp: retired VIP address released (route withdrawn, grace passed)",
        {{"address", a.ToString()}, {"grace_ms", options_.config.withdraw_grace_ms()}});
  }
  return plan.held;
}

absl::Status AgentAnnouncer::Pass(const std::string& shutdown) {
  std::map<IpAddress, uint64_t> retired;
  const PolicyInput in = Gather(shutdown, &retired);
  std::vector<std::string> errors;
  std::map<VipPrefix, AnnounceDecision> want = DecideAnnouncements(in, &errors);
  if (in.dataplane.problem != last_dataplane_problem_) {
    if (in.dataplane.healthy) {
      Log(LogLevel::kInfo, "bgp: data plane healthy again");
    } else {
      Log(LogLevel::kError, "bgp: data plane unhealthy, withdrawing its VIPs",
          {{"problem", in.dataplane.problem}});
    }
    last_dataplane_problem_ = in.dataplane.problem;
  }
  // Every change of a decision (a new address included) is audited; an
  // address that left the config is withdrawn by the reconcile (not desired).
  const int64_t now_ms = NowMs();
  for (const auto& [prefix, d] : want) {
    auto it = decided_.find(prefix);
    if (it != decided_.end() && it->second.announce == d.announce) {
      it->second.reason = d.reason;  // same verdict, maybe worded differently (deadline)
      continue;
    }
    since_ms_[prefix] = now_ms;
    const std::string action = d.announce ? "vip_announce" : "vip_withdraw";
    std::string inputs = absl::StrCat(
        "{\"prefix\":", base::JsonQuote(prefix.ToString()),
        ",\"announce\":", d.announce ? "true" : "false", ",\"reason\":", base::JsonQuote(d.reason),
        ",\"dataplane_healthy\":", in.dataplane.healthy ? "true" : "false",
        ",\"dataplane_problem\":", base::JsonQuote(in.dataplane.problem),
        ",\"hold\":", base::JsonQuote(in.hold), ",\"shutdown\":", base::JsonQuote(in.shutdown),
        ",\"bird_socket\":", base::JsonQuote(options_.config.bird_socket()), "}");
    const std::string message =
        absl::StrCat(d.announce ? "announce " : "withdraw ", prefix.ToString(), ": ", d.reason);
    options_.engine->Record(core::Actor{"automation"}, action, prefix.ToString(), "", inputs,
                            message);
    Log(d.announce ? LogLevel::kInfo : LogLevel::kWarning,
        d.announce ? "bgp: announce VIP" : "bgp: withdraw VIP",
        {{"prefix", prefix.ToString()}, {"reason", d.reason}});
    decided_[prefix] = d;
  }
  for (auto it = decided_.begin(); it != decided_.end();) {
    if (want.count(it->first) == 0) {
      Log(LogLevel::kInfo, "bgp: VIP address left the config, withdrawing",
          {{"prefix", it->first.ToString()}});
      since_ms_.erase(it->first);
      it = decided_.erase(it);
    } else {
      ++it;
    }
  }

  std::map<VipPrefix, bool> desired;
  for (const auto& [prefix, d] : want) desired[prefix] = d.announce;
  announcer_.SetDesired(std::move(desired));
  ReconcileReport report = announcer_.Reconcile();
  for (const auto& c : report.changes) {
    Log(c.result.ok() ? LogLevel::kInfo : LogLevel::kError,
        c.step.enable ? "bgp: BIRD enable" : "bgp: BIRD disable",
        {{"protocol", c.step.protocol},
         {"reason", c.step.reason},
         {"ok", c.result.ok()},
         {"error", std::string(c.result.message())}});
  }
  std::string err = report.status.ok() ? "" : std::string(report.status.message());
  if (!errors.empty())
    err = absl::StrCat(err, err.empty() ? "" : "; ", absl::StrJoin(errors, "; "));
  if (err != last_error_) {
    if (err.empty()) {
      Log(LogLevel::kInfo, "bgp: BIRD in line with the desired announcements");
    } else {
      Log(LogLevel::kError, "bgp: reconciling BIRD failed (retrying every pass)",
          {{"error", err}, {"socket", options_.config.bird_socket()}});
    }
    last_error_ = err;
  }

  const AnnouncerStatus as = announcer_.Status();
  // A retired address's marker goes once its route is gone (not on the
  // shutdown pass: the maps outlive the agent, and the next run holds it).
  std::map<VipPrefix, std::string> held;
  if (shutdown.empty()) {
    held = ReleaseRetired(retired, as, dataplane::Dataplane::MonotonicNowNs());
  }
  v1::Announcement st;
  st.set_enabled(true);
  st.set_bird_socket(options_.config.bird_socket());
  st.set_bird_reachable(as.bird_reachable);
  st.set_bird_version(as.bird_version);
  st.set_bird_error(err);
  st.set_dataplane_healthy(in.dataplane.healthy);
  st.set_dataplane_problem(in.dataplane.problem);
  st.set_hold(!in.shutdown.empty() ? absl::StrCat("shutdown (", in.shutdown, ")") : in.hold);
  for (const VipStatus& v : as.vips) {
    v1::VipAnnouncement* va = st.add_vips();
    va->set_prefix(v.vip.ToString());
    auto d = want.find(v.vip);
    if (d != want.end()) {
      va->set_announce(d->second.announce);
      va->set_reason(d->second.reason);
    }
    if (auto h = held.find(v.vip); h != held.end()) va->set_reason(h->second);
    va->set_bird_state(BirdVipStateName(v.bird));
    if (auto s = since_ms_.find(v.vip); s != since_ms_.end()) va->set_since_unix_ms(s->second);
    va->set_error(v.error);
  }
  for (const SessionStatus& s : as.sessions) {
    st.add_sessions(absl::StrCat(s.name, " ", s.state, " ", s.info));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!report.status.ok()) ++bird_errors_;
    st.set_bird_errors(bird_errors_);
    status_ = st;
  }
  options_.engine->SetAnnouncement(std::move(st));
  return report.status;
}

}  // namespace ballast::bgp
