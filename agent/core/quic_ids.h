// QUIC-LB in the replicated state (agent.proto, QuicVipState): per QUIC
// VIP its live configurations (config ID, key) and a server ID per backend,
// and what the data plane gets from them (dataplane::QuicConfig and
// QuicServer). The state is the one truth: every router reads the same IDs
// and keys from it.
//
// Server IDs: a backend added to a QUIC VIP gets the first free ID at or
// after the VIP's cursor (1, 2, ... wrapping within what the shortest live
// server ID length holds); one that leaves keeps its ID as retired, and
// that ID goes to no other backend before QuicIdGraceMs() has passed (the
// same address coming back within it gets it again). Keys are drawn through
// a QuicKeySource (getrandom unless a test says otherwise) and never leave
// the state but through ExportQuicConfigOf() (an admin's request).
//
// Pure functions on State messages, time passed in; thread-safe.
#ifndef BALLAST_AGENT_CORE_QUIC_IDS_H_
#define BALLAST_AGENT_CORE_QUIC_IDS_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/core/validate.h"
#include "agent/dataplane/quic.h"
#include "agent/dataplane/vip_key.h"
#include "ballast/v1/agent.pb.h"
#include "ballast/v1/api.pb.h"

namespace ballast::core {

// Where fresh QUIC-LB keys come from: getrandom(2) unless a test says otherwise.
using QuicKeySource = std::function<absl::StatusOr<dataplane::QuicKey>()>;
absl::StatusOr<dataplane::QuicKey> RandomQuicKey();

// Vip.quic_lb: a UDP VIP's, of a shape the data plane decodes (its rule,
// dataplane::QuicShapeProblemOf, with the config's field names).
absl::Status ValidateQuicLb(const v1::Vip& vip, const FieldPath& at);

// How long a retired server ID waits before another backend may get it:
// the drain timeout, at least 10 minutes (a client's packets to a backend
// that left can come for as long as its idle timeout).
int64_t QuicIdGraceMs(const v1::Global& global);

// Makes state->quic match state->config for the VIPs `only` (all when
// null; canonical keys): a new QUIC VIP gets its first configuration
// (config ID 0, a key when encrypted); one whose quic_lb changed starts a
// new configuration as a rotation does (FailedPrecondition naming quic_lb
// while a previous one is still live, or when the new server ID length
// cannot hold the VIP's IDs); backends get server IDs, those that left are
// retired at now_ms, retired IDs past the grace are forgotten; a VIP that
// is no longer a QUIC VIP loses its state. ResourceExhausted when the IDs
// run out.
absl::Status UpdateQuicState(v1::State* state, const std::set<dataplane::VipKey>* only,
                             int64_t now_ms, const QuicKeySource& draw);

// The QUIC state of a VIP, or null.
const v1::QuicVipState* FindQuicState(const v1::State& state, const dataplane::VipKey& vip);

// Starts a new configuration of `q` with `shape` (the next config ID mod 7,
// a new key when encrypted); the current one becomes the previous.
// FailedPrecondition while a previous one is still live.
absl::Status RotateQuic(v1::QuicVipState* q, const v1::QuicLb& shape, int64_t now_ms,
                        const QuicKeySource& draw);
// Ends the previous configuration; returns its config ID.
// FailedPrecondition when there is none.
absl::StatusOr<uint32_t> RetireQuicPrevious(v1::QuicVipState* q);

// The server ID `id` in `len` octets, big-endian; and as hex.
std::vector<uint8_t> ServerIdBytes(uint64_t id, uint32_t len);
std::string ServerIdHex(uint64_t id, uint32_t len);

// What the data plane holds for a QUIC VIP (empty for others): its live
// configurations, and every backend's server ID in each of them, by the
// backend ids of state.ids.
struct QuicImage {
  std::vector<dataplane::QuicConfig> configs;
  std::vector<dataplane::QuicServer> servers;  // sorted by (config_id, sid)
  bool operator==(const QuicImage&) const = default;
};
QuicImage QuicImageOf(const v1::State& state, const v1::VipKey& vip);

// Status (no keys): the VIP's configurations, and a backend's server ID as
// hex ("" when it has none).
void FillQuicStatus(const v1::QuicVipState& q, v1::VipStatus* out);
std::string QuicServerIdText(const v1::QuicVipState& q, const std::string& address);

// What backend `address` of `vip` loads (keys included). NotFound for a
// VIP without QUIC-LB or a backend without a server ID.
absl::StatusOr<v1::ExportQuicConfigResponse> ExportQuicConfigOf(const v1::State& state,
                                                                const v1::VipKey& vip,
                                                                const std::string& address);

// The state's quic entries: of configured QUIC VIPs, one each; configs
// 1..2 with distinct IDs, of a valid shape, keys of 16 octets exactly when
// encrypted; server IDs unique in the VIP (live and retired), of configured
// backends, fitting every live configuration.
absl::Status ValidateQuicState(const v1::State& state);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_QUIC_IDS_H_
