// Dataplane's QUIC-LB methods (port.h): the `quic_vips`, `quic_servers`
// and `quic_stats` maps (ballast_abi.h, "QUIC-LB").
#include <bpf/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>
#include <tuple>
#include <vector>

#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/checks.h"
#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/dataplane_internal.h"

namespace ballast::dataplane {

using base::Cat;
using namespace internal;  // NOLINT: this library's own helpers

namespace {

// The `quic_servers` keys of vip_id.
absl::StatusOr<std::vector<ballast_quic_sid_key>> SidKeysOf(int fd, uint32_t vip_id) {
  std::vector<ballast_quic_sid_key> out;
  ballast_quic_sid_key key, next;
  std::memset(&key, 0, sizeof key);
  const void* prev = nullptr;
  for (;;) {
    if (bpf_map_get_next_key(fd, prev, &next) != 0) {
      if (errno == ENOENT) break;
      return ErrnoStatus(errno, "walking the quic_servers map");
    }
    if (next.vip_id == vip_id) out.push_back(next);
    key = next;
    prev = &key;
  }
  return out;
}

std::span<const uint8_t> SidOf(const ballast_quic_sid_key& k) {
  return {k.sid, std::min<size_t>(k.sid_len, sizeof k.sid)};
}

}  // namespace

absl::Status Dataplane::SetQuicConfigs(uint32_t vip_id, std::span<const QuicConfig> configs) {
  if (absl::Status st = CheckVipId(vip_id); !st.ok()) return st;
  auto v = QuicVipToAbi(configs);
  if (!v.ok()) return v.status();
  if (bpf_map_update_elem(map_fd("quic_vips"), &vip_id, &*v, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing the QUIC-LB configurations of vip id ", vip_id));
  }
  auto keys = SidKeysOf(map_fd("quic_servers"), vip_id);
  if (!keys.ok()) return keys.status();
  for (const ballast_quic_sid_key& k : *keys) {
    if (QuicServerLive(configs, k.config_id, k.sid_len)) continue;
    if (bpf_map_delete_elem(map_fd("quic_servers"), &k) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, Cat("deleting a server ID of vip id ", vip_id));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<QuicConfig>> Dataplane::GetQuicConfigs(uint32_t vip_id) const {
  if (absl::Status st = CheckVipId(vip_id); !st.ok()) return st;
  ballast_quic_vip v;
  if (bpf_map_lookup_elem(map_fd("quic_vips"), &vip_id, &v) != 0) {
    return ErrnoStatus(errno, Cat("reading the QUIC-LB configurations of vip id ", vip_id));
  }
  return QuicVipFromAbi(v);
}

absl::Status Dataplane::SetQuicServers(uint32_t vip_id, std::span<const QuicServer> servers) {
  auto configs = GetQuicConfigs(vip_id);
  if (!configs.ok()) return configs.status();
  if (absl::Status st = CheckQuicServers(*configs, servers); !st.ok()) return st;
  const int fd = map_fd("quic_servers");
  std::vector<ballast_quic_sid_key> wanted;
  for (const QuicServer& s : servers) {
    wanted.push_back(QuicSidKey(vip_id, s.config_id, s.sid));
    if (bpf_map_update_elem(fd, &wanted.back(), &s.backend_id, BPF_ANY) != 0) {
      return ErrnoStatus(errno, Cat("writing a server ID of vip id ", vip_id, " (", servers.size(),
                                    " in all; quic_servers holds ", BALLAST_QUIC_MAX_SERVERS, ")"));
    }
  }
  auto keys = SidKeysOf(fd, vip_id);
  if (!keys.ok()) return keys.status();
  for (const ballast_quic_sid_key& k : *keys) {
    bool keep = false;
    for (const ballast_quic_sid_key& w : wanted) keep = keep || std::memcmp(&w, &k, sizeof k) == 0;
    if (!keep && bpf_map_delete_elem(fd, &k) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, Cat("deleting a server ID of vip id ", vip_id));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<QuicServer>> Dataplane::GetQuicServers(uint32_t vip_id) const {
  if (absl::Status st = CheckVipId(vip_id); !st.ok()) return st;
  const int fd = map_fd("quic_servers");
  auto keys = SidKeysOf(fd, vip_id);
  if (!keys.ok()) return keys.status();
  std::vector<QuicServer> out;
  for (const ballast_quic_sid_key& k : *keys) {
    uint32_t id = 0;
    if (bpf_map_lookup_elem(fd, &k, &id) != 0) {
      if (errno == ENOENT) continue;  // removed meanwhile
      return ErrnoStatus(errno, Cat("reading a server ID of vip id ", vip_id));
    }
    const auto sid = SidOf(k);
    out.push_back({.config_id = k.config_id, .sid = {sid.begin(), sid.end()}, .backend_id = id});
  }
  std::sort(out.begin(), out.end(), [](const QuicServer& a, const QuicServer& b) {
    return std::tie(a.config_id, a.sid) < std::tie(b.config_id, b.sid);
  });
  return out;
}

absl::StatusOr<ballast_quic_stats> Dataplane::QuicStats(uint32_t vip_id) const {
  if (absl::Status st = CheckVipId(vip_id); !st.ok()) return st;
  auto v = ReadPerCpu<ballast_quic_stats>(map_fd("quic_stats"), vip_id, "quic_stats");
  if (!v.ok()) return v.status();
  return SumU64Fields(*v);
}

absl::Status Dataplane::ClearQuic(uint32_t vip_id) {
  if (map_fd("quic_vips") < 0) return absl::OkStatus();  // pins of a build without QUIC-LB
  if (absl::Status st = SetQuicConfigs(vip_id, {}); !st.ok()) return st;
  return ZeroPerCpu(map_fd("quic_stats"), vip_id, sizeof(ballast_quic_stats), "quic_stats");
}

}  // namespace ballast::dataplane
