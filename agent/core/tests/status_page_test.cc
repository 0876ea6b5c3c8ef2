// The status page's timelines (timeline.h) and its HTML (status_page.h).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agent/base/html.h"
#include "agent/core/status_page.h"
#include "agent/core/timeline.h"

namespace ballast::core {
namespace {

const TimelineKey kKey{"198.18.0.10:80/tcp", "198.18.1.1"};

TEST_CASE("Timeline keeps runs as their ends, one value per step, and the horizon") {
  Timeline t(/*horizon_ms=*/60'000, /*resolution_ms=*/1'000);
  // A steady backend evaluated every 200 ms for 10 s: two points.
  for (int64_t ms = 0; ms <= 10'000; ms += 200) t.Record(kKey, {ms, 100, 100});
  auto s = t.Snapshot(10'000);
  REQUIRE(s[kKey].size() == 2);
  CHECK(s[kKey][0] == TimelinePoint{0, 100, 100});
  CHECK(s[kKey][1] == TimelinePoint{10'000, 100, 100});
  // A falling weight, one change per evaluation: one point per second (the
  // latest value of each), after the run's end.
  for (int64_t ms = 10'200; ms <= 12'000; ms += 200) {
    t.Record(kKey, {ms, 60, static_cast<uint32_t>(100 - (ms - 10'000) / 100)});
  }
  s = t.Snapshot(12'000);
  REQUIRE(s[kKey].size() == 5);
  CHECK(s[kKey][2] == TimelinePoint{10'800, 60, 92});
  CHECK(s[kKey][3] == TimelinePoint{11'800, 60, 82});
  CHECK(s[kKey][4] == TimelinePoint{12'000, 60, 80});
  // A clock that steps back changes nothing.
  t.Record(kKey, {5'000, 0, 0});
  CHECK(t.Snapshot(12'000)[kKey].size() == 5);
  // Past the horizon only the newest point before it stays.
  t.Record(kKey, {100'000, 60, 80});
  s = t.Snapshot(100'000);
  REQUIRE(s[kKey].size() == 2);
  CHECK(s[kKey][0].unix_ms == 12'000);
  CHECK(s[kKey][1].unix_ms == 100'000);
  // Never more than 2 * horizon / resolution + 2 points, however busy.
  for (int64_t ms = 100'100; ms < 400'000; ms += 100) {
    t.Record(kKey, {ms, static_cast<uint32_t>(ms / 100 % 101), 7});
  }
  CHECK(t.Snapshot(400'000)[kKey].size() <= 122);
  // Retain forgets the others.
  const TimelineKey other{"198.18.0.10:80/tcp", "198.18.1.2"};
  t.Record(other, {400'000, 1, 1});
  t.Retain({other});
  s = t.Snapshot(400'000);
  CHECK(s.count(kKey) == 0);
  CHECK(s.count(other) == 1);
}

TEST_CASE("NextHealthHistory: since, transitions, time held out; a step back changes nothing") {
  HealthHistory h = NextHealthHistory({}, "healthy", 1'000);
  CHECK(h == HealthHistory{"healthy", 1'000, 1'000, 0, 0});
  h = NextHealthHistory(h, "healthy", 2'000);
  CHECK(h == HealthHistory{"healthy", 1'000, 2'000, 0, 0});
  h = NextHealthHistory(h, "down", 3'000);  // down from here: the time before was healthy
  CHECK(h == HealthHistory{"down", 3'000, 3'000, 1, 0});
  h = NextHealthHistory(h, "down", 5'500);
  CHECK(h == HealthHistory{"down", 3'000, 5'500, 1, 2'500});
  h = NextHealthHistory(h, "pinned", 6'000);  // pinned holds it out too
  CHECK(h == HealthHistory{"pinned", 6'000, 6'000, 2, 3'000});
  h = NextHealthHistory(h, "ramping", 7'000);
  CHECK(h == HealthHistory{"ramping", 7'000, 7'000, 3, 4'000});
  h = NextHealthHistory(h, "ramping", 9'000);  // ramping is in service
  CHECK(h.down_ms == 4'000);
  CHECK(NextHealthHistory(h, "down", 8'000) == h);  // the clock stepped back
  CHECK(HealthHoldsOut("down"));
  CHECK(HealthHoldsOut("pinned"));
  CHECK(!HealthHoldsOut("degraded"));
  CHECK(!HealthHoldsOut(""));
}

v1::StatusResponse TwoBackends() {
  v1::StatusResponse st;
  st.set_agent_version("1.2.3");
  st.set_interface("eth<0>");
  st.set_attach_mode("native");
  v1::VipStatus* v = st.add_vips();
  v->mutable_key()->set_address("198.18.0.10");
  v->mutable_key()->set_port(80);
  v->mutable_key()->set_protocol(v1::TCP);
  v->set_name("web & \"api\"");
  v->set_table_size(251);
  for (const char* a : {"198.18.1.1", "198.18.1.2"}) {
    v1::BackendStatus* b = v->add_backends();
    b->set_address(a);
    b->set_state("active");
    b->set_nominal_weight(100);
    b->set_effective_weight(100);
    b->set_health("healthy");
    b->set_score(100);
  }
  v1::BackendStatus* slow = v->mutable_backends(0);
  slow->set_health("degraded");
  slow->set_score(62);
  slow->set_effective_weight(55);
  slow->add_conditions("slow_handshake <script>");
  return st;
}

TEST_CASE("The status page marks an impaired backend, draws its timelines and escapes text") {
  const v1::StatusResponse st = TwoBackends();
  StatusPageInput in;
  in.status = &st;
  in.now_unix_ms = 1'700'000'060'000;
  in.timelines[kKey] = {{1'700'000'000'000, 100, 100}, {1'700'000'050'000, 62, 55}};
  v1::AuditRecord r;
  r.set_unix_ms(1'700'000'050'000);
  r.set_actor("automation");
  r.set_action("health_weight");
  r.set_vip("198.18.0.10:80/tcp");
  r.set_backend("198.18.1.1");
  r.set_result("ok");
  in.recent.push_back(r);
  const std::string html = RenderStatusPage(in);
  CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>"));
  CHECK_THAT(html, Catch::Contains("<tr class=\"backend health-degraded impaired\" "
                                   "data-backend=\"198.18.1.1\" data-health=\"degraded\">"));
  CHECK_THAT(html, Catch::Contains("<tr class=\"backend health-healthy\" "
                                   "data-backend=\"198.18.1.2\""));
  CHECK_THAT(html, Catch::Contains("<polyline class=\"weight\" data-values=\"100,55\""));
  CHECK_THAT(html, Catch::Contains("<polyline class=\"score\" data-values=\"100,62\""));
  // The second backend has no points yet.
  CHECK_THAT(html, Catch::Contains("no evaluation yet"));
  CHECK_THAT(html, Catch::Contains("slow_handshake &lt;script&gt;"));
  CHECK_THAT(html, Catch::Contains("web &amp; &quot;api&quot;"));
  CHECK_THAT(html, Catch::Contains("eth&lt;0&gt;"));
  CHECK_THAT(html, !Catch::Contains("<script"));
  CHECK_THAT(html, Catch::Contains("data-action=\"health_weight\""));
  // No external assets: nothing is loaded from anywhere.
  CHECK_THAT(html, !Catch::Contains("src="));
  CHECK_THAT(html, !Catch::Contains("href="));
  // The operator may leave the actions (who did what) out of the page.
  in.hide_actions = true;
  const std::string hidden = RenderStatusPage(in);
  CHECK_THAT(hidden, !Catch::Contains("id=\"actions\""));
  CHECK_THAT(hidden, !Catch::Contains("health_weight"));
}

// Three backends with known timelines at kNow (2023-11-14 22:13:20 UTC), the
// page's horizon one hour; status_page_browser_test.py knows the same:
//   198.18.1.1 healthy, score 100, weight 100/100, first evaluated 78 s ago;
//   198.18.1.2 degraded since 30 min ago: score 100 -> 55, weight 100 -> 40;
//   198.18.1.3 down since 20 min ago (transitions 2): score and weight -> 0.
constexpr int64_t kNow = 1'700'000'000'000;
StatusPageInput KnownTimeline(v1::StatusResponse* st) {
  st->set_agent_version("1.2.3");
  v1::VipStatus* v = st->add_vips();
  v->mutable_key()->set_address("198.18.0.10");
  v->mutable_key()->set_port(80);
  v->mutable_key()->set_protocol(v1::TCP);
  v->set_table_size(251);
  struct Row {
    const char* address;
    const char* health;
    uint32_t score, weight;
    int64_t since_ago_ms;
    uint64_t transitions;
  };
  StatusPageInput in;
  in.status = st;
  in.now_unix_ms = kNow;
  for (const Row& r : {Row{"198.18.1.1", "healthy", 100, 100, 78'000, 0},
                       Row{"198.18.1.2", "degraded", 55, 40, 1'799'000, 1},
                       Row{"198.18.1.3", "down", 0, 0, 1'199'000, 2}}) {
    v1::BackendStatus* b = v->add_backends();
    b->set_address(r.address);
    b->set_state("active");
    b->set_nominal_weight(100);
    b->set_effective_weight(r.weight);
    b->set_health(r.health);
    b->set_score(r.score);
    b->set_ramp_percent(100);
    b->set_health_since_unix_ms(kNow - r.since_ago_ms);
    b->set_health_transitions(r.transitions);
  }
  const std::string vip = "198.18.0.10:80/tcp";
  in.timelines[{vip, "198.18.1.1"}] = {{kNow - 78'000, 100, 100}, {kNow - 1'000, 100, 100}};
  in.timelines[{vip, "198.18.1.2"}] = {{kNow - 3'605'000, 100, 100},
                                       {kNow - 1'800'000, 100, 100},
                                       {kNow - 1'799'000, 55, 40},
                                       {kNow - 2'000, 55, 40}};
  in.timelines[{vip, "198.18.1.3"}] = {{kNow - 2'400'000, 100, 100},
                                       {kNow - 1'200'000, 100, 100},
                                       {kNow - 1'199'000, 0, 0},
                                       {kNow - 1'000, 0, 0}};
  return in;
}

// The x of each point of `cls`'s polyline in the row of `address`.
std::vector<double> PolylineXs(const std::string& html, const std::string& address,
                               const std::string& cls) {
  const size_t row = html.find("data-backend=\"" + address + "\"");
  REQUIRE(row != std::string::npos);
  const size_t line = html.find("<polyline class=\"" + cls + "\"", row);
  REQUIRE(line != std::string::npos);
  const size_t at = html.find("points=\"", line) + 8;
  std::istringstream in(html.substr(at, html.find('"', at) - at));
  std::vector<double> xs;
  for (std::string pt; in >> pt;) xs.push_back(std::stod(pt.substr(0, pt.find(','))));
  return xs;
}

TEST_CASE("The chart spans its whole horizon, with a time axis and labels") {
  v1::StatusResponse st;
  const StatusPageInput in = KnownTimeline(&st);
  const std::string html = RenderStatusPage(in);
  // The x axis is the last hour, whatever the backend's age: 78 s of
  // samples fill the last 78/3600 of the plot (x 28..392), not all of it.
  CHECK_THAT(html, Catch::Contains("<th>last hour: "));
  CHECK_THAT(html,
             Catch::Contains("data-start-ms=\"1699996400000\" data-end-ms=\"1700000000000\""));
  const std::vector<double> young = PolylineXs(html, "198.18.1.1", "score");
  REQUIRE(young.size() == 3);
  CHECK(young[0] == Approx(28 + 364.0 * (3600 - 78) / 3600).margin(0.1));
  CHECK(young[2] == Approx(392).margin(0.1));
  CHECK_THAT(html, Catch::Contains("<rect class=\"nodata\" x=\"28.0\""));
  // A point older than the horizon is drawn at its edge; a change 30 min ago mid-plot.
  const std::vector<double> slow = PolylineXs(html, "198.18.1.2", "weight");
  REQUIRE(slow.size() == 5);
  CHECK(slow[0] == Approx(28).margin(0.1));
  CHECK(slow[1] == Approx(210).margin(0.1));
  // Ticks every 15 min, labelled, under every chart.
  for (const char* label : {">-60 min<", ">-45 min<", ">-30 min<", ">-15 min<", ">now<"}) {
    size_t n = 0;
    for (size_t at = html.find(label); at != std::string::npos; at = html.find(label, at + 1)) ++n;
    CHECK(n == 3);
  }
  CHECK_THAT(html, Catch::Contains("class=\"score-axis\""));
  CHECK_THAT(html, Catch::Contains("class=\"weight-axis\""));
  // The score is drawn after (over) the weight's area and line.
  const size_t row = html.find("data-backend=\"198.18.1.1\"");
  CHECK(html.find("<polygon class=\"weight-area\"", row) <
        html.find("<polyline class=\"weight\"", row));
  CHECK(html.find("<polyline class=\"weight\"", row) < html.find("<polyline class=\"score\"", row));
}

TEST_CASE("A backend health checking holds out reads down, since when") {
  v1::StatusResponse st;
  const StatusPageInput in = KnownTimeline(&st);
  const std::string html = RenderStatusPage(in);
  const size_t down = html.find("data-backend=\"198.18.1.3\"");
  REQUIRE(down != std::string::npos);
  CHECK(html.find("<td class=\"state\">down</td>", down) ==
        html.find("<td class=\"state\">", down));
  CHECK_THAT(html.substr(down, html.find("</tr>", down) - down),
             Catch::Contains("since 2023-11-14 21:53:21 UTC (19m59s)"));
  // Degraded: its state is still active (it takes traffic), and since when.
  const size_t slow = html.find("data-backend=\"198.18.1.2\"");
  CHECK(html.find("<td class=\"state\">active</td>", slow) ==
        html.find("<td class=\"state\">", slow));
  CHECK_THAT(html.substr(slow, html.find("</tr>", slow) - slow),
             Catch::Contains("since 2023-11-14 21:43:21 UTC (29m59s)"));
  // Healthy needs no "since"; unchanged since the agent's first check says so.
  const size_t ok = html.find("data-backend=\"198.18.1.1\"");
  CHECK_THAT(html.substr(ok, html.find("</tr>", ok) - ok), !Catch::Contains("since"));
  st.mutable_vips(0)->mutable_backends(2)->set_health_transitions(0);
  CHECK_THAT(
      RenderStatusPage(in),
      Catch::Contains("since before 2023-11-14 21:53:21 UTC (the agent's first check, 19m59s)"));
}

// Not a check: writes the known timeline's page to $STATUS_PAGE_HTML for
// status_page_browser_test.py (ctest status_page_browser), which loads it
// in headless Chromium.
TEST_CASE("Render the known timeline's page for the browser test", "[.render]") {
  const char* path = std::getenv("STATUS_PAGE_HTML");
  REQUIRE(path != nullptr);
  v1::StatusResponse st;
  const StatusPageInput in = KnownTimeline(&st);
  std::ofstream(path) << RenderStatusPage(in);
  std::ifstream back(path);
  REQUIRE(back.good());
}

TEST_CASE("The status page says why it has nothing to show") {
  StatusPageInput in;
  in.status_error = "the data plane <is> gone";
  in.now_unix_ms = 1'700'000'000'000;
  std::string html = RenderStatusPage(in);
  CHECK_THAT(html, Catch::Contains("reading the status failed: the data plane &lt;is&gt; gone"));
  CHECK_THAT(html, Catch::Contains("none recently"));
  v1::StatusResponse st = TwoBackends();
  for (auto& b : *st.mutable_vips(0)->mutable_backends()) b.clear_health();
  in.status = &st;
  html = RenderStatusPage(in);
  CHECK_THAT(html, Catch::Contains("health checking off"));
  CHECK(base::HtmlEscape("a'b") == "a&#39;b");
}

}  // namespace
}  // namespace ballast::core
