// A first start (nothing stored yet) stores its state only once it worked:
// a start that fails stores nothing, so the next start uses the config's
// `initial` again (issue #37, item 1: a failed first start used to leave a
// state file, and the corrected config was then silently ignored).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "agent/core/clock.h"
#include "agent/core/file_store.h"
#include "agent/core/router_engine.h"
#include "agent/core/state_store.h"
#include "agent/core/tests/test_util.h"
#include "agent/dataplane/fake_dataplane.h"

namespace ballast::core {
namespace {

using testing::Key;
using testing::MakeBackend;
using testing::SmallConfig;
using testing::TempDir;

const Actor kOp{"operator:test"};

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// SmallConfig on `interface`.
v1::Config OnInterface(const std::string& interface) {
  v1::Config c = SmallConfig();
  c.mutable_global()->set_interface(interface);
  return c;
}

struct Router {
  TempDir dir;
  FakeClock clock{1'700'000'000'000, 1'000'000'000};

  // Starts over an in-memory data plane that has the devices `devices`.
  absl::StatusOr<std::unique_ptr<RouterEngine>> Start(const v1::Config& initial,
                                                      std::set<std::string> devices,
                                                      bool defer = false,
                                                      std::shared_ptr<Store> store = nullptr) {
    dataplane::FakeDataplane::Options o;
    o.devices = std::move(devices);
    EngineOptions eo;
    eo.state_file = dir.File("state.pb");
    eo.audit_log = dir.File("audit.jsonl");
    eo.defer_initial_save = defer;
    eo.store = std::move(store);
    return RouterEngine::Start(std::make_unique<dataplane::FakeDataplane>(o), eo, &clock, initial);
  }
  v1::State Stored() const {
    auto s = StateStore(dir.File("state.pb")).Load();
    REQUIRE(s.ok());
    return *s;
  }
};

TEST_CASE("a first start that fails stores nothing; the next one uses the corrected initial",
          "[first_start]") {
  Router r;
  // The example config names eth0; this host has eth1 only.
  auto failed = r.Start(OnInterface("eth0"), {"eth1"});
  REQUIRE_FALSE(failed.ok());
  INFO(failed.status().message());
  CHECK(absl::StrContains(failed.status().message(), "eth0"));
  CHECK(absl::StrContains(failed.status().message(), "nothing was stored"));
  CHECK_FALSE(Exists(r.dir.File("state.pb")));

  // The operator corrects the interface (and adds a backend): this start
  // uses the file as it is now.
  v1::Config fixed = OnInterface("eth1");
  *fixed.mutable_vips(0)->add_backends() = MakeBackend("198.18.1.4", 1);
  auto e = r.Start(fixed, {"eth1"});
  REQUIRE(e.ok());
  CHECK((*e)->State().config().global().interface() == "eth1");
  CHECK((*e)->State().config().vips(0).backends_size() == 4);
  CHECK((*e)->Health().generation == 1);
  const v1::State stored = r.Stored();
  CHECK(stored.config().global().interface() == "eth1");
  CHECK(stored.config().vips(0).backends_size() == 4);
}

TEST_CASE("deferred: a first start's state is stored by SaveInitialState only", "[first_start]") {
  Router r;
  {
    auto e = r.Start(OnInterface("eth1"), {"eth1"}, /*defer=*/true);
    REQUIRE(e.ok());
    CHECK((*e)->State().config().vips_size() == 2);  // serving from `initial`
    CHECK_FALSE(Exists(r.dir.File("state.pb")));
    // The agent fails later (its admin socket, say) and never saves: the
    // engine goes without leaving a state behind.
  }
  CHECK_FALSE(Exists(r.dir.File("state.pb")));

  // The next start uses a changed `initial`, and this time it is saved.
  v1::Config one = OnInterface("eth1");
  one.mutable_vips()->DeleteSubrange(1, 1);
  auto e = r.Start(one, {"eth1"}, /*defer=*/true);
  REQUIRE(e.ok());
  REQUIRE((*e)->SaveInitialState().ok());
  CHECK(r.Stored().config().vips_size() == 1);
  CHECK(r.Stored().generation() == 1);
  // A second call, and a restart with another `initial`, change nothing:
  // the stored state is the truth from now on.
  REQUIRE((*e)->SaveInitialState().ok());
  e->reset();
  auto again = r.Start(OnInterface("eth1"), {"eth1"}, /*defer=*/true);
  REQUIRE(again.ok());
  REQUIRE((*again)->SaveInitialState().ok());
  CHECK((*again)->State().config().vips_size() == 1);
  CHECK(r.Stored().config().vips_size() == 1);
}

TEST_CASE("deferred: a change before SaveInitialState stores the whole state", "[first_start]") {
  Router r;
  auto e = r.Start(OnInterface("eth1"), {"eth1"}, /*defer=*/true);
  REQUIRE(e.ok());
  REQUIRE((*e)->SetWeight(Key("198.18.0.10", 80), "198.18.1.1", 5, kOp).ok());
  const v1::State stored = r.Stored();
  CHECK(stored.generation() == 2);
  CHECK(stored.config().vips_size() == 2);
  CHECK(stored.config().vips(0).backends(0).weight() == 5);
  REQUIRE((*e)->SaveInitialState().ok());  // nothing left to store
  CHECK(r.Stored().generation() == 2);
}

// A shared store (cluster mode) that another node initialises between this
// node's Load and its first Save.
class RacedStore final : public Store {
 public:
  RacedStore(std::string path, v1::State winner)
      : file_(std::move(path)), winner_(std::move(winner)) {}
  std::string Describe() const override { return "raced store"; }
  absl::StatusOr<StoredState> Load() override {
    if (!initialised_) return absl::NotFoundError("nothing stored yet");
    return StoredState{winner_, 7, "raced"};
  }
  absl::StatusOr<int64_t> Save(const v1::State& next, int64_t base, WriteKind kind) override {
    if (base == 0) {
      initialised_ = true;  // the other node was first
      return absl::AbortedError("initialised concurrently");
    }
    return file_.Save(next, base, kind);
  }

 private:
  FileStore file_;
  v1::State winner_;
  bool initialised_ = false;
};

TEST_CASE("a first start whose shared store another node initialised adopts that state",
          "[first_start]") {
  Router r;
  v1::State winner;
  *winner.mutable_config() = OnInterface("eth1");
  winner.mutable_config()->mutable_vips()->DeleteSubrange(0, 1);  // the IPv6 VIP only
  // Ids as the winner's node assigned them: start it once on its own.
  {
    Router other;
    auto e = other.Start(winner.config(), {"eth1"});
    REQUIRE(e.ok());
    winner = (*e)->State();
  }
  auto e = r.Start(OnInterface("eth1"), {"eth1"}, /*defer=*/true,
                   std::make_shared<RacedStore>(r.dir.File("state.pb"), winner));
  REQUIRE(e.ok());
  CHECK((*e)->State().config().vips_size() == 2);  // its own initial, until stored
  REQUIRE((*e)->SaveInitialState().ok());
  CHECK((*e)->State().config().vips_size() == 1);
  CHECK((*e)->State().config().vips(0).key().address() == "2001:db8:10::10");
  CHECK((*e)->Health().store_revision == 7);
}

}  // namespace
}  // namespace ballast::core
