// Table history (agent/core/table_history.h): what a commit records in the
// state, the slot history derived from it, and what the engine programs.
#include "agent/core/table_history.h"

#include <vector>

#include <catch2/catch.hpp>

#include "agent/core/ids.h"
#include "agent/core/names.h"
#include "agent/core/tests/test_util.h"
#include "ballast_abi.h"

namespace ballast::core {
namespace {

using testing::Key;
using testing::SmallConfig;
using testing::StartEngine;
using testing::TempDir;

const Actor kOp{"operator:test"};

uint32_t At(uint64_t word, int i) { return (word >> (16 * i)) & 0xffff; }

TEST_CASE("SlotHistory: previous backends of each slot, most recent first, without repeats") {
  const std::vector<uint32_t> now = {1, 1, 2, 3, 1};
  const std::vector<std::vector<uint32_t>> previous = {
      {2, 1, 2, 1, 1},  // most recent
      {3, 1, 1, 2, 0},
      {2, 4, 3, 4, 5},
      {5, 2, 4, 5, 6},
  };
  const std::vector<uint64_t> h = SlotHistory(now, previous);
  REQUIRE(h.size() == now.size());
  // slot 0: 2, 3, (2 again), 5
  CHECK(At(h[0], 0) == 2);
  CHECK(At(h[0], 1) == 3);
  CHECK(At(h[0], 2) == 5);
  // slot 1: (1 is the current one), 4, 2
  CHECK(At(h[1], 0) == 4);
  CHECK(At(h[1], 1) == 2);
  CHECK(At(h[1], 2) == 0);
  // slot 2: never another backend but 1, 3, 4: depth 3 at most
  CHECK(At(h[2], 0) == 1);
  CHECK(At(h[2], 1) == 3);
  CHECK(At(h[2], 2) == 4);
  // slot 3: 1, 2, 4 (5 is past the depth)
  CHECK(At(h[3], 2) == 4);
  // slot 4: a slot that was empty (0) is skipped
  CHECK(At(h[4], 0) == 5);
  CHECK(At(h[4], 1) == 6);
  CHECK((h[0] >> 48) == 0);
  // No versions: no history.
  CHECK(SlotHistory(now, {}) == std::vector<uint64_t>(now.size(), 0));
}

// A router: an engine over the in-memory data plane, started from
// SmallConfig() (or `config`).
struct Router {
  explicit Router(const v1::Config& config = SmallConfig()) {
    e = StartEngine(dir, &clock, config, false, &dp);
    REQUIRE(e != nullptr);
  }
  TempDir dir;
  FakeClock clock{1'700'000'000'000, 5'000'000'000'000};
  dataplane::FakeDataplane* dp = nullptr;
  std::unique_ptr<RouterEngine> e;
};

// The history the engine's data plane holds for the VIP.
std::vector<uint64_t> HistoryOf(dataplane::FakeDataplane* dp, const RouterEngine& e,
                                const v1::VipKey& vip) {
  auto h = dp->GetHistory(VipIdOf(e.State(), vip));
  if (!h.ok()) return {};
  return *h;
}

TEST_CASE("A table change becomes history: every slot it changed names its old backend") {
  Router r;
  RouterEngine* e = r.e.get();
  dataplane::FakeDataplane* dp = r.dp;
  const v1::VipKey vip = Key("198.18.0.10", 80);
  CHECK(FindTableHistory(e->State(), vip) == nullptr);
  CHECK(HistoryOf(dp, *e, vip).empty());

  auto before = e->ReadTable(vip);
  REQUIRE(before.ok());
  REQUIRE(e->SetWeight(vip, "198.18.1.3", 1, kOp).ok());  // 2 -> 1
  auto after = e->ReadTable(vip);
  REQUIRE(after.ok());
  const v1::State st = e->State();
  const v1::TableHistory* h = FindTableHistory(st, vip);
  REQUIRE(h != nullptr);
  REQUIRE(h->versions_size() == 1);
  CHECK(h->versions(0).table_size() == 251);
  CHECK(h->versions(0).replaced_unix_ms() == 1'700'000'000'000);
  REQUIRE(h->versions(0).backends_size() == 3);
  CHECK(h->versions(0).backends(2).address() == "198.18.1.3");
  CHECK(h->versions(0).backends(2).weight() == 2);

  const std::vector<uint64_t> slots = HistoryOf(dp, *e, vip);
  REQUIRE(slots.size() == after->size());
  size_t changed = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if ((*before)[i] == (*after)[i]) {
      CHECK(slots[i] == 0);
      continue;
    }
    ++changed;
    CHECK(At(slots[i], 0) == (*before)[i]);
  }
  CHECK(changed > 0);
  // The other VIP did not change: no history.
  CHECK(FindTableHistory(e->State(), Key("2001:db8:10::10", 443)) == nullptr);
  testing::RequireDataplaneMatchesState(*e);

  // A change that leaves the table's inputs as they are records nothing.
  REQUIRE(e->SetWeight(vip, "198.18.1.3", 1, kOp).ok());
  CHECK(FindTableHistory(e->State(), vip) != nullptr);
  CHECK(e->State().table_history(0).versions_size() == 1);
}

TEST_CASE("History keeps the last versions, and a draining backend's until its deadline") {
  Router r;
  RouterEngine* e = r.e.get();
  const v1::VipKey vip = Key("198.18.0.10", 80);
  // 198.18.1.1 drained: its weight goes to 0 (a version in which it had 1).
  REQUIRE(e->Drain(vip, "198.18.1.1", 3600, kOp).ok());
  for (uint32_t w : {3u, 4u, 5u, 6u, 7u}) {
    REQUIRE(e->SetWeight(vip, "198.18.1.2", w, kOp).ok());
  }
  const v1::State st = e->State();
  const v1::TableHistory* h = FindTableHistory(st, vip);
  REQUIRE(h != nullptr);
  // The last kTableVersions, and the version before the drain.
  REQUIRE(h->versions_size() == static_cast<int>(kTableVersions) + 1);
  const v1::TableVersion& oldest = h->versions(h->versions_size() - 1);
  CHECK(oldest.backends(0).address() == "198.18.1.1");
  CHECK(oldest.backends(0).weight() == 1);
  // Newest first.
  CHECK(h->versions(0).backends(1).weight() == 6);
  // Undrained: the backend is active again, the drain version is no longer
  // kept at the next change.
  REQUIRE(e->Undrain(vip, "198.18.1.1", kOp).ok());
  REQUIRE(e->SetWeight(vip, "198.18.1.2", 8, kOp).ok());
  const v1::State st2 = e->State();
  REQUIRE(FindTableHistory(st2, vip) != nullptr);
  CHECK(FindTableHistory(st2, vip)->versions_size() == static_cast<int>(kTableVersions));
  testing::RequireDataplaneMatchesState(*e);
}

TEST_CASE("Every router derives the same history from the same changes; a restart keeps it") {
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  TempDir d1, d2;
  dataplane::FakeDataplane *dp1 = nullptr, *dp2 = nullptr;
  auto e1 = StartEngine(d1, &clock, SmallConfig(), false, &dp1);
  auto e2 = StartEngine(d2, &clock, SmallConfig(), false, &dp2);
  REQUIRE(e1 != nullptr);
  REQUIRE(e2 != nullptr);
  const v1::VipKey vip = Key("198.18.0.10", 80);
  for (RouterEngine* e : {e1.get(), e2.get()}) {
    REQUIRE(e->SetWeight(vip, "198.18.1.1", 3, kOp).ok());
    REQUIRE(e->AddBackend(vip, testing::MakeBackend("198.18.1.4", 2), kOp).ok());
    REQUIRE(e->SetWeight(vip, "198.18.1.2", 5, kOp).ok());
  }
  const std::vector<uint64_t> h1 = HistoryOf(dp1, *e1, vip);
  REQUIRE(!h1.empty());
  CHECK(h1 == HistoryOf(dp2, *e2, vip));
  // A backend added became part of the history's third version only.
  const v1::State st1 = e1->State();
  REQUIRE(FindTableHistory(st1, vip) != nullptr);
  CHECK(FindTableHistory(st1, vip)->versions_size() == 3);

  // The same state, started again (the maps as an older agent left them:
  // here a fresh data plane), programs the same history.
  e1.reset();
  dataplane::FakeDataplane* dp3 = nullptr;
  auto e3 = StartEngine(d1, &clock, SmallConfig(), false, &dp3);
  REQUIRE(e3 != nullptr);
  CHECK(HistoryOf(dp3, *e3, vip) == h1);
  testing::RequireDataplaneMatchesState(*e3);
}

TEST_CASE("A VIP deleted loses its history; a new table size starts its history again") {
  Router r;
  RouterEngine* e = r.e.get();
  dataplane::FakeDataplane* dp = r.dp;
  const v1::VipKey vip = Key("198.18.0.10", 80);
  REQUIRE(e->SetWeight(vip, "198.18.1.1", 3, kOp).ok());
  REQUIRE(FindTableHistory(e->State(), vip) != nullptr);
  // Table size changed through the config: no history (slots differ).
  v1::Config c = e->GetConfig();
  c.mutable_vips(0)->set_table_size(257);
  REQUIRE(e->ApplyConfig(c, false, kOp).ok());
  CHECK(FindTableHistory(e->State(), vip) == nullptr);
  CHECK(HistoryOf(dp, *e, vip).empty());
  REQUIRE(e->SetWeight(vip, "198.18.1.1", 4, kOp).ok());
  REQUIRE(FindTableHistory(e->State(), vip) != nullptr);
  CHECK(HistoryOf(dp, *e, vip).size() == 257);
  REQUIRE(e->DeleteVip(vip, kOp).ok());
  CHECK(FindTableHistory(e->State(), vip) == nullptr);
  testing::RequireDataplaneMatchesState(*e);
}

TEST_CASE("The probe window reaches the data plane: default, set, and off") {
  v1::Global g;
  CHECK(SettingsOf(g).adopted_bounce_ms == dataplane::kDefaultAdoptedBounceMs);
  g.mutable_timeouts()->set_adopted_bounce_ms(500);
  CHECK(SettingsOf(g).adopted_bounce_ms == 500);
  g.set_no_established_second_chance(true);
  CHECK(SettingsOf(g).adopted_bounce_ms == 0);
  // In the engine's data plane.
  v1::Config c = SmallConfig();
  c.mutable_global()->set_no_established_second_chance(true);
  Router r(c);
  CHECK_THAT(testing::DataplaneText(*r.e), Catch::Contains(" adopted_bounce_ms=0 "));
}

}  // namespace
}  // namespace ballast::core
