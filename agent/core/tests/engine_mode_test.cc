// A VIP's forwarding mode (Vip.mode, GUE or IP-in-IP) and the GUE port,
// from the config to the data plane's flags and settings: at start, on
// ApplyConfig, through the API, and when a restart finds the maps in the
// other mode. (Split from engine_test.cc.)
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/clock.h"
#include "agent/core/names.h"
#include "agent/core/router_engine.h"
#include "agent/core/tests/test_util.h"
#include "agent/dataplane/fake_dataplane.h"

namespace ballast::core {
namespace {

using testing::DataplaneText;
using testing::Key;
using testing::MakeBackend;
using testing::RequireDataplaneMatchesState;
using testing::SmallConfig;
using testing::StartEngine;
using testing::TempDir;

const Actor kOp{"operator:test"};
const v1::VipKey kVip4 = Key("198.18.0.10", 80);
const v1::VipKey kVip6 = Key("2001:db8:10::10", 443);

// The flags word of a VIP as the data plane holds it.
uint32_t VipFlags(const dataplane::FakeDataplane& dp, const v1::VipKey& vip) {
  auto key = ToDataplaneKey(vip);
  REQUIRE(key.ok());
  auto vips = dp.Vips();
  REQUIRE(vips.ok());
  for (const dataplane::VipEntry& e : *vips) {
    if (e.key == *key) return e.meta.flags;
  }
  FAIL("the data plane has no VIP " << VipKeyText(vip));
  return 0;
}

TEST_CASE("A VIP's mode reaches its flags: GUE set and cleared, ownership kept; the GUE port") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  dataplane::FakeDataplane* dp = nullptr;
  v1::Config c = SmallConfig();
  c.mutable_vips(0)->set_mode(v1::GUE);
  c.mutable_vips(0)->set_ownership(v1::ACTIVE_STANDBY);
  auto e = StartEngine(dir, &clock, c, /*vip_ownership=*/true, &dp);
  // Created stopped (a standby until it holds the lease), in GUE mode.
  CHECK(VipFlags(*dp, kVip4) == (BALLAST_VIP_F_OWNED | BALLAST_VIP_F_GUE));
  CHECK(VipFlags(*dp, kVip6) == 0);
  CHECK(dp->GetSettings()->gue_port == 6080);  // gue_port 0: the default
  CHECK_THAT(DataplaneText(*e), Catch::Contains("vip 198.18.0.10:80/tcp id=1 table_size=251 gue "));
  CHECK_THAT(DataplaneText(*e), Catch::Contains(" gue_port=6080\n"));
  RequireDataplaneMatchesState(*e);

  // The owner loop starts it; then the mode alone changes, both ways: one
  // VIP re-programmed, no table rewritten, the owner's deadline untouched.
  REQUIRE(e->SetVipOwnerDeadline(kVip4, 123'456'789).ok());
  const size_t tables = dp->Calls("SetTable");
  const size_t upserts = dp->Calls("UpsertVip");
  c.mutable_vips(0)->set_mode(v1::ENCAP);
  auto applied = e->ApplyConfig(c, false, kOp);
  REQUIRE(applied.ok());
  CHECK(std::vector<std::string>(applied->diff().begin(), applied->diff().end()) ==
        std::vector<std::string>{"~ vip 198.18.0.10:80/tcp mode GUE -> ENCAP"});
  CHECK(VipFlags(*dp, kVip4) == BALLAST_VIP_F_OWNED);
  CHECK(e->GetVipOwner(kVip4)->deadline_ns == std::optional<uint64_t>(123'456'789));
  CHECK(dp->Calls("UpsertVip") == upserts + 1);
  CHECK(dp->Calls("SetTable") == tables);
  RequireDataplaneMatchesState(*e);
  c.mutable_vips(0)->set_mode(v1::GUE);
  REQUIRE(e->ApplyConfig(c, false, kOp).ok());
  CHECK(VipFlags(*dp, kVip4) == (BALLAST_VIP_F_OWNED | BALLAST_VIP_F_GUE));
  CHECK(e->GetVipOwner(kVip4)->deadline_ns == std::optional<uint64_t>(123'456'789));
  CHECK(dp->Calls("UpsertVip") == upserts + 2);
  CHECK(VipFlags(*dp, kVip6) == 0);

  // The port: set, then back to the default; no VIP is touched for it.
  c.mutable_global()->set_gue_port(7000);
  REQUIRE(e->ApplyConfig(c, false, kOp).ok());
  CHECK(dp->GetSettings()->gue_port == 7000);
  c.mutable_global()->set_gue_port(0);
  REQUIRE(e->ApplyConfig(c, false, kOp).ok());
  CHECK(dp->GetSettings()->gue_port == 6080);
  CHECK(dp->Calls("UpsertVip") == upserts + 2);
  RequireDataplaneMatchesState(*e);

  // A VIP added through the API in GUE mode, and its status.
  v1::Vip v;
  *v.mutable_key() = Key("198.18.0.11", 53, v1::UDP);
  v.set_table_size(13);
  v.set_mode(v1::GUE);
  *v.add_backends() = MakeBackend("198.18.1.9", 1);
  REQUIRE(e->AddVip(v, kOp).ok());
  CHECK(VipFlags(*dp, v.key()) == BALLAST_VIP_F_GUE);
  auto st = e->GetStatus();
  REQUIRE(st.ok());
  REQUIRE(st->vips_size() == 3);
  CHECK(st->vips(0).mode() == v1::GUE);
  CHECK(st->vips(1).mode() == v1::FORWARDING_MODE_UNSPECIFIED);
  CHECK(st->vips(2).mode() == v1::GUE);
}

TEST_CASE("A restart over maps in the other mode fixes the VIP's flag, and nothing else") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  v1::Config c = SmallConfig();
  c.mutable_vips(0)->set_mode(v1::GUE);
  c.mutable_global()->set_gue_port(7000);
  // The maps a previous run left, but with the VIPs in the other mode (as
  // written before the state changed): a copy of what this state programs.
  auto maps = std::make_unique<dataplane::FakeDataplane>(
      dataplane::FakeDataplane::Options{.adopted = true});
  {
    dataplane::FakeDataplane* first = nullptr;
    auto e = StartEngine(dir, &clock, c, /*vip_ownership=*/false, &first);
    REQUIRE(maps->SetSettings(*first->GetSettings()).ok());
    const auto backends = first->Backends();
    const auto vips = first->Vips();
    REQUIRE((backends.ok() && vips.ok()));
    for (const dataplane::BackendEntry& b : *backends) {
      REQUIRE(maps->SetBackend(b.id, b.addr, b.state, b.drain_deadline_ns).ok());
    }
    for (const dataplane::VipEntry& v : *vips) {
      dataplane::VipOptions o;
      o.gue = (v.meta.flags & BALLAST_VIP_F_GUE) == 0;  // flipped
      REQUIRE(maps->UpsertVip(v.key, v.meta.vip_id, o).ok());
      REQUIRE(maps->SetTable(v.meta.vip_id, *first->GetTable(v.meta.vip_id)).ok());
    }
  }
  dataplane::FakeDataplane* dp = maps.get();
  CHECK(VipFlags(*dp, kVip4) == 0);
  CHECK(VipFlags(*dp, kVip6) == BALLAST_VIP_F_GUE);
  EngineOptions eo;
  eo.state_file = dir.File("state.pb");
  eo.audit_log = dir.File("audit.jsonl");
  auto e = RouterEngine::Start(std::move(maps), eo, &clock, v1::Config());
  REQUIRE(e.ok());
  const ProgramStats st = (*e)->Health().start_reconcile;
  CHECK(st.vips_upserted == 2);
  CHECK(st.tables_set == 0);
  CHECK(st.settings == 0);  // gue_port 7000 was already there
  CHECK(st.backends_set == 0);
  CHECK(VipFlags(*dp, kVip4) == BALLAST_VIP_F_GUE);
  CHECK(VipFlags(*dp, kVip6) == 0);
  CHECK(dp->GetSettings()->gue_port == 7000);
  RequireDataplaneMatchesState(**e);
}

}  // namespace
}  // namespace ballast::core
