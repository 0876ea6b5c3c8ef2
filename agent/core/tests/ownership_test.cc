// RouterEngine's cluster operations over a real data plane: a VIP
// switched to ACTIVE_STANDBY at runtime is held stopped by the same
// programming pass (never forwarded unfenced), RecordDrill's validation,
// YieldVip without a cluster.
#include <catch2/catch.hpp>

#include <functional>
#include <optional>

#include "agent/core/clock.h"
#include "agent/core/names.h"
#include "agent/core/router_engine.h"
#include "agent/core/tests/test_util.h"

namespace ballast::core {
namespace {

using testing::Key;
using testing::SmallConfig;
using testing::TempDir;

const Actor kOp{"operator:test"};
const v1::VipKey kVip4 = Key("198.18.0.10", 80);

std::optional<uint64_t> Deadline(const RouterEngine& e) {
  auto o = e.GetVipOwner(kVip4);
  REQUIRE(o.ok());
  return o->deadline_ns;
}

TEST_CASE("SetVipOwnership: a VIP switched to ACTIVE_STANDBY is stopped by the same commit",
          "[ownership]") {
  TempDir dir;
  SystemClock clock;
  auto e = StartEngine(dir, &clock, SmallConfig(), /*vip_ownership=*/true);
  REQUIRE_FALSE(Deadline(*e).has_value());  // OWNERSHIP_NONE: forwarded, no fence
  const uint64_t gen = e->Health().generation;

  REQUIRE(e->SetVipOwnership(kVip4, v1::ACTIVE_STANDBY, kOp).ok());
  // When the call returns the data plane already holds it stopped: owned
  // mode, deadline in the past. Only the cluster's owner loop moves it on.
  REQUIRE(Deadline(*e).has_value());
  CHECK(*Deadline(*e) == 0);
  CHECK(e->Health().generation == gen + 1);
  CHECK(e->ListVips()[0].ownership() == v1::ACTIVE_STANDBY);

  // An owner's live deadline is the owner loop's: another commit keeps it.
  REQUIRE(e->SetVipOwnerDeadline(kVip4, 123456789).ok());
  REQUIRE(e->SetWeight(kVip4, "198.18.1.1", 5, kOp).ok());
  CHECK(*Deadline(*e) == 123456789);

  // The same ownership again changes nothing (no new generation).
  REQUIRE(e->SetVipOwnership(kVip4, v1::ACTIVE_STANDBY, kOp).ok());
  CHECK(e->Health().generation == gen + 2);

  // Back to every node: the state says so; the owner loop clears the fence.
  REQUIRE(e->SetVipOwnership(kVip4, v1::OWNERSHIP_NONE, kOp).ok());
  CHECK(e->ListVips()[0].ownership() == v1::OWNERSHIP_NONE);

  auto audit = e->QueryAudit(0, 0);
  REQUIRE(audit.ok());
  int switches = 0;
  for (const v1::AuditRecord& r : *audit) switches += r.action() == "set_ownership";
  CHECK(switches == 3);
}

TEST_CASE("SetVipOwnership: errors change nothing; standalone never fences", "[ownership]") {
  TempDir dir;
  SystemClock clock;
  auto e = StartEngine(dir, &clock, SmallConfig(), /*vip_ownership=*/false);
  const uint64_t gen = e->Health().generation;
  CHECK(e->SetVipOwnership(Key("198.18.0.99", 80), v1::ACTIVE_STANDBY, kOp).code() ==
        absl::StatusCode::kNotFound);
  CHECK(e->SetVipOwnership(kVip4, static_cast<v1::VipOwnership>(7), kOp).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(e->Health().generation == gen);
  // Standalone (vip_ownership off): the field is stored, every VIP forwarded.
  REQUIRE(e->SetVipOwnership(kVip4, v1::ACTIVE_STANDBY, kOp).ok());
  CHECK_FALSE(Deadline(*e).has_value());
}

v1::DrillResult Drill() {
  v1::DrillResult r;
  *r.mutable_vip() = kVip4;
  r.set_mode("fence");
  r.set_from_node("a");
  r.set_to_node("b");
  r.set_started_unix_ms(1796000000000);
  r.set_failover_ms(420);
  r.set_stable_ms(0);
  r.set_stable_window_ms(2000);
  r.set_pass(true);
  return r;
}

TEST_CASE("RecordDrill: validated, then audited as drill with the numbers", "[ownership]") {
  TempDir dir;
  SystemClock clock;
  auto e = StartEngine(dir, &clock, SmallConfig(), /*vip_ownership=*/true);
  const auto bad = [&](const std::function<void(v1::DrillResult&)>& edit) {
    v1::DrillResult r = Drill();
    edit(r);
    return e->RecordDrill(r, kOp).code();
  };
  using absl::StatusCode;
  CHECK(bad([](v1::DrillResult& r) { r.set_mode("kill"); }) == StatusCode::kInvalidArgument);
  CHECK(bad([](v1::DrillResult& r) { r.set_from_node(""); }) == StatusCode::kInvalidArgument);
  CHECK(bad([](v1::DrillResult& r) { r.set_to_node("b c"); }) == StatusCode::kInvalidArgument);
  CHECK(bad([](v1::DrillResult& r) { r.set_failover_ms(-2); }) == StatusCode::kInvalidArgument);
  CHECK(bad([](v1::DrillResult& r) { r.set_stable_ms(6000); }) ==
        StatusCode::kInvalidArgument);  // pass does not follow
  CHECK(bad([](v1::DrillResult& r) { r.set_flaps(1); }) == StatusCode::kInvalidArgument);
  CHECK(bad([](v1::DrillResult& r) { r.add_notes(std::string(600, 'x')); }) ==
        StatusCode::kInvalidArgument);
  CHECK(bad([](v1::DrillResult& r) { *r.mutable_vip() = Key("198.18.0.99", 80); }) ==
        StatusCode::kNotFound);
  auto before = e->QueryAudit(0, 0);
  REQUIRE(before.ok());

  REQUIRE(e->RecordDrill(Drill(), kOp).ok());
  v1::DrillResult failed = Drill();
  failed.set_flaps(2);
  failed.set_pass(false);
  REQUIRE(e->RecordDrill(failed, kOp).ok());  // a FAIL is recorded too
  auto audit = e->QueryAudit(0, 0);
  REQUIRE(audit.ok());
  REQUIRE(audit->size() == before->size() + 2);
  const v1::AuditRecord& r = (*audit)[before->size()];
  CHECK(r.action() == "drill");
  CHECK(r.actor() == "operator:test");
  CHECK(r.vip() == "198.18.0.10:80/tcp");
  CHECK(r.inputs_json().find("\"stable_ms\":\"0\"") != std::string::npos);
  CHECK(r.inputs_json().find("\"flaps\":0") != std::string::npos);
  CHECK(r.inputs_json().find("\"differences\":0") != std::string::npos);
}

TEST_CASE("YieldVip: refused without a cluster", "[ownership]") {
  TempDir dir;
  SystemClock clock;
  auto e = StartEngine(dir, &clock, SmallConfig(), /*vip_ownership=*/false);
  v1::YieldVipRequest req;
  *req.mutable_vip() = kVip4;
  auto r = e->YieldVip(req, kOp);
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(r.status().message().find("standalone") != absl::string_view::npos);
}

}  // namespace
}  // namespace ballast::core
