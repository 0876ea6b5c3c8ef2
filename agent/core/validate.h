// Validation of ballast's schema (proto/ballast/v1/config.proto and the
// AgentConfig of agent.proto): the limits, defaults and rules that the proto
// comments state, enforced in one place.
//
// Every function here is pure (no I/O, no clock, no globals) and thread-safe.
// Each returns the FIRST problem found, as InvalidArgument with a message
// that names the field and the allowed range or form, in one of two styles
// chosen by the FieldPath the caller passes:
//   index style (config files, `config apply`):
//     "vips[0].backends[2].weight: 3000 is out of range 0..1000"
//   named style (single API requests, whole-state checks after one change):
//     "vip 198.18.0.10:80/tcp backend 198.18.1.7: weight 3000 is out of range 0..1000"
#ifndef BALLAST_AGENT_CORE_VALIDATE_H_
#define BALLAST_AGENT_CORE_VALIDATE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "ballast/v1/agent.pb.h"
#include "ballast/v1/config.pb.h"
#include "ballast_abi.h"
#include "absl/strings/string_view.h"

namespace ballast::core {

// ---- limits -----------------------------------------------------------------
inline constexpr uint32_t kMaxVips = BALLAST_MAX_VIPS - 1;               // 1023
inline constexpr uint32_t kMaxBackendsPerVip = 1000;                     // per VIP
inline constexpr uint32_t kMaxBackendsTotal = BALLAST_MAX_BACKENDS - 1;  // 16383
inline constexpr uint32_t kMaxWeight = 1000;
inline constexpr uint32_t kMinTableSize = 7;
inline constexpr uint32_t kDefaultTableSize = BALLAST_DEFAULT_TABLE_SIZE;  // 65537
inline constexpr uint32_t kMaxTableSize = BALLAST_MAX_TABLE_SIZE;          // 1048573
inline constexpr uint32_t kMaxNameBytes = 256;
// Maglev slots of all VIPs together (4 bytes each in the kernel, and as
// much again in the agent): 256 MiB of tables, room for every VIP at the
// default size (1023 x 65537) or 64 at the largest.
inline constexpr uint64_t kMaxTotalTableSlots = uint64_t{1} << 26;
// bgp.withdraw_grace_ms: default and range.
inline constexpr uint32_t kDefaultWithdrawGraceMs = 2000;
inline constexpr uint32_t kMinWithdrawGraceMs = 100;
inline constexpr uint32_t kMaxWithdrawGraceMs = 60000;

// ---- effective values (0 = default) ---------------------------------------------
uint32_t EffectiveTableSize(const v1::Vip& vip);
struct EffectiveTimeouts {
  uint32_t tcp_idle_s, udp_idle_s, linger_s, syn_idle_s, syn_retry_ms, syn_reuse_idle_s;
  uint32_t adopted_bounce_ms;  // 0 = established second chance off
};
EffectiveTimeouts TimeoutsOf(const v1::Global& global);
uint32_t DrainTimeoutOf(const v1::Global& global);  // seconds, default 300
uint16_t GuePortOf(const v1::Global& global);       // GUE outer UDP destination port, default 6080
struct IcmpTooBigLimit {
  uint32_t per_s, burst;
};
IcmpTooBigLimit IcmpTooBigLimitOf(const v1::Global& global);  // default 1000/s, burst 50
uint32_t ProbeIntervalOf(const v1::ProbeSpec& probe);         // ms, default 1000
uint32_t ProbeTimeoutOf(const v1::ProbeSpec& probe);          // ms, default 500

// Where a problem is. Cheap value type.
class FieldPath {
 public:
  enum class Style { kIndex, kNamed };
  // The root of a config (index style) or of a named entity.
  static FieldPath Index(absl::string_view prefix = "") {
    return FieldPath(Style::kIndex, "", prefix);
  }
  static FieldPath Named(absl::string_view entity = "", absl::string_view prefix = "") {
    return FieldPath(Style::kNamed, entity, prefix);
  }
  // A sub-field: ".name".
  FieldPath Child(absl::string_view field) const;
  // Element i of a repeated field: "field[i]" in index style; in named style
  // the entity becomes "<entity> <name>" (e.g. "vip 198.18.0.10:80/tcp") and
  // the field path starts again.
  FieldPath Element(absl::string_view field, size_t i, absl::string_view name) const;
  Style style() const { return style_; }
  // InvalidArgument "<where>: <problem>" (see the file comment).
  absl::Status Invalid(absl::string_view problem) const;
  // The text Invalid() puts before the problem, for callers building codes
  // other than InvalidArgument.
  std::string Describe(absl::string_view problem) const;

 private:
  FieldPath(Style s, absl::string_view entity, absl::string_view path)
      : style_(s), entity_(entity), path_(path) {}
  Style style_;
  std::string entity_;
  std::string path_;
};

// Single values.
absl::Status ValidateWeight(uint32_t weight, const FieldPath& at);  // at = the weight field
absl::Status ValidateTableSize(uint32_t table_size, const FieldPath& at);
// A drain deadline of a Drain request: 0 (= global default) or 1..86400.
absl::Status ValidateDrainDeadline(uint32_t deadline_s, const FieldPath& at);
// An address of a VIP or backend: parses, not unspecified, not multicast,
// not loopback.
absl::Status ValidateAddress(absl::string_view address, const FieldPath& at);

// Messages. `at` is the message itself (its fields are children of `at`).
absl::Status ValidateVipKey(const v1::VipKey& key, const FieldPath& at);
absl::Status ValidateProbe(const v1::ProbeSpec& probe, const FieldPath& at);
// `vip` is the key of the VIP the backend belongs to (for the family rule:
// an IPv6 VIP cannot have an IPv4 backend; an IPv4 VIP may have an IPv6 one).
absl::Status ValidateBackend(const v1::Backend& backend, const v1::VipKey& vip,
                             const FieldPath& at);
// The VIP with its backends: per-VIP limits, duplicate backends, and no more
// positive-weight backends than table slots.
absl::Status ValidateVip(const v1::Vip& vip, const FieldPath& at);
absl::Status ValidateGlobal(const v1::Global& global, const FieldPath& at);
// Everything: global, each VIP, duplicate VIPs, total limits, and the outer
// sources the backends need (an IPv4 backend needs global.source_v4, an IPv6
// backend global.source_v6).
absl::Status ValidateConfig(const v1::Config& config, const FieldPath& at);

// The checks of ValidateConfig that changing ONE VIP can break, assuming the
// rest of `config` is valid and unchanged (the engine's invariant): that VIP
// (`vip_index`; -1 when the change removed a VIP), the number of VIPs, the
// total number of backends, and the outer sources that VIP's backends need.
// Under that assumption the result equals ValidateConfig(config, at), in
// O(backends of the VIP + VIPs) instead of O(all backends).
absl::Status ValidateVipChange(const v1::Config& config, int vip_index, const FieldPath& at);

// The persisted state: its config, overrides that name existing backends,
// and ids that are unique and in range.
absl::Status ValidateState(const v1::State& state);

// The cluster block of lbagent's config (validate_cluster.cc): endpoints
// under the etcd client's rules (agent/etcd/endpoint.h), credential files
// as absolute paths in pairs, prefix, node name, lease and drift times.
absl::Status ValidateCluster(const v1::Cluster& cluster, const FieldPath& at);

// Shared by the validate*.cc files: `v` within lo..hi; and the same where 0
// means the default `def`.
absl::Status CheckRange(uint64_t v, uint64_t lo, uint64_t hi, const FieldPath& at);
// An absolute path without control characters; "" (unset) passes.
absl::Status CheckAbsolutePath(absl::string_view path, const FieldPath& at);
absl::Status CheckOptionalRange(uint64_t v, uint64_t lo, uint64_t hi, uint64_t def,
                                const FieldPath& at);

// lbagent's own config file. Paths are the file's field names, e.g.
// "metrics_listen: 0.0.0.0:9580 is not a loopback address".
absl::Status ValidateAgentConfig(const v1::AgentConfig& config);

// Parses "HOST:PORT" / "[V6]:PORT" of a listen address and checks that the
// host is a loopback address (127.0.0.0/8, ::1) or "localhost".
absl::Status ValidateLoopbackListen(absl::string_view listen, const FieldPath& at);

// A copy of `config` with every address in canonical text, so equal configs
// compare equal and keys match. Call on validated configs.
v1::Config CanonicalConfig(const v1::Config& config);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_VALIDATE_H_
