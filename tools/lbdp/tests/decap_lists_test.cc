// CheckDecapLists (tools/lbdp/decap_commands.h): the lists `lbdp decap
// check|attach` take, and through them ballast-backend's backend.conf
// (ADDRESSES, ROUTERS, VIPS). Pure: no kernel, no root.
#include <netinet/in.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "agent/base/ip_address.h"
#include "agent/dataplane/vip_key.h"
#include "ballast_abi.h"
#include "tools/lbdp/decap_commands.h"

namespace ballast::lbdp {
namespace {

using dataplane::VipKey;

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

DecapAttachArgs Args(std::vector<std::string> vips) {
  DecapAttachArgs a;
  a.addrs = {"198.18.1.10", "2001:db8:1::10"};
  a.sources = {"198.18.0.0/24", "2001:db8::1"};
  a.vips = std::move(vips);
  return a;
}

// The error of `vips`, which must be refused as InvalidArgument.
std::string Refusal(std::vector<std::string> vips) {
  auto lists = CheckDecapLists(Args(std::move(vips)));
  REQUIRE_FALSE(lists.ok());
  CHECK(lists.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(lists.status().message());
}

}  // namespace

TEST_CASE("VIPs are served by protocol and port, written as VIP keys", "[lbdp][decap]") {
  auto lists = CheckDecapLists(Args(
      {"198.18.0.10:80/tcp", "[2001:DB8::10]:0/UDP", "198.18.0.10:0/udp", "198.18.0.10:80/tcp"}));
  INFO(lists.status().ToString());
  REQUIRE(lists.ok());
  CHECK(lists->vips == std::vector<VipKey>{{Ip("198.18.0.10"), 80, IPPROTO_TCP},
                                           {Ip("2001:db8::10"), 0, IPPROTO_UDP},
                                           {Ip("198.18.0.10"), 0, IPPROTO_UDP}});
  CHECK(lists->whole_vips.empty());
  CHECK(lists->vip_addresses == std::vector<IpAddress>{Ip("198.18.0.10"), Ip("2001:db8::10")});
  CHECK(lists->warnings.empty());
  CHECK_FALSE(lists->any_vip);
}

TEST_CASE("A VIP address alone (configs before ports) takes every port, with a warning",
          "[lbdp][decap]") {
  auto lists = CheckDecapLists(Args({"198.18.0.10", "2001:db8::10", "198.18.0.11:443/tcp"}));
  INFO(lists.status().ToString());
  REQUIRE(lists.ok());
  CHECK(lists->whole_vips == std::vector<IpAddress>{Ip("198.18.0.10"), Ip("2001:db8::10")});
  CHECK(lists->vips == std::vector<VipKey>{{Ip("198.18.0.11"), 443, IPPROTO_TCP}});
  CHECK(lists->vip_addresses ==
        std::vector<IpAddress>{Ip("198.18.0.10"), Ip("2001:db8::10"), Ip("198.18.0.11")});
  REQUIRE(lists->warnings.size() == 2);
  CHECK(lists->warnings[0].starts_with("--vip: '198.18.0.10' names no protocol and port"));
  CHECK(lists->warnings[0].find("198.18.0.10:80/tcp") != std::string::npos);
  CHECK(lists->warnings[1].find("[2001:db8::10]:0/udp") != std::string::npos);
}

TEST_CASE("Bad VIPs are refused with --vip and the entry named", "[lbdp][decap]") {
  struct Case {
    const char* vip;
    const char* want;
  };
  for (const Case& c : std::vector<Case>{
           {"198.18.0.10:80", "--vip: '198.18.0.10:80' is neither an address nor ADDR:PORT/PROTO"},
           {"198.18.0.10:80/sctp", "--vip: '198.18.0.10:80/sctp' has protocol 'sctp'"},
           {"198.18.0.10:65536/tcp", "has port '65536', not a number in 0..65535"},
           {"198.18.0.10/tcp", "has no :PORT"},
           {"2001:db8::10:80/tcp", "has an IPv6 address without brackets"},
           {"224.0.0.5:80/tcp",
            "--vip: '224.0.0.5:80/tcp': its address is not a unicast "
            "address (multicast)"},
           {"224.0.0.5", "--vip: '224.0.0.5' is not a unicast address (multicast)"},
           {"[::ffff:198.18.0.10]:80/tcp", "written as IPv6: write 198.18.0.10"},
           {"0.0.0.0:80/tcp", "has the unspecified address"},
           {"198.18.1.10:80/tcp", "--vip: '198.18.1.10:80/tcp' is also given as --addr"},
           {"[2001:db8:1:0::10]:443/tcp", "is also given as --addr"},
       }) {
    INFO(c.vip);
    const std::string msg = Refusal({"198.18.0.20:80/tcp", c.vip});
    INFO(msg);
    CHECK(msg.starts_with("--vip: "));
    CHECK(msg.find(c.want) != std::string::npos);
  }
}

TEST_CASE("An address is given alone or with ports, not both", "[lbdp][decap]") {
  for (const auto& vips : std::vector<std::vector<std::string>>{
           {"198.18.0.10", "198.18.0.10:80/tcp"}, {"198.18.0.10:80/tcp", "198.18.0.10"}}) {
    const std::string msg = Refusal(vips);
    INFO(msg);
    CHECK(msg.starts_with("--vip: '" + vips[1] + "'"));
    CHECK(msg.find("198.18.0.10 is given both alone (every port) and with ports") !=
          std::string::npos);
  }
  // The same address twice, either way, is one entry.
  auto lists = CheckDecapLists(Args({"198.18.0.10", "198.18.0.10"}));
  REQUIRE(lists.ok());
  CHECK(lists->whole_vips.size() == 1);
  CHECK(lists->warnings.size() == 1);
}

TEST_CASE("'any' VIP only alone; the decap program's size is the limit", "[lbdp][decap]") {
  auto any = CheckDecapLists(Args({"any"}));
  REQUIRE(any.ok());
  CHECK(any->any_vip);
  CHECK(any->vip_addresses.empty());
  CHECK(Refusal({"any", "198.18.0.10:80/tcp"}).starts_with("--vip any cannot be combined"));

  // One address entry and one per port: 4,095 ports of one address fit.
  std::vector<std::string> vips;
  for (int port = 1; port <= static_cast<int>(BALLAST_DECAP_MAX_VIPS) - 1; ++port) {
    vips.push_back("198.18.0.10:" + std::to_string(port) + "/tcp");
  }
  CHECK(CheckDecapLists(Args(vips)).ok());
  vips.push_back("198.18.0.10:4096/tcp");
  CHECK(Refusal(vips) ==
        "--vip: 4097 entries (one per address, one per port) are more than the 4096 the decap "
        "program holds");
}

}  // namespace ballast::lbdp
