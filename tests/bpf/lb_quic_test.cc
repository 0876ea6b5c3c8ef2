// QUIC-LB (bpf/lib/quic.h; docs/dataplane.md, "QUIC"): a UDP VIP in QUIC
// mode sends a packet whose DCID the backends chose to the backend its
// server ID names, whatever the 4-tuple; Initial and 0-RTT packets, other
// versions and unroutable DCIDs go by the 4-tuple. Connection IDs come
// from draft-ietf-quic-load-balancers' test vectors where they apply, else
// from dataplane::EncodeQuicCid (checked against the same vectors in
// dataplane_tests).
#include <linux/bpf.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "agent/dataplane/quic.h"
#include "tests/bpf/lb_fixture.h"
#include "tests/bpf/tshark.h"

namespace ballast::bpftest {
namespace {

using dataplane::QuicConfig;
using dataplane::QuicKey;
using dataplane::QuicServer;

constexpr uint32_t kQuic4 = 6;  // 198.18.0.10:443/udp -> IPv4 backends 1,2,3
constexpr uint32_t kQuic6 = 7;  // [2001:db8::10]:443/udp -> IPv6 backends 11,12,13
constexpr uint16_t kQuicPort = 443;
constexpr uint32_t kV1 = 0x00000001;
constexpr uint32_t kV2 = 0x6b3343cf;

Bytes Hex(const std::string& h) {
  const std::string bytes = absl::HexStringToBytes(h);
  return Bytes(bytes.begin(), bytes.end());
}

// The draft's key for its encrypted vectors.
QuicKey DraftKey() {
  const Bytes k = Hex("8f95f09245765f80256934e50c66207f");
  QuicKey key{};
  std::copy(k.begin(), k.end(), key.begin());
  return key;
}

// A short-header packet: first octet (fixed bit, spin 0, key phase 0,
// packet number length 1), DCID, then a packet number and 24 octets of
// "protected payload".
Bytes ShortHeader(const Bytes& dcid) {
  Bytes b = {0x40};
  b.insert(b.end(), dcid.begin(), dcid.end());
  for (int i = 0; i < 25; ++i) b.push_back(static_cast<uint8_t>(0xa0 + i));
  return b;
}

// A long-header packet of `version` and type bits `type` (0..3), with its
// DCID and an 8-octet SCID, then (an Initial's empty token,) the Length
// and 24 octets of packet number and payload (RFC 9000 17.2).
Bytes LongHeader(uint32_t version, uint8_t type, const Bytes& dcid) {
  Bytes b = {static_cast<uint8_t>(0xc0 | type << 4)};
  for (int i = 3; i >= 0; --i) b.push_back(static_cast<uint8_t>(version >> (8 * i)));
  b.push_back(static_cast<uint8_t>(dcid.size()));
  b.insert(b.end(), dcid.begin(), dcid.end());
  b.push_back(8);
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(0x50 + i));
  const bool initial = (version == 1 && type == 0) || (version == 0x6b3343cf && type == 1);
  if (initial) b.push_back(0);    // token length
  b.insert(b.end(), {0x40, 24});  // Length, a 2-octet varint
  for (int i = 0; i < 24; ++i) b.push_back(static_cast<uint8_t>(0xb0 + i));
  return b;
}

Bytes Quic4(uint16_t sport, const Bytes& payload, const Addr& client = Lab::Client4()) {
  pktgen::PacketBuilder b;
  b.Eth(Lab::TorMac(), Lab::RouterMac()).Ip4(client, Lab::Vip4());
  return b.Udp(sport, kQuicPort).Payload(payload).Build();
}

Bytes Quic6(uint16_t sport, const Bytes& payload, const Addr& client = Lab::Client6()) {
  pktgen::PacketBuilder b;
  b.Eth(Lab::TorMac(), Lab::RouterMac()).Ip6(client, Lab::Vip6());
  return b.Udp(sport, kQuicPort).Payload(payload).Build();
}

ballast_flow_key Key4(uint16_t sport, const Addr& client = Lab::Client4()) {
  return FlowKey(client, Lab::Vip4(), sport, kQuicPort, IPPROTO_UDP);
}

ballast_flow_key Key6(uint16_t sport, const Addr& client = Lab::Client6()) {
  return FlowKey(client, Lab::Vip6(), sport, kQuicPort, IPPROTO_UDP);
}

// The lab plus the two QUIC VIPs (no QUIC configuration yet).
void SetUpQuicLab(LbFixture& fx) {
  SetUpLab(fx);
  fx.AddVip(Lab::Vip4(), kQuicPort, IPPROTO_UDP, kQuic4);
  fx.AddVip(Lab::Vip6(), kQuicPort, IPPROTO_UDP, kQuic6);
  fx.SetTable(kQuic4, CyclingTable({1, 2, 3}));
  fx.SetTable(kQuic6, CyclingTable({11, 12, 13}));
}

void SetConfigs(LbFixture& fx, uint32_t vip_id, const std::vector<QuicConfig>& configs) {
  const absl::Status st = fx.dp().SetQuicConfigs(vip_id, configs);
  INFO(st.ToString());
  REQUIRE(st.ok());
}

void SetServers(LbFixture& fx, uint32_t vip_id, const std::vector<QuicServer>& servers) {
  const absl::Status st = fx.dp().SetQuicServers(vip_id, servers);
  INFO(st.ToString());
  REQUIRE(st.ok());
}

ballast_quic_stats Stats(LbFixture& fx, uint32_t vip_id) {
  auto s = fx.dp().QuicStats(vip_id);
  REQUIRE(s.ok());
  return *s;
}

Bytes Cid(const QuicConfig& c, const Bytes& sid, const Bytes& nonce) {
  auto cid = dataplane::EncodeQuicCid(c, sid, nonce);
  INFO(cid.status().ToString());
  REQUIRE(cid.ok());
  return *cid;
}

// A client port whose 4-tuple the table sends to a backend other than
// `not_this` (the tests then tell CID routing from 4-tuple routing).
uint16_t PortAwayFrom(const LbFixture& fx, uint32_t vip_id, uint32_t not_this, bool v6 = false,
                      uint16_t from = 40000) {
  for (uint16_t p = from; p < from + 1000; ++p) {
    if (fx.Predict(vip_id, v6 ? Key6(p) : Key4(p)) != not_this) return p;
  }
  FAIL("no port away from backend " << not_this);
  return 0;
}

// Runs `frame`, requires it forwarded, and returns the backend it went to
// after checking the encapsulation carries the client's packet unchanged.
uint32_t RunTo(LbFixture& fx, const Bytes& frame, bool v6 = false) {
  const Outcome o = fx.Run(frame);
  REQUIRE(o.verdict == BALLAST_V_TX);
  const uint32_t id = BackendOf(fx, o);
  CheckEncapsulated(o.out, {.outer_family = v6 ? 6 : 4,
                            .outer_src = v6 ? Lab::Src6() : Lab::Src4(),
                            .outer_dst = fx.BackendAddr(id),
                            .inner_ip = pktgen::IpPacketOf(frame)});
  return id;
}

const QuicConfig kPlain0{.config_id = 0, .sid_len = 3, .nonce_len = 4};  // the draft's first
const QuicConfig kPlain1{.config_id = 1, .sid_len = 5, .nonce_len = 5};  // ... and second

TEST_CASE("QUIC-LB plaintext: the draft's vectors route to their server ID's backend",
          "[lb][quic]") {
  LbFixture fx;
  SetUpQuicLab(fx);
  SetConfigs(fx, kQuic4, {kPlain0, kPlain1});
  // Vector 1 byte for byte: cr_bits 0, sid c4605e, nonce 4504cc4f.
  const Bytes cid0 = Hex("07c4605e4504cc4f");
  CHECK(Cid(kPlain0, Hex("c4605e"), Hex("4504cc4f")) == cid0);
  // Vector 2 (cr_bits 1, sid 350d28b420): the draft prints its nonce and
  // CID with a hex digit missing ("3487d970b", "...3487d970b"); its first
  // octet for cr_bits 1 and 10 more octets is 0x2a, and the nonce is taken
  // as 3487d9700b.
  const Bytes cid1 = Hex("2a350d28b4203487d9700b");
  CHECK(Cid(kPlain1, Hex("350d28b420"), Hex("3487d9700b")) == cid1);

  const uint16_t port = PortAwayFrom(fx, kQuic4, 2);
  const uint16_t port1 = PortAwayFrom(fx, kQuic4, 3);
  SetServers(fx, kQuic4,
             {{.config_id = 0, .sid = Hex("c4605e"), .backend_id = 2},
              {.config_id = 1, .sid = Hex("350d28b420"), .backend_id = 3}});
  CHECK(RunTo(fx, Quic4(port, ShortHeader(cid0))) == 2);
  CHECK(RunTo(fx, Quic4(port1, ShortHeader(cid1))) == 3);
  // CID-routed packets leave the 4-tuple flows alone.
  CHECK_FALSE(fx.Flow(Key4(port)).has_value());
  const ballast_quic_stats s = Stats(fx, kQuic4);
  CHECK(s.cid_routed == 2);
  CHECK(s.tuple_routed == 0);
  CHECK(fx.BackendStats(2).packets == 1);
}

TEST_CASE("QUIC-LB single-pass AES: the draft's 16-octet vector routes to its backend",
          "[lb][quic]") {
  LbFixture fx;
  SetUpQuicLab(fx);
  const QuicConfig c{.config_id = 2, .sid_len = 8, .nonce_len = 8, .key = DraftKey()};
  SetConfigs(fx, kQuic4, {c});
  // cr_bits 2, sid ed793a51d49b8f5f, nonce ee080dbf48c0d1e5: byte for byte.
  const Bytes cid = Hex("504dd2d05a7b0de9b2b9907afb5ecf8cc3");
  CHECK(Cid(c, Hex("ed793a51d49b8f5f"), Hex("ee080dbf48c0d1e5")) == cid);
  SetServers(fx, kQuic4, {{.config_id = 2, .sid = Hex("ed793a51d49b8f5f"), .backend_id = 3}});
  const uint16_t port = PortAwayFrom(fx, kQuic4, 3);
  CHECK(RunTo(fx, Quic4(port, ShortHeader(cid))) == 3);
  CHECK(RunTo(fx, Quic4(port, LongHeader(kV1, 2, cid))) == 3);  // Handshake
  // One bit flipped anywhere in the block decrypts to another server ID.
  for (size_t i = 1; i < cid.size(); ++i) {
    Bytes bad = cid;
    bad[i] ^= 0x01;
    CHECK(RunTo(fx, Quic4(port, ShortHeader(bad))) == fx.Predict(kQuic4, Key4(port)));
  }
  const ballast_quic_stats s = Stats(fx, kQuic4);
  CHECK(s.cid_routed == 2);
  CHECK(s.unknown_server == cid.size() - 1);
}

TEST_CASE("QUIC-LB single-pass AES: random keys, server IDs and nonces", "[lb][quic]") {
  LbFixture fx;
  SetUpQuicLab(fx);
  std::mt19937 rng(38);
  auto bytes = [&](size_t n) {
    Bytes b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    return b;
  };
  for (int round = 0; round < 4; ++round) {
    QuicKey key{};
    const Bytes k = bytes(16);
    std::copy(k.begin(), k.end(), key.begin());
    const uint8_t sid_len = static_cast<uint8_t>(1 + round * 3);  // 1, 4, 7, 10
    const QuicConfig c{.config_id = static_cast<uint8_t>(round),
                       .sid_len = sid_len,
                       .nonce_len = static_cast<uint8_t>(16 - sid_len),
                       .key = key};
    SetConfigs(fx, kQuic4, {c});
    std::vector<QuicServer> servers;
    std::vector<Bytes> sids;
    for (uint32_t b = 1; b <= 3; ++b) {
      sids.push_back(bytes(sid_len));
      if (b > 1 && sids.back() == sids.front()) sids.back()[0] ^= 0xff;
      servers.push_back({.config_id = c.config_id, .sid = sids.back(), .backend_id = b});
    }
    SetServers(fx, kQuic4, servers);
    for (uint32_t b = 1; b <= 3; ++b) {
      for (int n = 0; n < 3; ++n) {
        const Bytes cid = Cid(c, sids[b - 1], bytes(c.nonce_len));
        const uint16_t port = PortAwayFrom(fx, kQuic4, b, false, static_cast<uint16_t>(41000 + n));
        CHECK(RunTo(fx, Quic4(port, ShortHeader(cid))) == b);
      }
    }
  }
  CHECK(Stats(fx, kQuic4).cid_routed == 4 * 9);
}

TEST_CASE("QUIC-LB: long headers by type and version", "[lb][quic]") {
  LbFixture fx;
  SetUpQuicLab(fx);
  SetConfigs(fx, kQuic4, {kPlain0});
  SetServers(fx, kQuic4, {{.config_id = 0, .sid = Hex("c4605e"), .backend_id = 1}});
  const Bytes cid = Hex("07c4605e4504cc4f");
  const uint16_t port = PortAwayFrom(fx, kQuic4, 1);
  const uint32_t tuple = fx.Predict(kQuic4, Key4(port));
  struct Case {
    const char* what;
    Bytes payload;
    uint32_t backend;
  };
  const std::vector<Case> cases = {
      {"v1 Initial: the client chose the DCID", LongHeader(kV1, 0, cid), tuple},
      {"v1 0-RTT", LongHeader(kV1, 1, cid), tuple},
      {"v1 Handshake", LongHeader(kV1, 2, cid), 1},
      {"v1 Retry type", LongHeader(kV1, 3, cid), 1},
      {"v2 Initial (type 1)", LongHeader(kV2, 1, cid), tuple},
      {"v2 0-RTT (type 2)", LongHeader(kV2, 2, cid), tuple},
      {"v2 Handshake (type 3)", LongHeader(kV2, 3, cid), 1},
      {"an unknown version", LongHeader(0x1a2a3a4a, 2, cid), tuple},
      {"a DCID length below the config's 8", LongHeader(kV1, 2, Bytes(cid.begin(), cid.end() - 1)),
       tuple},
      {"a short header", ShortHeader(cid), 1},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(RunTo(fx, Quic4(port, c.payload)) == c.backend);
  }
  const ballast_quic_stats s = Stats(fx, kQuic4);
  CHECK(s.cid_routed == 4);
  CHECK(s.client_cid == 4);
  CHECK(s.other_version == 1);
  CHECK(s.short_cid == 1);
  CHECK(s.tuple_routed == 6);
  // The Initial went by the 4-tuple, as UDP does: its flow is kept.
  REQUIRE(fx.Flow(Key4(port)).has_value());
  CHECK(fx.Flow(Key4(port))->backend_id == tuple);
}

// A connection: its Initial goes by the 4-tuple; the backend it reached
// issues a CID with its server ID; the client's address and port change
// (NAT rebinding) and its packets still reach that backend, though the
// table sends the new 4-tuple elsewhere.
void RebindingKeepsBackend(bool v6) {
  LbFixture fx;
  SetUpQuicLab(fx);
  const uint32_t vip = v6 ? kQuic6 : kQuic4;
  const uint32_t base = v6 ? 10 : 0;
  SetConfigs(fx, vip, {kPlain0});
  std::vector<QuicServer> servers;
  for (uint32_t b = 1; b <= 3; ++b) {
    servers.push_back(
        {.config_id = 0, .sid = {0x5e, 0x00, static_cast<uint8_t>(b)}, .backend_id = base + b});
  }
  SetServers(fx, vip, servers);
  auto quic = [&](uint16_t port, const Bytes& payload, const Addr& client) {
    return v6 ? Quic6(port, payload, client) : Quic4(port, payload, client);
  };
  const Addr client = v6 ? Lab::Client6() : Lab::Client4();
  const Addr moved = v6 ? Addr::Parse("2001:db8:100::77") : Addr::Parse("198.18.100.77");
  const Bytes client_dcid = Hex("e1e2e3e4e5e6e7e8");  // random: cr_bits 0b111
  const uint32_t held = RunTo(fx, quic(40000, LongHeader(kV1, 0, client_dcid), client), v6);
  const Bytes cid = Cid(kPlain0, {0x5e, 0x00, static_cast<uint8_t>(held - base)}, Hex("01020304"));
  CHECK(RunTo(fx, quic(40000, LongHeader(kV1, 2, cid), client), v6) == held);
  CHECK(RunTo(fx, quic(40000, ShortHeader(cid), client), v6) == held);
  int moved_elsewhere = 0;
  for (uint16_t p = 50000; p < 50012; ++p) {
    const auto key = FlowKey(moved, v6 ? Lab::Vip6() : Lab::Vip4(), p, kQuicPort, IPPROTO_UDP);
    moved_elsewhere += fx.Predict(vip, key) != held;
    CHECK(RunTo(fx, quic(p, ShortHeader(cid), moved), v6) == held);
  }
  CHECK(moved_elsewhere > 0);  // the table alone would have broken it
  const ballast_quic_stats s = Stats(fx, vip);
  CHECK(s.cid_routed == 14);
  CHECK(s.client_cid == 1);
}

TEST_CASE("QUIC-LB: a client that changes address and port keeps its backend (IPv4)",
          "[lb][quic]") {
  RebindingKeepsBackend(false);
}

TEST_CASE("QUIC-LB: a client that changes address and port keeps its backend (IPv6)",
          "[lb][quic]") {
  RebindingKeepsBackend(true);
}

TEST_CASE("QUIC-LB: unroutable CIDs go by the 4-tuple, counted by reason", "[lb][quic]") {
  LbFixture fx;
  SetUpQuicLab(fx);
  SetConfigs(fx, kQuic4, {kPlain0});
  SetServers(fx, kQuic4,
             {{.config_id = 0, .sid = Hex("000001"), .backend_id = 1},
              {.config_id = 0, .sid = Hex("000002"), .backend_id = 2},
              {.config_id = 0, .sid = Hex("000003"), .backend_id = 3}});
  const uint16_t port = PortAwayFrom(fx, kQuic4, 1);
  const uint32_t tuple = fx.Predict(kQuic4, Key4(port));
  const Bytes to1 = Hex("07000001aabbccdd");
  CHECK(RunTo(fx, Quic4(port, ShortHeader(to1))) == 1);
  CHECK(RunTo(fx, Quic4(port, ShortHeader(Hex("e7000001aabbccdd")))) == tuple);  // 0b111
  CHECK(RunTo(fx, Quic4(port, ShortHeader(Hex("67000001aabbccdd")))) == tuple);  // config 3
  CHECK(RunTo(fx, Quic4(port, ShortHeader(Hex("07000009aabbccdd")))) == tuple);  // no server
  // a datagram too short to hold a CID, and one too short for QUIC
  CHECK(RunTo(fx, Quic4(port, Hex("4007000001aabbcc"))) == tuple);
  CHECK(RunTo(fx, Quic4(port, Bytes{})) == tuple);

  // Backend 1 draining: its connections stay until the deadline.
  fx.SetBackendState(1, BALLAST_BACKEND_DRAINING,
                     dataplane::Dataplane::MonotonicNowNs() + 60000000000ull);
  CHECK(RunTo(fx, Quic4(port, ShortHeader(to1))) == 1);
  fx.SetBackendState(1, BALLAST_BACKEND_DRAINING, dataplane::Dataplane::MonotonicNowNs() - 1);
  CHECK(RunTo(fx, Quic4(port, ShortHeader(to1))) == tuple);
  fx.SetBackendState(1, BALLAST_BACKEND_EVICTED);
  CHECK(RunTo(fx, Quic4(port, ShortHeader(to1))) == tuple);

  const ballast_quic_stats s = Stats(fx, kQuic4);
  CHECK(s.cid_routed == 2);
  CHECK(s.unroutable_cr == 1);
  CHECK(s.unknown_config == 1);
  CHECK(s.unknown_server == 1);
  CHECK(s.short_cid == 1);
  CHECK(s.not_quic == 1);
  CHECK(s.backend_unusable == 2);
  CHECK(s.tuple_routed == 7);
}

TEST_CASE("QUIC-LB: random DCIDs reach only the VIP's backends, one lookup each", "[lb][quic]") {
  LbFixture fx;
  SetUpQuicLab(fx);
  SetConfigs(fx, kQuic4, {kPlain0});
  std::set<Bytes> sids;
  std::vector<QuicServer> servers;
  for (uint32_t b = 1; b <= 3; ++b) {
    servers.push_back(
        {.config_id = 0, .sid = {0x10, 0x20, static_cast<uint8_t>(b)}, .backend_id = b});
    sids.insert(servers.back().sid);
  }
  SetServers(fx, kQuic4, servers);
  std::mt19937 rng(6);
  ballast_quic_stats want = {};
  for (int i = 0; i < 300; ++i) {
    Bytes cid(8);
    for (auto& x : cid) x = static_cast<uint8_t>(rng());
    if (i % 3 == 0) cid[0] &= 0x1f;  // config 0: a random server ID
    if (i % 30 == 0) cid[1] = 0x10, cid[2] = 0x20, cid[3] = 1 + i % 3;  // a real one
    const uint16_t port = static_cast<uint16_t>(20000 + i);
    const uint32_t got = RunTo(fx, Quic4(port, ShortHeader(cid)));
    CHECK((got >= 1 && got <= 3));
    const uint8_t cr = cid[0] >> 5;
    if (cr == 7) {
      want.unroutable_cr++;
    } else if (cr != 0) {
      want.unknown_config++;
    } else if (!sids.count(Bytes(cid.begin() + 1, cid.begin() + 4))) {
      want.unknown_server++;
    } else {
      want.cid_routed++;
      CHECK(got == cid[3]);
      continue;
    }
    CHECK(got == fx.Predict(kQuic4, Key4(port)));
  }
  const ballast_quic_stats s = Stats(fx, kQuic4);
  CHECK(s.cid_routed == want.cid_routed);
  CHECK(s.cid_routed >= 10);
  CHECK(s.unroutable_cr == want.unroutable_cr);
  CHECK(s.unknown_config == want.unknown_config);
  CHECK(s.unknown_server == want.unknown_server);
  CHECK(s.tuple_routed == 300 - want.cid_routed);
}

TEST_CASE("QUIC-LB rotation: two configurations live, then the old one retired", "[lb][quic]") {
  LbFixture fx;
  SetUpQuicLab(fx);
  const QuicConfig next{.config_id = 1, .sid_len = 4, .nonce_len = 12, .key = DraftKey()};
  SetConfigs(fx, kQuic6, {kPlain0, next});
  SetServers(fx, kQuic6,
             {{.config_id = 0, .sid = Hex("aa0001"), .backend_id = 11},
              {.config_id = 1, .sid = Hex("bb000002"), .backend_id = 12}});
  const Bytes old_cid = Cid(kPlain0, Hex("aa0001"), Hex("99999999"));
  const Bytes new_cid = Cid(next, Hex("bb000002"), Hex("0102030405060708090a0b0c"));
  const uint16_t port = PortAwayFrom(fx, kQuic6, 11, true);
  const uint16_t port2 = PortAwayFrom(fx, kQuic6, 12, true);
  CHECK(RunTo(fx, Quic6(port, ShortHeader(old_cid)), true) == 11);
  CHECK(RunTo(fx, Quic6(port2, ShortHeader(new_cid)), true) == 12);

  SetConfigs(fx, kQuic6, {next});  // the old configuration retired
  auto servers = fx.dp().GetQuicServers(kQuic6);
  REQUIRE(servers.ok());
  REQUIRE(servers->size() == 1);  // its server IDs went with it
  CHECK((*servers)[0].config_id == 1);
  CHECK(RunTo(fx, Quic6(port, ShortHeader(old_cid)), true) == fx.Predict(kQuic6, Key6(port)));
  CHECK(RunTo(fx, Quic6(port2, ShortHeader(new_cid)), true) == 12);
  const ballast_quic_stats s = Stats(fx, kQuic6);
  CHECK(s.cid_routed == 3);
  CHECK(s.unknown_config == 1);
}

TEST_CASE("QUIC-LB: a UDP VIP without a configuration is untouched", "[lb][quic]") {
  LbFixture fx;
  SetUpQuicLab(fx);
  SetConfigs(fx, kQuic6, {kPlain0});  // another VIP's
  const uint16_t port = 40001;
  const Bytes cid = Hex("07c4605e4504cc4f");
  CHECK(RunTo(fx, Quic4(port, ShortHeader(cid))) == fx.Predict(kQuic4, Key4(port)));
  CHECK(fx.Flow(Key4(port)).has_value());
  const ballast_quic_stats s = Stats(fx, kQuic4);
  CHECK(s.cid_routed + s.tuple_routed == 0);
}

TEST_CASE("tshark dissects the QUIC packets the tests send, as forwarded", "[lb][quic][tshark]") {
  LbFixture fx;
  SetUpQuicLab(fx);
  const QuicConfig c{.config_id = 2, .sid_len = 8, .nonce_len = 8, .key = DraftKey()};
  SetConfigs(fx, kQuic4, {c});
  SetServers(fx, kQuic4, {{.config_id = 2, .sid = Hex("ed793a51d49b8f5f"), .backend_id = 3}});
  const Bytes cid = Hex("504dd2d05a7b0de9b2b9907afb5ecf8cc3");
  const uint16_t port = PortAwayFrom(fx, kQuic4, 3);
  std::vector<Bytes> out;
  for (const Bytes& payload :
       {LongHeader(kV1, 0, Hex("0102030405060708")), LongHeader(kV1, 2, cid)}) {
    const Outcome o = fx.Run(Quic4(port, payload));
    REQUIRE(o.verdict == BALLAST_V_TX);
    out.push_back(o.out);
  }
  CHECK(BackendOf(fx, out[1]) == 3);
  auto rows =
      Dissect(out, {"frame.protocols", "quic.version", "quic.long.packet_type", "quic.dcid"},
              "-d udp.port==443,quic");
  INFO(rows.status().ToString());
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  auto hex = [](std::string v) {
    std::erase(v, ':');
    return v;
  };
  CHECK((*rows)[0].at("frame.protocols") == "eth:ethertype:ip:ip:udp:quic");
  CHECK((*rows)[0].at("quic.long.packet_type") == "0");  // Initial
  CHECK(hex((*rows)[0].at("quic.dcid")) == "0102030405060708");
  CHECK((*rows)[1].at("quic.version") == "0x00000001");
  CHECK((*rows)[1].at("quic.long.packet_type") == "2");  // Handshake
  CHECK(hex((*rows)[1].at("quic.dcid")) == "504dd2d05a7b0de9b2b9907afb5ecf8cc3");
}

}  // namespace
}  // namespace ballast::bpftest
