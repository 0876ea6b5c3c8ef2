// What a SIGHUP reload does with each part of the config file (PlanReload).
#include "tools/lbagent/reload.h"

#include <catch2/catch.hpp>

namespace ballast::lbagent {
namespace {

v1::AgentConfig Base() {
  v1::AgentConfig c;
  c.mutable_admin()->set_socket_path("/run/ballast/lbagent.sock");
  c.set_metrics_listen("127.0.0.1:9580");
  c.set_flow_capacity(65536);
  c.mutable_initial()->mutable_global()->set_source_v4("198.18.0.1");
  return c;
}

TEST_CASE("An unchanged file changes nothing; an admin change needs no restart", "[reload]") {
  const v1::AgentConfig a = Base();
  ReloadPlan p = PlanReload(a, a, false);
  CHECK_FALSE(p.apply_initial);
  CHECK_FALSE(p.initial_ignored);
  CHECK(p.need_restart.empty());
  v1::AgentConfig b = a;
  b.mutable_admin()->set_socket_group("ballast");
  p = PlanReload(a, b, false);
  CHECK_FALSE(p.apply_initial);
  CHECK(p.need_restart.empty());
}

TEST_CASE("A changed initial is applied, except in a cluster", "[reload]") {
  const v1::AgentConfig a = Base();
  v1::AgentConfig b = a;
  b.mutable_initial()->mutable_global()->set_drain_timeout_s(60);
  ReloadPlan p = PlanReload(a, b, false);
  CHECK(p.apply_initial);
  CHECK(p.need_restart.empty());
  p = PlanReload(a, b, true);
  CHECK_FALSE(p.apply_initial);
  CHECK(p.initial_ignored);
}

TEST_CASE("Other changed fields are named as needing a restart, in file order", "[reload]") {
  const v1::AgentConfig a = Base();
  v1::AgentConfig b = a;
  b.set_flow_capacity(131072);
  b.set_metrics_listen("127.0.0.1:9581");
  b.mutable_initial()->mutable_global()->set_drain_timeout_s(60);
  const ReloadPlan p = PlanReload(a, b, false);
  CHECK(p.apply_initial);
  CHECK(p.need_restart == std::vector<std::string>{"metrics_listen", "flow_capacity"});
}

}  // namespace
}  // namespace ballast::lbagent
