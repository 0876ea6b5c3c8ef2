// VIP prefixes and their BIRD protocol names.
#include <catch2/catch.hpp>

#include "agent/bgp/vip_prefix.h"

namespace ballast::bgp {
namespace {

TEST_CASE("IPv4 and IPv6 VIPs parse, with or without the host prefix length") {
  auto v4 = VipPrefix::Parse("198.18.0.10");
  REQUIRE(v4.ok());
  CHECK(v4->family() == 4);
  CHECK(v4->ToString() == "198.18.0.10/32");
  CHECK(v4->ProtocolName() == "ballast_vip_c612000a");
  CHECK(*VipPrefix::Parse("198.18.0.10/32") == *v4);

  auto v6 = VipPrefix::Parse("2001:DB8:10::10/128");
  REQUIRE(v6.ok());
  CHECK(v6->family() == 6);
  CHECK(v6->ToString() == "2001:db8:10::10/128");
  CHECK(v6->ProtocolName() == "ballast_vip_20010db8001000000000000000000010");
}

TEST_CASE("non-host prefixes and garbage are refused") {
  CHECK(VipPrefix::Parse("198.18.0.0/24").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(VipPrefix::Parse("2001:db8::/64").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(VipPrefix::Parse("198.18.0.10/x").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(VipPrefix::Parse("vip").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(VipPrefix::Parse("").status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("protocol names round-trip; other names are not VIPs") {
  for (const char* t : {"198.18.0.10", "0.0.0.0", "255.255.255.255", "2001:db8::1", "::"}) {
    auto v = VipPrefix::Parse(t);
    REQUIRE(v.ok());
    auto back = VipPrefix::FromProtocolName(v->ProtocolName());
    REQUIRE(back.has_value());
    CHECK(*back == *v);
  }
  CHECK_FALSE(VipPrefix::FromProtocolName("ballast_vip_C612000A"));  // not canonical
  CHECK_FALSE(VipPrefix::FromProtocolName("ballast_vip_c612000"));
  CHECK_FALSE(VipPrefix::FromProtocolName("ballast_vip_c612000g"));
  CHECK_FALSE(VipPrefix::FromProtocolName("static1"));
  CHECK(VipPrefix::Parse("198.18.0.10")->ProtocolName() !=
        VipPrefix::Parse("::c612:a")->ProtocolName());
}

TEST_CASE("the rendered BIRD protocol is disabled by default") {
  std::string conf = VipPrefix::Parse("198.18.0.10")->BirdStaticProtocol();
  CHECK_THAT(conf, Catch::Contains("protocol static ballast_vip_c612000a {"));
  CHECK_THAT(conf, Catch::Contains("disabled yes;"));
  CHECK_THAT(conf, Catch::Contains("ipv4;"));
  CHECK_THAT(conf, Catch::Contains("route 198.18.0.10/32 blackhole;"));
  CHECK_THAT(VipPrefix::Parse("2001:db8::1")->BirdStaticProtocol(),
             Catch::Contains("ipv6;") && Catch::Contains("route 2001:db8::1/128 blackhole;"));
}

}  // namespace
}  // namespace ballast::bgp
