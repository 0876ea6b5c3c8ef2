// FakeDataplane's QUIC-LB methods (port.h), with the real one's checks
// and semantics: servers of a configuration that is no longer live go with
// it; SetQuicServers replaces the VIP's set.
#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/base/strcat.h"
#include "agent/dataplane/checks.h"
#include "agent/dataplane/fake_dataplane.h"

namespace ballast::dataplane {

absl::Status FakeDataplane::SetQuicConfigs(uint32_t vip_id, std::span<const QuicConfig> configs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("SetQuicConfigs"); !st.ok()) return st;
  if (absl::Status st = CheckVipId(vip_id); !st.ok()) return st;
  if (absl::Status st = CheckQuicConfigs(configs); !st.ok()) return st;
  if (configs.empty()) {
    quic_configs_.erase(vip_id);
  } else {
    quic_configs_[vip_id].assign(configs.begin(), configs.end());
  }
  auto it = quic_servers_.find(vip_id);
  if (it != quic_servers_.end()) {
    std::erase_if(it->second, [&](const QuicServer& s) {
      return !QuicServerLive(configs, s.config_id, s.sid.size());
    });
    if (it->second.empty()) quic_servers_.erase(it);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<QuicConfig>> FakeDataplane::GetQuicConfigs(uint32_t vip_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("GetQuicConfigs"); !st.ok()) return st;
  if (absl::Status st = CheckVipId(vip_id); !st.ok()) return st;
  auto it = quic_configs_.find(vip_id);
  return it == quic_configs_.end() ? std::vector<QuicConfig>{} : it->second;
}

absl::Status FakeDataplane::SetQuicServers(uint32_t vip_id, std::span<const QuicServer> servers) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("SetQuicServers"); !st.ok()) return st;
  if (absl::Status st = CheckVipId(vip_id); !st.ok()) return st;
  auto c = quic_configs_.find(vip_id);
  const std::vector<QuicConfig> none;
  if (absl::Status st = CheckQuicServers(c == quic_configs_.end() ? none : c->second, servers);
      !st.ok()) {
    return st;
  }
  std::vector<QuicServer> sorted(servers.begin(), servers.end());
  std::sort(sorted.begin(), sorted.end(), [](const QuicServer& a, const QuicServer& b) {
    return std::tie(a.config_id, a.sid) < std::tie(b.config_id, b.sid);
  });
  if (sorted.empty()) {
    quic_servers_.erase(vip_id);
  } else {
    quic_servers_[vip_id] = std::move(sorted);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<QuicServer>> FakeDataplane::GetQuicServers(uint32_t vip_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("GetQuicServers"); !st.ok()) return st;
  if (absl::Status st = CheckVipId(vip_id); !st.ok()) return st;
  auto it = quic_servers_.find(vip_id);
  return it == quic_servers_.end() ? std::vector<QuicServer>{} : it->second;
}

absl::StatusOr<ballast_quic_stats> FakeDataplane::QuicStats(uint32_t vip_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("QuicStats"); !st.ok()) return st;
  if (absl::Status st = CheckVipId(vip_id); !st.ok()) return st;
  auto it = quic_stats_.find(vip_id);
  return it == quic_stats_.end() ? ballast_quic_stats{} : it->second;
}

void FakeDataplane::SetQuicStats(uint32_t vip_id, const ballast_quic_stats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  quic_stats_[vip_id] = stats;
}

}  // namespace ballast::dataplane
