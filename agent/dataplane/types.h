// The values the data plane's maps hold, as the agent sees them: settings,
// VIP and backend entries, ownership, attach modes. Plain values, no libbpf;
// shared by the real data plane (dataplane.h) and its port (port.h).
#ifndef BALLAST_AGENT_DATAPLANE_TYPES_H_
#define BALLAST_AGENT_DATAPLANE_TYPES_H_

#include <array>
#include <cstdint>
#include <optional>

#include "agent/base/ip_address.h"
#include "agent/base/ip_prefix.h"
#include "agent/dataplane/vip_key.h"
#include "ballast_abi.h"

namespace ballast::dataplane {

enum class AttachMode {
  kNative,   // driver mode (XDP_FLAGS_DRV_MODE)
  kGeneric,  // SKB mode: works on every device, slower
  kAuto,     // native, else generic with a warning on stderr
};

// Settings::icmp_too_big_per_s and _burst: the defaults (also the config's),
// and the highest rate (one answer per microsecond per CPU).
inline constexpr uint32_t kDefaultIcmpTooBigPerS = 1000;
// Established second chance's probe window (Settings::adopted_bounce_ms).
inline constexpr uint32_t kDefaultAdoptedBounceMs = 2000;
inline constexpr uint32_t kDefaultIcmpTooBigBurst = 50;
inline constexpr uint32_t kMaxIcmpTooBigPerS = 1'000'000;

// Settings::src4_prefix's lengths: at most 65,536 addresses (the flow hash
// has 20 bits), at least 2.
inline constexpr int kMinSrc4PrefixLength = 16;
inline constexpr int kMaxSrc4PrefixLength = 31;

// A flow hash seed (ballast_abi.h, struct ballast_hash_seed).
using HashSeed = std::array<uint32_t, 3>;

// Contents of the `flow_hash_seed` map: the cluster's seed, and the one
// before the last rotation. No current seed = the public seed of earlier
// builds (BALLAST_FLOW_HASH_SEED).
struct FlowHashSeed {
  std::optional<HashSeed> current;
  std::optional<HashSeed> previous;
  bool operator==(const FlowHashSeed&) const = default;
};

// Contents of the `settings` map. Defaults are what Settings{} holds.
struct Settings {
  IpAddress src4;                       // outer IPv4 source; 0.0.0.0 = none (IPv4 backends drop)
  IpAddress src6 = IpAddress::Zero6();  // outer IPv6 source; :: = none
  // Per-flow IPv4 outer source: a prefix of this router (length 16..31,
  // host bits zero), each flow's outer source an address of it chosen by
  // the flow's hash; nullopt = every IPv4 outer header has src4. In the
  // `handshake_settings` map.
  std::optional<IpPrefix> src4_prefix;
  uint32_t policy = BALLAST_POLICY_ICMP_TOO_BIG;  // BALLAST_POLICY_*
  uint64_t tcp_idle_ns = 300'000'000'000ull;      // established TCP idle timeout: 300 s
  uint64_t udp_idle_ns = 30'000'000'000ull;       // UDP flow idle timeout: 30 s
  uint64_t linger_ns = 10'000'000'000ull;         // after FIN/RST: 10 s
  uint64_t syn_idle_ns = 5'000'000'000ull;        // unfinished handshake forgotten after 5 s
  // A repeated SYN this long after the last one goes to the next choice
  // (0 = never); in the `handshake_settings` map.
  uint64_t syn_retry_ns = 200'000'000ull;
  // A SYN on an established flow younger than this leaves it on its backend
  // (0 = every SYN starts a new connection); in `handshake_settings`.
  uint64_t syn_reuse_idle_ns = 60'000'000'000ull;
  uint64_t fib_ttl_ns = 1'000'000'000ull;  // cached next hop trusted for 1 s
  // ICMP too-big answers per second on each CPU (0 = no limit), and how many
  // may go out back to back (1..per_s). Kept in the `icmp_budget` map.
  uint32_t icmp_too_big_per_s = kDefaultIcmpTooBigPerS;
  uint32_t icmp_too_big_burst = kDefaultIcmpTooBigBurst;
  // UDP destination port of GUE outer headers (VipOptions::gue); 0 is
  // written as the default, and read back as it. In `handshake_settings`.
  uint16_t gue_port = BALLAST_GUE_PORT_DEFAULT;
  // Established second chance: how long after a flow is adopted on a slot
  // with history its packets may be bounced back by a backend without its
  // socket and moved along that history (0 = off). In `handshake_settings`.
  uint32_t adopted_bounce_ms = kDefaultAdoptedBounceMs;
  // In the `flow_hash_seed` map; from the replicated state, not the config.
  FlowHashSeed flow_hash_seed;
};

struct VipEntry {
  VipKey key;
  ballast_vip_meta meta;
};

// UpsertVip's options.
struct VipOptions {
  // Set: the VIP is created in owned mode with this owner deadline (absolute
  // CLOCK_MONOTONIC ns; 0 or a past instant = created stopped, e.g. on a
  // standby that does not hold the lease), so it is never forwarded
  // unfenced, not even between creation and a SetVipOwnerDeadline().
  // Ignored when the VIP exists: its ownership is left as it is.
  std::optional<uint64_t> owner_deadline_if_new;
  // GUE encapsulation (BALLAST_VIP_F_GUE) instead of IP-in-IP. Unlike the
  // ownership, applied to an existing VIP too: it is the VIP's config.
  bool gue = false;
};

// DeleteVip's options.
struct DeleteVipOptions {
  // The address's marker and filter bit stay even when this was the
  // address's last VIP: its packets are still recognised as VIP traffic
  // and dropped (drop_vip_unserved) instead of passed to the kernel, which
  // would route them back to where they came from while a route still
  // brings them (docs/bgp.md, "Deleting a VIP"). DeleteVipAddressMarker()
  // removes them later.
  bool keep_address_marker = false;
};

// A VIP's ownership state as the data plane holds it.
struct VipOwner {
  // The owner deadline (absolute CLOCK_MONOTONIC ns); nullopt = the VIP is
  // not in owned mode and is forwarded without a fence.
  std::optional<uint64_t> deadline_ns;
  // Packets of this VIP stopped at or after the deadline (vip_stats.fenced,
  // summed over CPUs; zeroed when the VIP is deleted).
  uint64_t fenced = 0;
};

struct BackendEntry {
  uint32_t id;
  IpAddress addr;
  ballast_backend_state state;
  uint64_t drain_deadline_ns;
};

// A backend's latency histograms (backend_latency, summed over CPUs): bucket
// i counts samples below 2^(BALLAST_LATENCY_SHIFT0 + i) ns, the last the
// rest.
struct LatencyHistograms {
  std::array<uint64_t, BALLAST_LATENCY_BUCKETS> handshake{};
  std::array<uint64_t, BALLAST_LATENCY_BUCKETS> first_response{};
};

// The connection table's maps, one per class of flow (bpf/lib/maps.h):
// handshake seen here and UDP (LRU hashes, keyed by 5-tuple), adopted
// mid-stream (kAdoptedFlowsMap: an array of 4-way sets indexed by flow hash,
// struct ballast_adopted_set).
inline constexpr char kAdoptedFlowsMap[] = "adopted_flows";
inline constexpr const char* kFlowMaps[] = {"flows", kAdoptedFlowsMap, "flows_udp"};

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_TYPES_H_
