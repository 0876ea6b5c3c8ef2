// Retired VIP addresses (EngineOptions::retire_addresses, issue #41 item 5):
// with BGP announcing the addresses, the last VIP of an address goes from
// the maps at once but its address marker stays, so the packets the ToR
// still sends for it are dropped (drop_vip_unserved) rather than routed
// back to the ToR, until the announcer releases it (ReleaseRetiredAddresses,
// once the route is withdrawn). Over the in-memory data plane; the real
// one's handling of a kept marker is in agent/dataplane/tests
// (dataplane_vip_test.cc, [retire]).
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "agent/core/router_engine.h"
#include "agent/core/tests/test_util.h"
#include "agent/dataplane/fake_dataplane.h"

namespace ballast::core {
namespace {

using testing::Key;
using testing::MakeBackend;
using testing::SmallConfig;
using testing::TempDir;

const Actor kOp{"operator:test"};
const v1::VipKey kVip4 = Key("198.18.0.10", 80);
constexpr int64_t kUnixMs = 1'700'000'000'000;
constexpr uint64_t kMonoNs = 5'000'000'000'000;

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

std::set<std::string> Markers(const RouterEngine& e) {
  auto img = e.ReadDataplane();
  REQUIRE(img.ok());
  std::set<std::string> out;
  for (const IpAddress& a : img->vip_addresses) out.insert(a.ToString());
  return out;
}

std::set<std::string> VipKeys(const RouterEngine& e) {
  auto img = e.ReadDataplane();
  REQUIRE(img.ok());
  std::set<std::string> out;
  for (const auto& [k, v] : img->vips) out.insert(dataplane::VipKeyString(k));
  return out;
}

std::unique_ptr<RouterEngine> StartRetiring(const TempDir& dir, const Clock* clock,
                                            const v1::Config& config = SmallConfig()) {
  EngineOptions eo;
  eo.retire_addresses = true;
  return testing::StartEngine(dir, clock, config, std::move(eo));
}

TEST_CASE("A deleted VIP's address keeps its marker until it is released", "[retire]") {
  TempDir dir;
  FakeClock clock(kUnixMs, kMonoNs);
  auto e = StartRetiring(dir, &clock);
  REQUIRE(e->DeleteVip(kVip4, kOp).ok());

  // The VIP, its table and its backends are gone; the address stays known.
  CHECK(VipKeys(*e) == std::set<std::string>{"[2001:db8:10::10]:443/tcp"});
  CHECK(Markers(*e) == std::set<std::string>{"198.18.0.10", "2001:db8:10::10"});
  const std::map<IpAddress, uint64_t> retired = {{Ip("198.18.0.10"), kMonoNs}};
  CHECK(e->RetiredAddresses() == retired);

  // A release for another retirement (an older one) leaves it alone.
  clock.AdvanceMs(2500);
  auto none = e->ReleaseRetiredAddresses({{Ip("198.18.0.10"), kMonoNs - 1}});
  REQUIRE(none.ok());
  CHECK(none->empty());
  CHECK(Markers(*e).count("198.18.0.10") == 1);

  auto released = e->ReleaseRetiredAddresses(retired);
  REQUIRE(released.ok());
  CHECK(*released == std::vector<IpAddress>{Ip("198.18.0.10")});
  CHECK(Markers(*e) == std::set<std::string>{"2001:db8:10::10"});
  CHECK(e->RetiredAddresses().empty());
  // Twice: nothing more to do.
  released = e->ReleaseRetiredAddresses(retired);
  REQUIRE(released.ok());
  CHECK(released->empty());
}

TEST_CASE("Without retire_addresses the marker goes with the address's last VIP", "[retire]") {
  TempDir dir;
  FakeClock clock(kUnixMs, kMonoNs);
  auto e = testing::StartEngine(dir, &clock, SmallConfig());
  REQUIRE(e->DeleteVip(kVip4, kOp).ok());
  CHECK(Markers(*e) == std::set<std::string>{"2001:db8:10::10"});
  CHECK(e->RetiredAddresses().empty());
}

TEST_CASE("An address another VIP still uses is not retired", "[retire]") {
  TempDir dir;
  FakeClock clock(kUnixMs, kMonoNs);
  v1::Config c = SmallConfig();
  v1::Vip* other = c.add_vips();
  *other->mutable_key() = Key("198.18.0.10", 443);
  other->set_table_size(251);
  *other->add_backends() = MakeBackend("198.18.1.9", 1);
  auto e = StartRetiring(dir, &clock, c);
  REQUIRE(e->DeleteVip(kVip4, kOp).ok());
  CHECK(e->RetiredAddresses().empty());
  CHECK(Markers(*e).count("198.18.0.10") == 1);
  // Its last VIP: now it is.
  REQUIRE(e->DeleteVip(Key("198.18.0.10", 443), kOp).ok());
  CHECK(e->RetiredAddresses().count(Ip("198.18.0.10")) == 1);
  CHECK(Markers(*e).count("198.18.0.10") == 1);
}

TEST_CASE("A retired address used again is no longer retired; retired again, a new retirement",
          "[retire]") {
  TempDir dir;
  FakeClock clock(kUnixMs, kMonoNs);
  auto e = StartRetiring(dir, &clock);
  const v1::Vip vip = SmallConfig().vips(0);
  REQUIRE(e->DeleteVip(kVip4, kOp).ok());
  clock.AdvanceMs(100);
  REQUIRE(e->AddVip(vip, kOp).ok());
  CHECK(e->RetiredAddresses().empty());
  CHECK(Markers(*e).count("198.18.0.10") == 1);

  clock.AdvanceMs(100);
  REQUIRE(e->DeleteVip(kVip4, kOp).ok());
  const uint64_t again = kMonoNs + 200'000'000;
  CHECK(e->RetiredAddresses() == std::map<IpAddress, uint64_t>{{Ip("198.18.0.10"), again}});
  // A release decided on the first retirement is too old.
  auto released = e->ReleaseRetiredAddresses({{Ip("198.18.0.10"), kMonoNs}});
  REQUIRE(released.ok());
  CHECK(released->empty());
  CHECK(Markers(*e).count("198.18.0.10") == 1);
}

TEST_CASE("A VIP moved to another address by a config apply retires the old address", "[retire]") {
  TempDir dir;
  FakeClock clock(kUnixMs, kMonoNs);
  auto e = StartRetiring(dir, &clock);
  v1::Config c = SmallConfig();
  *c.mutable_vips(0)->mutable_key() = Key("198.18.0.11", 80);
  REQUIRE(e->ApplyConfig(c, false, kOp).ok());
  CHECK(VipKeys(*e) == std::set<std::string>{"198.18.0.11:80/tcp", "[2001:db8:10::10]:443/tcp"});
  CHECK(Markers(*e) == std::set<std::string>{"198.18.0.10", "198.18.0.11", "2001:db8:10::10"});
  CHECK(e->RetiredAddresses() == std::map<IpAddress, uint64_t>{{Ip("198.18.0.10"), kMonoNs}});
}

TEST_CASE("At start, a marker no VIP uses is held as retired (an earlier run's)", "[retire]") {
  FakeClock clock(kUnixMs, kMonoNs);
  for (const bool retire : {true, false}) {
    INFO("retire_addresses " << retire);
    TempDir dir;
    // The maps as an agent that retired 198.18.0.77 and stopped left them.
    auto dp = std::make_unique<dataplane::FakeDataplane>();
    const dataplane::VipKey old{Ip("198.18.0.77"), 80, 6};
    REQUIRE(dp->UpsertVip(old, 9).ok());
    REQUIRE(dp->DeleteVip(old, {.keep_address_marker = true}).ok());
    EngineOptions eo;
    eo.state_file = dir.File("state.pb");
    eo.audit_log = dir.File("audit.jsonl");
    eo.retire_addresses = retire;
    auto e = RouterEngine::Start(std::move(dp), eo, &clock, SmallConfig());
    REQUIRE(e.ok());
    if (retire) {
      CHECK((*e)->RetiredAddresses() ==
            std::map<IpAddress, uint64_t>{{Ip("198.18.0.77"), kMonoNs}});
      CHECK(Markers(**e).count("198.18.0.77") == 1);
      CHECK((*e)->Health().start_reconcile.markers_deleted == 0);
    } else {
      CHECK((*e)->RetiredAddresses().empty());
      CHECK(Markers(**e).count("198.18.0.77") == 0);
      CHECK((*e)->Health().start_reconcile.markers_deleted == 1);
    }
  }
}

}  // namespace
}  // namespace ballast::core
