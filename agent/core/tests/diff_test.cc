// DiffConfig: readable, ordered, complete.
#include "agent/core/diff.h"

#include <catch2/catch.hpp>

#include "agent/core/tests/test_util.h"
#include "agent/core/validate.h"

namespace ballast::core {
namespace {

using testing::Key;
using testing::MakeBackend;
using testing::SmallConfig;

TEST_CASE("Equal configs have no diff") {
  REQUIRE(DiffConfig(SmallConfig(), SmallConfig()).empty());
  REQUIRE(DiffConfig(v1::Config(), v1::Config()).empty());
}

TEST_CASE("Every kind of change has its line, in a fixed order") {
  const v1::Config from = SmallConfig();
  v1::Config to = from;
  to.mutable_global()->mutable_timeouts()->set_tcp_idle_s(600);
  to.mutable_global()->set_drop_malformed(true);
  to.mutable_vips(0)->mutable_backends(1)->set_weight(3);  // ~ weight
  to.mutable_vips(0)->mutable_backends(2)->mutable_probe()->set_interval_ms(2000);
  to.mutable_vips(0)->mutable_backends()->DeleteSubrange(0, 1);        // - 198.18.1.1
  *to.mutable_vips(0)->add_backends() = MakeBackend("198.18.1.9", 5);  // +
  to.mutable_vips(0)->set_table_size(65521);
  to.mutable_vips()->DeleteSubrange(1, 1);  // - vip v6
  v1::Vip* n = to.add_vips();
  *n->mutable_key() = Key("198.18.0.11", 0, v1::UDP);
  n->set_name("dns");
  *n->add_backends() = MakeBackend("198.18.2.1", 1);

  const std::vector<std::string> want = {
      "~ global.timeouts unset -> set",
      "~ global.timeouts.tcp_idle_s 0 -> 600",
      "~ global.drop_malformed false -> true",
      "~ vip 198.18.0.10:80/tcp table_size 251 -> 65521",
      "- backend 198.18.0.10:80/tcp 198.18.1.1",
      "~ backend 198.18.0.10:80/tcp 198.18.1.2 weight 1 -> 3",
      "~ backend 198.18.0.10:80/tcp 198.18.1.3 probe unset -> set",
      "~ backend 198.18.0.10:80/tcp 198.18.1.3 probe.interval_ms 0 -> 2000",
      "+ backend 198.18.0.10:80/tcp 198.18.1.9 weight 5",
      "+ vip 198.18.0.11:0/udp",
      "~ vip 198.18.0.11:0/udp name \"\" -> \"dns\"",
      "+ backend 198.18.0.11:0/udp 198.18.2.1 weight 1",
      "- vip [2001:db8:10::10]:443/tcp",
      "- backend [2001:db8:10::10]:443/tcp 2001:db8:1::1",
      "- backend [2001:db8:10::10]:443/tcp 2001:db8:1::2",
  };
  REQUIRE(DiffConfig(from, to) == want);
}

TEST_CASE("A message set with every default, or unset, is a change") {
  v1::Config from = SmallConfig();
  v1::Config to = from;
  to.mutable_global()->mutable_health();  // health checking on, every default
  CHECK(DiffConfig(from, to) == std::vector<std::string>{"~ global.health unset -> set"});
  CHECK(DiffConfig(to, from) == std::vector<std::string>{"~ global.health set -> unset"});
  // Off from a block with a field set: the block goes, not only the field.
  to.mutable_global()->mutable_health()->set_demote_after(5);
  CHECK(DiffConfig(to, from) == std::vector<std::string>{"~ global.health set -> unset",
                                                         "~ global.health.demote_after 5 -> 0"});
  CHECK(DiffConfig(to, to).empty());
}

TEST_CASE("A VIP's mode alone, and the GUE port, are changes (the apply re-programs them)") {
  const v1::Config from = SmallConfig();
  v1::Config to = from;
  to.mutable_vips(0)->set_mode(v1::GUE);
  to.mutable_global()->set_gue_port(7000);
  CHECK(
      DiffConfig(from, to) ==
      std::vector<std::string>{"~ global.gue_port 0 -> 7000",
                               "~ vip 198.18.0.10:80/tcp mode FORWARDING_MODE_UNSPECIFIED -> GUE"});
  v1::Config back = to;
  back.mutable_vips(0)->set_mode(v1::ENCAP);
  CHECK(DiffConfig(to, back) ==
        std::vector<std::string>{"~ vip 198.18.0.10:80/tcp mode GUE -> ENCAP"});
}

TEST_CASE("The diff does not depend on the order VIPs and backends are listed in") {
  const v1::Config from = SmallConfig();
  v1::Config to = SmallConfig();
  to.mutable_vips(0)->mutable_backends(0)->set_weight(7);
  v1::Config shuffled = to;
  shuffled.mutable_vips()->SwapElements(0, 1);
  shuffled.mutable_vips(1)->mutable_backends()->SwapElements(0, 2);
  REQUIRE(DiffConfig(from, to) == DiffConfig(from, shuffled));
  REQUIRE(DiffConfig(from, to) ==
          std::vector<std::string>{"~ backend 198.18.0.10:80/tcp 198.18.1.1 weight 1 -> 7"});
}

TEST_CASE("Canonical addresses make two spellings of the same backend equal") {
  v1::Config to = SmallConfig();
  to.mutable_vips(1)->mutable_backends(0)->set_address("2001:DB8:1:0::1");
  REQUIRE(DiffConfig(SmallConfig(), CanonicalConfig(to)).empty());
}

}  // namespace
}  // namespace ballast::core
