// The status page's timelines (timeline.h) and its HTML (status_page.h).
#include <catch2/catch.hpp>

#include <string>

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
