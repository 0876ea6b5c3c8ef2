// Validation as pure functions: every rule of config.proto's comments, and
// the two message styles.
#include "agent/core/validate.h"

#include <catch2/catch.hpp>
#include <functional>

#include "absl/strings/match.h"
#include "agent/core/tests/test_util.h"

namespace ballast::core {
namespace {

using testing::Key;
using testing::MakeBackend;
using testing::SmallConfig;

struct Case {
  const char* name;
  std::function<void(v1::Config&)> mutate;
  const char* message;  // exact message of ValidateConfig(..., FieldPath::Index())
};

TEST_CASE("ValidateConfig accepts the small config and the defaults") {
  REQUIRE(ValidateConfig(SmallConfig(), FieldPath::Index()).ok());
  REQUIRE(ValidateConfig(v1::Config(), FieldPath::Index()).ok());
  v1::Config c = SmallConfig();
  c.mutable_global()->set_source_v4_prefix("198.18.0.32/27");
  REQUIRE(ValidateConfig(c, FieldPath::Index()).ok());
  // GUE: a VIP in each mode; the port given, its default, and its ends.
  c.mutable_vips(0)->set_mode(v1::GUE);
  c.mutable_vips(1)->set_mode(v1::ENCAP);
  for (const uint32_t port : {0u, 1u, 6080u, 65535u}) {
    c.mutable_global()->set_gue_port(port);
    INFO("gue_port " << port);
    REQUIRE(ValidateConfig(c, FieldPath::Index()).ok());
  }
  REQUIRE(GuePortOf(c.global()) == 65535);
  c.mutable_global()->set_gue_port(0);
  REQUIRE(GuePortOf(c.global()) == 6080);
}

TEST_CASE("ValidateConfig names the field and the allowed range of every bad input") {
  const std::vector<Case> cases = {
      {"weight out of range",
       [](v1::Config& c) { c.mutable_vips(0)->mutable_backends(2)->set_weight(3000); },
       "vips[0].backends[2].weight: 3000 is out of range 0..1000"},
      {"vip address not an address",
       [](v1::Config& c) { c.mutable_vips(0)->mutable_key()->set_address("198.18.0.300"); },
       "vips[0].key.address: \"198.18.0.300\" is not an IPv4 or IPv6 address (e.g. 198.18.0.10 "
       "or 2001:db8::10)"},
      {"vip address missing",
       [](v1::Config& c) { c.mutable_vips(0)->mutable_key()->clear_address(); },
       "vips[0].key.address: required (an IPv4 or IPv6 address)"},
      {"vip address unspecified",
       [](v1::Config& c) { c.mutable_vips(0)->mutable_key()->set_address("0.0.0.0"); },
       "vips[0].key.address: 0.0.0.0 is the unspecified address"},
      {"vip address multicast",
       [](v1::Config& c) { c.mutable_vips(1)->mutable_key()->set_address("ff02::1"); },
       "vips[1].key.address: ff02::1 is a multicast address"},
      {"port out of range",
       [](v1::Config& c) { c.mutable_vips(0)->mutable_key()->set_port(70000); },
       "vips[0].key.port: 70000 is out of range 0..65535"},
      {"protocol missing",
       [](v1::Config& c) { c.mutable_vips(0)->mutable_key()->clear_protocol(); },
       "vips[0].key.protocol: required (TCP or UDP)"},
      {"protocol unknown",
       [](v1::Config& c) {
         c.mutable_vips(0)->mutable_key()->set_protocol(static_cast<v1::Protocol>(9));
       },
       "vips[0].key.protocol: 9 is not TCP (1) or UDP (2)"},
      {"table size not prime", [](v1::Config& c) { c.mutable_vips(0)->set_table_size(100); },
       "vips[0].table_size: 100 is not a prime (allowed: a prime in 7..1048573; 0 = default "
       "65537)"},
      {"table size too small", [](v1::Config& c) { c.mutable_vips(0)->set_table_size(5); },
       "vips[0].table_size: 5 is out of range 7..1048573 (a prime; 0 = default 65537)"},
      {"table size too large", [](v1::Config& c) { c.mutable_vips(0)->set_table_size(1048583); },
       "vips[0].table_size: 1048583 is out of range 7..1048573 (a prime; 0 = default 65537)"},
      {"forwarding mode unknown",
       [](v1::Config& c) { c.mutable_vips(0)->set_mode(static_cast<v1::ForwardingMode>(7)); },
       "vips[0].mode: 7 is not a forwarding mode (ENCAP or GUE)"},
      {"name with control characters", [](v1::Config& c) { c.mutable_vips(0)->set_name("a\nb"); },
       "vips[0].name: must be at most 256 bytes without control characters"},
      {"IPv4 backend of an IPv6 VIP",
       [](v1::Config& c) { *c.mutable_vips(1)->add_backends() = MakeBackend("198.18.1.7", 1); },
       "vips[1].backends[2].address: 198.18.1.7 is IPv4 but VIP [2001:db8:10::10]:443/tcp is "
       "IPv6: the data plane cannot carry IPv6 in IPv4 (use an IPv6 backend address)"},
      {"backend address IPv4-mapped",
       [](v1::Config& c) {
         c.mutable_vips(1)->mutable_backends(0)->set_address("::ffff:198.18.11.2");
       },
       "vips[1].backends[0].address: ::ffff:198.18.11.2 is an IPv4-mapped IPv6 address: write "
       "it as 198.18.11.2"},
      {"backend address IPv4-mapped loopback",
       [](v1::Config& c) {
         c.mutable_vips(1)->mutable_backends(0)->set_address("::ffff:127.0.0.1");
       },
       "vips[1].backends[0].address: ::ffff:127.0.0.1 is an IPv4-mapped IPv6 address: write it "
       "as 127.0.0.1"},
      {"VIP address IPv4-mapped",
       [](v1::Config& c) { c.mutable_vips(1)->mutable_key()->set_address("::ffff:198.18.0.10"); },
       "vips[1].key.address: ::ffff:198.18.0.10 is an IPv4-mapped IPv6 address: write it as "
       "198.18.0.10"},
      {"backend address broadcast",
       [](v1::Config& c) {
         c.mutable_vips(0)->mutable_backends(0)->set_address("255.255.255.255");
       },
       "vips[0].backends[0].address: 255.255.255.255 is the broadcast address"},
      {"backend address the VIP's",
       [](v1::Config& c) { c.mutable_vips(0)->mutable_backends(0)->set_address("198.18.0.10"); },
       "vips[0].backends[0].address: 198.18.0.10 is the VIP's own address: a backend is another "
       "host"},
      {"backend address loopback",
       [](v1::Config& c) { c.mutable_vips(0)->mutable_backends(0)->set_address("127.0.0.1"); },
       "vips[0].backends[0].address: 127.0.0.1 is a loopback address"},
      {"duplicate backend (written differently)",
       [](v1::Config& c) {
         *c.mutable_vips(1)->add_backends() = MakeBackend("2001:DB8:1:0::1", 1);
       },
       "vips[1].backends[2].address: 2001:DB8:1:0::1 is a duplicate of backends[0]"},
      {"duplicate VIP", [](v1::Config& c) { *c.add_vips() = c.vips(0); },
       "vips[2].key: 198.18.0.10:80/tcp is a duplicate of vips[0]"},
      {"more positive-weight backends than slots",
       [](v1::Config& c) {
         v1::Vip* v = c.mutable_vips(0);
         v->set_table_size(7);
         for (int i = 4; i <= 8; ++i) {
           *v->add_backends() = MakeBackend("198.18.1." + std::to_string(i), 1);
         }
       },
       "vips[0].backends: 8 backends with a positive weight but the table has only 7 slots "
       "(table_size must be at least the number of such backends)"},
      {"too many backends per VIP",
       [](v1::Config& c) {
         v1::Vip* v = c.mutable_vips(0);
         v->clear_backends();
         for (int i = 0; i < 1001; ++i) {
           *v->add_backends() = MakeBackend(
               "198.19." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), 1);
         }
       },
       "vips[0].backends: 1001 backends; at most 1000 per VIP"},
      {"too many VIPs",
       [](v1::Config& c) {
         c.clear_vips();
         for (int i = 0; i < 1024; ++i) {
           *c.add_vips()->mutable_key() =
               Key("198.18." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), 80);
         }
       },
       "vips: 1024 VIPs; at most 1023"},
      {"more VIPs and VIP addresses than the data plane's VIP map holds",
       [](v1::Config& c) {
         // 600 VIPs on 600 addresses: 1200 entries (each VIP and one
         // marker per address) of 1024 (#41: validation took up to 1023).
         c.clear_vips();
         for (int i = 0; i < 600; ++i) {
           *c.add_vips()->mutable_key() =
               Key("198.18." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), 80);
         }
       },
       "vips: 600 VIPs on 600 addresses need 1200 entries of the data plane's VIP map; it holds "
       "1024 (one per VIP and one per VIP address): fewer VIPs, or more of them on one address"},
      {"too many backends in total",
       [](v1::Config& c) {
         c.clear_vips();
         int n = 0;
         for (int i = 0; i < 17; ++i) {
           v1::Vip* v = c.add_vips();
           *v->mutable_key() = Key("198.18.0." + std::to_string(i + 1), 80);
           for (int j = 0; j < 1000 && n < 16384; ++j, ++n) {
             *v->add_backends() = MakeBackend(
                 "198.19." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1), 1);
           }
         }
       },
       "vips: 16384 backends in total; at most 16383 across all VIPs"},
      {"too many Maglev slots in total",
       [](v1::Config& c) {
         c.clear_vips();
         for (int i = 0; i < 65; ++i) {
           v1::Vip* v = c.add_vips();
           *v->mutable_key() = Key("198.18.0." + std::to_string(i + 1), 80);
           v->set_table_size(1048573);
         }
       },
       "vips: 68157245 Maglev table slots in total (259 MiB in the kernel); at most 67108864 "
       "across all VIPs: give some VIPs a smaller table_size"},
      {"IPv4 backends without source_v4",
       [](v1::Config& c) { c.mutable_global()->clear_source_v4(); },
       "global.source_v4: required: backend 198.18.1.1 of vip 198.18.0.10:80/tcp is IPv4, and "
       "IPv4 encapsulation needs an outer source address of this router"},
      {"source_v4 of the wrong family",
       [](v1::Config& c) { c.mutable_global()->set_source_v4("2001:db8::1"); },
       "global.source_v4: 2001:db8::1 is not an IPv4 address"},
      {"source_v4_prefix not a prefix",
       [](v1::Config& c) { c.mutable_global()->set_source_v4_prefix("198.18.0.32/x"); },
       "global.source_v4_prefix: prefix \"198.18.0.32/x\": 'x' is not a prefix length"},
      {"source_v4_prefix with host bits",
       [](v1::Config& c) { c.mutable_global()->set_source_v4_prefix("198.18.0.33/27"); },
       "global.source_v4_prefix: prefix \"198.18.0.33/27\" has host bits set (the network is "
       "198.18.0.32/27)"},
      {"source_v4_prefix too long or too short",
       [](v1::Config& c) { c.mutable_global()->set_source_v4_prefix("198.18.0.32/32"); },
       "global.source_v4_prefix: 198.18.0.32/32 is not an IPv4 prefix of length 16..31"},
      {"source_v4_prefix of IPv6",
       [](v1::Config& c) { c.mutable_global()->set_source_v4_prefix("2001:db8::/64"); },
       "global.source_v4_prefix: 2001:db8::/64 is not an IPv4 prefix of length 16..31"},
      {"source_v4_prefix multicast",
       [](v1::Config& c) { c.mutable_global()->set_source_v4_prefix("224.0.0.0/24"); },
       "global.source_v4_prefix: 224.0.0.0/24 cannot hold outer source addresses (this network, "
       "loopback, multicast or reserved)"},
      {"source_v4_prefix without source_v4",
       [](v1::Config& c) {
         c.mutable_global()->set_source_v4_prefix("198.18.0.32/27");
         c.mutable_global()->clear_source_v4();
       },
       "global.source_v4_prefix: set, but source_v4 is not (probes use it)"},
      {"source_v4_prefix holding a VIP",
       [](v1::Config& c) { c.mutable_global()->set_source_v4_prefix("198.18.0.0/27"); },
       "global.source_v4_prefix: holds the address of vip 198.18.0.10:80/tcp: the router's "
       "outer sources and its VIPs must not overlap"},
      {"source_v4_prefix holding a backend",
       [](v1::Config& c) { c.mutable_global()->set_source_v4_prefix("198.18.1.0/24"); },
       "global.source_v4_prefix: holds backend 198.18.1.1 of vip 198.18.0.10:80/tcp: a backend "
       "cannot be one of the router's outer sources"},
      {"source_v6 not an address",
       [](v1::Config& c) { c.mutable_global()->set_source_v6("router"); },
       "global.source_v6: \"router\" is not an IPv6 address"},
      {"interface name too long",
       [](v1::Config& c) { c.mutable_global()->set_interface("a-very-long-device-name"); },
       "global.interface: \"a-very-long-device-name\" is not a network device name (1..15 "
       "characters, no '/', ':' or spaces)"},
      {"extra interface that is not a device name",
       [](v1::Config& c) {
         c.mutable_global()->set_interface("eth0");
         c.mutable_global()->add_extra_interfaces("eth1");
         c.mutable_global()->add_extra_interfaces("eth 2");
       },
       "global.extra_interfaces[1]: \"eth 2\" is not a network device name (1..15 characters, "
       "no '/', ':' or spaces)"},
      {"extra interface equal to the interface",
       [](v1::Config& c) {
         c.mutable_global()->set_interface("eth0");
         c.mutable_global()->add_extra_interfaces("eth0");
       },
       "global.extra_interfaces[0]: \"eth0\" is the interface"},
      {"extra interface twice",
       [](v1::Config& c) {
         c.mutable_global()->set_interface("eth0");
         c.mutable_global()->add_extra_interfaces("eth1");
         c.mutable_global()->add_extra_interfaces("eth1");
       },
       "global.extra_interfaces[1]: \"eth1\" is listed twice"},
      {"extra interfaces without the interface",
       [](v1::Config& c) {
         c.mutable_global()->clear_interface();
         c.mutable_global()->add_extra_interfaces("eth1");
       },
       "global.extra_interfaces[0]: set, but interface is not"},
      {"too many extra interfaces",
       [](v1::Config& c) {
         c.mutable_global()->set_interface("eth0");
         for (int i = 1; i <= 17; ++i) {
           c.mutable_global()->add_extra_interfaces("eth" + std::to_string(i));
         }
       },
       "global.extra_interfaces: 17 devices; at most 16"},
      {"automatic bounce interfaces turned off without the interface",
       [](v1::Config& c) {
         c.mutable_global()->clear_interface();
         c.mutable_global()->set_no_auto_bounce_interfaces(true);
       },
       "global.no_auto_bounce_interfaces: set, but interface is not"},
      {"tcp idle timeout out of range",
       [](v1::Config& c) { c.mutable_global()->mutable_timeouts()->set_tcp_idle_s(90000); },
       "global.timeouts.tcp_idle_s: 90000 is out of range 1..86400 (0 = default 300)"},
      {"udp idle timeout out of range",
       [](v1::Config& c) { c.mutable_global()->mutable_timeouts()->set_udp_idle_s(86401); },
       "global.timeouts.udp_idle_s: 86401 is out of range 1..86400 (0 = default 30)"},
      {"linger out of range",
       [](v1::Config& c) { c.mutable_global()->mutable_timeouts()->set_linger_s(601); },
       "global.timeouts.linger_s: 601 is out of range 1..600 (0 = default 10)"},
      {"syn idle out of range",
       [](v1::Config& c) { c.mutable_global()->mutable_timeouts()->set_syn_idle_s(1000); },
       "global.timeouts.syn_idle_s: 1000 is out of range 1..600 (0 = default 5)"},
      {"syn retry out of range",
       [](v1::Config& c) { c.mutable_global()->mutable_timeouts()->set_syn_retry_ms(5); },
       "global.timeouts.syn_retry_ms: 5 is out of range 10..60000 (0 = default 200)"},
      {"syn reuse idle out of range",
       [](v1::Config& c) { c.mutable_global()->mutable_timeouts()->set_syn_reuse_idle_s(90000); },
       "global.timeouts.syn_reuse_idle_s: 90000 is out of range 1..86400 (0 = default 60)"},
      {"syn reuse idle above tcp idle",
       [](v1::Config& c) {
         c.mutable_global()->mutable_timeouts()->set_tcp_idle_s(30);
         c.mutable_global()->mutable_timeouts()->set_syn_reuse_idle_s(40);
       },
       "global.timeouts.syn_reuse_idle_s: 40 s is above tcp_idle_s (30 s): an established flow "
       "is forgotten before it is that idle"},
      {"syn retry not below syn idle",
       [](v1::Config& c) {
         c.mutable_global()->mutable_timeouts()->set_syn_idle_s(2);
         c.mutable_global()->mutable_timeouts()->set_syn_retry_ms(2000);
       },
       "global.timeouts.syn_retry_ms: 2000 ms is not below syn_idle_s (2 s): a handshake is "
       "forgotten before its SYN could be retried"},
      {"adopted bounce window out of range",
       [](v1::Config& c) { c.mutable_global()->mutable_timeouts()->set_adopted_bounce_ms(50); },
       "global.timeouts.adopted_bounce_ms: 50 is out of range 100..60000 (0 = default 2000)"},
      {"drain timeout out of range",
       [](v1::Config& c) { c.mutable_global()->set_drain_timeout_s(100000); },
       "global.drain_timeout_s: 100000 is out of range 1..86400 (0 = default 300)"},
      {"ICMP too-big rate out of range",
       [](v1::Config& c) { c.mutable_global()->set_icmp_too_big_per_s(2000000); },
       "global.icmp_too_big_per_s: 2000000 is out of range 1..1000000 (0 = default 1000)"},
      {"ICMP too-big burst above the rate",
       [](v1::Config& c) {
         c.mutable_global()->set_icmp_too_big_per_s(10);
         c.mutable_global()->set_icmp_too_big_burst(11);
       },
       "global.icmp_too_big_burst: 11 is out of range 1..10 (at most icmp_too_big_per_s; 0 = "
       "default 50)"},
      {"ICMP too-big burst above the default rate",
       [](v1::Config& c) { c.mutable_global()->set_icmp_too_big_burst(1001); },
       "global.icmp_too_big_burst: 1001 is out of range 1..1000 (at most icmp_too_big_per_s; 0 "
       "= default 50)"},
      {"GUE port out of range", [](v1::Config& c) { c.mutable_global()->set_gue_port(65536); },
       "global.gue_port: 65536 is out of range 1..65535 (0 = default 6080)"},
      {"probe interval too short",
       [](v1::Config& c) {
         c.mutable_vips(0)->mutable_backends(1)->mutable_probe()->set_interval_ms(10);
       },
       "vips[0].backends[1].probe.interval_ms: 10 is out of range 50..60000 (0 = default 1000)"},
      {"probe timeout longer than the interval",
       [](v1::Config& c) {
         auto* p = c.mutable_vips(0)->mutable_backends(1)->mutable_probe();
         p->set_interval_ms(200);
         p->set_timeout_ms(300);
       },
       "vips[0].backends[1].probe.timeout_ms: 300 is out of range 10..200 (10..interval_ms; 0 = "
       "default 500)"},
      {"probe jitter over half the interval",
       [](v1::Config& c) {
         c.mutable_vips(0)->mutable_backends(1)->mutable_probe()->set_jitter_ms(501);
       },
       "vips[0].backends[1].probe.jitter_ms: 501 is out of range 0..500 (0..interval_ms/2)"},
      {"gRPC probe without a method",
       [](v1::Config& c) {
         c.mutable_vips(0)->mutable_backends(1)->mutable_probe()->set_kind(v1::ProbeSpec::GRPC);
       },
       "vips[0].backends[1].probe.grpc_method: required for GRPC probes (\"/pkg.Service/Method\")"},
      {"HTTP status out of range",
       [](v1::Config& c) {
         auto* p = c.mutable_vips(0)->mutable_backends(1)->mutable_probe();
         p->set_kind(v1::ProbeSpec::HTTP);
         p->add_http_status(200);
         p->add_http_status(700);
       },
       "vips[0].backends[1].probe.http_status[1]: 700 is out of range 100..599"},
      {"HTTP path without a slash",
       [](v1::Config& c) {
         auto* p = c.mutable_vips(0)->mutable_backends(1)->mutable_probe();
         p->set_kind(v1::ProbeSpec::HTTPS);
         p->set_http_path("healthz");
       },
       "vips[0].backends[1].probe.http_path: \"healthz\" must start with / and contain no "
       "spaces or control characters (at most 2048 bytes)"},
      {"probe port out of range",
       [](v1::Config& c) {
         c.mutable_vips(0)->mutable_backends(1)->mutable_probe()->set_port(65536);
       },
       "vips[0].backends[1].probe.port: 65536 is out of range 0..65535"},
      {"probe kind unknown",
       [](v1::Config& c) {
         c.mutable_vips(0)->mutable_backends(1)->mutable_probe()->set_kind(
             static_cast<v1::ProbeSpec::Kind>(42));
       },
       "vips[0].backends[1].probe.kind: 42 is not a probe kind (TCP, HTTP, HTTPS, GRPC, TLS)"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      v1::Config config = SmallConfig();
      c.mutate(config);
      const absl::Status s = ValidateConfig(config, FieldPath::Index());
      CHECK(s.code() == absl::StatusCode::kInvalidArgument);
      CHECK(std::string(s.message()) == c.message);
    }
  }
}

TEST_CASE("Named style puts the entity first and the field after the colon") {
  v1::Vip vip = SmallConfig().vips(0);
  vip.mutable_backends(2)->set_weight(3000);
  const absl::Status s = ValidateVip(vip, FieldPath::Named("vip 198.18.0.10:80/tcp"));
  REQUIRE(std::string(s.message()) ==
          "vip 198.18.0.10:80/tcp backend 198.18.1.3: weight 3000 is out of range 0..1000");
  const absl::Status w = ValidateWeight(3000, FieldPath::Named("backend 198.18.1.7", "weight"));
  REQUIRE(std::string(w.message()) == "backend 198.18.1.7: weight 3000 is out of range 0..1000");
}

TEST_CASE("Limits at their edges are accepted") {
  v1::Config c = SmallConfig();
  c.mutable_vips(0)->mutable_backends(0)->set_weight(1000);
  c.mutable_vips(0)->mutable_backends(1)->set_weight(0);
  c.mutable_vips(0)->set_table_size(7);
  c.mutable_vips(1)->set_table_size(1048573);
  c.mutable_vips(1)->mutable_key()->set_port(65535);
  c.mutable_global()->mutable_timeouts()->set_tcp_idle_s(86400);
  REQUIRE(ValidateConfig(c, FieldPath::Index()).ok());
  // An IPv4 VIP may have IPv6 backends (IPv4-in-IPv6).
  *c.mutable_vips(0)->add_backends() = MakeBackend("2001:db8:1::9", 1);
  REQUIRE(ValidateConfig(c, FieldPath::Index()).ok());
  // Positive-weight backends equal to the table size are fine; weight-0 ones do not count.
  v1::Vip* v = c.mutable_vips(0);
  v->clear_backends();
  for (int i = 1; i <= 7; ++i) *v->add_backends() = MakeBackend("198.18.1." + std::to_string(i), 1);
  for (int i = 8; i <= 20; ++i)
    *v->add_backends() = MakeBackend("198.18.1." + std::to_string(i), 0);
  REQUIRE(ValidateConfig(c, FieldPath::Index()).ok());
  // 1023 VIPs on one address (ports 1..1023), and 512 VIPs on 512
  // addresses: 1024 entries of the data plane's VIP map each.
  v1::Config many;
  for (uint32_t i = 1; i <= 1023; ++i) *many.add_vips()->mutable_key() = Key("198.18.0.1", i);
  REQUIRE(ValidateConfig(many, FieldPath::Index()).ok());
  many.clear_vips();
  for (int i = 0; i < 512; ++i) {
    *many.add_vips()->mutable_key() =
        Key("198.18." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), 80);
  }
  REQUIRE(ValidateConfig(many, FieldPath::Index()).ok());
}

TEST_CASE("ValidateAgentConfig checks lbagent's own fields") {
  v1::AgentConfig a;
  REQUIRE(ValidateAgentConfig(a).ok());
  a.set_metrics_listen("127.0.0.1:9580");
  REQUIRE(ValidateAgentConfig(a).ok());
  a.set_metrics_listen("[::1]:9580");
  REQUIRE(ValidateAgentConfig(a).ok());
  a.set_metrics_listen("0.0.0.0:9580");
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "metrics_listen: 0.0.0.0:9580 is not a loopback address (127.0.0.0/8 or [::1]); "
          "metrics are served on loopback only");
  a.set_metrics_listen("127.0.0.1:99999");
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "metrics_listen: port \"99999\" is not a number in 1..65535");
  a.set_metrics_listen("");
  a.set_attach_mode("turbo");
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "attach_mode: \"turbo\" is not native, generic or auto");
  a.set_attach_mode("native");
  a.set_state_file("state.pb");
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "state_file: \"state.pb\" is not an absolute path");
  a.clear_state_file();
  a.set_audit_max_mb(5000);
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "audit_max_mb: 5000 is out of range 1..4096 (0 = default 64)");
  a.clear_audit_max_mb();
  a.set_audit_retention_days(4000);
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "audit_retention_days: 4000 is out of range 1..3650 (0 = default 90)");
  a.clear_audit_retention_days();
  a.mutable_admin()->set_tcp_listen("127.0.0.1:7443");
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "admin.tls_cert: required with tcp_listen (mutual TLS only)");
  a.mutable_admin()->clear_tcp_listen();
  {
    v1::Cluster& cl = *a.mutable_cluster();
    cl.set_node("r1");
    cl.add_endpoints("http://198.18.200.1:2379");
    REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
            "cluster.endpoints[0]: etcd endpoint \"http://198.18.200.1:2379\": plaintext to a host "
            "that is not loopback; anyone on the path could rewrite the cluster's state. Use "
            "https:// with a CA (etcd_ca_file), or allow it explicitly "
            "(etcd_allow_plaintext_remote) on a trusted network");
    // Plaintext is fine to loopback, however it is spelled; an IPv4-mapped
    // 127.0.0.1 is not taken for loopback.
    for (const char* host : {"http://127.0.0.1:2379", "http://127.9.0.1:2379", "http://[::1]:2379",
                             "http://localhost:2379", "[0:0::1]:2379"}) {
      cl.set_endpoints(0, host);
      INFO(host);
      REQUIRE(ValidateAgentConfig(a).ok());
    }
    cl.set_endpoints(0, "http://[::ffff:127.0.0.1]:2379");
    REQUIRE(absl::StrContains(ValidateAgentConfig(a).message(), "plaintext to a host"));
    cl.set_endpoints(0, "http://198.18.200.1:2379");
    cl.set_etcd_allow_plaintext_remote(true);
    REQUIRE(ValidateAgentConfig(a).ok());
    cl.set_etcd_allow_plaintext_remote(false);
    cl.set_endpoints(0, "https://198.18.200.1:2379");
    REQUIRE(ValidateAgentConfig(a).ok());
    cl.set_endpoints(0, "198.18.200.1:2379");  // TLS with a CA file
    cl.set_etcd_ca_file("/etc/ballast/etcd-ca.pem");
    REQUIRE(ValidateAgentConfig(a).ok());
    cl.set_etcd_cert_file("/etc/ballast/etcd-client.pem");
    REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
            "cluster.etcd_key_file: etcd_cert_file and etcd_key_file go together (the "
            "certificate and its key)");
    cl.set_etcd_key_file("etcd-client.key");
    REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
            "cluster.etcd_key_file: \"etcd-client.key\" must be an absolute path");
    cl.set_etcd_key_file("/etc/ballast/etcd-client.key");
    cl.set_etcd_username("ballast");
    REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
            "cluster.etcd_password_file: etcd_username and etcd_password_file go together");
    cl.set_etcd_password_file("/etc/ballast/etcd-password");
    REQUIRE(ValidateAgentConfig(a).ok());
    a.clear_cluster();
  }
  {
    v1::Bgp& b = *a.mutable_bgp();
    b.set_bird_socket("/run/bird/bird.ctl");
    b.set_hold_file("/run/ballast/bgp-hold");
    REQUIRE(ValidateAgentConfig(a).ok());
    b.set_withdraw_grace_ms(50);
    REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
            "bgp.withdraw_grace_ms: 50 is out of range 100..60000 (0 = default 2000)");
    b.set_withdraw_grace_ms(60001);
    REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
            "bgp.withdraw_grace_ms: 60001 is out of range 100..60000 (0 = default 2000)");
    b.set_withdraw_grace_ms(500);
    REQUIRE(ValidateAgentConfig(a).ok());
    a.clear_bgp();
  }
  a.mutable_admin()->set_tls_crl("clients.crl");
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "admin.tls_crl: \"clients.crl\" is not an absolute path");
  a.mutable_admin()->clear_tls_crl();
  *a.mutable_initial()->add_vips() = SmallConfig().vips(0);
  a.mutable_initial()->mutable_vips(0)->mutable_backends(2)->set_weight(3000);
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "initial.vips[0].backends[2].weight: 3000 is out of range 0..1000");
  a.mutable_initial()->mutable_vips(0)->mutable_backends(2)->set_weight(3);
  REQUIRE(std::string(ValidateAgentConfig(a).message()) ==
          "initial.global.source_v4: required: backend 198.18.1.1 of vip 198.18.0.10:80/tcp is "
          "IPv4, and IPv4 encapsulation needs an outer source address of this router");
  a.mutable_initial()->mutable_global()->set_source_v4("198.18.0.1");
  REQUIRE(ValidateAgentConfig(a).ok());
}

TEST_CASE("CanonicalConfig writes every address the same way") {
  v1::Config c = SmallConfig();
  c.mutable_vips(1)->mutable_key()->set_address("2001:DB8:10:0:0::10");
  c.mutable_global()->set_source_v6("2001:0db8::0001");
  c.mutable_global()->set_source_v4_prefix("198.18.0.32/027");
  const v1::Config k = CanonicalConfig(c);
  REQUIRE(k.global().source_v4_prefix() == "198.18.0.32/27");
  REQUIRE(k.vips(1).key().address() == "2001:db8:10::10");
  REQUIRE(k.global().source_v6() == "2001:db8::1");
}

}  // namespace
}  // namespace ballast::core
