// lbctl's parsers for what operators type: VIP keys, backend specs,
// durations.
#include <catch2/catch.hpp>

#include "tools/lbctl/address.h"
#include "tools/lbctl/duration.h"

namespace ballast::lbctl {
namespace {

TEST_CASE("ParseVipKey accepts the operator forms and canonicalizes", "[lbctl][address]") {
  struct Case {
    const char* text;
    const char* address;
    uint32_t port;
    v1::Protocol proto;
    const char* formatted;
  };
  const Case cases[] = {
      {"198.18.0.10:80/tcp", "198.18.0.10", 80, v1::TCP, "198.18.0.10:80/tcp"},
      {"198.18.0.10:0/udp", "198.18.0.10", 0, v1::UDP, "198.18.0.10:0/udp"},
      {"198.18.0.10:65535/TCP", "198.18.0.10", 65535, v1::TCP, "198.18.0.10:65535/tcp"},
      {"[2001:db8::10]:443/tcp", "2001:db8::10", 443, v1::TCP, "[2001:db8::10]:443/tcp"},
      {"[2001:DB8:0:0::0010]:53/udp", "2001:db8::10", 53, v1::UDP, "[2001:db8::10]:53/udp"},
      {"[::ffff:198.18.0.1]:80/tcp", "::ffff:198.18.0.1", 80, v1::TCP,
       "[::ffff:198.18.0.1]:80/tcp"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<v1::VipKey> key = ParseVipKey(c.text);
    REQUIRE(key.ok());
    CHECK(key->address() == c.address);
    CHECK(key->port() == c.port);
    CHECK(key->protocol() == c.proto);
    CHECK(FormatVipKey(*key) == c.formatted);
    // Round trip.
    absl::StatusOr<v1::VipKey> again = ParseVipKey(FormatVipKey(*key));
    REQUIRE(again.ok());
    CHECK(again->SerializeAsString() == key->SerializeAsString());
  }
}

TEST_CASE("ParseVipKey rejects bad input with the accepted form", "[lbctl][address]") {
  struct Case {
    const char* text;
    const char* why;
  };
  const Case cases[] = {
      {"", "has no /PROTO"},
      {"198.18.0.10:80", "has no /PROTO"},
      {"198.18.0.10/tcp", "has no :PORT"},
      {"198.18.0.10:80/sctp", "protocol 'sctp'"},
      {"198.18.0.10:80/", "protocol ''"},
      {"198.18.0.10:65536/tcp", "not a number in 0..65535"},
      {"198.18.0.10:-1/tcp", "not a number in 0..65535"},
      {"198.18.0.10:+80/tcp", "not a number in 0..65535"},
      {"198.18.0.10:8x/tcp", "not a number in 0..65535"},
      {"198.18.0.10:/tcp", "not a number in 0..65535"},
      {"198.18.0.256:80/tcp", "not an IPv4 or IPv6 address"},
      {"198.18.0:80/tcp", "not an IPv4 or IPv6 address"},
      {"vip.example.com:80/tcp", "not an IPv4 or IPv6 address"},
      {":80/tcp", "not an IPv4 or IPv6 address"},
      {"2001:db8::10:443/tcp", "IPv6 address without brackets"},
      {"[2001:db8::10:443/tcp", "'[' without ']'"},
      {"[2001:db8::10]/tcp", "has no :PORT"},
      {"[2001:db8::10]443/tcp", "has no :PORT"},
      {"[198.18.0.10]:80/tcp", "IPv4 address in brackets"},
      {"[fe80::1%eth0]:80/tcp", "not an IPv4 or IPv6 address"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<v1::VipKey> key = ParseVipKey(c.text);
    REQUIRE_FALSE(key.ok());
    CHECK(key.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(key.status().message()), Catch::Contains(c.why));
    CHECK_THAT(std::string(key.status().message()), Catch::Contains("198.18.0.10:80/tcp"));
  }
}

TEST_CASE("ParseBackendSpec: address with an optional weight", "[lbctl][address]") {
  struct Case {
    const char* text;
    const char* address;
    std::optional<uint32_t> weight;
  };
  const Case cases[] = {
      {"198.18.1.10", "198.18.1.10", std::nullopt},
      {"198.18.1.10,weight=50", "198.18.1.10", 50},
      {"198.18.1.10,weight=0", "198.18.1.10", 0},
      {"2001:db8::1", "2001:db8::1", std::nullopt},
      {"[2001:db8::1]", "2001:db8::1", std::nullopt},
      {"2001:db8::1,weight=75", "2001:db8::1", 75},
      {"[2001:db8::1],weight=75", "2001:db8::1", 75},
      {"2001:0db8::0001", "2001:db8::1", std::nullopt},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<BackendSpec> spec = ParseBackendSpec(c.text);
    REQUIRE(spec.ok());
    CHECK(spec->address == c.address);
    CHECK(spec->weight == c.weight);
  }
}

TEST_CASE("ParseBackendSpec rejects bad input", "[lbctl][address]") {
  const char* bad[] = {"",
                       "198.18.1",
                       "198.18.1.10,",
                       "198.18.1.10,weight=",
                       "198.18.1.10,weight=x",
                       "198.18.1.10,weight=-5",
                       "198.18.1.10,w=5",
                       "198.18.1.10,weight=5,weight=6",
                       "[2001:db8::1",
                       "[2001:db8::1]50",
                       "[198.18.1.10]",
                       "host,weight=5",
                       "198.18.1.10,weight=99999999999"};
  for (const char* text : bad) {
    INFO(text);
    absl::StatusOr<BackendSpec> spec = ParseBackendSpec(text);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(spec.status().message()), Catch::Contains("ADDR,weight=N"));
  }
}

TEST_CASE("ParseBackendSpec: ADDR:N is refused, saying it reads as a port now",
          "[lbctl][address]") {
  struct Case {
    const char* text;
    const char* hint;
  };
  const Case cases[] = {
      {"198.18.12.2:3", "198.18.12.2,weight=3"},
      {"[2001:db8::1]:50", "2001:db8::1,weight=50"},
      {"198.18.12.2:80,weight=3", "198.18.12.2,weight=80"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<BackendSpec> spec = ParseBackendSpec(c.text);
    REQUIRE_FALSE(spec.ok());
    CHECK_THAT(std::string(spec.status().message()), Catch::Contains("reads as a port"));
    CHECK_THAT(std::string(spec.status().message()), Catch::Contains(c.hint));
  }
}

TEST_CASE("ParseIp canonicalizes and rejects non-addresses", "[lbctl][address]") {
  CHECK(*ParseIp("198.18.1.10") == "198.18.1.10");
  CHECK(*ParseIp("2001:DB8::A") == "2001:db8::a");
  CHECK(*ParseIp("[2001:db8::a]") == "2001:db8::a");
  CHECK_FALSE(ParseIp("198.18.1.10:80").ok());
  CHECK_FALSE(ParseIp("backend1").ok());
  CHECK_FALSE(ParseIp("").ok());
}

TEST_CASE("ParseDuration: units, days, bare seconds; rejects junk", "[lbctl][duration]") {
  CHECK(*ParseDuration("60s", "--x") == absl::Seconds(60));
  CHECK(*ParseDuration("45", "--x") == absl::Seconds(45));
  CHECK(*ParseDuration("500ms", "--x") == absl::Milliseconds(500));
  CHECK(*ParseDuration("1h30m", "--x") == absl::Minutes(90));
  CHECK(*ParseDuration("2d", "--x") == absl::Hours(48));
  CHECK(*ParseDuration("1d12h", "--x") == absl::Hours(36));
  for (const char* bad : {"", "abc", "-5s", "5 s", "1x", "d", "inf"}) {
    INFO(bad);
    absl::StatusOr<absl::Duration> d = ParseDuration(bad, "--since");
    REQUIRE_FALSE(d.ok());
    CHECK(d.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(d.status().message()), Catch::StartsWith("--since"));
  }
}

TEST_CASE("ParseWholeSeconds rejects fractions and overflow", "[lbctl][duration]") {
  CHECK(*ParseWholeSeconds("90s", "--deadline") == 90);
  CHECK(*ParseWholeSeconds("2m", "--deadline") == 120);
  CHECK_FALSE(ParseWholeSeconds("1500ms", "--deadline").ok());
  CHECK_FALSE(ParseWholeSeconds("200000d", "--deadline").ok());
}

}  // namespace
}  // namespace ballast::lbctl
