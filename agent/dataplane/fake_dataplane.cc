#include "agent/dataplane/fake_dataplane.h"

#include <algorithm>
#include <cstring>

#include "agent/base/strcat.h"
#include "agent/dataplane/checks.h"

namespace ballast::dataplane {

using base::Cat;

namespace {

// What a freshly loaded program's settings maps hold: zeros (a gue_port of 0
// reads back as the default, which Settings{} holds).
Settings ZeroSettings() {
  Settings s;
  const uint8_t zeros[16] = {};
  s.src4 = IpAddress::V4(zeros);
  s.src6 = IpAddress::Zero6();
  s.policy = 0;
  s.tcp_idle_ns = s.udp_idle_ns = s.linger_ns = s.syn_idle_ns = s.fib_ttl_ns = 0;
  s.syn_retry_ns = s.syn_reuse_idle_ns = 0;
  s.icmp_too_big_per_s = s.icmp_too_big_burst = 0;
  s.adopted_bounce_ms = 0;
  return s;
}

bool IsFlowMap(std::string_view map) {
  return std::find(std::begin(kFlowMaps), std::end(kFlowMaps), map) != std::end(kFlowMaps);
}

absl::Status NoVip(const VipKey& key) {
  return absl::NotFoundError(Cat("VIP ", VipKeyString(key), " does not exist"));
}

}  // namespace

FakeDataplane::FakeDataplane(Options options)
    : options_(std::move(options)), settings_(ZeroSettings()) {
  for (const char* m : kFlowMaps) flows_[m];
}

absl::Status FakeDataplane::Enter(std::string_view method) const {
  ++calls_[std::string(method)];
  auto it = fail_next_.find(method);
  if (it == fail_next_.end()) return absl::OkStatus();
  absl::Status s = it->second;
  fail_next_.erase(it);
  return s;
}

bool FakeDataplane::HasVipAddress(const IpAddress& addr) const {
  for (const auto& [text, e] : vips_) {
    if (e.key.addr == addr) return true;
  }
  return false;
}

absl::Status FakeDataplane::SetSettings(const Settings& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("SetSettings"); !st.ok()) return st;
  if (absl::Status st = CheckSettings(s); !st.ok()) return st;
  settings_ = s;
  if (settings_.gue_port == 0) settings_.gue_port = BALLAST_GUE_PORT_DEFAULT;  // as written
  return absl::OkStatus();
}

absl::StatusOr<Settings> FakeDataplane::GetSettings() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("GetSettings"); !st.ok()) return st;
  return settings_;
}

absl::Status FakeDataplane::UpsertVip(const VipKey& key, uint32_t vip_id,
                                      const VipOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("UpsertVip"); !st.ok()) return st;
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  if (absl::Status s = CheckVipKey(key); !s.ok()) return s;
  for (const auto& [text, e] : vips_) {
    if (e.meta.vip_id == vip_id && e.key != key) {
      return absl::AlreadyExistsError(
          Cat("vip id ", vip_id, " is already used by VIP ", VipKeyString(e.key)));
    }
  }
  const std::string text = VipKeyString(key);
  auto it = vips_.find(text);
  ballast_vip_meta meta = {};
  meta.vip_id = vip_id;
  if (it != vips_.end()) {
    meta.flags = it->second.meta.flags;
    meta.owner_deadline_ns = it->second.meta.owner_deadline_ns;
  } else if (options.owner_deadline_if_new.has_value()) {
    meta.flags = BALLAST_VIP_F_OWNED;
    meta.owner_deadline_ns = *options.owner_deadline_if_new;
  }
  meta.flags = options.gue ? meta.flags | BALLAST_VIP_F_GUE : meta.flags & ~BALLAST_VIP_F_GUE;
  markers_.insert(key.addr);
  vips_[text] = VipEntry{key, meta};
  return absl::OkStatus();
}

absl::Status FakeDataplane::DeleteVip(const VipKey& key, const DeleteVipOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("DeleteVip"); !st.ok()) return st;
  auto it = vips_.find(VipKeyString(key));
  if (it == vips_.end()) return NoVip(key);
  const uint32_t id = it->second.meta.vip_id;
  vips_.erase(it);
  if (!options.keep_address_marker && !HasVipAddress(key.addr)) markers_.erase(key.addr);
  tables_.erase(id);
  histories_.erase(id);
  vip_stats_.erase(id);
  quic_configs_.erase(id);
  quic_servers_.erase(id);
  quic_stats_.erase(id);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<VipEntry>> FakeDataplane::Vips() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("Vips"); !st.ok()) return st;
  std::vector<VipEntry> out;
  for (const auto& [text, e] : vips_) out.push_back(e);
  return out;
}

absl::StatusOr<std::vector<IpAddress>> FakeDataplane::VipAddressMarkers() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("VipAddressMarkers"); !st.ok()) return st;
  return std::vector<IpAddress>(markers_.begin(), markers_.end());
}

absl::Status FakeDataplane::DeleteVipAddressMarker(const IpAddress& addr) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("DeleteVipAddressMarker"); !st.ok()) return st;
  for (const auto& [text, e] : vips_) {
    if (e.key.addr == addr) {
      return absl::FailedPreconditionError(
          Cat("the address marker of ", addr.ToString(), " is in use by VIP ", text));
    }
  }
  if (markers_.erase(addr) == 0) {
    return absl::NotFoundError(Cat("no VIP address marker for ", addr.ToString()));
  }
  return absl::OkStatus();
}

absl::Status FakeDataplane::SetVipOwnerDeadline(const VipKey& key,
                                                std::optional<uint64_t> monotonic_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("SetVipOwnerDeadline"); !st.ok()) return st;
  auto it = vips_.find(VipKeyString(key));
  if (it == vips_.end()) return NoVip(key);
  ballast_vip_meta& meta = it->second.meta;
  if (monotonic_ns.has_value()) {
    meta.flags |= BALLAST_VIP_F_OWNED;
    meta.owner_deadline_ns = *monotonic_ns;
  } else {
    meta.flags &= ~BALLAST_VIP_F_OWNED;
    meta.owner_deadline_ns = 0;
  }
  return absl::OkStatus();
}

absl::StatusOr<VipOwner> FakeDataplane::GetVipOwner(const VipKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("GetVipOwner"); !st.ok()) return st;
  auto it = vips_.find(VipKeyString(key));
  if (it == vips_.end()) return NoVip(key);
  VipOwner out;
  const ballast_vip_meta& meta = it->second.meta;
  if ((meta.flags & BALLAST_VIP_F_OWNED) != 0) out.deadline_ns = meta.owner_deadline_ns;
  if (auto s = vip_stats_.find(meta.vip_id); s != vip_stats_.end()) out.fenced = s->second.fenced;
  return out;
}

absl::Status FakeDataplane::SetBackend(uint32_t id, const IpAddress& addr,
                                       ballast_backend_state state, uint64_t drain_deadline_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("SetBackend"); !st.ok()) return st;
  if (absl::Status s = CheckBackend(id, addr, state, drain_deadline_ns); !s.ok()) return s;
  if (state == BALLAST_BACKEND_UNUSED) {
    backends_.erase(id);
  } else {
    backends_[id] = BackendEntry{id, addr, state, drain_deadline_ns};
  }
  return absl::OkStatus();
}

absl::Status FakeDataplane::ClearBackend(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("ClearBackend"); !st.ok()) return st;
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  backends_.erase(id);
  backend_stats_.erase(id);
  bounces_.erase(id);
  latency_.erase(id);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BackendEntry>> FakeDataplane::Backends() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("Backends"); !st.ok()) return st;
  std::vector<BackendEntry> out;
  for (const auto& [id, b] : backends_) out.push_back(b);
  return out;
}

absl::Status FakeDataplane::SetTable(uint32_t vip_id, std::span<const uint32_t> table) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("SetTable"); !st.ok()) return st;
  if (absl::Status s = CheckTable(vip_id, table); !s.ok()) return s;
  tables_[vip_id].assign(table.begin(), table.end());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> FakeDataplane::GetTable(uint32_t vip_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("GetTable"); !st.ok()) return st;
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  auto it = tables_.find(vip_id);
  if (it == tables_.end())
    return absl::NotFoundError(Cat("vip id ", vip_id, " has no Maglev table"));
  return it->second;
}

absl::Status FakeDataplane::SetHistory(uint32_t vip_id, std::span<const uint64_t> slots) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("SetHistory"); !st.ok()) return st;
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  if (slots.empty()) {
    histories_.erase(vip_id);
  } else {
    histories_[vip_id].assign(slots.begin(), slots.end());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> FakeDataplane::GetHistory(uint32_t vip_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("GetHistory"); !st.ok()) return st;
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  auto it = histories_.find(vip_id);
  if (it == histories_.end()) {
    return absl::NotFoundError(Cat("vip id ", vip_id, " has no slot history"));
  }
  return it->second;
}

absl::Status FakeDataplane::Attach(std::string_view ifname, AttachMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("Attach"); !st.ok()) return st;
  if (options_.devices.count(std::string(ifname)) == 0) {
    return absl::NotFoundError(Cat("no network device \"", ifname, "\" in this network namespace"));
  }
  auto it = attached_.find(ifname);
  if (it != attached_.end()) return absl::OkStatus();  // already runs it: kept as it is
  attached_[std::string(ifname)] = mode == AttachMode::kAuto ? AttachMode::kNative : mode;
  return absl::OkStatus();
}

absl::StatusOr<AttachMode> FakeDataplane::AttachedMode(std::string_view ifname) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("AttachedMode"); !st.ok()) return st;
  auto it = attached_.find(ifname);
  if (it == attached_.end()) {
    return absl::NotFoundError(Cat("dev ", ifname, " was not attached by this process"));
  }
  return it->second;
}

absl::Status FakeDataplane::Detach(std::string_view ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("Detach"); !st.ok()) return st;
  if (options_.devices.count(std::string(ifname)) == 0) {
    return absl::NotFoundError(Cat("no network device \"", ifname, "\" in this network namespace"));
  }
  if (attached_.erase(std::string(ifname)) == 0) {
    return absl::NotFoundError(Cat("dev ", ifname, " runs no XDP program"));
  }
  return absl::OkStatus();
}

absl::Status FakeDataplane::Teardown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("Teardown"); !st.ok()) return st;
  attached_.clear();
  return absl::OkStatus();
}

absl::StatusOr<ballast_backend_stats> FakeDataplane::BackendStats(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("BackendStats"); !st.ok()) return st;
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  auto it = backend_stats_.find(id);
  return it == backend_stats_.end() ? ballast_backend_stats{} : it->second;
}

absl::StatusOr<ballast_backend_bounces> FakeDataplane::BackendBounces(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("BackendBounces"); !st.ok()) return st;
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  auto it = bounces_.find(id);
  return it == bounces_.end() ? ballast_backend_bounces{} : it->second;
}

absl::StatusOr<ballast_esc_stats> FakeDataplane::EscStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("EscStats"); !st.ok()) return st;
  return esc_;
}

void FakeDataplane::SetEscStats(const ballast_esc_stats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  esc_ = stats;
}

absl::StatusOr<LatencyHistograms> FakeDataplane::BackendLatency(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("BackendLatency"); !st.ok()) return st;
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  auto it = latency_.find(id);
  return it == latency_.end() ? LatencyHistograms{} : it->second;
}

absl::StatusOr<ballast_vip_stats> FakeDataplane::VipStats(uint32_t vip_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("VipStats"); !st.ok()) return st;
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  auto it = vip_stats_.find(vip_id);
  return it == vip_stats_.end() ? ballast_vip_stats{} : it->second;
}

absl::StatusOr<std::array<uint64_t, BALLAST_V_MAX>> FakeDataplane::Verdicts() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("Verdicts"); !st.ok()) return st;
  return verdicts_;
}

absl::StatusOr<uint64_t> FakeDataplane::IcmpTooBigLimited() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("IcmpTooBigLimited"); !st.ok()) return st;
  return 0;
}

absl::StatusOr<size_t> FakeDataplane::ForEachFlowIn(
    const char* map, size_t max,
    const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
    size_t /*batch*/) const {
  std::vector<std::pair<ballast_flow_key, ballast_flow>> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status st = Enter("ForEachFlowIn"); !st.ok()) return st;
    auto it = flows_.find(map);
    if (it == flows_.end()) return absl::NotFoundError(Cat("no map ", map));
    copy.assign(it->second.begin(),
                it->second.begin() + static_cast<std::ptrdiff_t>(std::min(max, it->second.size())));
  }
  for (const auto& [k, f] : copy) fn(k, f);  // outside the lock, like a map walk
  return copy.size();
}

absl::StatusOr<uint32_t> FakeDataplane::MapCapacity(const char* map) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("MapCapacity"); !st.ok()) return st;
  if (!IsFlowMap(map)) return absl::NotFoundError(Cat("no map ", map));
  return options_.flow_capacity;
}

absl::StatusOr<uint64_t> FakeDataplane::ExpireHandshakes() {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Enter("ExpireHandshakes"); !st.ok()) return st;
  return 0;
}

void FakeDataplane::FailNext(std::string_view method, absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_[std::string(method)] = std::move(status);
}

void FakeDataplane::SetBackendStats(uint32_t id, const ballast_backend_stats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  backend_stats_[id] = stats;
}

void FakeDataplane::SetBackendBounces(uint32_t id, const ballast_backend_bounces& bounces) {
  std::lock_guard<std::mutex> lock(mu_);
  bounces_[id] = bounces;
}

void FakeDataplane::SetBackendLatency(uint32_t id, const LatencyHistograms& latency) {
  std::lock_guard<std::mutex> lock(mu_);
  latency_[id] = latency;
}

void FakeDataplane::SetVipStats(uint32_t vip_id, const ballast_vip_stats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  vip_stats_[vip_id] = stats;
}

void FakeDataplane::CountVerdict(ballast_verdict v, uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  verdicts_[v] += n;
}

absl::Status FakeDataplane::AddFlow(const char* map, const ballast_flow_key& key,
                                    const ballast_flow& flow) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = flows_.find(map);
  if (it == flows_.end()) return absl::NotFoundError(Cat("no map ", map));
  if (it->second.size() >= options_.flow_capacity) {
    return absl::ResourceExhaustedError(Cat("flow map ", map, " is full"));
  }
  it->second.emplace_back(key, flow);
  return absl::OkStatus();
}

size_t FakeDataplane::Calls(std::string_view method) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = calls_.find(method);
  return it == calls_.end() ? 0 : it->second;
}

}  // namespace ballast::dataplane
