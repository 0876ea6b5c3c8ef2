// RouterEngine over the in-memory data plane (dataplane/fake_dataplane.h),
// no root: validation leaves everything untouched, dry-run diff equals the
// real apply, a failed programming step rolls back, drain -> evict at the
// deadline (fake clock), status flow counts, and the table the data plane
// holds after each change. The real data plane's part (start, pinned
// restart, teardown, a large flow scan) is in engine_dataplane_test.cc.
#include "agent/core/router_engine.h"
#include "agent/core/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "agent/core/diff.h"
#include "agent/core/ids.h"
#include "agent/core/names.h"
#include "agent/core/state_store.h"
#include "agent/core/tests/test_util.h"
#include "agent/core/validate.h"
#include "agent/dataplane/fake_dataplane.h"
#include "agent/maglev/maglev.h"

namespace ballast::core {
namespace {

using testing::DataplaneText;
using testing::Key;
using testing::MakeBackend;
using testing::RequireDataplaneMatchesState;
using testing::RequireTableMatchesState;
using testing::SmallConfig;
using testing::StartEngine;
using testing::TempDir;

const Actor kOp{"operator:test"};
const v1::VipKey kVip4 = Key("198.18.0.10", 80);
const v1::VipKey kVip6 = Key("2001:db8:10::10", 443);

struct BadRequest {
  const char* name;
  std::function<absl::Status(RouterEngine&)> call;
  // Optional: a valid change that sets the scene, made before the snapshot.
  std::function<void(RouterEngine&)> setup;
  absl::StatusCode code;
  const char* message;  // exact
};

TEST_CASE("Every bad request gets its error and changes nothing (state, file, data plane)") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, SmallConfig());
  using C = absl::StatusCode;
  auto apply = [](std::function<void(v1::Config&)> f) {
    return [f](RouterEngine& en) {
      v1::Config c = en.GetConfig();
      f(c);
      return en.ApplyConfig(c, false, kOp).status();
    };
  };
  v1::Vip new_vip;
  *new_vip.mutable_key() = Key("198.18.0.11", 80);
  new_vip.set_table_size(7);
  *new_vip.add_backends() = MakeBackend("198.18.2.1", 1);

  const std::vector<BadRequest> cases = {
      {"AddVip: address",
       [&](RouterEngine& en) {
         v1::Vip v = new_vip;
         v.mutable_key()->set_address("198.18.0.300");
         return en.AddVip(v, kOp);
       },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.300:80/tcp: key.address \"198.18.0.300\" is not an IPv4 or IPv6 address "
       "(e.g. 198.18.0.10 or 2001:db8::10)"},
      {"AddVip: protocol missing",
       [&](RouterEngine& en) {
         v1::Vip v = new_vip;
         v.mutable_key()->clear_protocol();
         return en.AddVip(v, kOp);
       },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.11:80/proto0: key.protocol required (TCP or UDP)"},
      {"AddVip: port",
       [&](RouterEngine& en) {
         v1::Vip v = new_vip;
         v.mutable_key()->set_port(65536);
         return en.AddVip(v, kOp);
       },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.11:65536/tcp: key.port 65536 is out of range 0..65535"},
      {"AddVip: table size not prime",
       [&](RouterEngine& en) {
         v1::Vip v = new_vip;
         v.set_table_size(1000);
         return en.AddVip(v, kOp);
       },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.11:80/tcp: table_size 1000 is not a prime (allowed: a prime in 7..1048573; "
       "0 = default 65537)"},
      {"AddVip: weight",
       [&](RouterEngine& en) {
         v1::Vip v = new_vip;
         v.mutable_backends(0)->set_weight(3000);
         return en.AddVip(v, kOp);
       },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.11:80/tcp backend 198.18.2.1: weight 3000 is out of range 0..1000"},
      {"AddVip: IPv6 VIP with an IPv4 backend",
       [&](RouterEngine& en) {
         v1::Vip v = new_vip;
         *v.mutable_key() = Key("2001:db8:10::11", 80);
         return en.AddVip(v, kOp);
       },
       nullptr, C::kInvalidArgument,
       "vip [2001:db8:10::11]:80/tcp backend 198.18.2.1: address 198.18.2.1 is IPv4 but VIP "
       "[2001:db8:10::11]:80/tcp is IPv6: the data plane cannot carry IPv6 in IPv4 (use an IPv6 "
       "backend address)"},
      {"AddVip: more positive-weight backends than slots",
       [&](RouterEngine& en) {
         v1::Vip v = new_vip;
         for (int i = 2; i <= 8; ++i)
           *v.add_backends() = MakeBackend("198.18.2." + std::to_string(i), 1);
         return en.AddVip(v, kOp);
       },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.11:80/tcp: backends 8 backends with a positive weight but the table has "
       "only 7 slots (table_size must be at least the number of such backends)"},
      {"AddVip: duplicate backend",
       [&](RouterEngine& en) {
         v1::Vip v = new_vip;
         *v.add_backends() = MakeBackend("198.18.2.1", 4);
         return en.AddVip(v, kOp);
       },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.11:80/tcp backend 198.18.2.1: address 198.18.2.1 is a duplicate of "
       "backends[0]"},
      {"AddVip: exists (spelled differently)",
       [&](RouterEngine& en) {
         v1::Vip v = new_vip;
         *v.mutable_key() = Key("2001:DB8:10:0::10", 443);
         *v.mutable_backends(0) = MakeBackend("2001:db8:1::7", 1);
         return en.AddVip(v, kOp);
       },
       nullptr, C::kAlreadyExists, "vip [2001:db8:10::10]:443/tcp already exists"},
      {"AddVip: IPv4 backend without source_v4",
       [&](RouterEngine& en) { return en.AddVip(new_vip, kOp); },
       [](RouterEngine& en) {
         v1::Config c = en.GetConfig();
         c.mutable_global()->clear_source_v4();
         c.mutable_vips()->DeleteSubrange(0, 1);
         REQUIRE(en.ApplyConfig(c, false, kOp).ok());  // allowed: no IPv4 backend left
       },
       C::kFailedPrecondition,
       "global.source_v4: required: backend 198.18.2.1 of vip 198.18.0.11:80/tcp is IPv4, and "
       "IPv4 encapsulation needs an outer source address of this router"},
      {"DeleteVip: unknown",
       [&](RouterEngine& en) { return en.DeleteVip(Key("198.18.0.99", 80), kOp); }, nullptr,
       C::kNotFound, "vip 198.18.0.99:80/tcp does not exist"},
      {"DeleteVip: bad key",
       [&](RouterEngine& en) {
         return en.DeleteVip(Key("198.18.0.10", 80, v1::PROTOCOL_UNSPECIFIED), kOp);
       },
       nullptr, C::kInvalidArgument, "key.protocol: required (TCP or UDP)"},
      {"AddBackend: unknown VIP",
       [&](RouterEngine& en) {
         return en.AddBackend(Key("198.18.0.99", 80), MakeBackend("198.18.1.9", 1), kOp);
       },
       nullptr, C::kNotFound, "vip 198.18.0.99:80/tcp does not exist"},
      {"AddBackend: exists",
       [&](RouterEngine& en) { return en.AddBackend(kVip4, MakeBackend("198.18.1.2", 5), kOp); },
       nullptr, C::kAlreadyExists, "vip 198.18.0.10:80/tcp already has backend 198.18.1.2"},
      {"AddBackend: weight",
       [&](RouterEngine& en) { return en.AddBackend(kVip4, MakeBackend("198.18.1.7", 3000), kOp); },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.10:80/tcp backend 198.18.1.7: weight 3000 is out of range 0..1000"},
      {"AddBackend: multicast address",
       [&](RouterEngine& en) { return en.AddBackend(kVip4, MakeBackend("224.0.0.5", 1), kOp); },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.10:80/tcp backend 224.0.0.5: address 224.0.0.5 is a multicast address"},
      {"AddBackend: probe",
       [&](RouterEngine& en) {
         v1::Backend b = MakeBackend("198.18.1.7", 1);
         b.mutable_probe()->set_interval_ms(70000);
         return en.AddBackend(kVip4, b, kOp);
       },
       nullptr, C::kInvalidArgument,
       "vip 198.18.0.10:80/tcp backend 198.18.1.7: probe.interval_ms 70000 is out of range "
       "50..60000 (0 = default 1000)"},
      {"AddBackend: more than the VIP's table has slots",
       [&](RouterEngine& en) { return en.AddBackend(kVip4, MakeBackend("198.18.1.8", 1), kOp); },
       [](RouterEngine& en) {
         v1::Config c = en.GetConfig();
         c.mutable_vips(0)->set_table_size(7);
         for (int i = 4; i <= 7; ++i) {
           *c.mutable_vips(0)->add_backends() = MakeBackend("198.18.1." + std::to_string(i), 1);
         }
         REQUIRE(en.ApplyConfig(c, false, kOp).ok());
       },
       C::kFailedPrecondition,
       "vip 198.18.0.10:80/tcp: backends 8 backends with a positive weight but the table has "
       "only 7 slots (table_size must be at least the number of such backends)"},
      {"SetWeight: out of range",
       [&](RouterEngine& en) { return en.SetWeight(kVip4, "198.18.1.2", 1001, kOp); }, nullptr,
       C::kInvalidArgument,
       "vip 198.18.0.10:80/tcp backend 198.18.1.2: weight 1001 is out of range 0..1000"},
      {"SetWeight: unknown backend",
       [&](RouterEngine& en) { return en.SetWeight(kVip4, "198.18.1.99", 1, kOp); }, nullptr,
       C::kNotFound, "vip 198.18.0.10:80/tcp has no backend 198.18.1.99"},
      {"SetWeight: bad address",
       [&](RouterEngine& en) { return en.SetWeight(kVip4, "198.18.1", 1, kOp); }, nullptr,
       C::kInvalidArgument,
       "address: \"198.18.1\" is not an IPv4 or IPv6 address (e.g. 198.18.0.10 or 2001:db8::10)"},
      {"DeleteBackend: unknown",
       [&](RouterEngine& en) { return en.DeleteBackend(kVip6, "2001:db8:1::9", kOp); }, nullptr,
       C::kNotFound, "vip [2001:db8:10::10]:443/tcp has no backend 2001:db8:1::9"},
      {"Drain: deadline out of range",
       [&](RouterEngine& en) { return en.Drain(kVip4, "198.18.1.2", 90000, kOp); }, nullptr,
       C::kInvalidArgument,
       "deadline_s: 90000 is out of range 1..86400 (0 = the global drain_timeout_s)"},
      {"Drain: unknown backend",
       [&](RouterEngine& en) { return en.Drain(kVip4, "198.18.1.9", 10, kOp); }, nullptr,
       C::kNotFound, "vip 198.18.0.10:80/tcp has no backend 198.18.1.9"},
      {"Undrain: not draining",
       [&](RouterEngine& en) { return en.Undrain(kVip4, "198.18.1.2", kOp); }, nullptr,
       C::kFailedPrecondition,
       "vip 198.18.0.10:80/tcp backend 198.18.1.2 is not draining or evicted"},
      {"Release: not pinned",
       [&](RouterEngine& en) { return en.Release(kVip4, "198.18.1.2", kOp); }, nullptr,
       C::kFailedPrecondition, "vip 198.18.0.10:80/tcp backend 198.18.1.2 is not pinned"},
      {"ApplyConfig: weight",
       apply([](v1::Config& c) { c.mutable_vips(0)->mutable_backends(2)->set_weight(3000); }),
       nullptr, C::kInvalidArgument, "vips[0].backends[2].weight: 3000 is out of range 0..1000"},
      {"ApplyConfig: duplicate VIP", apply([](v1::Config& c) { *c.add_vips() = c.vips(1); }),
       nullptr, C::kInvalidArgument,
       "vips[2].key: [2001:db8:10::10]:443/tcp is a duplicate of vips[1]"},
      {"ApplyConfig: IPv6 VIP with IPv4 backend", apply([](v1::Config& c) {
         *c.mutable_vips(1)->add_backends() = MakeBackend("198.18.1.7", 1);
       }),
       nullptr, C::kInvalidArgument,
       "vips[1].backends[2].address: 198.18.1.7 is IPv4 but VIP [2001:db8:10::10]:443/tcp is "
       "IPv6: the data plane cannot carry IPv6 in IPv4 (use an IPv6 backend address)"},
      {"ApplyConfig: timeout",
       apply([](v1::Config& c) { c.mutable_global()->mutable_timeouts()->set_linger_s(601); }),
       nullptr, C::kInvalidArgument,
       "global.timeouts.linger_s: 601 is out of range 1..600 (0 = default 10)"},
      {"ApplyConfig: too many VIPs", apply([](v1::Config& c) {
         for (int i = 0; i < 1022; ++i) {
           *c.add_vips()->mutable_key() =
               Key("198.19." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), 80);
         }
       }),
       nullptr, C::kInvalidArgument, "vips: 1024 VIPs; at most 1023"},
      {"ApplyConfig: missing source_v6",
       apply([](v1::Config& c) { c.mutable_global()->clear_source_v6(); }), nullptr,
       C::kInvalidArgument,
       "global.source_v6: required: backend 2001:db8:1::1 of vip [2001:db8:10::10]:443/tcp is "
       "IPv6, and IPv6 encapsulation needs an outer source address of this router"},
  };

  for (const BadRequest& c : cases) {
    SECTION(c.name) {
      if (c.setup) c.setup(*e);
      const std::string state_before = testing::Serialized(e->State());
      StateStore store(dir.File("state.pb"));
      auto loaded_before = store.Load();
      REQUIRE(loaded_before.ok());
      const std::string file_before = testing::Serialized(*loaded_before);
      const std::string dp_before = DataplaneText(*e);
      const absl::Status s = c.call(*e);
      CHECK(s.code() == c.code);
      CHECK(std::string(s.message()) == c.message);
      CHECK(testing::Serialized(e->State()) == state_before);
      auto loaded = store.Load();
      REQUIRE(loaded.ok());
      CHECK(testing::Serialized(*loaded) == file_before);
      CHECK(DataplaneText(*e) == dp_before);
    }
  }
}

TEST_CASE("ApplyConfig --dry-run returns exactly the diff the real apply then makes") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, SmallConfig());
  const std::string dp0 = DataplaneText(*e);
  const v1::State s0 = e->State();

  v1::Config next = SmallConfig();
  next.mutable_global()->mutable_timeouts()->set_tcp_idle_s(600);
  next.mutable_vips(0)->mutable_backends(1)->set_weight(3);
  next.mutable_vips(0)->mutable_backends()->DeleteSubrange(0, 1);
  *next.mutable_vips(0)->add_backends() = MakeBackend("198.18.1.9", 2);
  next.mutable_vips(1)->set_table_size(257);
  v1::Vip* n = next.add_vips();
  *n->mutable_key() = Key("198.18.0.12", 0, v1::UDP);
  n->set_table_size(7);
  *n->add_backends() = MakeBackend("198.18.3.1", 1);

  auto dry = e->ApplyConfig(next, true, kOp);
  REQUIRE(dry.ok());
  REQUIRE(dry->generation() == s0.generation());
  REQUIRE(testing::Serialized(e->State()) == testing::Serialized(s0));
  REQUIRE(DataplaneText(*e) == dp0);
  REQUIRE(dry->diff_size() == 9);  // "global.timeouts unset -> set" too

  auto real = e->ApplyConfig(next, false, kOp);
  REQUIRE(real.ok());
  REQUIRE(real->generation() == s0.generation() + 1);
  REQUIRE(std::vector<std::string>(dry->diff().begin(), dry->diff().end()) ==
          std::vector<std::string>(real->diff().begin(), real->diff().end()));
  // What was applied is what was asked for, and the data plane follows.
  REQUIRE(DiffConfig(e->GetConfig(), CanonicalConfig(next)).empty());
  RequireTableMatchesState(*e, kVip4);
  RequireTableMatchesState(*e, kVip6);
  RequireTableMatchesState(*e, Key("198.18.0.12", 0, v1::UDP));
  CHECK_THAT(DataplaneText(*e), Catch::Contains("tcp_idle_ns=600000000000"));
  CHECK_THAT(DataplaneText(*e), Catch::Contains("marker 198.18.0.12"));
  CHECK_THAT(DataplaneText(*e),
             Catch::Contains("vip [2001:db8:10::10]:443/tcp id=2 table_size=257"));

  // Applying it again changes nothing and does not bump the generation.
  auto again = e->ApplyConfig(next, false, kOp);
  REQUIRE(again.ok());
  REQUIRE(again->diff().empty());
  REQUIRE(again->generation() == s0.generation() + 1);

  // Back to the start: the dry run again predicts the apply.
  auto dry2 = e->ApplyConfig(SmallConfig(), true, kOp);
  auto real2 = e->ApplyConfig(SmallConfig(), false, kOp);
  REQUIRE(dry2.ok());
  REQUIRE(real2.ok());
  REQUIRE(std::vector<std::string>(dry2->diff().begin(), dry2->diff().end()) ==
          std::vector<std::string>(real2->diff().begin(), real2->diff().end()));
  const std::string dp_back = DataplaneText(*e);
  CHECK_THAT(dp_back, !Catch::Contains("198.18.0.12"));
  // Removed backends' ids were cleared; 198.18.1.1 came back with a fresh id
  // (its old id 1 is not reused at once: flows may still name it).
  CHECK_THAT(dp_back, !Catch::Contains("backend 1 "));
  CHECK_THAT(dp_back, !Catch::Contains("backend 6 "));
  CHECK_THAT(dp_back, !Catch::Contains("backend 7 "));
  CHECK_THAT(dp_back, Catch::Contains("backend 8 198.18.1.1 state=1"));
  RequireTableMatchesState(*e, kVip4);
}

TEST_CASE("A programming failure restores the previous state, file and maps") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, SmallConfig());
  const std::string state_before = testing::Serialized(e->State());
  const std::string dp_before = DataplaneText(*e);
  // A valid config whose last step, attaching to the device, fails for real:
  // the weight change and the new VIP were already written to the maps.
  v1::Config c = SmallConfig();
  c.mutable_global()->set_interface("nosuchdev0");
  c.mutable_vips(0)->mutable_backends(0)->set_weight(9);
  v1::Vip* n = c.add_vips();
  *n->mutable_key() = Key("198.18.0.20", 53, v1::UDP);
  n->set_table_size(7);
  *n->add_backends() = MakeBackend("198.18.4.1", 1);
  auto r = e->ApplyConfig(c, false, kOp);
  REQUIRE(!r.ok());
  CHECK((r.status().code() == absl::StatusCode::kInternal ||
         r.status().code() == absl::StatusCode::kFailedPrecondition));
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("nosuchdev0"));
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("the previous state was restored"));
  CHECK(testing::Serialized(e->State()) == state_before);
  StateStore store(dir.File("state.pb"));
  auto loaded = store.Load();
  REQUIRE(loaded.ok());
  CHECK(testing::Serialized(*loaded) == state_before);
  CHECK(DataplaneText(*e) == dp_before);
  CHECK(e->Health().map_update_errors == 1);
  // And the engine still works.
  REQUIRE(e->SetWeight(kVip4, "198.18.1.1", 4, kOp).ok());
  RequireDataplaneMatchesState(*e);
}

// Each kind of map write failing in turn, in the middle of one change that
// needs them all (new settings, a VIP added, one removed, a backend added,
// one cleared, tables rewritten): every time, the state, the file and the
// maps are what they were, and the same change then goes through.
TEST_CASE("A failure at any programming step restores the state, file and maps") {
  const char* const steps[] = {"SetSettings", "UpsertVip",    "DeleteVip",
                               "SetBackend",  "ClearBackend", "SetTable"};
  for (const char* step : steps) {
    DYNAMIC_SECTION("failing " << step) {
      TempDir dir;
      FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
      dataplane::FakeDataplane* dp = nullptr;
      auto e = StartEngine(dir, &clock, SmallConfig(), /*vip_ownership=*/false, &dp);
      const std::string state_before = testing::Serialized(e->State());
      const std::string dp_before = DataplaneText(*e);
      const uint64_t errors_before = e->Health().map_update_errors;
      v1::Config c = SmallConfig();
      c.mutable_global()->mutable_timeouts()->set_tcp_idle_s(120);
      c.mutable_vips(0)->mutable_backends()->RemoveLast();  // 198.18.1.3: cleared
      *c.mutable_vips(0)->add_backends() = MakeBackend("198.18.1.9", 2);
      c.mutable_vips()->DeleteSubrange(1, 1);  // the IPv6 VIP: deleted
      v1::Vip* n = c.add_vips();
      *n->mutable_key() = Key("198.18.0.20", 53, v1::UDP);
      n->set_table_size(7);
      *n->add_backends() = MakeBackend("198.18.4.1", 1);
      dp->FailNext(step, absl::InternalError(absl::StrCat("injected failure of ", step)));
      auto r = e->ApplyConfig(c, false, kOp);
      REQUIRE(!r.ok());
      CHECK_THAT(std::string(r.status().message()),
                 Catch::Contains(absl::StrCat("injected failure of ", step)));
      CHECK_THAT(std::string(r.status().message()),
                 Catch::Contains("the previous state was restored"));
      CHECK(testing::Serialized(e->State()) == state_before);
      StateStore store(dir.File("state.pb"));
      auto loaded = store.Load();
      REQUIRE(loaded.ok());
      CHECK(testing::Serialized(*loaded) == state_before);
      CHECK(DataplaneText(*e) == dp_before);
      CHECK(e->Health().map_update_errors == errors_before + 1);
      REQUIRE(e->ApplyConfig(c, false, kOp).ok());
      RequireDataplaneMatchesState(*e);
    }
  }
}

// A change whose audit record cannot be written (disk full; here the file
// size limit) stands, and says so: a counter, the error, the status.
TEST_CASE("A change whose audit record is lost is applied and reported") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, SmallConfig());
  // The limit applies to every file: the audit log is made longer than the
  // state file, so the state's write fits under it and the record does not.
  struct stat audit = {}, state = {};
  for (int i = 0; i < 200; ++i) {
    e->FlushAudit();
    REQUIRE(stat(dir.File("audit.jsonl").c_str(), &audit) == 0);
    REQUIRE(stat(dir.File("state.pb").c_str(), &state) == 0);
    if (audit.st_size > 2 * state.st_size) break;
    REQUIRE(e->SetWeight(kVip4, "198.18.1.1", 1 + i % 2, kOp).ok());
  }
  REQUIRE(audit.st_size > 2 * state.st_size);
  struct rlimit old = {};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = static_cast<rlim_t>(audit.st_size);  // no room for one more record
  REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  const absl::Status w = e->SetWeight(kVip4, "198.18.1.1", 5, kOp);
  e->FlushAudit();  // the writer thread's write fails under the limit
  REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
  signal(SIGXFSZ, old_handler);
  REQUIRE(w.ok());
  RequireTableMatchesState(*e, kVip4);
  CHECK(e->Health().audit_append_failures == 1);
  CHECK_THAT(e->Health().last_audit_error, Catch::Contains("audit.jsonl"));
  auto status = e->GetStatus();
  REQUIRE(status.ok());
  CHECK(status->audit_append_failures() == 1);
  CHECK_FALSE(status->last_audit_error().empty());
  // The next change is audited again.
  REQUIRE(e->SetWeight(kVip4, "198.18.1.1", 6, kOp).ok());
  e->FlushAudit();
  CHECK(e->Health().audit_append_failures == 1);
  CHECK(e->Health().audit_records_dropped == 0);
}

TEST_CASE("Single changes rewrite only the tables that change, and audit and emit events") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, SmallConfig());
  std::vector<v1::Event> events;
  const uint64_t h = e->Subscribe([&](const v1::Event& ev) { events.push_back(ev); });
  auto t6 = e->ReadTable(kVip6);
  REQUIRE(t6.ok());

  REQUIRE(e->SetWeight(kVip4, "198.18.1.1", 5, kOp).ok());
  RequireTableMatchesState(*e, kVip4);
  RequireDataplaneMatchesState(*e);
  REQUIRE(*e->ReadTable(kVip6) == *t6);
  REQUIRE(e->AddBackend(kVip4, MakeBackend("198.18.1.4", 1), kOp).ok());
  RequireTableMatchesState(*e, kVip4);
  RequireDataplaneMatchesState(*e);
  REQUIRE(e->DeleteBackend(kVip4, "198.18.1.2", kOp).ok());
  RequireTableMatchesState(*e, kVip4);
  RequireDataplaneMatchesState(*e);
  REQUIRE(e->Drain(kVip6, "2001:db8:1::2", 20, kOp).ok());
  RequireDataplaneMatchesState(*e);
  REQUIRE(e->Undrain(kVip6, "2001:db8:1::2", kOp).ok());
  RequireDataplaneMatchesState(*e);
  v1::Vip v;
  *v.mutable_key() = Key("198.18.0.11", 8080, v1::UDP);
  v.set_table_size(13);
  *v.add_backends() = MakeBackend("2001:db8:1::5", 1);  // IPv4 VIP, IPv6 backend: fine
  REQUIRE(e->AddVip(v, kOp).ok());
  RequireTableMatchesState(*e, v.key());
  RequireDataplaneMatchesState(*e);
  REQUIRE(e->DeleteVip(kVip6, kOp).ok());
  RequireDataplaneMatchesState(*e);
  REQUIRE(e->ReadTable(kVip6).status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(DataplaneText(*e), !Catch::Contains("2001:db8:10::10"));
  // Same weight again: a no-op, no new generation.
  const uint64_t gen = e->State().generation();
  REQUIRE(e->SetWeight(kVip4, "198.18.1.1", 5, kOp).ok());
  REQUIRE(e->State().generation() == gen);
  REQUIRE(gen == 8);

  e->Unsubscribe(h);
  REQUIRE(e->SetWeight(kVip4, "198.18.1.1", 6, kOp).ok());
  std::vector<std::string> kinds;
  for (const v1::Event& ev : events) kinds.push_back(ev.kind());
  REQUIRE(kinds == std::vector<std::string>{"weight_changed", "backend_added", "backend_deleted",
                                            "backend_drained", "backend_undrained", "vip_added",
                                            "vip_deleted", "weight_changed"});
  REQUIRE(events[0].message() == "weight 1 -> 5");
  REQUIRE(events[0].generation() == 2);

  auto audit = e->QueryAudit(0, 0);
  REQUIRE(audit.ok());
  REQUIRE(audit->size() == 9);
  REQUIRE((*audit)[0].action() == "set_weight");
  REQUIRE((*audit)[0].actor() == "operator:test");
  REQUIRE((*audit)[0].result() == "ok");
  REQUIRE_THAT((*audit)[0].inputs_json(), Catch::Contains("\"weight\":5"));
  // A rejected request is audited with its error.
  REQUIRE(!e->SetWeight(kVip4, "198.18.1.1", 5000, kOp).ok());
  audit = e->QueryAudit(0, 0);
  REQUIRE(audit->back().result().find("INVALID_ARGUMENT") == 0);
}

TEST_CASE("A VIP named in another spelling is the same VIP: parsed once, compared as a key") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  auto e = StartEngine(dir, &clock, SmallConfig());
  const v1::VipKey other = Key("2001:DB8:10:0::10", 443);  // kVip6 spelled otherwise
  auto t6 = e->ReadTable(other);
  REQUIRE(t6.ok());
  REQUIRE(*t6 == *e->ReadTable(kVip6));
  REQUIRE(e->SetWeight(other, "2001:db8:1::1", 7, kOp).ok());
  RequireTableMatchesState(*e, kVip6);
  RequireDataplaneMatchesState(*e);
  v1::ListFlowsRequest fr;
  *fr.mutable_vip() = other;
  REQUIRE(e->ListFlows(fr).ok());
  // The status shows the VIP's table and health entries under its one key.
  auto st = e->GetStatus();
  REQUIRE(st.ok());
  int found = 0;
  for (const v1::VipStatus& vs : st->vips()) {
    if (vs.key().address() != "2001:db8:10::10") continue;
    ++found;
    for (const v1::BackendStatus& b : vs.backends()) CHECK(b.table_slots() > 0);
  }
  CHECK(found == 1);
  REQUIRE(e->DeleteVip(other, kOp).ok());
  REQUIRE(e->ReadTable(kVip6).status().code() == absl::StatusCode::kNotFound);
  RequireDataplaneMatchesState(*e);
  CHECK(e->DeleteVip(other, kOp).code() == absl::StatusCode::kNotFound);
}

TEST_CASE("Drain: weight 0 now, DRAINING with the deadline, evicted by Tick at the deadline") {
  TempDir dir;
  const int64_t t0 = 1'700'000'000'000;
  const uint64_t m0 = 5'000'000'000'000;
  FakeClock clock(t0, m0);
  auto e = StartEngine(dir, &clock, SmallConfig());
  std::vector<std::string> kinds;
  e->Subscribe([&](const v1::Event& ev) { kinds.push_back(ev.kind()); });
  const uint32_t id = BackendIdOf(e->State(), kVip4, "198.18.1.3");

  REQUIRE(e->Drain(kVip4, "198.18.1.3", 30, kOp).ok());
  RequireTableMatchesState(*e, kVip4);
  auto st = e->GetStatus();
  REQUIRE(st.ok());
  const v1::BackendStatus& b = st->vips(0).backends(2);
  REQUIRE(b.state() == "draining");
  REQUIRE(b.nominal_weight() == 2);
  REQUIRE(b.effective_weight() == 0);
  REQUIRE(b.table_slots() == 0);
  REQUIRE(b.drain_deadline_unix_ms() == t0 + 30'000);
  // The map holds DRAINING with the deadline on the data plane's clock.
  auto img = e->ReadDataplane();
  REQUIRE(img.ok());
  REQUIRE(img->backends.at(id).state == BALLAST_BACKEND_DRAINING);
  REQUIRE(img->backends.at(id).drain_deadline_unix_ms == t0 + 30'000);
  // Re-draining an evicted backend is refused later; draining again now
  // moves the deadline.
  clock.AdvanceMs(29'999);
  auto n = e->Tick();
  REQUIRE(n.ok());
  REQUIRE(*n == 0);
  REQUIRE(e->GetStatus()->vips(0).backends(2).state() == "draining");

  clock.AdvanceMs(1);
  n = e->Tick();
  REQUIRE(n.ok());
  REQUIRE(*n == 1);
  st = e->GetStatus();
  REQUIRE(st->vips(0).backends(2).state() == "evicted");
  REQUIRE(st->vips(0).backends(2).effective_weight() == 0);
  img = e->ReadDataplane();
  REQUIRE(img->backends.at(id).state == BALLAST_BACKEND_EVICTED);
  RequireTableMatchesState(*e, kVip4);
  REQUIRE(e->Health().evictions == 1);
  REQUIRE(*e->Tick() == 0);  // only once

  auto audit = e->QueryAudit(0, 0);
  REQUIRE(audit.ok());
  REQUIRE(audit->back().action() == "evict");
  REQUIRE(audit->back().actor() == "automation");
  REQUIRE(kinds == std::vector<std::string>{"backend_drained", "backend_evicted"});

  REQUIRE(e->Drain(kVip4, "198.18.1.3", 30, kOp).code() == absl::StatusCode::kFailedPrecondition);
  // Undrain brings the nominal weight back and the map state to ACTIVE.
  REQUIRE(e->Undrain(kVip4, "198.18.1.3", kOp).ok());
  REQUIRE(e->GetStatus()->vips(0).backends(2).effective_weight() == 2);
  REQUIRE(e->ReadDataplane()->backends.at(id).state == BALLAST_BACKEND_ACTIVE);
  RequireTableMatchesState(*e, kVip4);
  REQUIRE(e->State().overrides().empty());
}

TEST_CASE("Drain with deadline 0 uses global.drain_timeout_s; the drain survives a restart") {
  TempDir dir;
  const int64_t t0 = 1'700'000'000'000;
  FakeClock clock(t0, 5'000'000'000'000);
  v1::Config c = SmallConfig();
  c.mutable_global()->set_drain_timeout_s(120);
  {
    auto e = StartEngine(dir, &clock, c);
    REQUIRE(e->Drain(kVip6, "2001:db8:1::2", 0, kOp).ok());
    REQUIRE(e->GetStatus()->vips(1).backends(1).drain_deadline_unix_ms() == t0 + 120'000);
  }
  clock.AdvanceMs(60'000);
  auto e = StartEngine(dir, &clock, SmallConfig());  // state file wins over `initial`
  REQUIRE(e->GetConfig().global().drain_timeout_s() == 120);
  REQUIRE(e->GetStatus()->vips(1).backends(1).state() == "draining");
  clock.AdvanceMs(60'000);
  REQUIRE(*e->Tick() == 1);
  REQUIRE(e->GetStatus()->vips(1).backends(1).state() == "evicted");
}

TEST_CASE("Status counts each backend's live flows; a read stopped at the limit says so") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  EngineOptions eo;
  eo.state_file = dir.File("state.pb");
  eo.audit_log = dir.File("audit.jsonl");
  eo.flow_scan_limit = 10;
  auto owned = std::make_unique<dataplane::FakeDataplane>();
  dataplane::FakeDataplane& dp = *owned;
  auto e = RouterEngine::Start(std::move(owned), eo, &clock, SmallConfig());
  REQUIRE(e.ok());
  auto st = (*e)->GetStatus();
  REQUIRE(st.ok());
  REQUIRE(st->vips(0).backends_size() >= 2);
  const uint32_t b0 = st->vips(0).backends(0).backend_id();
  const uint32_t b1 = st->vips(0).backends(1).backend_id();
  CHECK(st->flows_read() == 0);
  CHECK_FALSE(st->flows_partial());

  // Flows as the program records them: live ones (seen at the engine's
  // monotonic now) and expired ones (last seen at 0, beyond tcp_idle).
  uint16_t port = 30000;
  auto add = [&](uint32_t backend, uint64_t last_seen_ns) {
    ballast_flow_key k = {};
    const uint32_t client = htonl(0xc6120101u);  // 198.18.1.1
    std::memcpy(k.src, &client, 4);
    const uint32_t vip = htonl(0xc612000au);  // 198.18.0.10
    std::memcpy(k.dst, &vip, 4);
    k.sport = htons(port++);
    k.dport = htons(80);
    k.proto = IPPROTO_TCP;
    k.family = BALLAST_FAMILY_V4;
    ballast_flow f = {};
    f.backend_id = backend;
    f.state = BALLAST_FLOW_ESTABLISHED;
    f.last_seen_ns = last_seen_ns;
    REQUIRE(dp.AddFlow("flows", k, f).ok());
  };
  const uint64_t now_ns = clock.NowMonotonicNs();
  for (int i = 0; i < 5; ++i) add(b0, now_ns);
  for (int i = 0; i < 2; ++i) add(b1, now_ns);
  add(b1, 0);  // expired
  st = (*e)->GetStatus();
  REQUIRE(st.ok());
  CHECK(st->vips(0).backends(0).flows() == 5);
  CHECK(st->vips(0).backends(1).flows() == 2);
  CHECK(st->flows_read() == 8);
  CHECK_FALSE(st->flows_partial());
  // Each flow map's fill: entries read (the expired one too: it takes room
  // until evicted) against its capacity.
  REQUIRE(st->flow_tables_size() == 3);
  CHECK(st->flow_tables(0).map() == "flows");
  CHECK(st->flow_tables(0).entries() == 8);
  CHECK(st->flow_tables(0).capacity() == 4096);
  CHECK(st->flow_tables(1).map() == "adopted_flows");
  CHECK(st->flow_tables(1).entries() == 0);
  CHECK(st->flow_tables(2).map() == "flows_udp");
  CHECK(st->flow_tables(2).capacity() == 4096);
  const std::string metrics = RenderMetrics(&*st, (*e)->Health(), nullptr);
  CHECK_THAT(metrics, Catch::Contains("ballast_flow_table_entries{table=\"flows\"} 8\n"));
  CHECK_THAT(metrics, Catch::Contains("ballast_flow_table_capacity{table=\"flows_udp\"} "));

  // Past the limit (10 here): the counts are lower bounds, and say so.
  for (int i = 0; i < 4; ++i) add(b0, now_ns);
  st = (*e)->GetStatus();
  REQUIRE(st.ok());
  CHECK(st->flows_read() == 10);
  CHECK(st->flows_partial());
  CHECK(st->vips(0).backends(0).flows() + st->vips(0).backends(1).flows() <= 10);
}

TEST_CASE("A corrupt state file stops the start; nothing is reset") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  { auto e = StartEngine(dir, &clock, SmallConfig()); }
  {
    FILE* f = fopen(dir.File("state.pb").c_str(), "r+b");
    REQUIRE(f != nullptr);
    fseek(f, 40, SEEK_SET);
    fputc('X', f);
    fclose(f);
  }
  EngineOptions eo;
  eo.state_file = dir.File("state.pb");
  eo.audit_log = dir.File("audit.jsonl");
  auto e =
      RouterEngine::Start(std::make_unique<dataplane::FakeDataplane>(), eo, &clock, SmallConfig());
  REQUIRE(e.status().code() == absl::StatusCode::kDataLoss);
  REQUIRE_THAT(std::string(e.status().message()), Catch::Contains("checksum mismatch"));
}

}  // namespace
}  // namespace ballast::core
