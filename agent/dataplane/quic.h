// QUIC-LB configurations as the data plane holds them
// (draft-ietf-quic-load-balancers; ballast_abi.h, "QUIC-LB"): the checks
// every implementation of the port runs, the conversion to the map value
// (with the AES-128 decryption schedule the program uses), and the
// connection ID encoding a QUIC-LB server performs, for tests and for
// exporting a server's configuration. Pure functions; thread-safe.
#ifndef BALLAST_AGENT_DATAPLANE_QUIC_H_
#define BALLAST_AGENT_DATAPLANE_QUIC_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ballast_abi.h"

namespace ballast::dataplane {

using QuicKey = std::array<uint8_t, 16>;

// One configuration of a QUIC VIP. Without a key, plaintext; with one,
// sid_len + nonce_len must be 16 (the draft's single pass: the only
// encrypted form the data plane decodes so far).
struct QuicConfig {
  uint8_t config_id = 0;  // config rotation bits, 0..6
  uint8_t sid_len = 0;    // 1..BALLAST_QUIC_SID_MAX
  uint8_t nonce_len = 0;  // >= BALLAST_QUIC_NONCE_MIN, 1 + sid_len + nonce_len <= 20
  std::optional<QuicKey> key;
  bool operator==(const QuicConfig&) const = default;
};

// One server ID of a configuration and the backend that holds it.
struct QuicServer {
  uint8_t config_id = 0;
  std::vector<uint8_t> sid;  // the configuration's sid_len octets
  uint32_t backend_id = 0;
  bool operator==(const QuicServer&) const = default;
};

// The shape rule every checker reads (the data plane's, and the agent's
// config validation, agent/core/quic_ids.h): what is wrong with a
// configuration of these lengths, keyed or not, naming the field
// ("server_id_len", "nonce_len", or "key" for the key's presence), or
// nothing. Lengths are taken wide so that no caller truncates first.
struct QuicShapeProblem {
  std::string_view field;
  std::string problem;
};
std::optional<QuicShapeProblem> QuicShapeProblemOf(uint32_t sid_len, uint32_t nonce_len,
                                                   bool keyed);

// InvalidArgument naming the field unless `c` is a configuration the data
// plane decodes.
absl::Status CheckQuicConfig(const QuicConfig& c);
// At most BALLAST_QUIC_CONFIGS valid configurations with distinct ids.
absl::Status CheckQuicConfigs(std::span<const QuicConfig> configs);
// Each server's config_id among `configs`, its sid of that config's
// length, a backend id in range, no server ID twice.
absl::Status CheckQuicServers(std::span<const QuicConfig> configs,
                              std::span<const QuicServer> servers);

// Whether a server ID of config_id with sid_len octets decodes under
// `configs` (a live configuration of that id and length).
bool QuicServerLive(std::span<const QuicConfig> configs, uint8_t config_id, size_t sid_len);

// The `quic_vips` value of `configs` (checked first), and back (the key is
// not kept in the map: a configuration read back has the key whose
// schedule the map holds, recovered from the schedule's last round).
absl::StatusOr<ballast_quic_vip> QuicVipToAbi(std::span<const QuicConfig> configs);
std::vector<QuicConfig> QuicVipFromAbi(const ballast_quic_vip& v);
// The `quic_servers` key of a server of vip_id.
ballast_quic_sid_key QuicSidKey(uint32_t vip_id, uint8_t config_id, std::span<const uint8_t> sid);

// AES-128 (FIPS-197): the decryption schedule of struct
// ballast_quic_config.dec_rk, and one block each way.
std::array<uint32_t, BALLAST_QUIC_AES_ROUND_WORDS> Aes128DecryptSchedule(const QuicKey& key);
std::array<uint8_t, 16> Aes128Encrypt(const QuicKey& key, const std::array<uint8_t, 16>& block);

// The connection ID a server of configuration `c` issues for `sid` and
// `nonce`: first octet (config id, length self-description), then server
// ID and nonce, encrypted with the key in one pass when there is one.
// InvalidArgument for a sid or nonce of the wrong length.
absl::StatusOr<std::vector<uint8_t>> EncodeQuicCid(const QuicConfig& c,
                                                   std::span<const uint8_t> sid,
                                                   std::span<const uint8_t> nonce);

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_QUIC_H_
