// The flow hash seed (agent/core/flow_hash_seed.h): drawn with the first
// state, kept by every commit, programmed into the data plane, rotated by
// the operator with the old seed kept as the previous one, and never put in
// an audit record.
#include "agent/core/flow_hash_seed.h"

#include <cstdio>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "agent/core/agent_config.h"
#include "agent/core/file_store.h"
#include "agent/core/validate.h"
#include "agent/core/tests/test_util.h"
#include "ballast_flow_hash.h"

namespace ballast::core {
namespace {

using testing::Key;
using testing::SmallConfig;
using testing::StartEngine;
using testing::TempDir;

const Actor kOp{"operator:test"};

dataplane::HashSeed Words(const google::protobuf::RepeatedField<uint32_t>& w) {
  REQUIRE(w.size() == 3);
  return {w.Get(0), w.Get(1), w.Get(2)};
}

dataplane::HashSeed PublicWords() {
  const ballast_hash_seed s = BALLAST_PUBLIC_SEED_INIT;
  return std::to_array(s.w);
}

// Seeds 1,2,3 then 4,5,6 ... : one source per engine, so tests can name them.
struct CountingSource {
  uint32_t next = 1;
  SeedSource source() {
    return [this]() -> absl::StatusOr<dataplane::HashSeed> {
      const dataplane::HashSeed s = {next, next + 1, next + 2};
      next += 3;
      return s;
    };
  }
};

struct Router {
  Router() {
    EngineOptions o;
    o.seed_source = seeds.source();
    e = StartEngine(dir, &clock, SmallConfig(), o, &dp);
    REQUIRE(e != nullptr);
  }
  dataplane::FlowHashSeed Programmed() const {
    auto s = dp->GetSettings();
    REQUIRE(s.ok());
    return s->flow_hash_seed;
  }
  CountingSource seeds;
  TempDir dir;
  FakeClock clock{1'700'000'000'000, 5'000'000'000'000};
  dataplane::FakeDataplane* dp = nullptr;
  std::unique_ptr<RouterEngine> e;
};

TEST_CASE("Seeds: the first, a rotation, the public one, and what the data plane gets",
          "[flow_hash_seed]") {
  const v1::FlowHashSeed first = FirstFlowHashSeed({7, 8, 9}, 1000);
  CHECK(Words(first.current()) == dataplane::HashSeed{7, 8, 9});
  CHECK(first.previous_size() == 0);
  CHECK(first.rotated_unix_ms() == 1000);
  CHECK_FALSE(SeedIsPublic(first));
  CHECK(DataplaneSeedOf(first) == dataplane::FlowHashSeed{.current = {{7, 8, 9}}});

  const v1::FlowHashSeed second = RotatedFlowHashSeed(first, {10, 11, 12}, 2000);
  CHECK(Words(second.current()) == dataplane::HashSeed{10, 11, 12});
  CHECK(Words(second.previous()) == dataplane::HashSeed{7, 8, 9});
  CHECK(second.rotated_unix_ms() == 2000);
  // A third forgets the first.
  const v1::FlowHashSeed third = RotatedFlowHashSeed(second, {13, 14, 15}, 3000);
  CHECK(Words(third.previous()) == dataplane::HashSeed{10, 11, 12});

  // A state of an earlier build: no seed is the public seed.
  const v1::FlowHashSeed none;
  CHECK(SeedIsPublic(none));
  CHECK(DataplaneSeedOf(none) == dataplane::FlowHashSeed{});
  const v1::FlowHashSeed from_public = RotatedFlowHashSeed(none, {1, 2, 3}, 4000);
  CHECK(Words(from_public.previous()) == PublicWords());

  // Anything but three words (or none) is refused, naming the field.
  v1::FlowHashSeed bad = first;
  bad.add_current(1);
  const absl::Status s = ValidateFlowHashSeed(bad);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()).find("flow_hash_seed.current") != std::string::npos);
  v1::FlowHashSeed orphan;
  orphan.add_previous(1);
  orphan.add_previous(2);
  orphan.add_previous(3);
  CHECK_FALSE(ValidateFlowHashSeed(orphan).ok());
}

TEST_CASE("A first state gets a secret seed: random, programmed, kept by every change",
          "[flow_hash_seed]") {
  Router r;
  const v1::State st = r.e->State();
  CHECK(Words(st.flow_hash_seed().current()) == dataplane::HashSeed{1, 2, 3});
  CHECK(r.Programmed() == dataplane::FlowHashSeed{.current = {{1, 2, 3}}});
  // A change of something else keeps it (in the state and in the map).
  REQUIRE(r.e->SetWeight(Key("198.18.0.10", 80), "198.18.1.3", 5, kOp).ok());
  CHECK(Words(r.e->State().flow_hash_seed().current()) == dataplane::HashSeed{1, 2, 3});
  CHECK(r.Programmed() == dataplane::FlowHashSeed{.current = {{1, 2, 3}}});

  // Without a source, getrandom: two first states do not share a seed.
  TempDir d1, d2;
  FakeClock clock{1'700'000'000'000, 5'000'000'000'000};
  auto e1 = StartEngine(d1, &clock, SmallConfig());
  auto e2 = StartEngine(d2, &clock, SmallConfig());
  REQUIRE((e1 && e2));
  CHECK(e1->State().flow_hash_seed().current_size() == 3);
  CHECK(Words(e1->State().flow_hash_seed().current()) !=
        Words(e2->State().flow_hash_seed().current()));
}

TEST_CASE("Rotating the seed: the old one becomes the previous seed; audited without either",
          "[flow_hash_seed]") {
  Router r;
  const uint64_t gen = r.e->State().generation();
  auto resp = r.e->RotateFlowHashSeed("quarterly", kOp);
  REQUIRE(resp.ok());
  CHECK(resp->generation() == gen + 1);
  CHECK_FALSE(resp->previous_was_public());
  const v1::State st = r.e->State();
  CHECK(Words(st.flow_hash_seed().current()) == dataplane::HashSeed{4, 5, 6});
  CHECK(Words(st.flow_hash_seed().previous()) == dataplane::HashSeed{1, 2, 3});
  CHECK(r.Programmed() == dataplane::FlowHashSeed{.current = {{4, 5, 6}}, .previous = {{1, 2, 3}}});

  auto audit = r.e->QueryAudit(0, 0);
  REQUIRE(audit.ok());
  REQUIRE_FALSE(audit->empty());
  const v1::AuditRecord& last = audit->back();
  CHECK(last.action() == "rotate_flow_hash_seed");
  CHECK(last.actor() == kOp.name);
  const std::string text = last.DebugString();
  CHECK(text.find("quarterly") != std::string::npos);
  // Neither seed is in it (the words are small here: look for the lists).
  CHECK(text.find("current") == std::string::npos);
  CHECK(text.find("previous") == std::string::npos);

  // A bad request changes nothing.
  const absl::Status bad = r.e->RotateFlowHashSeed(std::string(201, 'x'), kOp).status();
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK(r.e->State().generation() == gen + 1);
  CHECK(Words(r.e->State().flow_hash_seed().current()) == dataplane::HashSeed{4, 5, 6});
}

TEST_CASE("A state of an earlier build keeps the public seed until the operator rotates it",
          "[flow_hash_seed]") {
  TempDir dir;
  FakeClock clock{1'700'000'000'000, 5'000'000'000'000};
  {
    auto e = StartEngine(dir, &clock, SmallConfig());
    REQUIRE(e != nullptr);
  }
  // The state as an earlier build wrote it: no seed.
  FileStore store(dir.File("state.pb"));
  auto loaded = store.Load();
  REQUIRE(loaded.ok());
  loaded->state.clear_flow_hash_seed();
  REQUIRE(store.Save(loaded->state, 0, WriteKind::kOperator).ok());

  CountingSource seeds;
  EngineOptions o;
  o.seed_source = seeds.source();
  dataplane::FakeDataplane* dp = nullptr;
  auto e = StartEngine(dir, &clock, SmallConfig(), o, &dp);
  REQUIRE(e != nullptr);
  CHECK(SeedIsPublic(e->State().flow_hash_seed()));
  auto settings = dp->GetSettings();
  REQUIRE(settings.ok());
  CHECK(settings->flow_hash_seed == dataplane::FlowHashSeed{});

  auto resp = e->RotateFlowHashSeed("", kOp);
  REQUIRE(resp.ok());
  CHECK(resp->previous_was_public());
  CHECK(Words(e->State().flow_hash_seed().previous()) == PublicWords());
  settings = dp->GetSettings();
  REQUIRE(settings.ok());
  CHECK(settings->flow_hash_seed ==
        dataplane::FlowHashSeed{.current = {{1, 2, 3}}, .previous = PublicWords()});
}

}  // namespace
}  // namespace ballast::core

namespace ballast::core {
namespace {

TEST_CASE(
    "A flow_hash_seed_file: 24 hex digits, then maybe the previous seed; errors name the line",
    "[flow_hash_seed]") {
  auto one = ParseFlowHashSeedFile("0a0b0c0d1a1b1c1d2a2b2c2d\n");
  REQUIRE(one.ok());
  CHECK(*one == dataplane::FlowHashSeed{.current = {{0x0a0b0c0d, 0x1a1b1c1d, 0x2a2b2c2d}}});
  auto two = ParseFlowHashSeedFile("\n  FFFFFFFF0000000012345678 \n\n000000010000000200000003\n");
  REQUIRE(two.ok());
  CHECK(*two ==
        dataplane::FlowHashSeed{.current = {{0xffffffff, 0, 0x12345678}}, .previous = {{1, 2, 3}}});
  for (const char* bad : {"", "\n \n", "0a0b0c0d1a1b1c1d2a2b2c", "0a0b0c0d1a1b1c1d2a2b2c2g",
                          "000000010000000200000003\n000000010000000200000003\n"
                          "000000010000000200000003"}) {
    INFO("file: " << bad);
    CHECK(ParseFlowHashSeedFile(bad).status().code() == absl::StatusCode::kInvalidArgument);
  }
  CHECK(std::string(ParseFlowHashSeedFile("\nxyz").status().message()).find("line 2") !=
        std::string::npos);
}

TEST_CASE("Which seed lbagent fixes: the file's, the public one for standalone BGP, else none",
          "[flow_hash_seed]") {
  TempDir dir;
  v1::AgentConfig c;
  // A lone standalone router: its state's own seed.
  auto none = FixedFlowHashSeed(c);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  // Standalone and announcing over BGP: the public seed, which every such
  // router of an ECMP group shares (a random seed each would send a flow
  // that ECMP moves to another backend).
  c.mutable_bgp()->set_bird_socket("/run/bird/bird.ctl");
  auto pub = FixedFlowHashSeed(c);
  REQUIRE(pub.ok());
  REQUIRE(pub->has_value());
  CHECK_FALSE((*pub)->current.has_value());
  // With a file: its seed.
  const std::string path = dir.File("seed");
  FILE* f = fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  fputs("0a0b0c0d1a1b1c1d2a2b2c2d\n", f);
  fclose(f);
  c.set_flow_hash_seed_file(path);
  auto file = FixedFlowHashSeed(c);
  REQUIRE(file.ok());
  REQUIRE(file->has_value());
  CHECK((*file)->current == dataplane::HashSeed{0x0a0b0c0d, 0x1a1b1c1d, 0x2a2b2c2d});
  // A missing or bad file is an error naming it.
  c.set_flow_hash_seed_file(dir.File("none"));
  CHECK(FixedFlowHashSeed(c).status().code() == absl::StatusCode::kNotFound);
  // In cluster mode the seed is the replicated state's, and a file is refused.
  c.clear_flow_hash_seed_file();
  c.mutable_cluster()->add_endpoints("http://127.0.0.1:2379");
  auto cluster = FixedFlowHashSeed(c);
  REQUIRE(cluster.ok());
  CHECK_FALSE(cluster->has_value());
  c.set_flow_hash_seed_file(path);
  const absl::Status refused = ValidateAgentConfig(c);
  CHECK(std::string(refused.message()).find("flow_hash_seed_file") != std::string::npos);
}

TEST_CASE("A fixed seed is what the data plane gets, whatever the state holds; not rotated by API",
          "[flow_hash_seed]") {
  TempDir dir;
  FakeClock clock{1'700'000'000'000, 5'000'000'000'000};
  EngineOptions o;
  o.fixed_flow_hash_seed = dataplane::FlowHashSeed{};  // the public seed (standalone BGP)
  dataplane::FakeDataplane* dp = nullptr;
  auto e = StartEngine(dir, &clock, SmallConfig(), o, &dp);
  REQUIRE(e != nullptr);
  const auto programmed = [&] {
    auto s = dp->GetSettings();
    REQUIRE(s.ok());
    return s->flow_hash_seed;
  };
  CHECK(programmed() == dataplane::FlowHashSeed{});
  CHECK_FALSE(SeedIsPublic(e->State().flow_hash_seed()));  // the state has its own, unused
  REQUIRE(e->SetWeight(Key("198.18.0.10", 80), "198.18.1.3", 5, kOp).ok());
  CHECK(programmed() == dataplane::FlowHashSeed{});
  const uint64_t gen = e->State().generation();
  CHECK(e->RotateFlowHashSeed("", kOp).status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(e->State().generation() == gen);
}

}  // namespace
}  // namespace ballast::core
