// Dataplane: programming the maps (settings, VIPs, backends, Maglev
// tables, ownership deadlines) (dataplane.h).
#include <bpf/bpf.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>

#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/checks.h"
#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/dataplane_internal.h"
#include "ballast_flow_hash.h"

namespace ballast::dataplane {

using base::Cat;
using namespace internal;  // NOLINT: this library's own helpers

absl::Status Dataplane::SetSettings(const Settings& s) {
  if (absl::Status st = CheckSettings(s); !st.ok()) return st;
  // The budget and the handshake settings first: a failure leaves the
  // settings map as it was.
  if (absl::Status st = SetIcmpBudget(s.icmp_too_big_per_s, s.icmp_too_big_burst); !st.ok()) {
    return st;
  }
  ballast_handshake_settings hs = {};
  hs.syn_retry_ns = s.syn_retry_ns;
  hs.syn_reuse_idle_ns = s.syn_reuse_idle_ns;
  if (s.src4_prefix) {
    std::memcpy(hs.src4_spread_base, s.src4_prefix->address().bytes().data(), 4);
    hs.src4_spread_mask = s.src4_prefix->HostMask4();
  }
  // Written out, not left 0: the map says which port the program uses.
  hs.gue_port = s.gue_port != 0 ? s.gue_port : BALLAST_GUE_PORT_DEFAULT;
  hs.adopted_bounce_ms = s.adopted_bounce_ms;
  const uint32_t zero = 0;
  if (bpf_map_update_elem(map_fd("handshake_settings"), &zero, &hs, BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing the handshake_settings map");
  }
  if (absl::Status st = SetFlowHashSeed(s.flow_hash_seed); !st.ok()) return st;
  ballast_settings v = {};
  std::memcpy(v.src4, s.src4.bytes().data(), sizeof(v.src4));
  std::memcpy(v.src6, s.src6.bytes().data(), sizeof(v.src6));
  v.policy = s.policy;
  v.tcp_idle_ns = s.tcp_idle_ns;
  v.udp_idle_ns = s.udp_idle_ns;
  v.linger_ns = s.linger_ns;
  v.syn_idle_ns = s.syn_idle_ns;
  v.fib_ttl_ns = s.fib_ttl_ns;
  const uint32_t key = 0;
  if (bpf_map_update_elem(map_fd("settings"), &key, &v, BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing the settings map");
  }
  return absl::OkStatus();
}

absl::StatusOr<Settings> Dataplane::GetSettings() const {
  ballast_settings v = {};
  const uint32_t key = 0;
  if (bpf_map_lookup_elem(map_fd("settings"), &key, &v) != 0) {
    return ErrnoStatus(errno, "reading the settings map");
  }
  Settings s;
  s.src4 = IpAddress::V4(v.src4);
  s.src6 = IpAddress::V6(v.src6);
  s.policy = v.policy;
  s.tcp_idle_ns = v.tcp_idle_ns;
  s.udp_idle_ns = v.udp_idle_ns;
  s.linger_ns = v.linger_ns;
  s.syn_idle_ns = v.syn_idle_ns;
  s.fib_ttl_ns = v.fib_ttl_ns;
  ballast_handshake_settings hs = {};
  if (bpf_map_lookup_elem(map_fd("handshake_settings"), &key, &hs) != 0) {
    return ErrnoStatus(errno, "reading the handshake_settings map");
  }
  s.syn_retry_ns = hs.syn_retry_ns;
  s.syn_reuse_idle_ns = hs.syn_reuse_idle_ns;
  if (hs.src4_spread_mask != 0) {
    // The mask is the host part of a prefix (validated when written).
    const int length = 32 - std::popcount(hs.src4_spread_mask);
    auto p = IpPrefix::Parse(Cat(IpAddress::V4(hs.src4_spread_base).ToString(), "/", length));
    if (!p.ok()) return p.status();
    s.src4_prefix = *p;
  }
  // 0: maps written by builds before GUE, whose program means the default.
  s.gue_port = hs.gue_port != 0 ? hs.gue_port : BALLAST_GUE_PORT_DEFAULT;
  s.adopted_bounce_ms = hs.adopted_bounce_ms;
  // Every CPU holds the same configuration; CPU 0's is read back.
  auto budget = ReadPerCpu<ballast_icmp_budget>(map_fd("icmp_budget"), 0, "icmp_budget");
  if (!budget.ok()) return budget.status();
  s.icmp_too_big_per_s = (*budget)[0].per_s;
  s.icmp_too_big_burst = (*budget)[0].burst;
  auto seed = ReadFlowHashSeed();
  if (!seed.ok()) return seed.status();
  s.flow_hash_seed = *seed;
  return s;
}

// Writes the rate and burst on every CPU, keeping each CPU's bucket time and
// its count of refused answers (a read, then a write of every CPU's value:
// refusals counted between the two are lost). Nothing is written when every
// CPU already has this rate and burst, so only a change of the ICMP budget
// itself opens that window, not every settings change.
absl::Status Dataplane::SetIcmpBudget(uint32_t per_s, uint32_t burst) {
  const int fd = map_fd("icmp_budget");
  auto v = ReadPerCpu<ballast_icmp_budget>(fd, 0, "icmp_budget");
  if (!v.ok()) return v.status();
  const uint64_t interval_ns = per_s == 0 ? 0 : 1'000'000'000ull / per_s;
  const uint32_t burst_set = per_s == 0 ? 0 : burst;
  bool same = true;
  for (ballast_icmp_budget& b : *v) {
    same = same && b.per_s == per_s && b.burst == burst_set && b.interval_ns == interval_ns &&
           b.burst_ns == interval_ns * burst_set;
    b.per_s = per_s;
    b.burst = burst_set;
    b.interval_ns = interval_ns;
    b.burst_ns = interval_ns * burst_set;
  }
  if (same) return absl::OkStatus();
  const uint32_t key = 0;
  if (bpf_map_update_elem(fd, &key, v->data(), BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing the icmp_budget map");
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Dataplane::IcmpTooBigLimited() const {
  auto v = ReadPerCpu<ballast_icmp_budget>(map_fd("icmp_budget"), 0, "icmp_budget");
  if (!v.ok()) return v.status();
  uint64_t n = 0;
  for (const ballast_icmp_budget& b : *v) n += b.limited;
  return n;
}

absl::StatusOr<std::vector<VipEntry>> Dataplane::Vips() const {
  const int fd = map_fd("vips");
  std::vector<VipEntry> out;
  ballast_vip_key key = {};
  ballast_vip_key next = {};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    ballast_vip_meta meta = {};
    if (bpf_map_lookup_elem(fd, &key, &meta) != 0) {
      if (errno == ENOENT) continue;
      return ErrnoStatus(errno, "reading the vips map");
    }
    if (key.proto == BALLAST_VIP_ADDR_MARKER) continue;  // address marker, not a VIP
    auto addr = IpAddress::FromAbi(key.addr, key.family);
    if (!addr.ok()) return addr.status();
    out.push_back(VipEntry{VipKey{*addr, ntohs(key.port), key.proto}, meta});
  }
  if (errno != ENOENT) return ErrnoStatus(errno, "walking the vips map");
  return out;
}

absl::StatusOr<std::vector<IpAddress>> Dataplane::VipAddressMarkers() const {
  const int fd = map_fd("vips");
  std::vector<IpAddress> out;
  ballast_vip_key key = {};
  ballast_vip_key next = {};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    if (key.proto != BALLAST_VIP_ADDR_MARKER) continue;
    auto addr = IpAddress::FromAbi(key.addr, key.family);
    if (addr.ok()) out.push_back(*addr);
  }
  if (errno != ENOENT) return ErrnoStatus(errno, "walking the vips map");
  return out;
}

absl::Status Dataplane::DeleteVipAddressMarker(const IpAddress& addr) {
  std::lock_guard<std::mutex> lock(vip_mu_);
  auto vips = Vips();
  if (!vips.ok()) return vips.status();
  for (const VipEntry& e : *vips) {
    if (e.key.addr == addr) {
      return absl::FailedPreconditionError(Cat("the address marker of ", addr.ToString(),
                                               " is in use by VIP ", VipKeyString(e.key)));
    }
  }
  ballast_vip_key marker = ToAbi(VipKey{addr, 0, 0});
  marker.proto = BALLAST_VIP_ADDR_MARKER;
  if (bpf_map_delete_elem(map_fd("vips"), &marker) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(Cat("no VIP address marker for ", addr.ToString()));
    }
    return ErrnoStatus(errno, Cat("deleting the VIP address marker of ", addr.ToString()));
  }
  return SetVipFilterWord(addr, false);
}

namespace {

uint32_t VipFilterBit(const IpAddress& addr) {
  uint32_t w[4];
  std::memcpy(w, addr.bytes().data(), sizeof(w));
  return ballast_vip_filter_bit(w[0], w[1], w[2], w[3], addr.family());
}

}  // namespace

absl::Status Dataplane::SetVipFilterWord(const IpAddress& addr, bool include_addr) {
  const uint32_t bit = VipFilterBit(addr);
  const uint32_t word = bit / 64;
  // Recompute the whole word from the addresses the map still holds, VIPs
  // and address markers alike (a marker kept after its last VIP keeps its
  // bit), so a bit shared by two addresses stays set while either is there.
  uint64_t bits = include_addr ? (uint64_t{1} << (bit % 64)) : 0;
  const int fd = map_fd("vips");
  ballast_vip_key key = {};
  ballast_vip_key next = {};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    auto a = IpAddress::FromAbi(key.addr, key.family);
    if (!a.ok()) continue;
    const uint32_t b = VipFilterBit(*a);
    if (b / 64 == word) bits |= uint64_t{1} << (b % 64);
  }
  if (errno != ENOENT) return ErrnoStatus(errno, "walking the vips map");
  if (bpf_map_update_elem(map_fd("vip_filter"), &word, &bits, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing word ", word, " of the VIP address filter"));
  }
  return absl::OkStatus();
}

absl::Status Dataplane::UpsertVip(const VipKey& key, uint32_t vip_id, const VipOptions& options) {
  std::lock_guard<std::mutex> lock(vip_mu_);
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  if (absl::Status s = CheckVipKey(key); !s.ok()) return s;
  auto vips = Vips();
  if (!vips.ok()) return vips.status();
  for (const VipEntry& e : *vips) {
    if (e.meta.vip_id == vip_id && e.key != key) {
      return absl::AlreadyExistsError(
          Cat("vip id ", vip_id, " is already used by VIP ", VipKeyString(e.key)));
    }
  }
  const ballast_vip_key k = ToAbi(key);
  ballast_vip_meta prev = {};
  bool existed = false;
  for (const VipEntry& e : *vips) {
    if (e.key == key) {
      existed = true;
      prev = e.meta;
    }
  }
  // An existing VIP keeps its ownership: the owner's deadline is written
  // only by SetVipOwnerDeadline (under vip_mu_, like this update), so
  // re-programming a VIP never resets, extends or clears it. Its GUE flag
  // is the caller's: only that bit of the flags word changes, so a packet
  // reading vip_refs during the write sees the old or the new mode.
  ballast_vip_meta meta = {};
  meta.vip_id = vip_id;
  if (existed) {
    meta.flags = prev.flags;
    meta.owner_deadline_ns = prev.owner_deadline_ns;
  } else if (options.owner_deadline_if_new.has_value()) {
    meta.flags = BALLAST_VIP_F_OWNED;
    meta.owner_deadline_ns = *options.owner_deadline_if_new;
  }
  meta.flags = options.gue ? meta.flags | BALLAST_VIP_F_GUE : meta.flags & ~BALLAST_VIP_F_GUE;
  // The filter bit and the address marker first: from the moment the VIP
  // exists, its packets, fragments and ICMP errors are seen as VIP traffic.
  if (absl::Status st = SetVipFilterWord(key.addr, true); !st.ok()) return st;
  ballast_vip_key marker = k;
  marker.port = 0;
  marker.proto = BALLAST_VIP_ADDR_MARKER;
  const ballast_vip_meta marker_meta = {};
  if (bpf_map_update_elem(map_fd("vips"), &marker, &marker_meta, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing the address marker of VIP ", VipKeyString(key)));
  }
  // The shortcut entry before the VIP itself, so no flow can record the
  // VIP before its entry exists.
  const int refs = map_fd("vip_refs");
  if (absl::Status st = PublishVipRef(refs, k, meta); !st.ok()) return st;
  if (bpf_map_update_elem(map_fd("vips"), &k, &meta, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing VIP ", VipKeyString(key)));
  }
  // The key's previous id no longer covers it.
  if (existed && prev.vip_id != vip_id && prev.vip_id < BALLAST_MAX_VIPS) {
    if (absl::Status st = BumpVipRef(refs, prev.vip_id, /*retire=*/true); !st.ok()) return st;
  }
  // A new one-port VIP takes some flows from the port-0 VIP of its address.
  if (!existed && key.port != 0) {
    for (const VipEntry& e : *vips) {
      if (e.key.port == 0 && e.key.addr == key.addr && e.key.proto == key.proto &&
          e.meta.vip_id < BALLAST_MAX_VIPS) {
        if (absl::Status st = BumpVipRef(refs, e.meta.vip_id, /*retire=*/false); !st.ok()) {
          return st;
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Dataplane::DeleteVip(const VipKey& key, const DeleteVipOptions& options) {
  std::lock_guard<std::mutex> lock(vip_mu_);
  const ballast_vip_key k = ToAbi(key);
  ballast_vip_meta meta = {};
  if (bpf_map_lookup_elem(map_fd("vips"), &k, &meta) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(Cat("VIP ", VipKeyString(key), " does not exist"));
    }
    return ErrnoStatus(errno, Cat("reading VIP ", VipKeyString(key)));
  }
  if (bpf_map_delete_elem(map_fd("vips"), &k) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, Cat("deleting VIP ", VipKeyString(key)));
  }
  if (meta.vip_id != BALLAST_INVALID_ID && meta.vip_id < BALLAST_MAX_VIPS) {
    if (absl::Status st = BumpVipRef(map_fd("vip_refs"), meta.vip_id, /*retire=*/true); !st.ok()) {
      return st;
    }
  }
  if (!options.keep_address_marker) {
    auto rest = Vips();
    if (!rest.ok()) return rest.status();
    bool address_in_use = false;
    for (const VipEntry& e : *rest) address_in_use |= e.key.addr == key.addr;
    if (!address_in_use) {
      ballast_vip_key marker = k;
      marker.port = 0;
      marker.proto = BALLAST_VIP_ADDR_MARKER;
      if (bpf_map_delete_elem(map_fd("vips"), &marker) != 0 && errno != ENOENT) {
        return ErrnoStatus(errno, Cat("deleting the address marker of VIP ", VipKeyString(key)));
      }
      if (absl::Status st = SetVipFilterWord(key.addr, false); !st.ok()) return st;
    }
  }
  if (meta.vip_id != BALLAST_INVALID_ID && meta.vip_id < BALLAST_MAX_VIPS) {
    if (bpf_map_delete_elem(map_fd("maglev_tables"), &meta.vip_id) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, Cat("deleting the Maglev table of vip id ", meta.vip_id));
    }
    if (absl::Status st = SetHistory(meta.vip_id, {}); !st.ok()) return st;
    if (absl::Status st = ClearQuic(meta.vip_id); !st.ok()) return st;
    return ZeroPerCpu(map_fd("vip_stats"), meta.vip_id, sizeof(ballast_vip_stats), "vip_stats");
  }
  return absl::OkStatus();
}

namespace {
// The `vips` entry of a VIP: NOT_FOUND when there is none (address markers,
// which share the map, are not VIPs).
absl::StatusOr<ballast_vip_meta> ReadVipMeta(int vips_fd, const VipKey& key) {
  const ballast_vip_key k = ToAbi(key);
  ballast_vip_meta meta = {};
  if (key.proto == BALLAST_VIP_ADDR_MARKER || bpf_map_lookup_elem(vips_fd, &k, &meta) != 0) {
    if (key.proto == BALLAST_VIP_ADDR_MARKER || errno == ENOENT) {
      return absl::NotFoundError(Cat("VIP ", VipKeyString(key), " does not exist"));
    }
    return ErrnoStatus(errno, Cat("reading VIP ", VipKeyString(key)));
  }
  return meta;
}
}  // namespace

absl::Status Dataplane::SetVipOwnerDeadline(const VipKey& key,
                                            std::optional<uint64_t> monotonic_ns) {
  std::lock_guard<std::mutex> lock(vip_mu_);
  const ballast_vip_key k = ToAbi(key);
  absl::StatusOr<ballast_vip_meta> found = ReadVipMeta(map_fd("vips"), key);
  if (!found.ok()) return found.status();
  ballast_vip_meta meta = *found;
  if (meta.vip_id == BALLAST_INVALID_ID || meta.vip_id >= BALLAST_MAX_VIPS) {
    return absl::DataLossError(
        Cat("VIP ", VipKeyString(key), " has vip id ", meta.vip_id, ", out of range"));
  }
  // vip_refs is an array, updated in place: a packet racing with the update
  // could read some words of the old value and some of the new. So the
  // flag and the deadline never change in the same write: a VIP becoming
  // owned gets its deadline first (ignored while the flag is clear), one
  // leaving owned mode loses the flag first, then the deadline is zeroed.
  // Each intermediate state is one the caller asked for or a harmless
  // equivalent of the old one. (`vips` is a hash: its updates replace the
  // whole element.)
  std::vector<ballast_vip_meta> steps;
  const bool owned = (meta.flags & BALLAST_VIP_F_OWNED) != 0;
  if (monotonic_ns.has_value()) {
    if (!owned) {
      meta.owner_deadline_ns = *monotonic_ns;
      steps.push_back(meta);
    }
    meta.flags |= BALLAST_VIP_F_OWNED;
    meta.owner_deadline_ns = *monotonic_ns;
    steps.push_back(meta);
  } else {
    meta.flags &= ~BALLAST_VIP_F_OWNED;
    steps.push_back(meta);
    meta.owner_deadline_ns = 0;
    steps.push_back(meta);
  }
  for (const ballast_vip_meta& m : steps) {
    // The shortcut copy (same key, same id: the generation stays, so known
    // flows keep their shortcut and see the new deadline on their next
    // packet), then the `vips` entry that new flows read.
    if (absl::Status st = PublishVipRef(map_fd("vip_refs"), k, m); !st.ok()) return st;
    if (bpf_map_update_elem(map_fd("vips"), &k, &m, BPF_EXIST) != 0) {
      return ErrnoStatus(errno, Cat("writing the owner deadline of VIP ", VipKeyString(key)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<VipOwner> Dataplane::GetVipOwner(const VipKey& key) const {
  absl::StatusOr<ballast_vip_meta> found = ReadVipMeta(map_fd("vips"), key);
  if (!found.ok()) return found.status();
  const ballast_vip_meta& meta = *found;
  VipOwner out;
  if ((meta.flags & BALLAST_VIP_F_OWNED) != 0) out.deadline_ns = meta.owner_deadline_ns;
  auto st = VipStats(meta.vip_id);
  if (!st.ok()) return st.status();
  out.fenced = st->fenced;
  return out;
}

absl::Status Dataplane::ZeroPerCpu(int fd, uint32_t key, size_t value_size, std::string_view what) {
  auto ncpus = PossibleCpus();
  if (!ncpus.ok()) return ncpus.status();
  const size_t stride = (value_size + 7) / 8 * 8;
  std::vector<uint8_t> zeros(stride * static_cast<size_t>(*ncpus), 0);
  if (bpf_map_update_elem(fd, &key, zeros.data(), BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("clearing ", what, "[", key, "]"));
  }
  return absl::OkStatus();
}

absl::Status Dataplane::SetBackend(uint32_t id, const IpAddress& addr, ballast_backend_state state,
                                   uint64_t drain_deadline_ns) {
  if (absl::Status s = CheckBackend(id, addr, state, drain_deadline_ns); !s.ok()) return s;
  const int fd = map_fd("backends");
  ballast_backend old = {};
  if (bpf_map_lookup_elem(fd, &id, &old) != 0) {
    return ErrnoStatus(errno, Cat("reading backend ", id));
  }
  ballast_backend v = {};
  std::memcpy(v.addr, addr.bytes().data(), sizeof(v.addr));
  v.family = addr.family();
  v.state = static_cast<uint8_t>(state);
  v.drain_deadline_ns = drain_deadline_ns;
  if (bpf_map_update_elem(fd, &id, &v, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing backend ", id, " (", addr.ToString(), ")"));
  }
  if (old.family != v.family || std::memcmp(old.addr, v.addr, sizeof(v.addr)) != 0) {
    return ZeroPerCpu(map_fd("nexthops"), id, sizeof(ballast_nexthop), "nexthops");
  }
  return absl::OkStatus();
}

absl::Status Dataplane::ClearBackend(uint32_t id) {
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  // A packet that read a table slot before an in-place write may still be
  // about to look `id` up: it must not find the id cleared, or reused.
  if (absl::Status s = WaitForSlotReaders(); !s.ok()) return s;
  const ballast_backend v = {};
  if (bpf_map_update_elem(map_fd("backends"), &id, &v, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("clearing backend ", id));
  }
  if (absl::Status s = ZeroPerCpu(map_fd("nexthops"), id, sizeof(ballast_nexthop), "nexthops");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ZeroPerCpu(map_fd("backend_stats"), id, sizeof(ballast_backend_stats), "backend_stats");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ZeroPerCpu(map_fd("backend_latency"), id, sizeof(ballast_backend_latency),
                                  "backend_latency");
      !s.ok()) {
    return s;
  }
  return ZeroPerCpu(map_fd("backend_bounces"), id, sizeof(ballast_backend_bounces),
                    "backend_bounces");
}

absl::StatusOr<std::vector<BackendEntry>> Dataplane::Backends() const {
  const int fd = map_fd("backends");
  std::vector<BackendEntry> out;
  for (uint32_t id = 1; id < BALLAST_MAX_BACKENDS; ++id) {
    ballast_backend v = {};
    if (bpf_map_lookup_elem(fd, &id, &v) != 0) {
      return ErrnoStatus(errno, Cat("reading backend ", id));
    }
    if (v.state == BALLAST_BACKEND_UNUSED) continue;
    auto addr = IpAddress::FromAbi(v.addr, v.family);
    if (!addr.ok()) {
      return absl::DataLossError(Cat("backend ", id, ": ", addr.status().message()));
    }
    out.push_back(
        BackendEntry{id, *addr, static_cast<ballast_backend_state>(v.state), v.drain_deadline_ns});
  }
  return out;
}

// Bytes per value in an array map's memory (kernel: round_up(value_size, 8)).
constexpr size_t kArraySlotStride = 8;

absl::Status Dataplane::SetTable(uint32_t vip_id, std::span<const uint32_t> table) {
  if (absl::Status s = CheckTable(vip_id, table); !s.ok()) return s;
  if (WriteTableInPlace(vip_id, table)) return absl::OkStatus();
  const size_t m = table.size();
  const uint32_t entries = static_cast<uint32_t>(m) + 1;
  // The inner map must match the program's template (type, key/value size,
  // flags); BPF_F_INNER_MAP in the template lets the size differ.
  LIBBPF_OPTS(bpf_map_create_opts, create_opts, .map_flags = inner_flags_);
  char name[BPF_OBJ_NAME_LEN];
  snprintf(name, sizeof(name), "maglev_%u", vip_id);
  UniqueFd inner(bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(uint32_t), sizeof(uint32_t),
                                entries, &create_opts));
  if (!inner) {
    return ErrnoStatus(errno, Cat("creating a Maglev table of ", m, " slots for vip id ", vip_id));
  }
  std::vector<uint32_t> values(entries);
  values[0] = static_cast<uint32_t>(m);
  std::copy(table.begin(), table.end(), values.begin() + 1);
  if ((inner_flags_ & BPF_F_MMAPABLE) != 0) {
    // Written straight into the map's memory instead of a syscall path per
    // slot. An array map stores each value in round_up(value_size, 8) bytes,
    // so slot i of the table lives at byte i * kArraySlotStride.
    const size_t len = entries * kArraySlotStride;
    void* mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, inner.get(), 0);
    if (mem == MAP_FAILED) {
      return ErrnoStatus(errno, Cat("mapping the new table of vip id ", vip_id));
    }
    auto* bytes = static_cast<uint8_t*>(mem);
    for (uint32_t i = 0; i < entries; ++i) {
      std::memcpy(bytes + static_cast<size_t>(i) * kArraySlotStride, &values[i], sizeof(uint32_t));
    }
    munmap(mem, len);
  } else {
    std::vector<uint32_t> keys(entries);
    for (uint32_t i = 0; i < entries; ++i) keys[i] = i;
    uint32_t count = entries;
    LIBBPF_OPTS(bpf_map_batch_opts, batch_opts);
    if (bpf_map_update_batch(inner.get(), keys.data(), values.data(), &count, &batch_opts) != 0) {
      // Kernels without batch ops for arrays: one update per slot.
      for (uint32_t i = 0; i < entries; ++i) {
        if (bpf_map_update_elem(inner.get(), &keys[i], &values[i], BPF_ANY) != 0) {
          return ErrnoStatus(errno,
                             Cat("filling slot ", i, " of the new table of vip id ", vip_id));
        }
      }
    }
  }
  const int inner_fd = inner.get();
  if (bpf_map_update_elem(map_fd("maglev_tables"), &vip_id, &inner_fd, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("swapping in the new table of vip id ", vip_id));
  }
  // The update waited for a grace period: no packet holds any slot value
  // written before it, in place or not.
  slots_replaced_in_place_ = false;
  return absl::OkStatus();  // `inner` closes our fd; the outer map holds the table
}

bool Dataplane::WriteTableInPlace(uint32_t vip_id, std::span<const uint32_t> table) {
  if ((inner_flags_ & BPF_F_MMAPABLE) == 0) return false;
  uint32_t inner_id = 0;
  if (bpf_map_lookup_elem(map_fd("maglev_tables"), &vip_id, &inner_id) != 0) return false;
  UniqueFd inner(bpf_map_get_fd_by_id(inner_id));
  if (!inner) return false;
  auto info = GetMapInfo(inner.get());
  if (!info.ok() || info->max_entries != table.size() + 1 ||
      (info->map_flags & BPF_F_MMAPABLE) == 0) {
    return false;
  }
  // EPERM for a frozen table (published by an agent that froze its tables):
  // that one is replaced by a swap, and its successor takes writes.
  const size_t len = static_cast<size_t>(info->max_entries) * kArraySlotStride;
  void* mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, inner.get(), 0);
  if (mem == MAP_FAILED) return false;
  auto slot = [mem](size_t i) {
    return std::atomic_ref<uint32_t>(
        *reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(mem) + i * kArraySlotStride));
  };
  if (slot(0).load(std::memory_order_relaxed) != table.size()) {
    munmap(mem, len);
    return false;
  }
  // Each slot is one aligned 32-bit store: a packet reads its slot's old
  // backend or its new one, as it would just before or after a swap.
  size_t changed = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    auto s = slot(i + 1);
    if (s.load(std::memory_order_relaxed) == table[i]) continue;
    s.store(table[i], std::memory_order_relaxed);
    ++changed;
  }
  munmap(mem, len);
  if (changed != 0) {
    slots_replaced_in_place_ = true;
    last_in_place_vip_ = vip_id;
  }
  return true;
}

absl::Status Dataplane::WaitForSlotReaders() {
  if (!slots_replaced_in_place_) return absl::OkStatus();
  // Storing a VIP's own table again changes nothing for packets, and the
  // kernel waits for an RCU grace period in any update of a map of maps
  // (the wait the swap relies on). If that VIP has no table any more, its
  // removal came after the in-place writes and waited the same way.
  const int outer = map_fd("maglev_tables");
  const uint32_t vip_id = last_in_place_vip_;
  uint32_t inner_id = 0;
  if (bpf_map_lookup_elem(outer, &vip_id, &inner_id) == 0) {
    UniqueFd inner(bpf_map_get_fd_by_id(inner_id));
    if (!inner) return ErrnoStatus(errno, Cat("opening table map id ", inner_id));
    const int inner_fd = inner.get();
    if (bpf_map_update_elem(outer, &vip_id, &inner_fd, BPF_ANY) != 0) {
      return ErrnoStatus(errno, Cat("storing the table of vip id ", vip_id,
                                    " again (to wait for packets reading replaced slots)"));
    }
  } else if (errno != ENOENT) {
    return ErrnoStatus(errno, Cat("reading the table of vip id ", vip_id));
  }
  slots_replaced_in_place_ = false;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> Dataplane::GetTable(uint32_t vip_id) const {
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  uint32_t inner_id = 0;
  if (bpf_map_lookup_elem(map_fd("maglev_tables"), &vip_id, &inner_id) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(Cat("vip id ", vip_id, " has no Maglev table"));
    }
    return ErrnoStatus(errno, Cat("reading the table slot of vip id ", vip_id));
  }
  UniqueFd inner(bpf_map_get_fd_by_id(inner_id));
  if (!inner) {
    return ErrnoStatus(errno, Cat("opening table map id ", inner_id, " of vip id ", vip_id));
  }
  auto info = GetMapInfo(inner.get());
  if (!info.ok()) return info.status();
  const uint32_t key0 = 0;
  uint32_t m = 0;
  if (bpf_map_lookup_elem(inner.get(), &key0, &m) != 0) {
    return ErrnoStatus(errno, Cat("reading the size of the table of vip id ", vip_id));
  }
  if (m == 0 || static_cast<uint64_t>(m) + 1 != info->max_entries) {
    return absl::DataLossError(Cat("table of vip id ", vip_id, " says M = ", m, " but has ",
                                   info->max_entries, " entries"));
  }
  if ((info->map_flags & BPF_F_MMAPABLE) != 0) {
    const size_t len = (static_cast<size_t>(m) + 1) * kArraySlotStride;
    void* mem = mmap(nullptr, len, PROT_READ, MAP_SHARED, inner.get(), 0);
    if (mem == MAP_FAILED) {
      return ErrnoStatus(errno, Cat("mapping the table of vip id ", vip_id));
    }
    const auto* bytes = static_cast<const uint8_t*>(mem);
    std::vector<uint32_t> out(m);
    for (uint32_t i = 0; i < m; ++i) {
      std::memcpy(&out[i], bytes + (static_cast<size_t>(i) + 1) * kArraySlotStride,
                  sizeof(uint32_t));
    }
    munmap(mem, len);
    return out;
  }
  std::vector<uint32_t> keys(m + 1);
  std::vector<uint32_t> values(m + 1);
  uint32_t done = 0;
  uint32_t out_batch = 0;
  bool first = true;
  LIBBPF_OPTS(bpf_map_batch_opts, batch_opts);
  bool batch_ok = true;
  while (done < m + 1) {
    uint32_t count = m + 1 - done;
    const int err =
        bpf_map_lookup_batch(inner.get(), first ? nullptr : &out_batch, &out_batch,
                             keys.data() + done, values.data() + done, &count, &batch_opts);
    first = false;
    done += count;
    if (err != 0) {
      if (errno == ENOENT) break;
      batch_ok = false;
      break;
    }
  }
  if (!batch_ok || done != m + 1) {
    for (uint32_t i = 0; i <= m; ++i) {
      keys[i] = i;
      if (bpf_map_lookup_elem(inner.get(), &i, &values[i]) != 0) {
        return ErrnoStatus(errno, Cat("reading slot ", i, " of vip id ", vip_id));
      }
    }
  }
  std::vector<uint32_t> out(m);
  for (uint32_t i = 0; i <= m; ++i) {
    if (keys[i] >= 1 && keys[i] <= m) out[keys[i] - 1] = values[i];
  }
  return out;
}

}  // namespace ballast::dataplane
