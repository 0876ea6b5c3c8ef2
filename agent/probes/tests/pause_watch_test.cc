// PauseLog (pure, time passed in) and ProbeScheduler's use of PauseWatch: a
// probe that overlaps a stop of the whole process is delivered as discarded,
// one that does not is counted; rounds that fell due during a stop are
// skipped, and every target keeps its phase.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "agent/probes/pause_watch.h"
#include "agent/probes/scheduler.h"
#include "agent/probes/tests/test_servers.h"

namespace ballast::probes {
namespace {

using std::chrono::milliseconds;
using T = PauseLog::Clock::time_point;

T At(int ms) { return T{} + milliseconds(ms); }

TEST_CASE("pause log: a gap between beats over the threshold is a pause") {
  PauseLog log(milliseconds(100));
  for (int t = 0; t <= 200; t += 20) log.Beat(At(t));
  CHECK(log.PauseDuring(At(0), At(200), At(200)) == milliseconds(0));  // beats 20 ms apart
  log.Beat(At(300));  // 100 ms: at the threshold, not over it
  CHECK(log.PauseDuring(At(0), At(300), At(300)) == milliseconds(0));
  log.Beat(At(1300));  // stopped for a second
  log.Beat(At(1320));
  CHECK(log.PauseDuring(At(250), At(400), At(1320)) == milliseconds(1000));    // started in it
  CHECK(log.PauseDuring(At(1200), At(1320), At(1320)) == milliseconds(1000));  // ended in it
  CHECK(log.PauseDuring(At(500), At(600), At(1320)) == milliseconds(1000));    // inside it
  CHECK(log.PauseDuring(At(100), At(290), At(1320)) == milliseconds(0));       // before it
  CHECK(log.PauseDuring(At(1310), At(1320), At(1320)) == milliseconds(0));     // after it
}

TEST_CASE("pause log: a pause the beating thread has not woken from yet counts") {
  PauseLog log(milliseconds(100));
  log.Beat(At(0));
  log.Beat(At(20));
  // A probe's thread wakes at 900 before the beat does.
  CHECK(log.PauseDuring(At(10), At(900), At(900)) == milliseconds(880));
  CHECK(log.PauseDuring(At(10), At(100), At(100)) == milliseconds(0));  // 80 ms: not yet a pause
  log.Beat(At(910));
  CHECK(log.PauseDuring(At(10), At(900), At(910)) == milliseconds(890));
}

TEST_CASE("pause log: keeps the newest pauses") {
  PauseLog log(milliseconds(10));
  for (int i = 0; i <= 100; ++i) log.Beat(At(i * 100));
  CHECK(log.PauseDuring(At(9950), At(9960), At(10000)) == milliseconds(100));
  CHECK(log.PauseDuring(At(50), At(60), At(10000)) == milliseconds(0));  // forgotten
}

TEST_CASE("next start after a pause: missed rounds are skipped, the phase is kept") {
  const auto second = milliseconds(1000);
  CHECK(NextStartAfter(At(100), second, At(100)) == At(1100));   // due now: the next round
  CHECK(NextStartAfter(At(100), second, At(600)) == At(1100));   // late by half a round
  CHECK(NextStartAfter(At(100), second, At(1100)) == At(2100));  // exactly one round late
  CHECK(NextStartAfter(At(100), second, At(5350)) == At(6100));  // five rounds missed
  CHECK(NextStartAfter(At(250), second, At(5350)) == At(6250));  // its own phase
}

// Stops this whole process (every thread) for `stop_ms`, starting `after_ms`
// from now, from a child process; returns the child's pid.
pid_t StopMeLater(int after_ms, int stop_ms) {
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {  // only async-signal-safe calls here
    usleep(static_cast<useconds_t>(after_ms) * 1000);
    kill(parent, SIGSTOP);
    usleep(static_cast<useconds_t>(stop_ms) * 1000);
    kill(parent, SIGCONT);
    _exit(0);
  }
  return child;
}

struct Results {
  std::mutex mu;
  std::vector<ProbeResult> all;
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return all.size();
  }
};

ProbeResult FirstProbe(int port, int stop_ms) {
  Results got;
  ProbeScheduler sched({.workers = 1, .spread_start = false},
                       [&](const std::string&, const ProbeTarget&, const ProbeResult& r) {
                         std::lock_guard<std::mutex> lock(got.mu);
                         got.all.push_back(r);
                       });
  ProbeTarget t;
  t.vip = t.backend = *IpAddress::Parse("127.0.0.1");
  t.port = static_cast<uint16_t>(port);
  t.spec.set_kind(v1::ProbeSpec::TCP);
  t.spec.set_interval_ms(5000);
  t.spec.set_timeout_ms(300);
  t.spec.set_direct(true);
  const pid_t child = stop_ms > 0 ? StopMeLater(100, stop_ms) : -1;
  REQUIRE(sched.Add("t", t).ok());
  while (got.size() == 0) std::this_thread::sleep_for(milliseconds(10));
  if (child > 0) REQUIRE(waitpid(child, nullptr, 0) == child);
  sched.Shutdown();
  std::lock_guard<std::mutex> lock(got.mu);
  return got.all.front();
}

TEST_CASE("scheduler: a probe the process was stopped during is delivered as discarded") {
  testing::FullListener full;  // connects hang until the probe's 300 ms timeout
  const ProbeResult paused = FirstProbe(full.port(), 600);
  CHECK(paused.discarded);
  CHECK_FALSE(paused.ok);
  CHECK_THAT(paused.detail, Catch::StartsWith("not counted: the agent did not run for "));
  CHECK_THAT(paused.detail, Catch::Contains("SYN not answered"));

  const ProbeResult counted = FirstProbe(full.port(), 0);
  CHECK_FALSE(counted.discarded);
  CHECK_FALSE(counted.ok);
  CHECK_THAT(counted.detail, Catch::Contains("SYN not answered"));
}

TEST_CASE("scheduler: rounds missed in a stop are skipped and probes stay apart") {
  testing::HttpServer up("b1");
  std::mutex mu;
  std::map<std::string, std::vector<Clock::time_point>> starts;
  ProbeScheduler sched({.workers = 4, .spread_start = false},
                       [&](const std::string& id, const ProbeTarget&, const ProbeResult& r) {
                         if (r.discarded) return;
                         std::lock_guard<std::mutex> lock(mu);
                         starts[id].push_back(Clock::now() - r.latency);
                       });
  // Four targets a quarter of a round apart.
  ProbeTarget t;
  t.vip = t.backend = *IpAddress::Parse("127.0.0.1");
  t.port = static_cast<uint16_t>(up.port());
  t.spec.set_kind(v1::ProbeSpec::TCP);
  t.spec.set_interval_ms(1000);
  t.spec.set_timeout_ms(200);
  t.spec.set_direct(true);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(sched.Add("t" + std::to_string(i), t).ok());
    std::this_thread::sleep_for(milliseconds(250));
  }
  // Every target falls due at least once in the stop.
  const pid_t child = StopMeLater(100, 1500);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  const Clock::time_point woke = Clock::now();
  // Until every target has started twice since waking (two rounds, 2 s at
  // most), or 5 s.
  auto after_waking = [&](const std::vector<Clock::time_point>& s) {
    return std::lower_bound(s.begin(), s.end(), woke);
  };
  for (const auto until = woke + milliseconds(5000); Clock::now() < until;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (starts.size() == 4 && std::all_of(starts.begin(), starts.end(), [&](const auto& kv) {
            return kv.second.end() - after_waking(kv.second) >= 2;
          }))
        break;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  sched.Shutdown();

  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(starts.size() == 4);
  std::vector<Clock::time_point> first_after;
  for (const auto& [id, s] : starts) {
    INFO(id);
    auto it = after_waking(s);
    REQUIRE(s.end() - it >= 2);
    first_after.push_back(*it);
    // One probe per round after waking, not the missed rounds caught up
    // back to back.
    CHECK(*std::next(it) - *it >= milliseconds(700));
  }
  // On waking the targets keep their phases: no two start together (every
  // one of them would be due at once if missed rounds were run).
  std::sort(first_after.begin(), first_after.end());
  for (size_t i = 1; i < first_after.size(); ++i) {
    CHECK(first_after[i] - first_after[i - 1] >= milliseconds(125));
  }
}

}  // namespace
}  // namespace ballast::probes
