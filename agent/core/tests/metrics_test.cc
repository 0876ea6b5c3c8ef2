// Prometheus rendering: content, escaping, and promtool's verdict.
#include "agent/core/metrics.h"

#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "agent/core/tests/test_util.h"

namespace ballast::core {
namespace {

v1::StatusResponse SampleStatus() {
  v1::StatusResponse s;
  s.set_agent_version("0.1.0");
  s.set_interface("eth0");
  s.set_attach_mode("native");
  s.set_config_generation(7);
  (*s.mutable_verdicts())["tx"] = 10;
  (*s.mutable_verdicts())["pass_not_vip"] = 3;
  v1::VipStatus* v = s.add_vips();
  *v->mutable_key() = testing::Key("2001:db8:10::10", 443);
  v->set_vip_id(2);
  v->set_table_size(251);
  v->set_packets(100);
  v->set_history_versions(4);
  s.mutable_established_second_chance()->set_window_ms(2000);
  s.mutable_established_second_chance()->set_adopted_changed(9);
  s.mutable_established_second_chance()->set_moved(7);
  v1::BackendStatus* b = v->add_backends();
  b->set_address("2001:db8:1::1");
  b->set_nominal_weight(5);
  b->set_effective_weight(0);
  b->set_state("draining");
  b->set_drain_deadline_unix_ms(1764439452345);
  b->set_flows(4);
  b->mutable_bounce_path()->set_device("eth2");
  b->mutable_bounce_path()->set_problem("bounces_unreachable: device eth2 runs no lb program");
  s.add_bounce_interfaces("eth1");
  b->mutable_counters()->set_handshake_ns_sum(1500000000);
  b->mutable_counters()->set_handshake_count(3);
  // One sample below 65.5 us, two in [131 us, 262 us): the data plane's
  // buckets, not cumulative.
  for (int i = 0; i < 16; ++i) {
    b->mutable_counters()->add_handshake_buckets(i == 0 ? 1 : i == 2 ? 2 : 0);
    b->mutable_counters()->add_first_response_buckets(i == 15 ? 1 : 0);
  }
  return s;
}

TEST_CASE("Metrics carry per-VIP and per-backend series with escaped labels") {
  EngineHealth h;
  h.generation = 7;
  h.last_map_update_unix_ms = 1764439452000;
  h.audit_append_failures = 2;
  h.audit_records_dropped = 3;
  ProcessStats p;
  p.resident_bytes = 1234;
  const v1::StatusResponse s = SampleStatus();
  const std::string text = RenderMetrics(&s, h, &p);
  const std::string lb = "vip=\"[2001:db8:10::10]:443/tcp\",backend=\"2001:db8:1::1\"";
  REQUIRE(text.find("ballast_up 1\n") != std::string::npos);
  REQUIRE(text.find("ballast_config_generation 7\n") != std::string::npos);
  REQUIRE(text.find("ballast_last_map_update_timestamp_seconds 1764439452\n") != std::string::npos);
  REQUIRE(text.find("ballast_audit_append_failures_total 2\n") != std::string::npos);
  REQUIRE(text.find("ballast_audit_records_dropped_total 3\n") != std::string::npos);
  REQUIRE(text.find("ballast_verdict_packets_total{verdict=\"pass_not_vip\"} 3\n") !=
          std::string::npos);
  REQUIRE(text.find("ballast_vip_packets_total{vip=\"[2001:db8:10::10]:443/tcp\"} 100\n") !=
          std::string::npos);
  REQUIRE(text.find("ballast_backend_nominal_weight{" + lb + "} 5\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_effective_weight{" + lb + "} 0\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_state{" + lb + ",state=\"draining\"} 1\n") !=
          std::string::npos);
  REQUIRE(text.find("ballast_backend_state{" + lb + ",state=\"active\"} 0\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_flows{" + lb + "} 4\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_handshake_seconds_sum{" + lb + "} 1.5\n") !=
          std::string::npos);
  REQUIRE(text.find("ballast_backend_handshake_seconds_count{" + lb + "} 3\n") !=
          std::string::npos);
  // Histograms: cumulative buckets with le in seconds, +Inf equal to _count.
  REQUIRE(text.find("# TYPE ballast_backend_handshake_seconds histogram\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_handshake_seconds_bucket{" + lb + ",le=\"6.5536e-05\"} 1\n") !=
          std::string::npos);
  REQUIRE(text.find("ballast_backend_handshake_seconds_bucket{" + lb +
                    ",le=\"0.000131072\"} 1\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_handshake_seconds_bucket{" + lb +
                    ",le=\"0.000262144\"} 3\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_handshake_seconds_bucket{" + lb +
                    ",le=\"0.536870912\"} 3\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_handshake_seconds_bucket{" + lb + ",le=\"+Inf\"} 3\n") !=
          std::string::npos);
  // Fifteen bounds, 2^16 ns .. 2^30 ns; the sixteenth bucket is +Inf.
  REQUIRE(text.find("ballast_backend_handshake_seconds_bucket{" + lb +
                    ",le=\"1.073741824\"} 3\n") != std::string::npos);
  REQUIRE(text.find("le=\"2.147483648\"") == std::string::npos);
  // A sample past the last bound is only in +Inf.
  REQUIRE(text.find("ballast_backend_first_response_seconds_bucket{" + lb +
                    ",le=\"1.073741824\"} 0\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_first_response_seconds_bucket{" + lb + ",le=\"+Inf\"} 1\n") !=
          std::string::npos);
  REQUIRE(text.find("ballast_backend_first_response_seconds_count{" + lb + "} 1\n") !=
          std::string::npos);
  REQUIRE(text.find("process_resident_memory_bytes 1234\n") != std::string::npos);
  // Established second chance: one counter family by event, the window, and
  // the history kept per VIP.
  REQUIRE(text.find("ballast_established_second_chance_total{event=\"moved\"} 7\n") !=
          std::string::npos);
  REQUIRE(text.find("ballast_established_second_chance_total{event=\"adopted_changed\"} 9\n") !=
          std::string::npos);
  REQUIRE(text.find("ballast_established_second_chance_window_seconds 2\n") != std::string::npos);
  REQUIRE(text.find("ballast_vip_table_history_versions{vip=\"[2001:db8:10::10]:443/tcp\"} 4\n") !=
          std::string::npos);
  // Where second-chance bounces arrive: per backend, and the devices the
  // agent attached for them.
  REQUIRE(text.find("ballast_backend_bounce_path_ok{" + lb + "} 0\n") != std::string::npos);
  REQUIRE(text.find("ballast_bounce_interface{device=\"eth1\"} 1\n") != std::string::npos);
  REQUIRE(EscapeLabelValue("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
}

// Whether `text` has the sample line `line` (name{labels} value).
bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST_CASE("State sets: a 0/1 series per state; the ramp is a 0..1 ratio; no duplicated families") {
  v1::StatusResponse s = SampleStatus();
  v1::VipStatus* v = s.mutable_vips(0);
  v1::BackendStatus* down = v->add_backends();
  down->set_address("2001:db8:1::2");
  down->set_state("active");
  down->set_health("down");
  down->set_ramp_percent(100);
  down->set_health_since_unix_ms(1764439452250);
  down->set_health_transitions(3);
  down->set_health_down_ms(61'500);
  down->set_probe_failures(17);
  v1::BackendStatus* ramping = v->add_backends();
  ramping->set_address("2001:db8:1::3");
  ramping->set_state("active");
  ramping->set_health("ramping");
  ramping->set_ramp_percent(25);
  ProcessStats p;
  p.start_time_seconds = 1764439000;
  const std::string text = RenderMetrics(&s, EngineHealth{}, &p);
  const std::string vip = "vip=\"[2001:db8:10::10]:443/tcp\"";
  const std::string b1 = vip + ",backend=\"2001:db8:1::1\"";
  const std::string b2 = vip + ",backend=\"2001:db8:1::2\"";
  const std::string b3 = vip + ",backend=\"2001:db8:1::3\"";
  // Every admin state of every backend, 1 for the current one.
  for (const char* st : {"active", "draining", "evicted", "pinned"}) {
    const std::string want = std::string(st) == "draining" ? "1" : "0";
    CHECK(Has(text, "ballast_backend_state{" + b1 + ",state=\"" + st + "\"} " + want));
    CHECK(Has(text, "ballast_backend_state{" + b2 + ",state=\"" + st + "\"} " +
                        (std::string(st) == "active" ? "1" : "0")));
  }
  // Every health state while health checking is on; none for a backend without it.
  for (const char* st : {"healthy", "degraded", "ramping", "down", "pinned", "unchecked"}) {
    CHECK(Has(text, "ballast_backend_health{" + b2 + ",state=\"" + st + "\"} " +
                        (std::string(st) == "down" ? "1" : "0")));
    CHECK(Has(text, "ballast_backend_health{" + b3 + ",state=\"" + st + "\"} " +
                        (std::string(st) == "ramping" ? "1" : "0")));
  }
  CHECK(text.find("ballast_backend_health{" + b1) == std::string::npos);
  // A ratio, 1 when not ramping (and with health checking off).
  CHECK(Has(text, "ballast_backend_ramp_ratio{" + b1 + "} 1"));
  CHECK(Has(text, "ballast_backend_ramp_ratio{" + b2 + "} 1"));
  CHECK(Has(text, "ballast_backend_ramp_ratio{" + b3 + "} 0.25"));
  CHECK(text.find("ramp_percent") == std::string::npos);
  // Health checking's per-backend record, for the backends it evaluated.
  CHECK(Has(text, "ballast_backend_probe_failures_total{" + b2 + "} 17"));
  CHECK(Has(text, "ballast_backend_health_transitions_total{" + b2 + "} 3"));
  CHECK(
      Has(text, "ballast_backend_health_last_change_timestamp_seconds{" + b2 + "} 1764439452.25"));
  CHECK(Has(text, "ballast_backend_health_down_seconds_total{" + b2 + "} 61.5"));
  CHECK(text.find("# TYPE ballast_backend_probe_failures_total counter\n") != std::string::npos);
  CHECK(text.find("# TYPE ballast_backend_health_down_seconds_total counter\n") !=
        std::string::npos);
  CHECK(text.find("# TYPE ballast_backend_health_last_change_timestamp_seconds gauge\n") !=
        std::string::npos);
  CHECK(text.find("ballast_backend_probe_failures_total{" + b1) ==
        std::string::npos);  // health off
  CHECK(text.find("ballast_backend_probe_failures_total{" + b3) ==
        std::string::npos);  // not yet evaluated
  // The start time is process_start_time_seconds, once.
  CHECK(Has(text, "process_start_time_seconds 1764439000"));
  CHECK(text.find("ballast_agent_start_time_seconds") == std::string::npos);
}

TEST_CASE("Streamed rendering gives the same text in line-aligned pieces") {
  v1::StatusResponse s = SampleStatus();
  // Enough backends to need several pieces.
  for (int i = 0; i < 3000; ++i) {
    v1::BackendStatus* b = s.mutable_vips(0)->add_backends();
    b->set_address("2001:db8:2::" + std::to_string(i + 1));
    b->set_state("active");
  }
  const std::string whole = RenderMetrics(&s, EngineHealth{}, nullptr);
  std::string joined;
  int pieces = 0;
  size_t largest = 0;
  RenderMetrics(&s, EngineHealth{}, nullptr, [&](absl::string_view p) {
    REQUIRE(!p.empty());
    REQUIRE(p.back() == '\n');
    joined.append(p.data(), p.size());
    ++pieces;
    largest = std::max(largest, p.size());
  });
  REQUIRE(joined == whole);
  REQUIRE(pieces > 3);
  // Pieces of about 64 KiB, even inside a family (a histogram family of
  // these 3,000 backends is megabytes): the scrape never holds one whole.
  CHECK(whole.size() > 2'000'000);
  CHECK(largest < 64 * 1024 + 1024);
}

TEST_CASE("Without a status only agent and process families are written, with up 0") {
  const std::string text = RenderMetrics(nullptr, EngineHealth{}, nullptr);
  REQUIRE(text.find("ballast_up 0\n") != std::string::npos);
  REQUIRE(text.find("ballast_backend_") == std::string::npos);
}

TEST_CASE("promtool check metrics accepts the output, standalone and in cluster mode") {
  testing::TempDir dir;
  v1::StatusResponse s = SampleStatus();
  SECTION("standalone") {}
  SECTION("cluster, with an active/standby VIP") {
    v1::Coordination* c = s.mutable_coordination();
    c->set_mode("cluster");
    c->set_node("r1");
    c->set_up(true);
    c->set_live_nodes(2);
    v1::VipOwnerStatus* o = c->add_owners();
    o->set_vip("198.18.0.10:80/tcp");
    o->set_owner(true);
    o->set_fenced(12);
  }
  // A health-checked backend: the state sets and health families are checked too.
  v1::BackendStatus* checked = s.mutable_vips(0)->add_backends();
  checked->set_address("2001:db8:1::9");
  checked->set_state("active");
  checked->set_health("down");
  checked->set_health_since_unix_ms(1764439452250);
  checked->set_health_transitions(1);
  checked->set_health_down_ms(1500);
  checked->set_probe_failures(4);
  auto proc = ReadProcessStats();
  REQUIRE(proc.ok());
  REQUIRE(proc->resident_bytes > 0);
  REQUIRE(proc->start_time_seconds > 1.6e9);
  const std::string text = RenderMetrics(&s, EngineHealth{}, &*proc);
  if (s.coordination().mode() == "cluster") {
    REQUIRE(text.find("ballast_vip_fenced_packets_total{vip=\"198.18.0.10:80/tcp\"} 12\n") !=
            std::string::npos);
    REQUIRE(text.find("ballast_coordination_up 1\n") != std::string::npos);
  }
  const std::string file = dir.File("metrics.txt");
  std::ofstream(file) << text;
  if (access("/usr/bin/promtool", X_OK) != 0) {
    FAIL("promtool (Debian package prometheus) is needed to check the metrics format");
  }
  const std::string cmd =
      "/usr/bin/promtool check metrics < " + file + " > " + dir.File("out.txt") + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream out(dir.File("out.txt"));
  const std::string msg((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  INFO("promtool said: " << msg);
  REQUIRE(WIFEXITED(rc));
  REQUIRE(WEXITSTATUS(rc) == 0);
  REQUIRE(msg.empty());
}

}  // namespace
}  // namespace ballast::core
