// Stable ids: kept across changes, never immediately reused, deterministic.
#include "agent/core/ids.h"

#include <catch2/catch.hpp>
#include <set>

#include "agent/core/names.h"
#include "agent/core/tests/test_util.h"
#include "agent/core/validate.h"

namespace ballast::core {
namespace {

using testing::MakeBackend;
using testing::SmallConfig;

TEST_CASE("AssignIds gives every VIP and backend a unique id, in config order") {
  v1::State s;
  *s.mutable_config() = SmallConfig();
  REQUIRE(AssignIds(&s).ok());
  REQUIRE(VipIdOf(s, s.config().vips(0).key()) == 1);
  REQUIRE(VipIdOf(s, s.config().vips(1).key()) == 2);
  std::set<uint32_t> ids;
  for (const v1::Vip& v : s.config().vips()) {
    for (const v1::Backend& b : v.backends()) ids.insert(BackendIdOf(s, v.key(), b.address()));
  }
  REQUIRE(ids == std::set<uint32_t>{1, 2, 3, 4, 5});
  REQUIRE(ValidateState(s).ok());
}

TEST_CASE("Ids survive changes and a released id is not handed out again at once") {
  v1::State s;
  *s.mutable_config() = SmallConfig();
  REQUIRE(AssignIds(&s).ok());
  const v1::VipKey k = s.config().vips(0).key();
  const uint32_t b2 = BackendIdOf(s, k, "198.18.1.2");
  const uint32_t b3 = BackendIdOf(s, k, "198.18.1.3");
  // Remove 198.18.1.3 (id 3), add a new backend: it must not get id 3.
  s.mutable_config()->mutable_vips(0)->mutable_backends()->DeleteSubrange(2, 1);
  *s.mutable_config()->mutable_vips(0)->add_backends() = MakeBackend("198.18.1.4", 1);
  REQUIRE(AssignIds(&s).ok());
  REQUIRE(BackendIdOf(s, k, "198.18.1.2") == b2);
  REQUIRE(BackendIdOf(s, k, "198.18.1.3") == 0);
  const uint32_t b4 = BackendIdOf(s, k, "198.18.1.4");
  REQUIRE(b4 != 0);
  REQUIRE(b4 != b3);
  REQUIRE(b4 == 6);
  REQUIRE(ValidateState(s).ok());
}

TEST_CASE("UpdateIdsOfVip equals AssignIds for a change confined to one VIP") {
  v1::State base;
  *base.mutable_config() = SmallConfig();
  REQUIRE(AssignIds(&base).ok());
  const v1::VipKey k = base.config().vips(0).key();
  // Remove a backend and add two.
  v1::State a = base;
  v1::Vip* v = a.mutable_config()->mutable_vips(0);
  v->mutable_backends()->DeleteSubrange(1, 1);
  *v->add_backends() = MakeBackend("198.18.1.7", 1);
  *v->add_backends() = MakeBackend("198.18.1.8", 1);
  v1::State b = a;
  REQUIRE(AssignIds(&a).ok());
  REQUIRE(UpdateIdsOfVip(&b, k, &b.config().vips(0)).ok());
  REQUIRE(testing::Serialized(a) == testing::Serialized(b));
  // Delete the VIP.
  v1::State c = a;
  c.mutable_config()->mutable_vips()->DeleteSubrange(0, 1);
  v1::State d = c;
  REQUIRE(AssignIds(&c).ok());
  REQUIRE(UpdateIdsOfVip(&d, k, nullptr).ok());
  REQUIRE(testing::Serialized(c) == testing::Serialized(d));
  REQUIRE(VipIdOf(d, k) == 0);
}

TEST_CASE("The same config from scratch gives the same ids (routers agree)") {
  v1::State a;
  v1::State b;
  *a.mutable_config() = SmallConfig();
  *b.mutable_config() = SmallConfig();
  REQUIRE(AssignIds(&a).ok());
  REQUIRE(AssignIds(&b).ok());
  REQUIRE(testing::Serialized(a) == testing::Serialized(b));
}

TEST_CASE("Allocation wraps around and finds free ids") {
  v1::State s;
  *s.mutable_config() = SmallConfig();
  (*s.mutable_ids())["next backend"] = kMaxBackendsTotal;  // cursor at the last id
  REQUIRE(AssignIds(&s).ok());
  const v1::VipKey k = s.config().vips(0).key();
  REQUIRE(BackendIdOf(s, k, "198.18.1.1") == kMaxBackendsTotal);
  REQUIRE(BackendIdOf(s, k, "198.18.1.2") == 1);
  REQUIRE(ValidateState(s).ok());
}

}  // namespace
}  // namespace ballast::core
