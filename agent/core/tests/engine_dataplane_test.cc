// RouterEngine over the real data plane (BPF maps; needs root, fails with
// the reason without it): start programs the maps, a restart adopts the
// pinned maps and removes strays, a status read's scan of a large flow
// table does not hold a change, teardown detaches and unpins. The engine's
// logic over the in-memory data plane is in engine_test.cc.
#include "agent/core/router_engine.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/core/tests/test_util.h"
#include "agent/dataplane/dataplane.h"

namespace ballast::core {
namespace {

using testing::DataplaneText;
using testing::Key;
using testing::MakeBackend;
using testing::RequireDataplaneMatchesState;
using testing::RequireTableMatchesState;
using testing::SmallConfig;
using testing::StartRealEngine;
using testing::TempDir;

const Actor kOp{"operator:test"};
const v1::VipKey kVip4 = Key("198.18.0.10", 80);
const v1::VipKey kVip6 = Key("2001:db8:10::10", 443);

// A pin directory under /sys/fs/bpf for one test, torn down at its end,
// pass or fail. Open() opens (or creates) a data plane pinned there.
struct TestPins {
  std::string dir;
  uint32_t flow_capacity = 4096;
  explicit TestPins(std::string_view name, uint32_t flows = 4096)
      : dir("/sys/fs/bpf/ballast-core-" + std::string(name) + "-" + std::to_string(getpid())),
        flow_capacity(flows) {}
  ~TestPins() {
    if (auto dp = dataplane::Dataplane::Open(Options()); dp.ok()) (void)(*dp)->Teardown();
  }
  dataplane::Options Options() const {
    dataplane::Options o;
    o.pin_dir = dir;
    o.flow_capacity = flow_capacity;
    return o;
  }
  std::unique_ptr<dataplane::Dataplane> Open() const {
    auto dp = dataplane::Dataplane::Open(Options());
    INFO(dp.status().ToString());
    REQUIRE(dp.ok());
    return std::move(*dp);
  }
};

TEST_CASE("Start programs the state: VIPs, markers, backends, tables, settings") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartRealEngine(dir, &clock, SmallConfig());
  const std::string text = DataplaneText(*e);
  CHECK_THAT(text, Catch::Contains("vip 198.18.0.10:80/tcp id=1 table_size=251"));
  CHECK_THAT(text, Catch::Contains("vip [2001:db8:10::10]:443/tcp id=2 table_size=251"));
  CHECK_THAT(text, Catch::Contains("marker 198.18.0.10\n"));
  CHECK_THAT(text, Catch::Contains("marker 2001:db8:10::10\n"));
  CHECK_THAT(text, Catch::Contains("backend 3 198.18.1.3 state=1 deadline_ms=0"));
  CHECK_THAT(text, Catch::Contains("settings src4=198.18.0.1 src6=2001:db8::1 policy=2 "
                                   "tcp_idle_ns=300000000000"));
  RequireTableMatchesState(*e, kVip4);
  RequireTableMatchesState(*e, kVip6);
  // Weights 1,1,2 over 251 slots: 63/63/125 (largest remainder).
  auto st = e->GetStatus();
  REQUIRE(st.ok());
  REQUIRE(st->vips(0).backends(2).table_slots() == 125);
  REQUIRE(st->config_generation() == 1);
  REQUIRE(st->verdicts().count("pass_not_vip") == 1);
}

TEST_CASE("global.source_v4_prefix reaches the data plane's maps") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  v1::Config c = SmallConfig();
  c.mutable_global()->set_source_v4_prefix("198.18.0.32/27");
  auto e = StartRealEngine(dir, &clock, c);
  CHECK_THAT(DataplaneText(*e),
             Catch::Contains("settings src4=198.18.0.1 src4_prefix=198.18.0.32/27 src6="));
}

// A VIP's `vips` value and its vip_refs copy, and the handshake settings,
// read from the maps themselves.
std::pair<ballast_vip_meta, ballast_vip_meta> VipMetas(const dataplane::Dataplane& dp,
                                                       const char* key_text) {
  auto key = dataplane::ParseVipKey(key_text);
  REQUIRE(key.ok());
  ballast_vip_key raw = {};
  std::memcpy(raw.addr, key->addr.bytes().data(), sizeof(raw.addr));
  raw.port = htons(key->port);
  raw.proto = key->proto;
  raw.family = key->addr.family();
  ballast_vip_meta meta = {};
  REQUIRE(bpf_map_lookup_elem(dp.map_fd("vips"), &raw, &meta) == 0);
  ballast_vip_ref ref = {};
  REQUIRE(bpf_map_lookup_elem(dp.map_fd("vip_refs"), &meta.vip_id, &ref) == 0);
  return {meta, ref.meta};
}

uint16_t GuePortInMap(const dataplane::Dataplane& dp) {
  ballast_handshake_settings hs = {};
  const uint32_t zero = 0;
  REQUIRE(bpf_map_lookup_elem(dp.map_fd("handshake_settings"), &zero, &hs) == 0);
  return hs.gue_port;
}

TEST_CASE("Vip.mode GUE and global.gue_port reach the maps; a restart fixes a changed mode") {
  testing::RequireRoot();
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  const TestPins pins("gue");
  v1::Config c = SmallConfig();
  c.mutable_vips(0)->set_mode(v1::GUE);
  {
    auto e = StartRealEngine(dir, &clock, c, pins.dir);
    auto opened = dataplane::Dataplane::OpenPinned(pins.dir);  // the engine's maps, read directly
    REQUIRE(opened.ok());
    const dataplane::Dataplane* dp = opened->get();
    auto [meta, ref] = VipMetas(*dp, "198.18.0.10:80/tcp");
    CHECK(meta.flags == BALLAST_VIP_F_GUE);
    CHECK(ref.flags == BALLAST_VIP_F_GUE);
    std::tie(meta, ref) = VipMetas(*dp, "[2001:db8:10::10]:443/tcp");
    CHECK(meta.flags == 0);
    CHECK(ref.flags == 0);
    CHECK(GuePortInMap(*dp) == BALLAST_GUE_PORT_DEFAULT);  // gue_port 0

    // Owned, then back to IP-in-IP: the flag goes, the owner's deadline stays.
    REQUIRE(e->SetVipOwnerDeadline(kVip4, 123'456'789).ok());
    c.mutable_vips(0)->set_mode(v1::ENCAP);
    REQUIRE(e->ApplyConfig(c, false, kOp).ok());
    std::tie(meta, ref) = VipMetas(*dp, "198.18.0.10:80/tcp");
    CHECK(meta.flags == BALLAST_VIP_F_OWNED);
    CHECK(ref.flags == BALLAST_VIP_F_OWNED);
    CHECK(meta.owner_deadline_ns == 123'456'789);
    CHECK(ref.owner_deadline_ns == 123'456'789);
    c.mutable_vips(0)->set_mode(v1::GUE);
    c.mutable_global()->set_gue_port(7000);
    REQUIRE(e->ApplyConfig(c, false, kOp).ok());
    std::tie(meta, ref) = VipMetas(*dp, "198.18.0.10:80/tcp");
    CHECK(meta.flags == (BALLAST_VIP_F_OWNED | BALLAST_VIP_F_GUE));
    CHECK(ref.flags == (BALLAST_VIP_F_OWNED | BALLAST_VIP_F_GUE));
    CHECK(GuePortInMap(*dp) == 7000);
    RequireDataplaneMatchesState(*e);
  }
  // While the agent is down the VIP's flag is lost (e.g. maps written in
  // the other mode): the next start re-programs that VIP alone.
  {
    auto dp = pins.Open();
    auto key = dataplane::ParseVipKey("198.18.0.10:80/tcp");
    REQUIRE(key.ok());
    REQUIRE(dp->UpsertVip(*key, VipMetas(*dp, "198.18.0.10:80/tcp").first.vip_id).ok());
    CHECK(VipMetas(*dp, "198.18.0.10:80/tcp").first.flags == BALLAST_VIP_F_OWNED);
  }
  {
    auto e = StartRealEngine(dir, &clock, v1::Config(), pins.dir);
    const ProgramStats st = e->Health().start_reconcile;
    CHECK(st.vips_upserted == 1);
    CHECK(st.tables_set == 0);
    CHECK(st.settings == 0);
    auto opened = dataplane::Dataplane::OpenPinned(pins.dir);
    REQUIRE(opened.ok());
    const dataplane::Dataplane* dp = opened->get();
    auto [meta, ref] = VipMetas(*dp, "198.18.0.10:80/tcp");
    CHECK(meta.flags == (BALLAST_VIP_F_OWNED | BALLAST_VIP_F_GUE));
    CHECK(ref.flags == (BALLAST_VIP_F_OWNED | BALLAST_VIP_F_GUE));
    CHECK(meta.owner_deadline_ns == 123'456'789);
    CHECK(GuePortInMap(*dp) == 7000);
    RequireDataplaneMatchesState(*e);
  }
}

TEST_CASE("Restart adopts the pinned maps: same ids, no table rewritten; strays removed") {
  testing::RequireRoot();
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  const TestPins pins("test");
  const std::string& pin = pins.dir;

  v1::State first;
  std::vector<uint32_t> t4;
  std::vector<uint32_t> t6;
  {
    auto e = StartRealEngine(dir, &clock, SmallConfig(), pin);
    REQUIRE(e->Health().start_reconcile.tables_set == 2);
    REQUIRE(e->SetWeight(kVip4, "198.18.1.2", 7, kOp).ok());
    first = e->State();
    t4 = *e->ReadTable(kVip4);
    t6 = *e->ReadTable(kVip6);
  }  // destroyed: like SIGTERM or a crash, nothing is detached or unpinned
  {
    auto e = StartRealEngine(dir, &clock, v1::Config(), pin);
    const EngineHealth h = e->Health();
    CHECK(h.start_reconcile.map_writes() == 0);
    REQUIRE(testing::Serialized(e->State()) == testing::Serialized(first));
    REQUIRE(*e->ReadTable(kVip4) == t4);
    REQUIRE(*e->ReadTable(kVip6) == t6);
  }
  // Something else wrote a VIP and a backend into the pinned maps while the
  // agent was down: the next start removes them and keeps the rest.
  {
    auto dp = pins.Open();
    auto stray = dataplane::ParseVipKey("198.18.0.77:53/udp");
    REQUIRE(stray.ok());
    REQUIRE(dp->UpsertVip(*stray, 900).ok());
    REQUIRE(dp->SetBackend(16000, *IpAddress::Parse("198.18.9.9"), BALLAST_BACKEND_ACTIVE).ok());
  }
  {
    auto e = StartRealEngine(dir, &clock, v1::Config(), pin);
    const ProgramStats st = e->Health().start_reconcile;
    CHECK(st.vips_deleted == 1);
    CHECK(st.backends_cleared == 1);
    CHECK(st.tables_set == 0);
    CHECK(st.vips_upserted == 0);
    const std::string text = DataplaneText(*e);
    CHECK_THAT(text, !Catch::Contains("198.18.0.77"));
    CHECK_THAT(text, !Catch::Contains("198.18.9.9"));
    REQUIRE(*e->ReadTable(kVip4) == t4);
  }
}

// The status read of a large connection table (a million entries take
// about half a second) must not hold the engine: a change made while a scan
// runs completes before the scan does. Shown by order of events, not by a
// time limit: the change must return while the scan is still running.
TEST_CASE("A change does not wait for a status read's flow scan") {
  testing::RequireRoot();
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  constexpr uint32_t kFlows = 600'000;
  const TestPins pins("scan", kFlows);
  EngineOptions eo;
  eo.state_file = dir.File("state.pb");
  eo.audit_log = dir.File("audit.jsonl");
  auto e = RouterEngine::Start(pins.Open(), eo, &clock, SmallConfig());
  REQUIRE(e.ok());
  auto tool = dataplane::Dataplane::OpenPinned(pins.dir);
  REQUIRE(tool.ok());
  {
    std::vector<ballast_flow_key> keys(kFlows);
    std::vector<ballast_flow> values(kFlows);
    for (uint32_t i = 0; i < kFlows; ++i) {
      ballast_flow_key& k = keys[i];
      k = {};
      const uint32_t client = htonl(0xc6130000u + i / 60000);  // 198.19.x.y
      std::memcpy(k.src, &client, 4);
      const uint32_t vip = htonl(0xc612000au);  // 198.18.0.10
      std::memcpy(k.dst, &vip, 4);
      k.sport = htons(static_cast<uint16_t>(1024 + i % 60000));
      k.dport = htons(80);
      k.proto = IPPROTO_TCP;
      k.family = BALLAST_FAMILY_V4;
      values[i] = {};
      values[i].backend_id = 1;
      values[i].state = BALLAST_FLOW_ESTABLISHED;
    }
    uint32_t n = kFlows;
    REQUIRE(bpf_map_update_batch((*tool)->map_fd("flows"), keys.data(), values.data(), &n,
                                 nullptr) == 0);
    REQUIRE(n == kFlows);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto st = (*e)->GetStatus();
  const auto idle_scan = std::chrono::steady_clock::now() - t0;
  REQUIRE(st.ok());
  REQUIRE(st->flows_read() >= kFlows * 99 / 100);  // the LRU may have kept a few out
  const auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count() / 1000.0;
  };
  // Not a time limit: the scan must be long enough for the order below to
  // say something.
  INFO("a status read of " << st->flows_read() << " flows took " << ms(idle_scan) << " ms");
  REQUIRE(idle_scan > std::chrono::milliseconds(50));

  std::atomic<bool> started{false}, done{false};
  std::thread reader([&] {
    started = true;
    auto s = (*e)->GetStatus();
    done = true;
    CHECK(s.ok());
  });
  while (!started) std::this_thread::yield();
  // Inside the scan (the locked part before it is microseconds).
  std::this_thread::sleep_for(idle_scan / 5);
  const bool scan_running_before = !done;
  const auto w0 = std::chrono::steady_clock::now();
  const absl::Status w = (*e)->SetWeight(kVip4, "198.18.1.1", 7, kOp);
  const auto took = std::chrono::steady_clock::now() - w0;
  const bool scan_running_after = !done;
  reader.join();
  INFO("the change took " << ms(took) << " ms while the scan ran");
  REQUIRE(w.ok());
  REQUIRE(scan_running_before);
  CHECK(scan_running_after);
}

TEST_CASE("Teardown detaches and unpins; afterwards changes are refused") {
  testing::RequireRoot();
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  const TestPins pins("test-td");  // removed by the teardown below unless it fails
  const std::string& pin = pins.dir;
  auto e = StartRealEngine(dir, &clock, SmallConfig(), pin);
  REQUIRE(access((pin + "/vips").c_str(), F_OK) == 0);
  REQUIRE(!e->ShutdownRequested());
  REQUIRE(e->Teardown(kOp).ok());
  REQUIRE(e->ShutdownRequested());
  REQUIRE(access(pin.c_str(), F_OK) != 0);
  REQUIRE(e->SetWeight(kVip4, "198.18.1.1", 3, kOp).code() ==
          absl::StatusCode::kFailedPrecondition);
  REQUIRE(e->Teardown(kOp).code() == absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ballast::core
