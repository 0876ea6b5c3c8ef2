// The adopted flows' sets (`adopted_flows`) from user space. An upgrade from
// a build with `flows_adopted` (an LRU hash) carries its flows into them
// (adopted_carry.h): the way choice alone, then Open() and Attach() against
// the real kernel (root, a private bpffs and a test network namespace; RAII
// cleanup). The listing skips a way caught half written.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/dataplane/adopted_carry.h"
#include "ballast_flow_hash.h"
#include "agent/dataplane/tests/test_util.h"

namespace ballast::dataplane {
namespace {

using testing::RequireRoot;
using testing::TempBpffs;
using testing::TestNetns;

// Client 198.18.1.<n>:<port> to the VIP 198.18.0.10:80, TCP.
ballast_flow_key Key(uint8_t n, uint16_t port) {
  ballast_flow_key k = {};
  const uint8_t client[4] = {198, 18, 1, n}, vip[4] = {198, 18, 0, 10};
  std::memcpy(k.src, client, 4);
  std::memcpy(k.dst, vip, 4);
  k.sport = htons(port);
  k.dport = htons(80);
  k.proto = IPPROTO_TCP;
  k.family = BALLAST_FAMILY_V4;
  return k;
}

ballast_flow Flow(uint32_t backend, uint64_t last_seen) {
  ballast_flow f = {};
  f.backend_id = backend;
  f.state = BALLAST_FLOW_ESTABLISHED;
  f.last_seen_ns = last_seen;
  return f;
}

bool Holds(const ballast_adopted_set& set, uint32_t way, const ballast_flow_key& k) {
  return std::memcmp(&set.key[way], &k, sizeof k) == 0;
}

TEST_CASE("PlaceAdopted chooses ways as the program does", "[dataplane]") {
  ballast_adopted_set set = {};
  // Free ways first, in order.
  for (uint8_t i = 0; i < BALLAST_ADOPTED_WAYS; ++i) {
    CHECK(PlaceAdopted(set, Key(i, 1000), Flow(i, 100 + i), /*exclusive=*/false) == Placed::kFree);
    CHECK(Holds(set, i, Key(i, 1000)));
  }
  // The key's own way: left as it is while a program uses the sets (it may
  // have moved on); rewritten when the old map is the truth.
  CHECK(PlaceAdopted(set, Key(2, 1000), Flow(9, 500), false) == Placed::kPresent);
  CHECK(set.flow[2].backend_id == 2);
  CHECK(PlaceAdopted(set, Key(2, 1000), Flow(9, 500), true) == Placed::kReplaced);
  CHECK(Holds(set, 2, Key(2, 1000)));
  CHECK(set.flow[2].backend_id == 9);
  // A full set: not written while a program uses the sets; else over the
  // oldest way.
  set.flow[3].last_seen_ns = 50;
  CHECK(PlaceAdopted(set, Key(7, 1000), Flow(7, 600), false) == Placed::kFull);
  CHECK(set.flow[3].backend_id == 3);
  CHECK(PlaceAdopted(set, Key(7, 1000), Flow(7, 600), true) == Placed::kEvicted);
  CHECK(Holds(set, 3, Key(7, 1000)));
  CHECK(set.flow[3].backend_id == 7);
  CHECK(set.flow[0].backend_id == 0);  // the others untouched
  CHECK(set.flow[1].backend_id == 1);
}

// Options that pin under a private bpffs, in a directory made for them
// (root checked first: mounting needs it).
struct Pins {
  Pins() : options(Make(fs)) {}
  static Options Make(const TempBpffs& fs) {
    Options o;
    o.pin_dir = fs.dir() + "/ballast";
    REQUIRE(MakeDirs(o.pin_dir).ok());
    return o;
  }
  bool root = (RequireRoot(), true);
  TempBpffs fs;
  Options options;
};

std::unique_ptr<Dataplane> OpenOk(const Options& o) {
  auto dp = Dataplane::Open(o);
  INFO(dp.status().ToString());
  REQUIRE(dp.ok());
  return std::move(*dp);
}

// What a build before adopted_flows pinned: an LRU hash of flows.
UniqueFd PinOldAdopted(const std::string& pin_dir, uint32_t value_size = sizeof(ballast_flow)) {
  UniqueFd old(bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "flows_adopted", sizeof(ballast_flow_key),
                              value_size, 1024, nullptr));
  REQUIRE(old);
  REQUIRE(bpf_obj_pin(old.get(), (pin_dir + "/flows_adopted").c_str()) == 0);
  return old;
}

void Put(int fd, const ballast_flow_key& k, const ballast_flow& f) {
  REQUIRE(bpf_map_update_elem(fd, &k, &f, BPF_ANY) == 0);
}

std::optional<uint32_t> AdoptedBackend(const Dataplane& dp, const ballast_flow_key& k) {
  auto f = dp.LookupFlow(kAdoptedFlowsMap, k);
  REQUIRE(f.ok());
  if (!f->has_value()) return std::nullopt;
  return (*f)->backend_id;
}

TEST_CASE("an older build's adopted flows are carried into adopted_flows, on their backends",
          "[dataplane][bpf][netns]") {
  Pins pins;
  const Options& o = pins.options;
  UniqueFd old = PinOldAdopted(o.pin_dir);
  // 300 flows the old program adopted, each on the backend the table gave
  // it then.
  for (uint16_t p = 0; p < 300; ++p) Put(old.get(), Key(1, 20000 + p), Flow(p % 7 + 1, p));

  auto dp = OpenOk(o);
  CHECK_FALSE(PathExists(o.pin_dir + "/flows_adopted"));
  for (uint16_t p = 0; p < 300; ++p) CHECK(AdoptedBackend(*dp, Key(1, 20000 + p)) == p % 7 + 1);
  auto n = dp->ForEachFlowIn(kAdoptedFlowsMap, SIZE_MAX,
                             [](const ballast_flow_key&, const ballast_flow&) {});
  REQUIRE(n.ok());
  CHECK(*n == 300);

  // Until Attach() replaces it, the old program goes on adopting (a new
  // flow) and updating (a flow already carried, which stays as carried).
  Put(old.get(), Key(2, 30000), Flow(5, 1000));
  Put(old.get(), Key(1, 20000), Flow(6, 1000));
  CHECK_FALSE(AdoptedBackend(*dp, Key(2, 30000)).has_value());
  TestNetns ns;
  REQUIRE(dp->Attach("dpt0", AttachMode::kAuto).ok());
  CHECK(AdoptedBackend(*dp, Key(2, 30000)) == 5u);
  CHECK(AdoptedBackend(*dp, Key(1, 20000)) == 1u);
  REQUIRE(dp->Detach("dpt0").ok());
  REQUIRE(dp->Teardown().ok());
}

TEST_CASE("after a downgrade and an upgrade again, flows_adopted wins over adopted_flows",
          "[dataplane][bpf]") {
  Pins pins;
  const Options& o = pins.options;
  {
    UniqueFd old = PinOldAdopted(o.pin_dir);
    Put(old.get(), Key(4, 50000), Flow(2, 10));
    auto dp = OpenOk(o);  // the upgrade; its pins stay
    CHECK(AdoptedBackend(*dp, Key(4, 50000)) == 2u);
  }
  // An older build ran again (it knows nothing of adopted_flows) and
  // adopted the flow anew, on another table's pick.
  UniqueFd old = PinOldAdopted(o.pin_dir);
  Put(old.get(), Key(4, 50000), Flow(3, 20));
  auto dp = OpenOk(o);
  CHECK(AdoptedBackend(*dp, Key(4, 50000)) == 3u);
  REQUIRE(dp->Teardown().ok());
}

TEST_CASE("an older flows_adopted of another layout is unpinned and its flows not carried",
          "[dataplane][bpf]") {
  Pins pins;
  const Options& o = pins.options;
  UniqueFd old = PinOldAdopted(o.pin_dir, sizeof(ballast_flow) + 8);
  std::string value(sizeof(ballast_flow) + 8, '\x01');
  const ballast_flow_key k = Key(3, 40000);
  REQUIRE(bpf_map_update_elem(old.get(), &k, value.data(), BPF_ANY) == 0);

  auto dp = OpenOk(o);
  CHECK_FALSE(PathExists(o.pin_dir + "/flows_adopted"));
  CHECK_FALSE(AdoptedBackend(*dp, k).has_value());
  CHECK(dp->adopted_sets() == AdoptedSetsFor(o.flow_capacity));
  CHECK(dp->MapCapacity(kAdoptedFlowsMap).value_or(0) == 2 * BALLAST_DEFAULT_FLOWS);
  REQUIRE(dp->Teardown().ok());
}

// A way whose key does not hash to its set is a copy taken while the
// program rewrote it (the old flow's addresses, the new flow's ports): not
// a flow, so the listing skips it; the set's whole keys are listed.
TEST_CASE("the adopted-flow listing skips a way whose key is not of its set", "[dataplane][bpf]") {
  Pins pins;
  auto dp = OpenOk(pins.options);
  UniqueFd sets(bpf_obj_get((pins.options.pin_dir + "/adopted_flows").c_str()));
  REQUIRE(sets);
  auto capacity = dp->MapCapacity(kAdoptedFlowsMap);
  REQUIRE(capacity.ok());
  const uint32_t mask = *capacity / BALLAST_ADOPTED_WAYS - 1;
  auto seed = dp->CurrentHashSeed();
  REQUIRE(seed.ok());
  const ballast_flow_key whole = Key(3, 40000);
  const uint32_t idx = ballast_flow_hash(&whole, &*seed) & mask;
  // A key of another set, as a torn copy would read.
  ballast_flow_key torn = whole;
  for (uint16_t p = 1; (ballast_flow_hash(&torn, &*seed) & mask) == idx; ++p) {
    torn.sport = htons(p);
  }
  ballast_adopted_set set = {};
  set.key[0] = whole;
  set.flow[0] = Flow(4, 100);
  set.key[2] = torn;
  set.flow[2] = Flow(5, 100);
  REQUIRE(bpf_map_update_elem(sets.get(), &idx, &set, BPF_ANY) == 0);

  std::vector<std::pair<ballast_flow_key, uint32_t>> listed;
  auto n = dp->ForEachFlowIn(kAdoptedFlowsMap, SIZE_MAX,
                             [&](const ballast_flow_key& k, const ballast_flow& f) {
                               listed.emplace_back(k, f.backend_id);
                             });
  REQUIRE(n.ok());
  REQUIRE(*n == 1);
  CHECK(std::memcmp(&listed[0].first, &whole, sizeof whole) == 0);
  CHECK(listed[0].second == 4);
  CHECK(AdoptedBackend(*dp, whole) == 4u);
  REQUIRE(dp->Teardown().ok());
}

}  // namespace
}  // namespace ballast::dataplane
