// QUIC-LB on the agent side of the data plane (quic.h): the checks, the
// map value, AES-128 against FIPS-197 and the draft's vectors. The port's
// QUIC methods are in port_contract_test.cc.
#include "absl/strings/escaping.h"
#include "agent/dataplane/quic.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace ballast::dataplane {
namespace {

std::vector<uint8_t> Hex(const std::string& h) {
  const std::string bytes = absl::HexStringToBytes(h);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

template <size_t N>
std::array<uint8_t, N> Arr(const std::string& h) {
  const auto v = Hex(h);
  REQUIRE(v.size() == N);
  std::array<uint8_t, N> a{};
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}

QuicKey DraftKey() { return Arr<16>("8f95f09245765f80256934e50c66207f"); }

TEST_CASE("AES-128 encrypts FIPS-197's example blocks", "[quic]") {
  // FIPS-197 Appendix C.1 and Appendix B.
  CHECK(Aes128Encrypt(Arr<16>("000102030405060708090a0b0c0d0e0f"),
                      Arr<16>("00112233445566778899aabbccddeeff")) ==
        Arr<16>("69c4e0d86a7b0430d8cdb78070b4c55a"));
  CHECK(Aes128Encrypt(Arr<16>("2b7e151628aed2a6abf7158809cf4f3c"),
                      Arr<16>("3243f6a8885a308d313198a2e0370734")) ==
        Arr<16>("3925841d02dc09fbdc118597196a0b32"));
}

TEST_CASE("The decryption schedule: last round key first, the key itself last", "[quic]") {
  // FIPS-197 Appendix A.1: w[40..43] of key 2b7e1516...
  const auto dk = Aes128DecryptSchedule(Arr<16>("2b7e151628aed2a6abf7158809cf4f3c"));
  CHECK(dk[0] == 0xd014f9a8u);
  CHECK(dk[1] == 0xc9ee2589u);
  CHECK(dk[2] == 0xe13f0cc8u);
  CHECK(dk[3] == 0xb6630ca6u);
  CHECK(dk[40] == 0x2b7e1516u);
  CHECK(dk[43] == 0x09cf4f3cu);
  // The middle ones (InvMixColumns of w[4..39]) are checked by decrypting:
  // tests/bpf/lb_quic_test.cc decodes the draft's single-pass vector and
  // blocks encrypted under random keys with this schedule.
}

TEST_CASE("CIDs are encoded as the draft's vectors", "[quic]") {
  const QuicConfig plain{.config_id = 0, .sid_len = 3, .nonce_len = 4};
  auto c = EncodeQuicCid(plain, Hex("c4605e"), Hex("4504cc4f"));
  REQUIRE(c.ok());
  CHECK(*c == Hex("07c4605e4504cc4f"));
  const QuicConfig single{.config_id = 2, .sid_len = 8, .nonce_len = 8, .key = DraftKey()};
  c = EncodeQuicCid(single, Hex("ed793a51d49b8f5f"), Hex("ee080dbf48c0d1e5"));
  REQUIRE(c.ok());
  CHECK(*c == Hex("504dd2d05a7b0de9b2b9907afb5ecf8cc3"));
  // The draft's other encrypted vectors need the four-pass form.
  const QuicConfig four{.config_id = 0, .sid_len = 3, .nonce_len = 4, .key = DraftKey()};
  const absl::Status st = EncodeQuicCid(four, Hex("ed793a"), Hex("ee080dbf")).status();
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(st.message()).find("four-pass") != std::string::npos);
  CHECK(EncodeQuicCid(plain, Hex("c460"), Hex("4504cc4f")).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("QUIC-LB configurations are checked, field by field", "[quic]") {
  auto msg = [](const QuicConfig& c) { return std::string(CheckQuicConfig(c).message()); };
  CHECK(CheckQuicConfig({.config_id = 6, .sid_len = 15, .nonce_len = 4}).ok());
  CHECK(msg({.config_id = 7, .sid_len = 3, .nonce_len = 4}) ==
        "QUIC-LB config: config_id 7 is out of range 0..6 (7 is unroutable)");
  CHECK(msg({.config_id = 0, .sid_len = 0, .nonce_len = 4}) ==
        "QUIC-LB config: server_id_len 0 is out of range 1..15");
  CHECK(msg({.config_id = 0, .sid_len = 3, .nonce_len = 3}) ==
        "QUIC-LB config: nonce_len 3 is below 4");
  CHECK(msg({.config_id = 0, .sid_len = 15, .nonce_len = 5}) ==
        "QUIC-LB config: nonce_len server_id_len 15 + nonce_len 5 is over 19 (a connection ID "
        "holds 20 octets)");
  const std::vector<QuicConfig> twice = {{.config_id = 1, .sid_len = 3, .nonce_len = 4},
                                         {.config_id = 1, .sid_len = 4, .nonce_len = 4}};
  CHECK(std::string(CheckQuicConfigs(twice).message()) ==
        "QUIC-LB config: config_id 1 given twice");
  const std::vector<QuicConfig> three(3, QuicConfig{.config_id = 0, .sid_len = 3, .nonce_len = 4});
  CHECK(CheckQuicConfigs(three).code() == absl::StatusCode::kInvalidArgument);
  const std::vector<QuicConfig> one = {{.config_id = 1, .sid_len = 3, .nonce_len = 4}};
  const std::vector<QuicServer> wrong_len = {{.config_id = 1, .sid = {1, 2}, .backend_id = 1}};
  CHECK(std::string(CheckQuicServers(one, wrong_len).message()) ==
        "QUIC-LB config: server_id has 2 octets, config_id 1 takes 3");
  const std::vector<QuicServer> no_config = {{.config_id = 2, .sid = {1, 2, 3}, .backend_id = 1}};
  CHECK(CheckQuicServers(one, no_config).code() == absl::StatusCode::kInvalidArgument);
  const std::vector<QuicServer> dup = {{.config_id = 1, .sid = {1, 2, 3}, .backend_id = 1},
                                       {.config_id = 1, .sid = {1, 2, 3}, .backend_id = 2}};
  CHECK(CheckQuicServers(one, dup).code() == absl::StatusCode::kInvalidArgument);
  const std::vector<QuicServer> bad_id = {{.config_id = 1, .sid = {1, 2, 3}, .backend_id = 0}};
  CHECK(CheckQuicServers(one, bad_id).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("The quic_vips value round-trips, key included", "[quic]") {
  const std::vector<QuicConfig> configs = {
      {.config_id = 3, .sid_len = 2, .nonce_len = 6},
      {.config_id = 4, .sid_len = 6, .nonce_len = 10, .key = DraftKey()}};
  auto v = QuicVipToAbi(configs);
  REQUIRE(v.ok());
  CHECK(v->config[0].mode == BALLAST_QUIC_MODE_PLAINTEXT);
  CHECK(v->config[1].mode == BALLAST_QUIC_MODE_AES_SINGLE);
  CHECK(QuicVipFromAbi(*v) == configs);
  auto none = QuicVipToAbi({});
  REQUIRE(none.ok());
  CHECK(QuicVipFromAbi(*none).empty());
}

}  // namespace
}  // namespace ballast::dataplane
