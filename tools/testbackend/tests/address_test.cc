#include <unistd.h>

#include <catch2/catch.hpp>

#include "tools/testbackend/address.h"

namespace ballast::testbackend {
namespace {

TEST_CASE("socket addresses round-trip in both families") {
  for (const char* text :
       {"127.0.0.1:80", "0.0.0.0:0", "[::1]:9000", "[::]:80", "[2001:db8::7]:65535"}) {
    auto a = ParseSocketAddress(text);
    REQUIRE(a.ok());
    CHECK(FormatSocketAddress(*a) == text);
  }
}

TEST_CASE("only [::] is the dual-stack wildcard") {
  CHECK(ParseSocketAddress("[::]:80")->IsIpv6Any());
  CHECK_FALSE(ParseSocketAddress("[::1]:80")->IsIpv6Any());
  CHECK_FALSE(ParseSocketAddress("0.0.0.0:80")->IsIpv6Any());
}

TEST_CASE("bad socket addresses are rejected with the text and the expected form") {
  for (const char* text : {"", "80", "localhost:80", "::1:80", "[::1]80", "[::1:80",
                           "1.2.3.4:65536", "1.2.3.4:", "1.2.3.4:8x", "1.2.3:80", "[1.2.3.4]:80"}) {
    auto a = ParseSocketAddress(text);
    INFO(text);
    REQUIRE_FALSE(a.ok());
    CHECK(a.status().message().find("expected IP:PORT") != std::string::npos);
  }
}

TEST_CASE("Listen with port 0 binds a real port on loopback") {
  auto fd = Listen(*ParseSocketAddress("127.0.0.1:0"), 16);
  REQUIRE(fd.ok());
  auto bound = BoundAddress(*fd);
  REQUIRE(bound.ok());
  CHECK(FormatSocketAddress(*bound).rfind("127.0.0.1:", 0) == 0);
  CHECK(FormatSocketAddress(*bound) != "127.0.0.1:0");
  // A second listener on the same port fails and names the address.
  auto again = Listen(*bound, 16);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message().find(FormatSocketAddress(*bound)) != std::string::npos);
  close(*fd);
}

}  // namespace
}  // namespace ballast::testbackend
