// Dataplane: reading counters, the connection table and the handshake
// slots (dataplane.h).
#include <bpf/bpf.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <string_view>
#include <vector>

#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/dataplane_internal.h"
#include "ballast_flow_hash.h"

namespace ballast::dataplane {

using base::Cat;
using namespace internal;  // NOLINT: this library's own helpers

namespace {

// Reads entries 0..total-1 of array map `fd` (values of type T), `batch`
// per system call, and calls fn(value) on each in order until it returns
// false. Returns how many entries were read.
template <typename T, typename Fn>
absl::StatusOr<uint32_t> ReadArrayInBatches(int fd, uint32_t total, uint32_t batch,
                                            std::string_view what, Fn fn) {
  std::vector<uint32_t> keys(batch);
  std::vector<T> values(batch);
  uint32_t next = 0;
  uint32_t done = 0;
  while (done < total) {
    uint32_t count = std::min(batch, total - done);
    const int rc = bpf_map_lookup_batch(fd, done == 0 ? nullptr : &next, &next, keys.data(),
                                        values.data(), &count, nullptr);
    // ENOENT: this batch reached the end of the map (count holds what it read).
    if (rc != 0 && errno != ENOENT)
      return ErrnoStatus(errno, Cat("reading ", what, "[", done, "...]"));
    for (uint32_t i = 0; i < count; ++i) {
      if (!fn(values[i])) return done + i + 1;
    }
    done += count;
    if (rc != 0 || count == 0) break;
  }
  return done;
}

}  // namespace

absl::StatusOr<ballast_backend_stats> Dataplane::BackendStats(uint32_t id) const {
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  auto v = ReadPerCpu<ballast_backend_stats>(map_fd("backend_stats"), id, "backend_stats");
  if (!v.ok()) return v.status();
  return SumU64Fields(*v);
}

absl::StatusOr<ballast_backend_bounces> Dataplane::BackendBounces(uint32_t id) const {
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  auto v = ReadPerCpu<ballast_backend_bounces>(map_fd("backend_bounces"), id, "backend_bounces");
  if (!v.ok()) return v.status();
  return SumU64Fields(*v);
}

absl::StatusOr<ballast_esc_stats> Dataplane::EscStats() const {
  auto v = ReadPerCpu<ballast_esc_stats>(map_fd("esc_stats"), 0, "esc_stats");
  if (!v.ok()) return v.status();
  return SumU64Fields(*v);
}

absl::StatusOr<LatencyHistograms> Dataplane::BackendLatency(uint32_t id) const {
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  auto v = ReadPerCpu<ballast_backend_latency>(map_fd("backend_latency"), id, "backend_latency");
  if (!v.ok()) return v.status();
  // 32-bit per CPU (the map's size), summed into 64 bits.
  LatencyHistograms h;
  for (const ballast_backend_latency& c : *v) {
    for (int i = 0; i < BALLAST_LATENCY_BUCKETS; ++i) {
      h.handshake[i] += c.handshake[i];
      h.first_response[i] += c.first_response[i];
    }
  }
  return h;
}

absl::StatusOr<ballast_vip_stats> Dataplane::VipStats(uint32_t vip_id) const {
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  auto v = ReadPerCpu<ballast_vip_stats>(map_fd("vip_stats"), vip_id, "vip_stats");
  if (!v.ok()) return v.status();
  return SumU64Fields(*v);
}

absl::StatusOr<std::array<uint64_t, BALLAST_V_MAX>> Dataplane::Verdicts() const {
  std::array<uint64_t, BALLAST_V_MAX> out{};
  const int fd = map_fd("verdicts");
  for (uint32_t k = 0; k < BALLAST_V_MAX; ++k) {
    auto v = ReadPerCpu<uint64_t>(fd, k, "verdicts");
    if (!v.ok()) return v.status();
    for (uint64_t x : *v) out[k] += x;
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<ballast_flow_key, ballast_flow>>> Dataplane::Flows(
    size_t max) const {
  std::vector<std::pair<ballast_flow_key, ballast_flow>> out;
  auto seen = ForEachFlow(
      max, [&out](const ballast_flow_key& k, const ballast_flow& f) { out.emplace_back(k, f); });
  if (!seen.ok()) return seen.status();
  return out;
}

absl::StatusOr<size_t> Dataplane::ForEachFlow(
    size_t max, const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
    size_t batch) const {
  size_t seen = 0;
  for (const char* name : kFlowMaps) {
    auto n = ForEachFlowIn(name, max - seen, fn, batch);
    if (!n.ok()) return n.status();
    seen += *n;
    if (seen >= max) break;
  }
  return seen;
}

absl::StatusOr<uint32_t> Dataplane::MapCapacity(const char* map) const {
  const int fd = map_fd(map);
  if (fd < 0) return absl::NotFoundError(Cat("no map ", map));
  auto info = GetMapInfo(fd);
  if (!info.ok()) return info.status();
  if (std::string_view(map) == kAdoptedFlowsMap) return info->max_entries * BALLAST_ADOPTED_WAYS;
  return info->max_entries;
}

absl::StatusOr<std::optional<ballast_flow>> Dataplane::LookupFlow(
    const char* map, const ballast_flow_key& key) const {
  const int fd = map_fd(map);
  if (fd < 0) return absl::NotFoundError(Cat("no map ", map));
  if (std::string_view(map) != kAdoptedFlowsMap) {
    ballast_flow f;
    if (bpf_map_lookup_elem(fd, &key, &f) == 0) return f;
    if (errno == ENOENT) return std::nullopt;
    return ErrnoStatus(errno, Cat("looking up a flow in ", map));
  }
  auto seed = CurrentHashSeed();
  if (!seed.ok()) return seed.status();
  const uint32_t idx = ballast_flow_hash(&key, &*seed) & (adopted_sets_ - 1);
  ballast_adopted_set set;
  if (bpf_map_lookup_elem(fd, &idx, &set) != 0) {
    return ErrnoStatus(errno, Cat("reading ", map, "[", idx, "]"));
  }
  for (uint32_t i = 0; i < BALLAST_ADOPTED_WAYS; ++i) {
    if (std::memcmp(&set.key[i], &key, sizeof key) == 0) return set.flow[i];
  }
  return std::nullopt;
}

absl::StatusOr<size_t> Dataplane::ForEachFlowIn(
    const char* map, size_t max,
    const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
    size_t batch) const {
  if (std::string_view(map) == kAdoptedFlowsMap) return ForEachAdoptedFlow(max, fn, batch);
  return ForEachHashFlow(map_fd(map), map, max, fn, batch);
}

absl::StatusOr<size_t> internal::ForEachHashFlow(
    int fd, std::string_view map, size_t max,
    const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn, size_t batch) {
  size_t seen = 0;
  // Batches end at bucket boundaries: a batch needs room for a whole bucket
  // (ENOSPC with nothing read otherwise; the batch then grows).
  size_t chunk = std::clamp<size_t>(batch, 1, size_t{1} << 20);
  std::vector<ballast_flow_key> keys(chunk);
  std::vector<ballast_flow> values(chunk);
  uint32_t token = 0;  // where the next batch starts (a bucket index, for hash maps)
  bool first = true;
  while (seen < max) {
    auto count = static_cast<uint32_t>(chunk);
    const int rc = bpf_map_lookup_batch(fd, first ? nullptr : &token, &token, keys.data(),
                                        values.data(), &count, nullptr);
    const int err = rc != 0 ? errno : 0;
    if (rc != 0 && err == ENOSPC && count == 0 && chunk < (size_t{1} << 20)) {
      chunk *= 2;
      keys.resize(chunk);
      values.resize(chunk);
      continue;
    }
    // ENOENT: this batch reached the end of the map (count holds what it read).
    if (rc != 0 && err != ENOENT) return ErrnoStatus(err, Cat("reading the ", map, " map"));
    for (uint32_t i = 0; i < count && seen < max; ++i, ++seen) fn(keys[i], values[i]);
    if (rc != 0) break;
    first = false;
  }
  return seen;
}

absl::StatusOr<size_t> Dataplane::ForEachAdoptedFlow(
    size_t max, const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
    size_t batch) const {
  const int fd = map_fd(kAdoptedFlowsMap);
  if (fd < 0) return absl::NotFoundError(Cat("no map ", kAdoptedFlowsMap));
  // `batch` flows per syscall: the sets that hold them. A way the program
  // rewrites during the copy may come out half written (no lock; adopted.h).
  // Its key is written last, ports and family in the last word: a copy that
  // took the old flow's addresses and the new flow's last word has a key of
  // neither, which hashes to another set almost always, and is skipped here.
  // A whole old key may still come with the new flow's value: listings and
  // counts may be off by that one flow.
  // A flow stored before the seed's last rotation is in the set of its
  // hash under the previous seed.
  auto current = CurrentHashSeed();
  if (!current.ok()) return current.status();
  auto seeds = ReadFlowHashSeed();
  if (!seeds.ok()) return seeds.status();
  std::optional<ballast_hash_seed> previous;
  if (seeds->previous) {
    previous.emplace();
    std::copy(seeds->previous->begin(), seeds->previous->end(), previous->w);
  }
  const auto in_set = [&](const ballast_flow_key& key, uint32_t idx) {
    const uint32_t mask = adopted_sets_ - 1;
    return (ballast_flow_hash(&key, &*current) & mask) == idx ||
           (previous && (ballast_flow_hash(&key, &*previous) & mask) == idx);
  };
  const auto sets_per_call =
      static_cast<uint32_t>(std::clamp<size_t>(batch / BALLAST_ADOPTED_WAYS, 1, size_t{1} << 18));
  size_t seen = 0;
  uint32_t idx = 0;
  auto read = ReadArrayInBatches<ballast_adopted_set>(
      fd, adopted_sets_, sets_per_call, kAdoptedFlowsMap, [&](const ballast_adopted_set& set) {
        for (uint32_t w = 0; w < BALLAST_ADOPTED_WAYS && seen < max; ++w) {
          if (set.key[w].family == 0) continue;    // a free way
          if (!in_set(set.key[w], idx)) continue;  // torn
          fn(set.key[w], set.flow[w]);
          ++seen;
        }
        ++idx;
        return seen < max;
      });
  if (!read.ok()) return read.status();
  return seen;
}

absl::StatusOr<uint64_t> Dataplane::ExpireHandshakes() {
  auto settings = GetSettings();
  if (!settings.ok()) return settings.status();
  const uint32_t idle =
      static_cast<uint32_t>(settings->syn_idle_ns >> BALLAST_HANDSHAKE_TIME_SHIFT);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes =
      (static_cast<size_t>(handshake_sets_) * sizeof(ballast_handshake_set) + page - 1) / page *
      page;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd("handshakes"), 0);
  if (mem == MAP_FAILED) return ErrnoStatus(errno, "mapping handshakes");
  auto* sets = static_cast<ballast_handshake_set*>(mem);
  const auto now = static_cast<uint32_t>(MonotonicNowNs() >> BALLAST_HANDSHAKE_TIME_SHIFT);
  uint64_t cleared = 0;
  for (uint32_t i = 0; i < handshake_sets_; ++i) {
    for (ballast_handshake& h : sets[i].way) {
      // {hash, backend_id, bounces, reserved}: the word the program writes
      // last (handshake_write), and clears to free a slot.
      auto* word = reinterpret_cast<uint64_t*>(&h.hash);
      uint64_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
      if (((seen >> 32) & 0xffff) == BALLAST_INVALID_ID) continue;
      const uint32_t t = __atomic_load_n(&h.syn_time, __ATOMIC_RELAXED);
      if (now - t <= idle) continue;  // live (the age modulo 2^32, as the program takes it)
      if (__atomic_compare_exchange_n(word, &seen, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        ++cleared;
      }
    }
  }
  munmap(mem, bytes);
  return cleared;
}

absl::StatusOr<Dataplane::HandshakeSlots> Dataplane::Handshakes() const {
  auto settings = GetSettings();
  if (!settings.ok()) return settings.status();
  const uint32_t idle =
      static_cast<uint32_t>(settings->syn_idle_ns >> BALLAST_HANDSHAKE_TIME_SHIFT);
  const auto now = static_cast<uint32_t>(MonotonicNowNs() >> BALLAST_HANDSHAKE_TIME_SHIFT);
  HandshakeSlots out;
  // One syscall per 1024 sets instead of one per set: 16 instead of 16,384
  // for the default map.
  auto read = ReadArrayInBatches<ballast_handshake_set>(
      map_fd("handshakes"), handshake_sets_, 1024, "handshakes",
      [&](const ballast_handshake_set& set) {
        uint32_t live = 0;
        for (const ballast_handshake& h : set.way) {
          // syn_time wraps: the age is taken modulo 2^32, as the program does.
          if (h.backend_id == BALLAST_INVALID_ID || now - h.syn_time > idle) continue;
          out.live.push_back(h);
          ++live;
        }
        if (live == BALLAST_HANDSHAKE_WAYS) ++out.full_sets;
        return true;
      });
  if (!read.ok()) return read.status();
  if (*read != handshake_sets_) {
    return absl::InternalError(
        Cat("reading handshakes: the map gave ", *read, " sets, not ", handshake_sets_));
  }
  return out;
}

uint64_t Dataplane::MonotonicNowNs() {
  timespec ts = {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ballast::dataplane
