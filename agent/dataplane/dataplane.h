// The lb data plane: loads bpf/xdp_lb.bpf.c, owns its maps, attaches it.
//
// Ownership: a Dataplane owns the libbpf skeleton (program and map fds) and
// closes them on destruction. Destruction does NOT detach or unpin: the XDP
// attachment and the pins keep the program and maps alive, so an agent that
// exits (or crashes) leaves traffic flowing. Detach()/Teardown() remove them.
//
// Thread-safety: one owner thread calls every method, with two exceptions:
// SetVipOwnerDeadline() and GetVipOwner() may be called from another thread
// (a lease keep-alive) at any time between Open*() and destruction, and so
// may ForEachFlow() and Flows(), which only read the flow maps through fds
// fixed at Open*() (the engine's status scan runs outside its lock). The
// methods that write a VIP's `vips`/`vip_refs` entries (UpsertVip,
// DeleteVip, SetVipOwnerDeadline) serialise on an internal mutex, so a VIP
// update never writes back a deadline that a concurrent renewal or
// revocation replaced. The maps are shared with the kernel (and with other
// processes via the pins); the kernel side sees each single map update
// atomically; a Maglev table is swapped whole or has its slots rewritten
// one aligned word at a time (SetTable). Two processes writing VIPs of the same pins (lbdp beside
// a running lbagent) are not serialised: do not mix them.
//
// Pinning and restarts (Options::pin_dir non-empty, default
// /sys/fs/bpf/ballast):
//  - Each map of the program is pinned at <pin_dir>/<map name> (names are the
//    ABI names: vips, vip_refs, vip_filter, backends, maglev_tables, flows, adopted_flows,
//    flows_udp, handshakes, settings, handshake_settings, icmp_budget, nexthops, backend_stats,
//    vip_stats, verdicts, clock_cache, maglev_history, esc_stats, bounce_key, quic_vips,
//    quic_servers, quic_stats). Open()
//    reuses the pinned maps when they exist (their contents, including the flow table, survive) and
//    pins the ones that do not. The program is pinned at <pin_dir>/prog_xdp_lb. An older build's
//    `flows_adopted` (an LRU hash; adopted flows now live in `adopted_flows`) is unpinned, and
//    its flows are copied into `adopted_flows` (again after each Attach(), for those the
//    old program adopted meanwhile), so they stay on their backends (adopted_carry.h).
//  - Restart with the same build: the pinned program is *adopted* (prog_fd()
//    is the running program) and Attach() on a device that already runs it
//    is a no-op. Nothing is detached or re-attached; no packet is lost.
//  - Restart with a different program (new build, same map layout): the new
//    program is loaded against the same pinned maps. Attach() on a device
//    running the old pinned program swaps it atomically (XDP_FLAGS_REPLACE)
//    and re-pins prog_xdp_lb; flows and tables carry over.
//  - Restart with a changed map layout (key/value size, type, flags,
//    max_entries — including a different Options::flow_capacity): Open()
//    fails with FailedPrecondition naming the map and the difference. The
//    running data plane is untouched. Changing the layout means a planned
//    interruption: `lbdp teardown` (flows are lost), then start again.
//  - A map that a newer build no longer has stays pinned until Teardown().
//  - Load-time constants (.rodata) are not pinned and not part of the state:
//    everything tunable lives in the `settings` map.
// With pin_dir empty nothing is pinned or adopted (tests, benchmarks) and the
// maps die with the last fd/attachment.
#ifndef BALLAST_AGENT_DATAPLANE_DATAPLANE_H_
#define BALLAST_AGENT_DATAPLANE_DATAPLANE_H_

#include <linux/bpf.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"
#include "agent/dataplane/port.h"
#include "agent/dataplane/tc_neigh.h"
#include "agent/dataplane/types.h"
#include "agent/dataplane/verdict.h"
#include "agent/dataplane/vip_key.h"
#include "agent/dataplane/xdp_attach.h"
#include "ballast_abi.h"

struct xdp_lb;  // generated skeleton (xdp_lb.skel.h)

namespace ballast::dataplane {

struct Options {
  std::string pin_dir = BALLAST_PIN_DIR;           // "" = do not pin anything (tests, bench)
  std::string bpf_object_dir;                      // unused: the skeleton embeds the object
  uint32_t flow_capacity = BALLAST_DEFAULT_FLOWS;  // max_entries of `flows`, > 0
  // Sets of `handshakes`: 0 = HandshakeSetsFor(flow_capacity); else a power
  // of two in 1024..2^24.
  uint32_t handshake_sets = 0;
};

// By default the `handshakes` array has a set of BALLAST_HANDSHAKE_WAYS slots
// (64 bytes) per this many entries of the flow table (a slot per 32 flows),
// rounded up to a power of two, and at least BALLAST_HANDSHAKE_SETS sets:
// 16,384 sets (1 MiB, 65,536 handshakes under way) up to 2,097,152 flows,
// 32,768 sets (2 MiB) for 4,194,304 flows, 524,288 (32 MiB) for the largest
// table (2^26 flows).
inline constexpr uint32_t kFlowsPerHandshakeSet = 128;
uint32_t HandshakeSetsFor(uint32_t flow_capacity);

// Sets of `adopted_flows` (BALLAST_ADOPTED_WAYS flows each) for a flow table
// of `flow_capacity`: one per kFlowsPerAdoptedSet flows, rounded up to a
// power of two (the program indexes them with a mask), at least 16. So the
// sets have room for twice the capacity: a flow goes to the set its hash
// names, and with `flow_capacity` flows spread over them about 4% find
// their set full (Poisson, 2 flows a set on average), against about 20%
// with one set per 4 flows. 131,072 sets (40 MiB, what the LRU hash it
// replaced took) for the default 262,144 flows.
inline constexpr uint32_t kFlowsPerAdoptedSet = BALLAST_FLOWS_PER_ADOPTED_SET;
uint32_t AdoptedSetsFor(uint32_t flow_capacity);

class Dataplane final : public DataplanePort {
 public:
  // Opens and loads the program (see the file comment for pinning and
  // adoption). Errors: FailedPrecondition (no bpffs, incompatible pinned
  // map), PermissionDenied (not root / no CAP_BPF), InvalidArgument (options).
  static absl::StatusOr<std::unique_ptr<Dataplane>> Open(const Options& options);
  // Opens the maps and the program pinned under `pin_dir` without loading
  // anything (for short-lived tools: no verifier run, no new pins). Checks
  // each pinned map's layout against this build. NotFound if nothing is
  // pinned there. prog_fd() is the pinned program; adopted() is true.
  static absl::StatusOr<std::unique_ptr<Dataplane>> OpenPinned(std::string_view pin_dir);
  ~Dataplane() override;
  Dataplane(const Dataplane&) = delete;
  Dataplane& operator=(const Dataplane&) = delete;

  // Attaches prog_fd() to `ifname` (current network namespace) with libxdp.
  // The device already running prog_fd(): no-op (adoption). Running the old
  // pinned program of a previous build: atomic replacement. Running anything
  // else: FailedPrecondition, nothing changed. Returns OK once attached.
  // First installs (or replaces) the neighbour hand-off on the device's tc
  // ingress (tc_neigh.h), which the program needs for next hops whose
  // neighbour is not resolved yet.
  absl::Status Attach(std::string_view ifname, AttachMode mode) override;
  // The mode `ifname` runs our program in, if Attach() succeeded on it in
  // this process (NotFound otherwise).
  absl::StatusOr<AttachMode> AttachedMode(std::string_view ifname) const override;
  // Detaches our program (current or previous pinned build) and the
  // neighbour hand-off from `ifname`. NotFound if nothing is attached;
  // FailedPrecondition if another program is.
  absl::Status Detach(std::string_view ifname) override;
  // Detaches our program from every device of the current network namespace
  // that runs it, then removes every pin under pin_dir and the directory.
  // Devices in other namespaces keep the program until they are deleted.
  // Afterwards this object still holds valid fds but nothing is pinned;
  // destroy it.
  absl::Status Teardown() override;

  // The program attached by Attach(): the adopted pinned program if one
  // was adopted, else the program this object loaded.
  int prog_fd() const { return prog_fd_; }
  bool adopted() const override { return adopted_fd_ >= 0; }
  // fd of the map called `name` (ABI names), -1 if there is none.
  int map_fd(std::string_view name) const;
  const std::string& pin_dir() const { return pin_dir_; }

  absl::Status SetSettings(const Settings& s) override;
  absl::StatusOr<Settings> GetSettings() const override;

  // Inserts or updates a VIP. vip_id in 1..BALLAST_MAX_VIPS-1, unique among
  // VIPs (AlreadyExists if another key uses it). proto TCP or UDP. An
  // existing VIP keeps its owner deadline (owned mode or not), also when its
  // vip_id changes; SetTable never touches it either. A new VIP is not owned
  // unless options.owner_deadline_if_new is set. BALLAST_VIP_F_GUE follows
  // options.gue, for a new and an existing VIP, in `vips` and `vip_refs`
  // alike (same key and id: the flows keep their shortcut).
  absl::Status UpsertVip(const VipKey& key, uint32_t vip_id,
                         const VipOptions& options = {}) override;
  // Removes the VIP, its Maglev table and zeroes its counters. NotFound if
  // absent. The ownership goes with it: a VIP added again under the same key
  // is new (see VipOptions). The address's last VIP takes the address marker
  // and filter bit too, unless options.keep_address_marker.
  absl::Status DeleteVip(const VipKey& key, const DeleteVipOptions& options = {}) override;
  absl::StatusOr<std::vector<VipEntry>> Vips() const override;
  absl::StatusOr<std::vector<IpAddress>> VipAddressMarkers() const override;
  absl::Status DeleteVipAddressMarker(const IpAddress& addr) override;

  // ---- VIP ownership (active/standby) ----
  //
  // Puts an existing VIP in owned mode with an owner deadline (absolute
  // CLOCK_MONOTONIC ns, the clock of bpf_ktime_get_ns and MonotonicNowNs),
  // or takes it out of owned mode (nullopt). In owned mode the XDP program
  // forwards the VIP only while bpf_ktime_get_ns() < deadline; from the
  // deadline on it drops every packet of the VIP, new and established flows
  // alike (verdict drop_fenced, VipOwner::fenced), with no help from user
  // space. The deadline may move either way: later to renew, earlier (or to
  // the past) to stop now. Once this returns, every packet the program
  // starts on sees the new deadline. NotFound if the VIP does not exist.
  //
  // Contract for the owner (lbagent in cluster mode, per-VIP etcd lease):
  //  - Write a deadline only while holding the lease, and always strictly
  //    before the lease's expiry as this node can last be sure of it:
  //    deadline <= (monotonic time the keep-alive that granted the TTL was
  //    *sent*) + TTL - margin, with the margin covering clock rate drift
  //    between this host and the etcd leader and the time this call takes.
  //    Never compute it from the time the answer arrived.
  //  - Renew it with the lease: each successful keep-alive moves it forward
  //    by the same rule. A process that is frozen (SIGSTOP), partitioned or
  //    slow stops renewing, so the data plane stops on its own at the
  //    deadline, before the lease expires and a standby can acquire it.
  //  - On lease loss, revocation or a fence, set it to the past (e.g. 0)
  //    at once rather than waiting for the deadline; keep the VIP owned
  //    (stopped) rather than clearing it, since clearing means "forward
  //    without a fence".
  //  - A standby creates the VIP stopped (VipOptions::owner_deadline_if_new
  //    = 0) and starts it only after it holds the lease.
  //  - The deadline lives in the pinned maps and outlives the agent process:
  //    a restarted agent that no longer holds the lease does not extend it,
  //    so forwarding stops at the old deadline.
  absl::Status SetVipOwnerDeadline(const VipKey& key,
                                   std::optional<uint64_t> monotonic_ns) override;
  // The VIP's owner deadline and fenced-packet counter. NotFound if absent.
  absl::StatusOr<VipOwner> GetVipOwner(const VipKey& key) const override;

  // backend id in 1..BALLAST_MAX_BACKENDS-1. A changed address clears the
  // cached next hop (a packet racing with the change may re-cache the old
  // one; it expires after Settings::fib_ttl_ns). drain_deadline_ns only with
  // DRAINING (0 = none), absolute CLOCK_MONOTONIC ns.
  absl::Status SetBackend(uint32_t id, const IpAddress& addr, ballast_backend_state state,
                          uint64_t drain_deadline_ns = 0) override;
  // Marks the slot UNUSED (its flows are re-steered), clears its next hop
  // and zeroes its counters so a reused id starts from zero. Waits for an
  // RCU grace period first if a table slot was rewritten in place since the
  // last one (SetTable), so no packet that read the id from a table still
  // uses it.
  absl::Status ClearBackend(uint32_t id) override;
  // Every slot whose state is not UNUSED.
  absl::StatusOr<std::vector<BackendEntry>> Backends() const override;

  // Publishes vip_id's Maglev table. M = table.size() must be prime and
  // <= BALLAST_MAX_TABLE_SIZE; every slot < BALLAST_MAX_BACKENDS (0 = no
  // backend for that slot).
  //  - Same M as the current table (a weight change, a backend added or
  //    taken out): the slots that differ are rewritten in place through
  //    mmap, one aligned 32-bit store each, so a packet reads its slot's old
  //    backend or its new one. No grace period: ~1 ms for M = 65537.
  //  - Otherwise (a new VIP, a new M, a table an older agent froze): a fresh
  //    inner map (M+1 entries, entry 0 = M, the template's flags) is filled
  //    and swapped in with one update of maglev_tables; the kernel waits for
  //    an RCU grace period in that update (~10-15 ms, longer on a busy host).
  // Either way the slots are live when SetTable returns. A packet may still
  // be using a slot value an in-place write replaced, so ClearBackend()
  // first waits for a grace period when such a write came since the last.
  absl::Status SetTable(uint32_t vip_id, std::span<const uint32_t> table) override;
  // The M slots of vip_id's table (without the size entry). NotFound if none.
  absl::StatusOr<std::vector<uint32_t>> GetTable(uint32_t vip_id) const override;
  // The slot history (maglev_history): rewritten in place (mmap, one
  // aligned 64-bit store per changed slot) when the VIP has one of this
  // size, else a fresh inner map of M + 1 words (entry 0 = M) swapped in
  // with one update (an RCU grace period); empty deletes it. DeleteVip()
  // deletes it too.
  absl::Status SetHistory(uint32_t vip_id, std::span<const uint64_t> slots) override;
  absl::StatusOr<std::vector<uint64_t>> GetHistory(uint32_t vip_id) const override;
  // QUIC-LB (dataplane_quic.cc)
  absl::Status SetQuicConfigs(uint32_t vip_id, std::span<const QuicConfig> configs) override;
  absl::StatusOr<std::vector<QuicConfig>> GetQuicConfigs(uint32_t vip_id) const override;
  absl::Status SetQuicServers(uint32_t vip_id, std::span<const QuicServer> servers) override;
  absl::StatusOr<std::vector<QuicServer>> GetQuicServers(uint32_t vip_id) const override;
  absl::StatusOr<ballast_quic_stats> QuicStats(uint32_t vip_id) const override;

  absl::StatusOr<ballast_backend_stats> BackendStats(
      uint32_t id) const override;  // summed over CPUs
  // Second-chance counters (summed over CPUs).
  absl::StatusOr<ballast_backend_bounces> BackendBounces(uint32_t id) const override;
  absl::StatusOr<ballast_esc_stats> EscStats() const override;
  absl::StatusOr<LatencyHistograms> BackendLatency(uint32_t id) const override;
  absl::StatusOr<ballast_vip_stats> VipStats(uint32_t vip_id) const override;  // summed over CPUs
  absl::StatusOr<std::array<uint64_t, BALLAST_V_MAX>> Verdicts()
      const override;  // summed over CPUs
  // Oversize packets not answered with ICMP too-big because their CPU's
  // budget was spent (Settings::icmp_too_big_per_s), summed over CPUs. They
  // are also in the drop_too_big verdict.
  absl::StatusOr<uint64_t> IcmpTooBigLimited() const override;
  // Up to `max` entries of the connection table (the three maps, in
  // kFlowMaps order), in map order. Entries that expire during the walk are
  // skipped.
  absl::StatusOr<std::vector<std::pair<ballast_flow_key, ballast_flow>>> Flows(size_t max) const;
  // Calls `fn` for up to `max` entries of the connection table (kFlowMaps
  // in order), in map order,
  // without keeping them; returns how many it saw. The table is read `batch`
  // entries per system call (whole buckets of the hash, so an entry the
  // program adds or evicts meanwhile is seen at most once; the batch doubles
  // when a bucket does not fit), not two calls per entry.
  absl::StatusOr<size_t> ForEachFlow(
      size_t max, const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
      size_t batch = 4096) const;
  // ForEachFlow over the one map `map` (one of kFlowMaps).
  absl::StatusOr<size_t> ForEachFlowIn(
      const char* map, size_t max,
      const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
      size_t batch = 4096) const override;
  // How many flows map `map` holds: max_entries (the pinned map's, which may
  // predate the options), times the ways of a set for kAdoptedFlowsMap.
  absl::StatusOr<uint32_t> MapCapacity(const char* map) const override;
  // The flow of `key` in map `map` (one of kFlowMaps), or nullopt. In
  // kAdoptedFlowsMap it is looked for in the set its flow hash names, as the
  // program does (bpftool cannot look that map up by 5-tuple).
  absl::StatusOr<std::optional<ballast_flow>> LookupFlow(const char* map,
                                                         const ballast_flow_key& key) const;
  // The TCP handshakes under way (`handshakes` slots whose latest SYN is at
  // most the settings' syn_idle old), and how many sets have all their
  // slots in use (a new handshake there displaces the oldest).
  struct HandshakeSlots {
    std::vector<ballast_handshake> live;
    uint64_t full_sets = 0;
  };
  absl::StatusOr<HandshakeSlots> Handshakes() const;
  // Frees every slot older than the settings' syn_idle (its handshake is
  // forgotten already) and returns how many. A slot's syn_time wraps every
  // 2^32 * 256 ns (18 minutes): a slot left in place that long would look
  // fresh to a repeat of its tuple, so the agent runs this well within that
  // (every minute). Lock-free against the program: a slot is cleared with a
  // compare-and-swap of the word the program writes last, so a handshake
  // written meanwhile is kept.
  absl::StatusOr<uint64_t> ExpireHandshakes() override;
  uint32_t handshake_sets() const { return handshake_sets_; }  // entries of `handshakes`
  uint32_t adopted_sets() const { return adopted_sets_; }      // entries of `adopted_flows`
  // The seed the program hashes flows with now (the public one until the
  // agent writes the cluster's): where an adopted flow's set is.
  absl::StatusOr<ballast_hash_seed> CurrentHashSeed() const;

  static uint64_t MonotonicNowNs();  // CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns

 private:
  Dataplane() = default;
  absl::Status AdoptOrPinProgram();
  bool IsOurs(uint32_t prog_id) const;
  // Rewrites the vip_filter word that holds `addr`'s bit from the VIPs and
  // address markers in the map (plus `addr` itself when include_addr).
  absl::Status SetVipFilterWord(const IpAddress& addr, bool include_addr);
  absl::Status ZeroPerCpu(int map_fd, uint32_t key, size_t value_size, std::string_view what);
  // ForEachFlowIn for kAdoptedFlowsMap: the used ways of every set, the
  // sets of `batch` flows per system call.
  absl::StatusOr<size_t> ForEachAdoptedFlow(
      size_t max, const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
      size_t batch) const;
  absl::Status SetIcmpBudget(uint32_t per_s, uint32_t burst);
  // Removes vip_id's QUIC-LB configurations and server IDs, zeroes its
  // QUIC counters (DeleteVip).
  absl::Status ClearQuic(uint32_t vip_id);
  absl::Status SetFlowHashSeed(const FlowHashSeed& seed);
  absl::StatusOr<FlowHashSeed> ReadFlowHashSeed() const;
  // Rewrites the slots of vip_id's current table that differ from `table`;
  // false when that is not possible (no table, another size, not mmapable,
  // frozen): the caller swaps a new table in instead.
  bool WriteTableInPlace(uint32_t vip_id, std::span<const uint32_t> table);
  // Returns after an RCU grace period if a slot was rewritten in place
  // since the last one.
  absl::Status WaitForSlotReaders();
  // Copies the flows of old_adopted_fd_, if any, into adopted_flows
  // (adopted_carry.h); `exclusive` while no program uses the sets. Failures
  // are warnings: those flows are adopted again.
  void CarryOldAdoptedFlows(bool exclusive);
  template <typename T>
  absl::StatusOr<std::vector<T>> ReadPerCpu(int map_fd, uint32_t key, std::string_view what) const;

  xdp_lb* skel_ = nullptr;  // null after OpenPinned(): then maps_ fds are owned
  std::map<std::string, int, std::less<>> maps_;      // ABI map name -> fd
  uint32_t inner_flags_ = BPF_F_INNER_MAP;            // map_flags of the Maglev inner template
  uint32_t handshake_sets_ = BALLAST_HANDSHAKE_SETS;  // entries of `handshakes`
  uint32_t adopted_sets_ = 0;                         // entries of `adopted_flows`
  bool slots_replaced_in_place_ = false;  // by WriteTableInPlace, since the last grace period
  uint32_t last_in_place_vip_ = 0;        // the VIP of the last such write
  std::string pin_dir_;
  int prog_fd_ = -1;
  int adopted_fd_ = -1;      // owned: pinned program of the same build, adopted
  int stale_fd_ = -1;        // owned: pinned program of another build, to be replaced
  int old_adopted_fd_ = -1;  // owned: an older build's flows_adopted (unpinned by Open())
  std::map<std::string, AttachMode, std::less<>> attached_;
  std::unique_ptr<NeighHandoff> neigh_;  // loaded by the first Attach()
  // Serialises the writers of `vips` / `vip_refs` entries (see the
  // thread-safety note at the top).
  mutable std::mutex vip_mu_;
};

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_DATAPLANE_H_
