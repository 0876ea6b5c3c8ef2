// lbctl's human output, on fixed inputs and a fixed clock.
#include <catch2/catch.hpp>

#include "tools/lbctl/format.h"

namespace ballast::lbctl {
namespace {

TEST_CASE("FormatFlows: a row per flow like ipvsadm -Lnc, then the counts", "[lbctl][format]") {
  v1::VipKey vip;
  vip.set_address("198.18.0.10");
  vip.set_port(80);
  vip.set_protocol(v1::TCP);
  v1::ListFlowsResponse r;
  v1::Flow* f = r.add_flows();
  f->set_client("198.18.1.5");
  f->set_client_port(40001);
  f->set_vip_port(80);
  f->set_backend("198.18.11.2");
  f->set_state("established");
  f->set_table("flows");
  f->set_idle_ms(1500);
  f->set_expires_in_ms(298500);
  f = r.add_flows();
  f->set_client("2001:db8::5");
  f->set_client_port(40002);
  f->set_vip_port(80);
  f->set_backend("id 7");
  f->set_state("closing");
  f->set_table("adopted_flows");
  r.set_matched(5);
  r.set_scanned(12);
  const std::string out = FormatFlows(vip, r);
  INFO(out);
  CHECK_THAT(out, Catch::StartsWith("PRO  STATE"));
  CHECK_THAT(out, Catch::Contains("tcp  established   298.5s  1.5s  198.18.1.5:40001"));
  CHECK_THAT(out, Catch::Contains("198.18.11.2"));
  CHECK_THAT(out, Catch::Contains("[2001:db8::5]:40002"));
  CHECK_THAT(out, Catch::Contains("id 7"));
  CHECK_THAT(out, Catch::EndsWith(
                      "2 of 5 live flows of 198.18.0.10:80/tcp shown (12 table entries read)\n"));
  r.clear_flows();
  r.set_partial(true);
  CHECK(FormatFlows(vip, r) ==
        "0 of 5 live flows of 198.18.0.10:80/tcp shown (12 table entries read; the read stopped "
        "at the scan limit, counts are lower bounds)\n");
}

TEST_CASE("FormatVips: a row per VIP, its mode as --mode takes it", "[lbctl][format]") {
  v1::ListVipsResponse r;
  v1::Vip* a = r.add_vips();
  a->mutable_key()->set_address("198.18.0.10");
  a->mutable_key()->set_port(80);
  a->mutable_key()->set_protocol(v1::TCP);
  a->set_name("web");
  a->set_table_size(251);
  a->set_mode(v1::GUE);
  a->add_backends()->set_address("198.18.1.1");
  a->mutable_backends(0)->set_weight(50);
  v1::Vip* b = r.add_vips();
  b->mutable_key()->set_address("2001:db8::10");
  b->mutable_key()->set_port(443);
  b->mutable_key()->set_protocol(v1::TCP);
  CHECK(FormatVips(r) ==
        "VIP                     NAME    TABLE  MODE   BACKENDS\n"
        "198.18.0.10:80/tcp      web       251  gue    198.18.1.1,weight=50\n"
        "[2001:db8::10]:443/tcp  -     default  encap  -\n");
  CHECK(FormatVips(v1::ListVipsResponse()) == "no VIPs configured\n");
}

TEST_CASE("Compact keeps small counters exact", "[lbctl][format]") {
  CHECK(Compact(0) == "0");
  CHECK(Compact(99999) == "99999");
  CHECK(Compact(123456) == "123.5k");
  CHECK(Compact(7300000) == "7.3M");
  CHECK(Compact(100000000) == "100.0M");
  CHECK(Compact(250000000000ULL) == "250.0G");
  CHECK(Compact(3000000000000ULL) == "3.0T");
}

TEST_CASE("FormatStatus: header, VIP line, one row per backend", "[lbctl][format]") {
  const absl::Time now = absl::FromUnixMillis(1700000100000);
  v1::StatusResponse st;
  st.set_agent_version("0.1.0");
  st.set_interface("eth0");
  st.set_attach_mode("native");
  st.set_config_generation(7);
  st.set_last_map_update_unix_ms(1700000095000);
  (*st.mutable_verdicts())["tx"] = 1234;
  (*st.mutable_verdicts())["pass_not_vip"] = 0;
  v1::VipStatus* vip = st.add_vips();
  vip->mutable_key()->set_address("198.18.0.10");
  vip->mutable_key()->set_port(80);
  vip->mutable_key()->set_protocol(v1::TCP);
  vip->set_name("web");
  vip->set_vip_id(1);
  vip->set_table_size(251);
  vip->set_packets(150000);
  v1::BackendStatus* a = vip->add_backends();
  a->set_address("198.18.1.1");
  a->set_state("active");
  a->set_nominal_weight(100);
  a->set_effective_weight(100);
  a->set_table_slots(167);
  a->set_flows(12);
  a->set_score(100);
  a->mutable_counters()->set_new_flows(40);
  a->mutable_counters()->set_packets(900);
  a->mutable_counters()->set_syn_retransmits(2);
  a->mutable_counters()->set_client_rsts(1);
  a->mutable_counters()->set_refused_syns(7);
  a->mutable_counters()->set_handshake_ns_sum(3'000'000);
  a->mutable_counters()->set_handshake_count(2);
  a->set_health("ramping");
  a->set_ramp_percent(20);
  a->add_conditions("low_traffic");
  a->add_conditions("cooldown");
  v1::BackendStatus* b = vip->add_backends();
  b->set_address("198.18.1.2");
  b->set_state("draining");
  b->set_drain_deadline_unix_ms(1700000190000);
  b->set_nominal_weight(100);
  b->set_table_slots(84);
  b->set_flows(3);
  b->set_score(100);

  const std::string want =
      "lbagent 0.1.0  interface eth0 (native)  config generation 7  last map update 5s ago\n"
      "verdicts tx=1234\n"
      "\n"
      "VIP 198.18.0.10:80/tcp \"web\"  id 1  table 251  pkts 150.0k  bytes 0  dropped 0  "
      "backends 2\n"
      "  BACKEND     STATE            NOMINAL  EFFECTIVE  SLOTS  FLOWS  NEW  PKTS  SYN-RTX  RSTS"
      "  REFUSED  HS-MS  SCORE  HEALTH       WHY\n"
      "  198.18.1.1  active               100        100  66.5%     12   40   900        2     1"
      "        7   1.50    100  ramping 20%  low_traffic,cooldown\n"
      "  198.18.1.2  draining(1m30s)      100          0  33.5%      3    0     0        0     0"
      "        0      -    100  -            -\n";
  CHECK(FormatStatus(st, now) == want);

  // The fleet guard's freeze is said under the VIP line.
  vip->set_frozen(true);
  vip->set_frozen_since_unix_ms(1700000095000);
  CHECK_THAT(FormatStatus(st, now),
             Catch::Contains("\n  FROZEN by the fleet guard (fleet-wide degradation): weights held "
                             "since 5s ago\n"));

  // A GUE VIP says so on its line; ENCAP (the default) says nothing.
  vip->set_mode(v1::GUE);
  CHECK_THAT(FormatStatus(st, now),
             Catch::Contains("VIP 198.18.0.10:80/tcp \"web\"  id 1  table 251  encap gue  pkts "
                             "150.0k  bytes 0"));
  vip->set_mode(v1::ENCAP);
  CHECK_THAT(FormatStatus(st, now), Catch::Contains("  table 251  pkts 150.0k"));

  // Established second chance: its counters on one line, the history per VIP.
  vip->set_history_versions(3);
  v1::EstablishedSecondChance* e = st.mutable_established_second_chance();
  e->set_window_ms(2000);
  e->set_adopted(120);
  e->set_adopted_changed(40);
  e->set_moved(38);
  e->set_returned(2);
  CHECK_THAT(FormatStatus(st, now),
             Catch::Contains("established second chance: window 2000 ms, adopted 120 (40 on "
                             "changed slots), moved to a previous backend 38, not saved 2 (no "
                             "backend in the history held it)\n"));
  CHECK_THAT(FormatStatus(st, now), Catch::Contains("  table 251  history 3  pkts 150.0k"));
  e->set_stranger(5);
  e->set_skipped_unusable(1);
  CHECK_THAT(FormatStatus(st, now),
             Catch::Contains("held it), unusable skipped 1, bounces dropped 5\n"));
  e->set_window_ms(0);
  CHECK_THAT(FormatStatus(st, now),
             Catch::Contains("established second chance: OFF (global.no_established_second_chance)"
                             ", adopted 120\n"));
  st.clear_established_second_chance();
  vip->set_history_versions(0);

  // Where bounces arrive: the devices the agent attached, and each backend
  // whose bounces are lost (a condition in WHY, the reason under the table).
  st.add_bounce_interfaces("eth1");
  st.add_bounce_interfaces("eth2");
  b->mutable_bounce_path()->set_device("eth3");
  b->mutable_bounce_path()->set_problem(
      "bounces_unreachable: device eth3 runs no lb program (global.no_auto_bounce_interfaces is "
      "set)");
  a->mutable_bounce_path()->set_device("eth1");
  a->mutable_bounce_path()->set_ok(true);
  a->mutable_bounce_path()->set_via("automatic");
  const std::string bounces = FormatStatus(st, now);
  CHECK_THAT(bounces, Catch::Contains("bounce interfaces (lb program attached where backends' "
                                      "bounces arrive): eth1 eth2\n"));
  CHECK_THAT(bounces, Catch::Contains("ramping 20%  low_traffic,cooldown\n"));
  CHECK_THAT(bounces, Catch::Contains("100  -            bounces_unreachable\n"
                                      "  BOUNCES LOST: 198.18.1.2: bounces_unreachable: device "
                                      "eth3 runs no lb program (global.no_auto_bounce_interfaces "
                                      "is set)\n"));
  st.clear_bounce_interfaces();
  a->clear_bounce_path();
  b->clear_bounce_path();

  // Flow counts from a read that stopped at the agent's limit are flagged.
  st.set_flows_read(1048576);
  st.set_flows_partial(true);
  CHECK_THAT(FormatStatus(st, now),
             Catch::Contains("verdicts tx=1234\nFLOWS: lower bounds, counted from the first 1.0M "
                             "entries of the connection table"));
}

TEST_CASE("FormatDigest: actions by kind, backends acted on most, alerts", "[lbctl][format]") {
  const absl::Time now = absl::FromUnixMillis(1700000100000);
  v1::QueryAuditResponse resp;
  const auto add = [&](const char* actor, const char* action, const char* backend,
                       const char* result) {
    v1::AuditRecord* r = resp.add_records();
    r->set_unix_ms(1700000000000);
    r->set_actor(actor);
    r->set_action(action);
    r->set_vip("198.18.0.10:80/tcp");
    r->set_backend(backend);
    r->set_result(result);
  };
  add("automation", "demote", "198.18.1.1", "ok");
  add("automation", "promote", "198.18.1.1", "ok");
  add("automation", "demote", "198.18.1.1", "ok");
  add("automation", "pin", "198.18.1.1", "ok");
  add("automation", "demote", "198.18.1.2", "ok");
  add("automation", "freeze", "", "ok");
  add("operator:alice", "release", "198.18.1.1", "ok");
  add("operator:alice", "set_weight", "198.18.1.2", "INVALID_ARGUMENT: weight 3000");
  const std::string out = FormatDigest(resp, absl::Hours(24 * 7), now);
  CHECK_THAT(out, Catch::Contains("8 audit records"));
  CHECK_THAT(out, Catch::Contains("\n  demote       3\n"));
  CHECK_THAT(out, Catch::Contains("\n  release         1\n"));
  // Backends acted on most, most first.
  CHECK(out.find("198.18.0.10:80/tcp 198.18.1.1        4") <
        out.find("198.18.0.10:80/tcp 198.18.1.2        1"));
  CHECK_THAT(out, Catch::Contains("alerts: 1 pins, 1 freezes (fleet-wide degradation), 0 "
                                  "disagreement alerts"));
  CHECK_THAT(out, Catch::Contains("rejected or failed requests by action"));
}

TEST_CASE("FormatStatus without VIPs says how to add one", "[lbctl][format]") {
  v1::StatusResponse st;
  const std::string out = FormatStatus(st, absl::FromUnixMillis(0));
  CHECK_THAT(out, Catch::Contains("not attached to an interface"));
  CHECK_THAT(out, Catch::Contains("last map update never"));
  CHECK_THAT(out, Catch::Contains("no VIPs configured (lbctl vip add"));
}

TEST_CASE("FormatApply summarizes dry runs and applies", "[lbctl][format]") {
  v1::ApplyConfigResponse r;
  CHECK(FormatApply(r, true) == "no changes\n");
  r.add_diff("+ vip 198.18.0.20:443/tcp");
  r.add_diff("~ vip 198.18.0.10:80/tcp backend 198.18.1.1 weight 100 -> 40");
  r.set_generation(9);
  CHECK(FormatApply(r, true) ==
        "+ vip 198.18.0.20:443/tcp\n~ vip 198.18.0.10:80/tcp backend 198.18.1.1 weight 100 -> 40\n"
        "dry run: 2 changes, nothing applied\n");
  CHECK_THAT(FormatApply(r, false), Catch::EndsWith("applied 2 changes, generation 9\n"));
}

TEST_CASE("Table aligns text left and numbers right", "[lbctl][format]") {
  Table t({"NAME", "N"});
  t.SetNumeric({false, true});
  t.AddRow({"a", "1"});
  t.AddRow({"longer", "100"});
  CHECK(t.Render() == "NAME      N\na         1\nlonger  100\n");
}

}  // namespace
}  // namespace ballast::lbctl
