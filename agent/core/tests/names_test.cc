// VIP keys: the typed key the engine's images and views are keyed by, and
// how a stored (proto) key is matched against it.
#include "agent/core/names.h"

#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <map>

#include "agent/core/tests/test_util.h"

namespace ballast::core {
namespace {

using testing::Key;

dataplane::VipKey Typed(const std::string& text) {
  auto k = dataplane::ParseVipKey(text);
  REQUIRE(k.ok());
  return *k;
}

TEST_CASE("SameVip matches a stored key to the typed key, however the address is spelled") {
  const dataplane::VipKey v6 = Typed("[2001:db8::10]:443/tcp");
  CHECK(SameVip(Key("2001:db8::10", 443), v6));
  CHECK(SameVip(Key("2001:DB8:0::10", 443), v6));
  CHECK_FALSE(SameVip(Key("2001:db8::10", 80), v6));
  CHECK_FALSE(SameVip(Key("2001:db8::10", 443, v1::UDP), v6));
  CHECK_FALSE(SameVip(Key("2001:db8::11", 443), v6));

  const dataplane::VipKey v4 = Typed("198.18.0.10:0/udp");
  CHECK(SameVip(Key("198.18.0.10", 0, v1::UDP), v4));
  // A second spelling of an IPv4 address is not the IPv4 VIP.
  CHECK_FALSE(SameVip(Key("::ffff:198.18.0.10", 0, v1::UDP), v4));
  // A stored key that does not parse names nothing.
  CHECK_FALSE(SameVip(Key("198.18.0.300", 0, v1::UDP), v4));
  CHECK_FALSE(SameVip(Key("198.18.0.10", 0, static_cast<v1::Protocol>(7)), v4));
}

TEST_CASE("ToDataplaneKey is the edge: one parse gives the key the maps use") {
  auto k = ToDataplaneKey(Key("2001:DB8::10", 443));
  REQUIRE(k.ok());
  CHECK(*k == Typed("[2001:db8::10]:443/tcp"));
  CHECK(k->proto == IPPROTO_TCP);
  CHECK(ToDataplaneKey(Key("2001:db8::10", 70000)).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(ToDataplaneKey(Key("not an address", 80)).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Typed VIP keys order by address (IPv4 first), then port, then protocol") {
  std::map<dataplane::VipKey, int> m;
  for (const char* text : {"[2001:db8::1]:80/tcp", "198.18.0.10:443/tcp", "198.18.0.10:80/udp",
                           "198.18.0.10:80/tcp", "198.18.0.9:8080/tcp"}) {
    m[Typed(text)] = 0;
  }
  std::vector<std::string> order;
  for (const auto& [k, v] : m) order.push_back(dataplane::VipKeyString(k));
  CHECK(order == std::vector<std::string>{"198.18.0.9:8080/tcp", "198.18.0.10:80/tcp",
                                          "198.18.0.10:80/udp", "198.18.0.10:443/tcp",
                                          "[2001:db8::1]:80/tcp"});
  // The same VIP spelled two ways is one key.
  m[Typed("[2001:DB8:0::1]:80/tcp")] = 1;
  CHECK(m.size() == 5);
}

}  // namespace
}  // namespace ballast::core
