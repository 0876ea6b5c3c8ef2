// ProbeScheduler with real TCP probes on loopback: intervals, results with
// the target identity, Update/Remove at runtime, a bounded pool, shutdown.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>

#include "agent/probes/scheduler.h"
#include "agent/probes/tests/test_servers.h"

namespace ballast::probes {
namespace {

struct Recorder {
  std::mutex mu;
  std::map<std::string, std::vector<ProbeResult>> results;
  std::map<std::string, ProbeTarget> targets;
  void operator()(const std::string& id, const ProbeTarget& t, const ProbeResult& r) {
    std::lock_guard<std::mutex> lock(mu);
    results[id].push_back(r);
    targets[id] = t;
  }
  size_t count(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    return results[id].size();
  }
};

ProbeTarget Target(int port, uint32_t interval_ms, bool direct = true) {
  ProbeTarget t;
  t.vip = *IpAddress::Parse("127.0.0.1");
  t.backend = *IpAddress::Parse("127.0.0.1");
  t.port = static_cast<uint16_t>(port);
  t.backend_id = 7;
  t.spec.set_kind(v1::ProbeSpec::TCP);
  t.spec.set_interval_ms(interval_ms);
  t.spec.set_timeout_ms(std::min<uint32_t>(interval_ms, 200));
  t.spec.set_direct(direct);
  return t;
}

TEST_CASE("endpoints: via the VIP with the backend's mark, or direct") {
  ProbeTarget t;
  t.vip = *IpAddress::Parse("198.18.0.10");
  t.backend = *IpAddress::Parse("198.18.11.2");
  t.port = 80;
  t.backend_id = 3;
  Endpoint via = EndpointOf(t, BALLAST_PROBE_MARK_BASE);
  CHECK(via.address.ToString() == "198.18.0.10");
  CHECK(via.port == 80);
  CHECK(via.mark == (BALLAST_PROBE_MARK_BASE | 3));
  CHECK(via.description == "198.18.0.10:80 via backend 198.18.11.2");
  t.spec.set_direct(true);
  t.spec.set_port(8080);
  Endpoint direct = EndpointOf(t, BALLAST_PROBE_MARK_BASE);
  CHECK(direct.address.ToString() == "198.18.11.2");
  CHECK(direct.port == 8080);
  CHECK(direct.mark == 0);
  CHECK(direct.description == "198.18.11.2:8080 (direct)");
  t.vip = *IpAddress::Parse("2001:db8:10::10");
  t.spec.set_direct(false);
  CHECK(EndpointOf(t, BALLAST_PROBE_MARK_BASE).description ==
        "[2001:db8:10::10]:8080 via backend 198.18.11.2");
}

TEST_CASE("targets probe at their interval; results carry the target; remove and update") {
  testing::HttpServer up("b1");
  const int closed = testing::ClosedPort();
  Recorder rec;
  ProbeScheduler sched(
      {.workers = 2, .spread_start = false},
      [&](const std::string& id, const ProbeTarget& t, const ProbeResult& r) { rec(id, t, r); });
  REQUIRE(sched.Add("up", Target(up.port(), 100)).ok());
  REQUIRE(sched.Add("down", Target(closed, 100)).ok());
  CHECK(sched.Add("up", Target(up.port(), 100)).code() == absl::StatusCode::kAlreadyExists);
  ProbeTarget bad = Target(up.port(), 100);
  bad.spec.set_body_regex("x");
  CHECK(sched.Add("bad", bad).code() == absl::StatusCode::kInvalidArgument);

  std::this_thread::sleep_for(std::chrono::milliseconds(550));
  const size_t n_up = rec.count("up");
  CHECK(n_up >= 3);  // 6 expected; fewer only on a stalled machine
  CHECK(n_up <= 7);  // never more often than the interval
  CHECK(rec.count("down") >= 3);
  {
    std::lock_guard<std::mutex> lock(rec.mu);
    for (const auto& r : rec.results["up"]) CHECK(r.ok);
    for (const auto& r : rec.results["down"]) CHECK_FALSE(r.ok);
    CHECK(rec.targets["up"].port == up.port());
  }

  REQUIRE(sched.Remove("down").ok());
  const size_t n_down = rec.count("down");
  CHECK(sched.Remove("down").code() == absl::StatusCode::kNotFound);

  // Point "up" at the closed port: after Update returns, only failures arrive.
  REQUIRE(sched.Update("up", Target(closed, 100)).ok());
  const size_t before = rec.count("up");
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  CHECK(rec.count("down") == n_down);
  {
    std::lock_guard<std::mutex> lock(rec.mu);
    auto& rs = rec.results["up"];
    REQUIRE(rs.size() > before);
    for (size_t i = before; i < rs.size(); ++i) CHECK_FALSE(rs[i].ok);
  }
  CHECK(sched.Ids() == std::vector<std::string>{"up"});
  sched.Shutdown();
  const size_t after = rec.count("up");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(rec.count("up") == after);
  CHECK(sched.Add("late", Target(up.port(), 100)).code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("a bounded pool: slow probes do not run more than `workers` at once") {
  testing::FullListener full;  // every probe waits for its full timeout
  std::mutex mu;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> runs;  // start, end
  ProbeScheduler sched({.workers = 2, .spread_start = false},
                       [&](const std::string&, const ProbeTarget&, const ProbeResult& r) {
                         std::lock_guard<std::mutex> lock(mu);
                         const auto end = Clock::now();
                         runs.emplace_back(end - r.latency, end);
                         CHECK_FALSE(r.ok);
                       });
  for (int i = 0; i < 4; ++i) {
    ProbeTarget t = Target(full.port(), 5000);
    t.spec.set_timeout_ms(200);
    std::string name = "t";  // not "t" + to_string(i): GCC 12 -O3's false -Wrestrict
    name += std::to_string(i);
    REQUIRE(sched.Add(name, t).ok());
  }
  for (int n = 0; n < 100; ++n) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (runs.size() >= 4) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  sched.Shutdown();
  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(runs.size() == 4);  // one probe per target (interval 5 s)
  // The most probes running at any instant (checked at every start).
  int most = 0;
  for (const auto& [start, end] : runs) {
    int running = 0;
    for (const auto& [s2, e2] : runs) running += s2 <= start && start < e2;
    most = std::max(most, running);
  }
  CHECK(most == 2);
}

TEST_CASE("jitter spreads probe starts within interval +- jitter") {
  testing::HttpServer up("b1");
  std::mutex mu;
  std::vector<Clock::time_point> starts;
  ProbeScheduler sched({.workers = 1, .spread_start = false},
                       [&](const std::string&, const ProbeTarget&, const ProbeResult& r) {
                         std::lock_guard<std::mutex> lock(mu);
                         starts.push_back(Clock::now() - r.latency);
                       });
  ProbeTarget t = Target(up.port(), 100);
  t.spec.set_jitter_ms(40);
  REQUIRE(sched.Add("j", t).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  sched.Shutdown();
  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(starts.size() >= 8);
  bool varied = false;
  for (size_t i = 1; i < starts.size(); ++i) {
    const auto gap =
        std::chrono::duration_cast<std::chrono::milliseconds>(starts[i] - starts[i - 1]);
    CHECK(gap.count() >= 50);   // 100 - 40, minus scheduling slack
    CHECK(gap.count() <= 300);  // 100 + 40, plus slack for a loaded machine
    if (gap.count() < 90 || gap.count() > 110) varied = true;
  }
  CHECK(varied);
}

}  // namespace
}  // namespace ballast::probes

namespace ballast::probes {
namespace {

TEST_CASE("remove and re-add an id while its probe runs: only the new target's results arrive") {
  testing::FullListener full;  // the first probe hangs for its timeout
  testing::HttpServer up("b1");
  Recorder rec;
  ProbeScheduler sched(
      {.workers = 2, .spread_start = false},
      [&](const std::string& id, const ProbeTarget& t, const ProbeResult& r) { rec(id, t, r); });
  ProbeTarget slow = Target(full.port(), 1000);
  slow.spec.set_timeout_ms(300);
  REQUIRE(sched.Add("x", slow).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the slow probe is running
  REQUIRE(sched.Remove("x").ok());
  REQUIRE(sched.Add("x", Target(up.port(), 100)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(550));
  std::lock_guard<std::mutex> lock(rec.mu);
  auto& rs = rec.results["x"];
  CHECK(rs.size() >= 4);
  for (const auto& r : rs) CHECK(r.ok);  // never the removed target's timeout
}

}  // namespace
}  // namespace ballast::probes
