// One contract, two implementations: what the engine relies on from the
// data plane's port (port.h) holds for the real, BPF-backed Dataplane and
// for the in-memory FakeDataplane the engine's tests run on. A behaviour
// the fake gets wrong fails here beside the real one, not as a green engine
// test over a fake that lies. The real half needs root (BPF).
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/fake_dataplane.h"
#include "agent/dataplane/port.h"
#include "agent/dataplane/tests/test_util.h"

namespace ballast::dataplane {
namespace {

IpAddress Addr(const char* text) {
  auto a = IpAddress::Parse(text);
  REQUIRE(a.ok());
  return *a;
}

VipKey Vip(const char* addr, uint16_t port, uint8_t proto = IPPROTO_TCP) {
  return VipKey{Addr(addr), port, proto};
}

std::vector<std::string> VipTexts(const DataplanePort& dp) {
  auto vips = dp.Vips();
  REQUIRE(vips.ok());
  std::vector<std::string> out;
  for (const VipEntry& e : *vips)
    out.push_back(VipKeyString(e.key) + "#" + std::to_string(e.meta.vip_id));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Markers(const DataplanePort& dp) {
  auto m = dp.VipAddressMarkers();
  REQUIRE(m.ok());
  std::vector<std::string> out;
  for (const IpAddress& a : *m) out.push_back(a.ToString());
  std::sort(out.begin(), out.end());
  return out;
}

using Texts = std::vector<std::string>;

// QUIC-LB: configurations (a rotation's two), server IDs replaced whole,
// a retired configuration's server IDs gone with it, DeleteVip taking both.
void RunQuicContract(DataplanePort& dp) {
  QuicKey key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(0x40 + i);
  const uint32_t vip = 9;
  const QuicConfig old_c{.config_id = 0, .sid_len = 3, .nonce_len = 4};
  const QuicConfig new_c{.config_id = 1, .sid_len = 4, .nonce_len = 12, .key = key};
  auto configs = dp.GetQuicConfigs(vip);
  REQUIRE(configs.ok());
  CHECK(configs->empty());
  const std::vector<QuicServer> early = {{.config_id = 0, .sid = {1, 2, 3}, .backend_id = 1}};
  CHECK(dp.SetQuicServers(vip, early).code() == absl::StatusCode::kInvalidArgument);

  const std::vector<QuicConfig> both = {old_c, new_c};
  REQUIRE(dp.SetQuicConfigs(vip, both).ok());
  configs = dp.GetQuicConfigs(vip);
  REQUIRE(configs.ok());
  CHECK(*configs == both);
  const std::vector<QuicServer> servers = {{.config_id = 0, .sid = {1, 2, 3}, .backend_id = 1},
                                           {.config_id = 0, .sid = {1, 2, 4}, .backend_id = 2},
                                           {.config_id = 1, .sid = {9, 9, 9, 9}, .backend_id = 2}};
  REQUIRE(dp.SetQuicServers(vip, servers).ok());
  auto got = dp.GetQuicServers(vip);
  REQUIRE(got.ok());
  CHECK(*got == servers);
  // Replaced whole: one removed, one moved.
  const std::vector<QuicServer> fewer = {{.config_id = 0, .sid = {1, 2, 3}, .backend_id = 3},
                                         {.config_id = 1, .sid = {9, 9, 9, 9}, .backend_id = 2}};
  REQUIRE(dp.SetQuicServers(vip, fewer).ok());
  got = dp.GetQuicServers(vip);
  REQUIRE(got.ok());
  CHECK(*got == fewer);
  // The old configuration retired: its server IDs go with it.
  const std::vector<QuicConfig> only_new = {new_c};
  REQUIRE(dp.SetQuicConfigs(vip, only_new).ok());
  got = dp.GetQuicServers(vip);
  REQUIRE(got.ok());
  CHECK(*got == std::vector<QuicServer>{fewer[1]});
  auto stats = dp.QuicStats(vip);
  REQUIRE(stats.ok());
  CHECK(stats->cid_routed == 0);
  CHECK(dp.SetQuicConfigs(0, only_new).code() == absl::StatusCode::kInvalidArgument);
  const std::vector<QuicConfig> bad = {{.config_id = 7, .sid_len = 3, .nonce_len = 4}};
  CHECK(dp.SetQuicConfigs(vip, bad).code() == absl::StatusCode::kInvalidArgument);
  configs = dp.GetQuicConfigs(vip);
  REQUIRE(configs.ok());
  CHECK(*configs == only_new);  // a refused call changed nothing

  // Deleting the VIP takes its configurations and server IDs.
  const VipKey udp = Vip("198.18.0.10", 443, IPPROTO_UDP);
  REQUIRE(dp.UpsertVip(udp, vip).ok());
  REQUIRE(dp.DeleteVip(udp).ok());
  configs = dp.GetQuicConfigs(vip);
  REQUIRE(configs.ok());
  CHECK(configs->empty());
  got = dp.GetQuicServers(vip);
  REQUIRE(got.ok());
  CHECK(got->empty());
}

void RunContract(DataplanePort& dp) {
  SECTION("VIPs: ids unique, markers follow the addresses, deletes take the table") {
    const VipKey a = Vip("198.18.0.10", 80), b = Vip("198.18.0.10", 443),
                 c = Vip("2001:db8::10", 80);
    REQUIRE(dp.UpsertVip(a, 1).ok());
    REQUIRE(dp.UpsertVip(b, 2).ok());
    REQUIRE(dp.UpsertVip(c, 3).ok());
    CHECK(Markers(dp) == Texts{"198.18.0.10", "2001:db8::10"});
    auto taken = dp.UpsertVip(Vip("198.18.0.11", 80), 2);
    CHECK(taken.code() == absl::StatusCode::kAlreadyExists);
    CHECK(std::string(taken.message()) == "vip id 2 is already used by VIP 198.18.0.10:443/tcp");
    CHECK(dp.UpsertVip(Vip("198.18.0.11", 80, 1), 4).code() == absl::StatusCode::kInvalidArgument);
    CHECK(dp.UpsertVip(Vip("0.0.0.0", 80), 4).code() == absl::StatusCode::kInvalidArgument);
    CHECK(dp.UpsertVip(Vip("198.18.0.11", 80), 0).code() == absl::StatusCode::kInvalidArgument);
    CHECK(VipTexts(dp) ==
          Texts{"198.18.0.10:443/tcp#2", "198.18.0.10:80/tcp#1", "[2001:db8::10]:80/tcp#3"});

    const std::vector<uint32_t> table = {1, 2, 0, 1, 2, 1, 2};
    REQUIRE(dp.SetTable(1, table).ok());
    auto got = dp.GetTable(1);
    REQUIRE(got.ok());
    CHECK(*got == table);
    CHECK(dp.GetTable(2).status().code() == absl::StatusCode::kNotFound);
    const std::vector<uint32_t> not_prime = {1, 2, 3, 4};
    CHECK(dp.SetTable(1, not_prime).code() == absl::StatusCode::kInvalidArgument);
    const std::vector<uint32_t> bad_slot = {1, BALLAST_MAX_BACKENDS, 1};
    CHECK(dp.SetTable(1, bad_slot).code() == absl::StatusCode::kInvalidArgument);

    // A marker in use stays; the address's last VIP takes it.
    CHECK(dp.DeleteVipAddressMarker(Addr("198.18.0.10")).code() ==
          absl::StatusCode::kFailedPrecondition);
    REQUIRE(dp.DeleteVip(a).ok());
    CHECK(dp.GetTable(1).status().code() == absl::StatusCode::kNotFound);
    CHECK(Markers(dp) == Texts{"198.18.0.10", "2001:db8::10"});
    REQUIRE(dp.DeleteVip(b).ok());
    CHECK(Markers(dp) == Texts{"2001:db8::10"});
    auto gone = dp.DeleteVip(b);
    CHECK(gone.code() == absl::StatusCode::kNotFound);
    CHECK(std::string(gone.message()) == "VIP 198.18.0.10:443/tcp does not exist");
    CHECK(dp.DeleteVipAddressMarker(Addr("198.18.0.99")).code() == absl::StatusCode::kNotFound);
    REQUIRE(dp.DeleteVip(c).ok());
    CHECK(Markers(dp).empty());
    CHECK(VipTexts(dp).empty());
  }

  SECTION("A marker kept after the address's last VIP stays until it is deleted") {
    const VipKey a = Vip("198.18.0.10", 80), b = Vip("198.18.0.10", 443);
    REQUIRE(dp.UpsertVip(a, 1).ok());
    REQUIRE(dp.UpsertVip(b, 2).ok());
    REQUIRE(dp.DeleteVip(a, {.keep_address_marker = true}).ok());
    REQUIRE(dp.DeleteVip(b, {.keep_address_marker = true}).ok());
    CHECK(VipTexts(dp).empty());
    CHECK(Markers(dp) == Texts{"198.18.0.10"});
    // A VIP on it again uses the marker; its last VIP, deleted without the
    // option, takes it.
    REQUIRE(dp.UpsertVip(a, 1).ok());
    CHECK(dp.DeleteVipAddressMarker(Addr("198.18.0.10")).code() ==
          absl::StatusCode::kFailedPrecondition);
    REQUIRE(dp.DeleteVip(a, {.keep_address_marker = true}).ok());
    REQUIRE(dp.DeleteVipAddressMarker(Addr("198.18.0.10")).ok());
    CHECK(Markers(dp).empty());
    CHECK(dp.DeleteVipAddressMarker(Addr("198.18.0.10")).code() == absl::StatusCode::kNotFound);
  }

  SECTION("Ownership: a new VIP is owned only when asked; an update keeps it") {
    const VipKey a = Vip("198.18.0.10", 80), b = Vip("198.18.0.20", 80);
    REQUIRE(dp.UpsertVip(a, 1).ok());
    VipOptions stopped;
    stopped.owner_deadline_if_new = 0;
    REQUIRE(dp.UpsertVip(b, 2, stopped).ok());
    auto oa = dp.GetVipOwner(a);
    auto ob = dp.GetVipOwner(b);
    REQUIRE((oa.ok() && ob.ok()));
    CHECK(!oa->deadline_ns.has_value());
    CHECK(ob->deadline_ns == std::optional<uint64_t>(0));
    REQUIRE(dp.SetVipOwnerDeadline(a, 12345).ok());
    REQUIRE(dp.UpsertVip(a, 5).ok());  // re-id: the ownership stays
    oa = dp.GetVipOwner(a);
    REQUIRE(oa.ok());
    CHECK(oa->deadline_ns == std::optional<uint64_t>(12345));
    REQUIRE(dp.SetVipOwnerDeadline(a, std::nullopt).ok());
    oa = dp.GetVipOwner(a);
    REQUIRE(oa.ok());
    CHECK(!oa->deadline_ns.has_value());
    CHECK(dp.GetVipOwner(Vip("198.18.0.30", 80)).status().code() == absl::StatusCode::kNotFound);
    CHECK(dp.SetVipOwnerDeadline(Vip("198.18.0.30", 80), 1).code() == absl::StatusCode::kNotFound);
    REQUIRE(dp.DeleteVip(a).ok());
    REQUIRE(dp.DeleteVip(b).ok());
  }

  SECTION("GUE: the flag follows the options, new VIP or not; the ownership stays") {
    const VipKey a = Vip("198.18.0.10", 80), b = Vip("198.18.0.20", 80);
    const auto flags = [&](const VipKey& k) {
      auto vips = dp.Vips();
      REQUIRE(vips.ok());
      for (const VipEntry& e : *vips) {
        if (e.key == k) return e.meta.flags;
      }
      FAIL("no VIP " << VipKeyString(k));
      return 0u;
    };
    VipOptions gue;
    gue.gue = true;
    REQUIRE(dp.UpsertVip(a, 1, gue).ok());
    REQUIRE(dp.UpsertVip(b, 2).ok());
    CHECK(flags(a) == BALLAST_VIP_F_GUE);
    CHECK(flags(b) == 0);
    REQUIRE(dp.SetVipOwnerDeadline(a, 12345).ok());
    CHECK(flags(a) == (BALLAST_VIP_F_GUE | BALLAST_VIP_F_OWNED));
    REQUIRE(dp.UpsertVip(a, 1).ok());  // back to IP-in-IP: owned, same deadline
    CHECK(flags(a) == BALLAST_VIP_F_OWNED);
    CHECK(dp.GetVipOwner(a)->deadline_ns == std::optional<uint64_t>(12345));
    REQUIRE(dp.UpsertVip(a, 1, gue).ok());
    CHECK(flags(a) == (BALLAST_VIP_F_GUE | BALLAST_VIP_F_OWNED));
    CHECK(dp.GetVipOwner(a)->deadline_ns == std::optional<uint64_t>(12345));
    VipOptions stopped_gue = gue;
    stopped_gue.owner_deadline_if_new = 0;
    REQUIRE(dp.UpsertVip(b, 2, stopped_gue).ok());  // exists: not owned, now GUE
    CHECK(flags(b) == BALLAST_VIP_F_GUE);
    REQUIRE(dp.DeleteVip(a).ok());
    REQUIRE(dp.DeleteVip(b).ok());
  }

  SECTION("Settings: the GUE port is written and read back; 0 is the default") {
    Settings s;
    s.src4 = Addr("198.18.0.1");
    s.src6 = Addr("2001:db8::1");
    s.gue_port = 0;
    REQUIRE(dp.SetSettings(s).ok());
    auto got = dp.GetSettings();
    REQUIRE(got.ok());
    CHECK(got->gue_port == BALLAST_GUE_PORT_DEFAULT);
    s.gue_port = 7000;
    REQUIRE(dp.SetSettings(s).ok());
    got = dp.GetSettings();
    REQUIRE(got.ok());
    CHECK(got->gue_port == 7000);
  }

  SECTION("Backends: listed unless unused, checked, cleared with their counters") {
    REQUIRE(dp.SetBackend(3, Addr("198.18.1.3"), BALLAST_BACKEND_ACTIVE).ok());
    REQUIRE(dp.SetBackend(4, Addr("2001:db8:1::4"), BALLAST_BACKEND_DRAINING, 777).ok());
    auto bad = dp.SetBackend(5, Addr("198.18.1.5"), BALLAST_BACKEND_ACTIVE, 777);
    CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(bad.message()) ==
          "backend 198.18.1.5: a drain deadline needs state draining, not active");
    CHECK(dp.SetBackend(0, Addr("198.18.1.5"), BALLAST_BACKEND_ACTIVE).code() ==
          absl::StatusCode::kInvalidArgument);
    auto list = dp.Backends();
    REQUIRE(list.ok());
    REQUIRE(list->size() == 2);
    CHECK((*list)[0].id == 3);
    CHECK((*list)[1].addr == Addr("2001:db8:1::4"));
    CHECK((*list)[1].state == BALLAST_BACKEND_DRAINING);
    CHECK((*list)[1].drain_deadline_ns == 777);
    REQUIRE(dp.ClearBackend(3).ok());
    REQUIRE(dp.ClearBackend(4).ok());
    list = dp.Backends();
    REQUIRE(list.ok());
    CHECK(list->empty());
    auto st = dp.BackendStats(3);
    REQUIRE(st.ok());
    CHECK(st->packets == 0);
    auto lat = dp.BackendLatency(3);
    REQUIRE(lat.ok());
    for (uint64_t n : lat->handshake) CHECK(n == 0);
    for (uint64_t n : lat->first_response) CHECK(n == 0);
    CHECK(dp.BackendLatency(0).status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(dp.BackendLatency(BALLAST_MAX_BACKENDS).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }

  SECTION("Settings: a bad value is refused with the real message and changes nothing") {
    Settings s;
    s.src4 = Addr("198.18.0.1");
    s.src6 = Addr("2001:db8::1");
    REQUIRE(dp.SetSettings(s).ok());
    Settings bad = s;
    bad.syn_retry_ns = bad.syn_idle_ns;
    auto r = dp.SetSettings(bad);
    CHECK(r.code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(r.message()) ==
          "SYN retry age 5000000000 ns is not below the syn idle timeout 5000000000 ns");
    auto got = dp.GetSettings();
    REQUIRE(got.ok());
    CHECK(got->src4 == s.src4);
    CHECK(got->syn_retry_ns == s.syn_retry_ns);
    CHECK(got->icmp_too_big_burst == s.icmp_too_big_burst);
  }

  SECTION("QUIC-LB configurations and server IDs") { RunQuicContract(dp); }

  SECTION("Devices: a device that does not exist is NotFound, and nothing is attached") {
    auto r = dp.Attach("nosuchdev0", AttachMode::kAuto);
    CHECK(r.code() == absl::StatusCode::kNotFound);
    CHECK(std::string(r.message()) == "no network device \"nosuchdev0\" in this network namespace");
    CHECK(dp.AttachedMode("nosuchdev0").status().code() == absl::StatusCode::kNotFound);
  }

  SECTION("The flow maps exist, with a capacity; an empty table is walked to nothing") {
    for (const char* m : kFlowMaps) {
      auto cap = dp.MapCapacity(m);
      REQUIRE(cap.ok());
      CHECK(*cap > 0);
      size_t seen = 0;
      auto n =
          dp.ForEachFlowIn(m, 100, [&](const ballast_flow_key&, const ballast_flow&) { ++seen; });
      REQUIRE(n.ok());
      CHECK(*n == seen);
      CHECK(seen == 0);
    }
    CHECK(dp.MapCapacity("nosuchmap").status().code() == absl::StatusCode::kNotFound);
  }
}

TEST_CASE("The port's contract holds for the in-memory fake", "[port][fake]") {
  FakeDataplane dp;
  RunContract(dp);
}

TEST_CASE("The port's contract holds for the real data plane", "[port][bpf]") {
  testing::RequireRoot();
  Options o;
  o.pin_dir = "";
  o.flow_capacity = 4096;
  auto dp = Dataplane::Open(o);
  INFO(dp.status().ToString());
  REQUIRE(dp.ok());
  RunContract(**dp);
}

TEST_CASE("The fake fails the one call it is told to, then works again", "[port][fake]") {
  FakeDataplane dp;
  dp.FailNext("SetTable", absl::InternalError("injected"));
  const std::vector<uint32_t> table = {1, 1, 1};
  CHECK(dp.SetTable(1, table).message() == "injected");
  CHECK(dp.GetTable(1).status().code() == absl::StatusCode::kNotFound);
  CHECK(dp.SetTable(1, table).ok());
  CHECK(dp.Calls("SetTable") == 2);
}

}  // namespace
}  // namespace ballast::dataplane
