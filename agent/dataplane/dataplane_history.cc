// Dataplane: a VIP's slot history for established second chance
// (`maglev_history`, dataplane.h).
#include <bpf/bpf.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/checks.h"
#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/dataplane_internal.h"

namespace ballast::dataplane {

using base::Cat;
using namespace internal;  // NOLINT: this library's own helpers

namespace {

constexpr const char* kHistoryMap = "maglev_history";

absl::Status CheckHistory(uint32_t vip_id, std::span<const uint64_t> slots) {
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  if (slots.size() > BALLAST_MAX_TABLE_SIZE) {
    return absl::InvalidArgumentError(Cat("slot history of vip id ", vip_id, ": ", slots.size(),
                                          " slots, more than a table has (", BALLAST_MAX_TABLE_SIZE,
                                          ")"));
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    if ((slots[i] >> (BALLAST_HISTORY_DEPTH * BALLAST_HISTORY_ID_BITS)) != 0) {
      return absl::InvalidArgumentError(Cat("slot history of vip id ", vip_id, ": slot ", i,
                                            " uses bits above its ", BALLAST_HISTORY_DEPTH,
                                            " backend ids"));
    }
    for (int j = 0; j < BALLAST_HISTORY_DEPTH; ++j) {
      const uint64_t id = (slots[i] >> (j * BALLAST_HISTORY_ID_BITS)) & BALLAST_HISTORY_ID_MASK;
      if (id >= BALLAST_MAX_BACKENDS) {
        return absl::InvalidArgumentError(Cat("slot history of vip id ", vip_id, ": slot ", i,
                                              " names backend id ", id, " (ids are below ",
                                              BALLAST_MAX_BACKENDS, ")"));
      }
    }
  }
  return absl::OkStatus();
}

// Rewrites the words of vip_id's slot history that differ, in place
// through the map's memory, when it has one of this size (one aligned
// 64-bit store each: a packet reads a slot's old history or its new one).
// False when there is none to rewrite (then a new one is swapped in).
// Unlike a swap this waits for no RCU grace period (10-15 ms), which every
// table change would otherwise add to the weight change's latency.
bool WriteHistoryInPlace(int outer, uint32_t vip_id, std::span<const uint64_t> slots) {
  uint32_t inner_id = 0;
  if (bpf_map_lookup_elem(outer, &vip_id, &inner_id) != 0) return false;
  UniqueFd inner(bpf_map_get_fd_by_id(inner_id));
  if (!inner) return false;
  auto info = GetMapInfo(inner.get());
  if (!info.ok() || info->max_entries != slots.size() + 1 || info->value_size != 8 ||
      (info->map_flags & BPF_F_MMAPABLE) == 0) {
    return false;
  }
  const size_t len = info->max_entries * sizeof(uint64_t);
  void* mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, inner.get(), 0);
  if (mem == MAP_FAILED) return false;
  auto word = [mem](size_t i) {
    return std::atomic_ref<uint64_t>(*(static_cast<uint64_t*>(mem) + i));
  };
  if (word(0).load(std::memory_order_relaxed) != slots.size()) {
    munmap(mem, len);
    return false;
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    if (word(i + 1).load(std::memory_order_relaxed) != slots[i]) {
      word(i + 1).store(slots[i], std::memory_order_relaxed);
    }
  }
  munmap(mem, len);
  return true;
}

}  // namespace

absl::Status Dataplane::SetHistory(uint32_t vip_id, std::span<const uint64_t> slots) {
  if (absl::Status s = CheckHistory(vip_id, slots); !s.ok()) return s;
  const int outer = map_fd(kHistoryMap);
  if (outer < 0) return absl::FailedPreconditionError(Cat("this data plane has no ", kHistoryMap));
  if (!slots.empty() && (inner_flags_ & BPF_F_MMAPABLE) != 0 &&
      WriteHistoryInPlace(outer, vip_id, slots)) {
    return absl::OkStatus();
  }
  if (slots.empty()) {
    if (bpf_map_delete_elem(outer, &vip_id) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, Cat("deleting the slot history of vip id ", vip_id));
    }
    return absl::OkStatus();
  }
  const uint32_t entries = static_cast<uint32_t>(slots.size()) + 1;
  // The template's flags (maps.h): the same as the tables' (inner map, mmapable).
  LIBBPF_OPTS(bpf_map_create_opts, create_opts, .map_flags = inner_flags_);
  char name[BPF_OBJ_NAME_LEN];
  snprintf(name, sizeof(name), "history_%u", vip_id);
  UniqueFd inner(bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(uint32_t), sizeof(uint64_t),
                                entries, &create_opts));
  if (!inner) {
    return ErrnoStatus(
        errno, Cat("creating a slot history of ", slots.size(), " slots for vip id ", vip_id));
  }
  const uint64_t m = slots.size();
  if ((inner_flags_ & BPF_F_MMAPABLE) != 0) {
    const size_t len = entries * sizeof(uint64_t);  // 8-byte values: no padding
    void* mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, inner.get(), 0);
    if (mem == MAP_FAILED) {
      return ErrnoStatus(errno, Cat("mapping the new slot history of vip id ", vip_id));
    }
    auto* words = static_cast<uint64_t*>(mem);
    words[0] = m;
    std::memcpy(words + 1, slots.data(), slots.size() * sizeof(uint64_t));
    munmap(mem, len);
  } else {
    for (uint32_t i = 0; i < entries; ++i) {
      const uint64_t v = i == 0 ? m : slots[i - 1];
      if (bpf_map_update_elem(inner.get(), &i, &v, BPF_ANY) != 0) {
        return ErrnoStatus(errno,
                           Cat("filling entry ", i, " of the slot history of vip id ", vip_id));
      }
    }
  }
  const int inner_fd = inner.get();
  if (bpf_map_update_elem(outer, &vip_id, &inner_fd, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("swapping in the slot history of vip id ", vip_id));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> Dataplane::GetHistory(uint32_t vip_id) const {
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  const int outer = map_fd(kHistoryMap);
  uint32_t inner_id = 0;
  if (outer < 0 || bpf_map_lookup_elem(outer, &vip_id, &inner_id) != 0) {
    if (outer < 0 || errno == ENOENT) {
      return absl::NotFoundError(Cat("vip id ", vip_id, " has no slot history"));
    }
    return ErrnoStatus(errno, Cat("reading the slot history of vip id ", vip_id));
  }
  UniqueFd inner(bpf_map_get_fd_by_id(inner_id));
  if (!inner) {
    return ErrnoStatus(errno, Cat("opening slot history map id ", inner_id, " of vip id ", vip_id));
  }
  auto info = GetMapInfo(inner.get());
  if (!info.ok()) return info.status();
  const uint32_t key0 = 0;
  uint64_t m = 0;
  if (bpf_map_lookup_elem(inner.get(), &key0, &m) != 0) {
    return ErrnoStatus(errno, Cat("reading the size of the slot history of vip id ", vip_id));
  }
  if (m == 0 || m + 1 != info->max_entries) {
    return absl::DataLossError(Cat("slot history of vip id ", vip_id, " says M = ", m, " but has ",
                                   info->max_entries, " entries"));
  }
  std::vector<uint64_t> out(m);
  for (uint32_t i = 1; i <= m; ++i) {
    if (bpf_map_lookup_elem(inner.get(), &i, &out[i - 1]) != 0) {
      return ErrnoStatus(errno,
                         Cat("reading entry ", i, " of the slot history of vip id ", vip_id));
    }
  }
  return out;
}

}  // namespace ballast::dataplane
