// DecideAnnouncements: data-plane health, hold, shutdown and active/standby
// ownership -> the desired announcement of each VIP address, with its reason.
#include <catch2/catch.hpp>

#include "agent/bgp/announce_policy.h"

namespace ballast::bgp {
namespace {

VipPrefix V(const char* t) { return *VipPrefix::Parse(t); }

constexpr uint64_t kNow = 1'000'000'000'000;

VipInput Plain(const char* key, const char* addr) { return {key, addr, false, false, {}}; }
VipInput Owned(const char* key, const char* addr, bool owner, std::optional<uint64_t> deadline) {
  return {key, addr, true, owner, deadline};
}

PolicyInput Healthy(std::vector<VipInput> vips, bool cluster = false) {
  PolicyInput in;
  in.dataplane = {true, ""};
  in.cluster_mode = cluster;
  in.now_ns = kNow;
  in.vips = std::move(vips);
  return in;
}

TEST_CASE("healthy data plane: ordinary VIPs are announced, one decision per address") {
  auto d = DecideAnnouncements(Healthy({Plain("198.18.0.10:80/tcp", "198.18.0.10"),
                                        Plain("198.18.0.10:443/tcp", "198.18.0.10"),
                                        Plain("[2001:db8:10::10]:80/tcp", "2001:db8:10::10")}));
  REQUIRE(d.size() == 2);
  CHECK(d.at(V("198.18.0.10")).announce);
  CHECK(d.at(V("2001:db8:10::10")).announce);
  CHECK_THAT(d.at(V("198.18.0.10")).reason, Catch::Contains("data plane healthy"));
}

TEST_CASE("unhealthy data plane withdraws every VIP and says why") {
  PolicyInput in = Healthy({Plain("198.18.0.10:80/tcp", "198.18.0.10"),
                            Owned("198.18.0.11:80/tcp", "198.18.0.11", true, kNow + 5'000'000'000)},
                           true);
  in.dataplane = {false, "dev eth0 runs no XDP program"};
  auto d = DecideAnnouncements(in);
  REQUIRE(d.size() == 2);
  for (const auto& [p, dec] : d) {
    CHECK_FALSE(dec.announce);
    CHECK(dec.reason == "data plane unhealthy: dev eth0 runs no XDP program");
  }
}

TEST_CASE("shutdown withdraws everything, before hold and health") {
  PolicyInput in = Healthy({Plain("198.18.0.10:80/tcp", "198.18.0.10")});
  in.shutdown = "SIGTERM";
  in.hold = "hold file exists";
  in.dataplane = {false, "x"};
  auto d = DecideAnnouncements(in);
  CHECK_FALSE(d.at(V("198.18.0.10")).announce);
  CHECK(d.at(V("198.18.0.10")).reason == "agent shutting down (SIGTERM)");
}

TEST_CASE("operator hold withdraws everything") {
  PolicyInput in = Healthy({Plain("198.18.0.10:80/tcp", "198.18.0.10")});
  in.hold = "hold file /run/ballast/bgp-hold exists";
  auto d = DecideAnnouncements(in);
  CHECK_FALSE(d.at(V("198.18.0.10")).announce);
  CHECK(d.at(V("198.18.0.10")).reason == "operator hold: hold file /run/ballast/bgp-hold exists");
}

TEST_CASE("active/standby: the owner with a future deadline announces") {
  auto d = DecideAnnouncements(
      Healthy({Owned("198.18.0.11:80/tcp", "198.18.0.11", true, kNow + 7'500'000'000)}, true));
  CHECK(d.at(V("198.18.0.11")).announce);
  CHECK_THAT(d.at(V("198.18.0.11")).reason, Catch::Contains("deadline in 7500 ms"));
}

TEST_CASE("active/standby: a standby does not announce") {
  auto d = DecideAnnouncements(
      Healthy({Owned("198.18.0.11:80/tcp", "198.18.0.11", false, uint64_t{0})}, true));
  CHECK_FALSE(d.at(V("198.18.0.11")).announce);
  CHECK_THAT(d.at(V("198.18.0.11")).reason, Catch::Contains("not its owner"));
}

TEST_CASE("active/standby: lease lost or fenced (deadline now or past, or none) withdraws") {
  for (std::optional<uint64_t> deadline :
       {std::optional<uint64_t>(0), std::optional<uint64_t>(kNow),
        std::optional<uint64_t>(kNow - 1), std::optional<uint64_t>()}) {
    auto d = DecideAnnouncements(
        Healthy({Owned("198.18.0.11:80/tcp", "198.18.0.11", true, deadline)}, true));
    CHECK_FALSE(d.at(V("198.18.0.11")).announce);
    CHECK_THAT(d.at(V("198.18.0.11")).reason, Catch::Contains("owner deadline passed"));
  }
}

TEST_CASE("standalone mode ignores ownership") {
  auto d = DecideAnnouncements(
      Healthy({Owned("198.18.0.11:80/tcp", "198.18.0.11", false, uint64_t{0})}, false));
  CHECK(d.at(V("198.18.0.11")).announce);
}

TEST_CASE("an address is announced when any of its VIPs may be forwarded here") {
  auto d =
      DecideAnnouncements(Healthy({Owned("198.18.0.11:80/tcp", "198.18.0.11", false, uint64_t{0}),
                                   Plain("198.18.0.11:443/tcp", "198.18.0.11"),
                                   Owned("198.18.0.12:80/tcp", "198.18.0.12", false, uint64_t{0}),
                                   Owned("198.18.0.12:443/tcp", "198.18.0.12", false, uint64_t{0})},
                                  true));
  CHECK(d.at(V("198.18.0.11")).announce);
  CHECK_THAT(d.at(V("198.18.0.11")).reason, Catch::Contains("198.18.0.11:443/tcp"));
  CHECK_FALSE(d.at(V("198.18.0.12")).announce);
}

TEST_CASE("no VIPs, nothing decided; a bad address is reported, not announced") {
  CHECK(DecideAnnouncements(Healthy({})).empty());
  std::vector<std::string> errors;
  auto d = DecideAnnouncements(Healthy({Plain("x:80/tcp", "not-an-address")}), &errors);
  CHECK(d.empty());
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::Contains("x:80/tcp"));
}

TEST_CASE("a retired address is withdrawn; one a VIP uses again is decided by its VIPs") {
  PolicyInput in = Healthy({Plain("198.18.0.10:80/tcp", "198.18.0.10")});
  in.retired = {"198.18.0.10", "2001:db8:10::10"};
  auto d = DecideAnnouncements(in);
  REQUIRE(d.size() == 2);
  CHECK(d.at(V("198.18.0.10")).announce);
  CHECK_FALSE(d.at(V("2001:db8:10::10")).announce);
  CHECK(d.at(V("2001:db8:10::10")).reason == "no VIP uses it any more");
  // Shutdown or not, withdrawn.
  in.shutdown = "SIGTERM";
  CHECK_FALSE(DecideAnnouncements(in).at(V("2001:db8:10::10")).announce);
}

}  // namespace
}  // namespace ballast::bgp
