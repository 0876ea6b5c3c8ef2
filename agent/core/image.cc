#include "agent/core/image.h"

#include "agent/core/flow_hash_seed.h"

#include <netinet/in.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <tuple>

#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "agent/base/ip_prefix.h"
#include "agent/core/ids.h"
#include "agent/core/names.h"
#include "agent/core/quic_ids.h"
#include "agent/core/table_history.h"
#include "agent/core/validate.h"
#include "agent/health/weight.h"
#include "absl/strings/string_view.h"

namespace ballast::core {

absl::string_view BackendModeName(BackendMode m) {
  switch (m) {
    case BackendMode::kActive:
      return "active";
    case BackendMode::kDraining:
      return "draining";
    case BackendMode::kEvicted:
      return "evicted";
    case BackendMode::kPinned:
      return "pinned";
  }
  return "active";
}

const v1::BackendOverride* FindOverride(const v1::State& state, const v1::VipKey& vip,
                                        const std::string& address) {
  const std::string want = BackendIdKey(vip, address);
  for (const v1::BackendOverride& o : state.overrides()) {
    if (BackendIdKey(o.vip(), o.address()) == want) return &o;
  }
  return nullptr;
}

BackendView ViewFromOverride(const v1::BackendOverride* o, const v1::Backend& b) {
  BackendView v;
  v.nominal_weight = b.weight();
  v.effective_weight = b.weight();
  if (o == nullptr) return v;
  v.drain_deadline_unix_ms = o->drain_deadline_unix_ms();
  if (o->pinned()) {
    v.mode = BackendMode::kPinned;
  } else if (o->evicted()) {
    v.mode = BackendMode::kEvicted;
  } else if (o->drain_deadline_unix_ms() > 0) {
    v.mode = BackendMode::kDraining;
  }
  if (v.mode != BackendMode::kActive) {
    v.effective_weight = 0;
  } else if (o->has_health()) {
    // Health checking's share of the weight (agent/health/weight.h).
    const v1::HealthMark& h = o->health();
    v.effective_weight =
        health::EffectiveWeight(health::OperatorState::kActive, b.weight(), h.in_service(),
                                static_cast<int>(std::clamp<uint32_t>(h.ramp_percent(), 1, 100)),
                                static_cast<int>(std::min<uint32_t>(h.weight_score(), 100)));
  }
  return v;
}

BackendView ViewOf(const v1::State& state, const v1::VipKey& vip, const v1::Backend& backend) {
  return ViewFromOverride(FindOverride(state, vip, backend.address()), backend);
}

size_t TableHash(std::span<const uint32_t> table) {
  return absl::HashOf(absl::MakeConstSpan(table.data(), table.size()));
}

dataplane::Settings SettingsOf(const v1::Global& g) {
  dataplane::Settings s;
  if (!g.source_v4().empty()) {
    if (auto a = IpAddress::Parse(g.source_v4()); a.ok()) s.src4 = *a;
  }
  if (!g.source_v6().empty()) {
    if (auto a = IpAddress::Parse(g.source_v6()); a.ok()) s.src6 = *a;
  }
  if (!g.source_v4_prefix().empty()) {
    if (auto p = IpPrefix::Parse(g.source_v4_prefix()); p.ok()) s.src4_prefix = *p;
  }
  s.policy = 0;
  if (g.drop_malformed()) s.policy |= BALLAST_POLICY_DROP_MALFORMED;
  if (!g.no_icmp_too_big()) s.policy |= BALLAST_POLICY_ICMP_TOO_BIG;
  const EffectiveTimeouts t = TimeoutsOf(g);
  constexpr uint64_t kNsPerS = 1'000'000'000ull;
  s.tcp_idle_ns = t.tcp_idle_s * kNsPerS;
  s.udp_idle_ns = t.udp_idle_s * kNsPerS;
  s.linger_ns = t.linger_s * kNsPerS;
  s.syn_idle_ns = t.syn_idle_s * kNsPerS;
  s.syn_retry_ns = uint64_t{t.syn_retry_ms} * 1'000'000ull;
  s.syn_reuse_idle_ns = t.syn_reuse_idle_s * kNsPerS;
  const IcmpTooBigLimit icmp = IcmpTooBigLimitOf(g);
  s.icmp_too_big_per_s = icmp.per_s;
  s.icmp_too_big_burst = icmp.burst;
  s.gue_port = GuePortOf(g);
  s.adopted_bounce_ms = t.adopted_bounce_ms;
  return s;
}

uint64_t ToMonotonicNs(int64_t deadline_unix_ms, int64_t now_unix_ms, uint64_t now_mono_ns) {
  const int64_t delta_ms = deadline_unix_ms - now_unix_ms;
  const int64_t mono = static_cast<int64_t>(now_mono_ns) + delta_ms * 1'000'000;
  return mono > 0 ? static_cast<uint64_t>(mono) : 1;  // 0 would mean "no deadline"
}

namespace {

using OverrideIndex = std::map<std::string, const v1::BackendOverride*>;

// Sets vi->history from `state`'s table history of `vip` and
// vi->history_hash. `table`: the VIP's current table when at hand (else it
// is built again when the history needs it); `prev`: the VIP's previous
// image, whose hash is reused when its table and versions are the same.
// The slot history goes to out->histories when `keep`.
absl::Status AttachHistory(const v1::State& state, const v1::Vip& vip,
                           const std::vector<uint32_t>* table, const VipImage* prev, bool keep,
                           VipImage* vi, BuiltImage* out) {
  vi->history.clear();
  if (const v1::TableHistory* h = FindTableHistory(state, vip.key())) {
    std::map<std::string, uint32_t> ids;
    for (const maglev::Backend& b : vi->inputs) ids[b.key] = b.id;
    vi->history = HistoryInputs(*h, vi->table_size, ids);
  }
  const auto same_versions = [&](const VipImage& p) {
    if (p.history.size() != vi->history.size()) return false;
    for (size_t i = 0; i < p.history.size(); ++i) {
      const auto& x = p.history[i];
      const auto& y = vi->history[i];
      if (x.size() != y.size()) return false;
      for (size_t j = 0; j < x.size(); ++j) {
        if (x[j].id != y[j].id || x[j].key != y[j].key || x[j].weight != y[j].weight) return false;
      }
    }
    return true;
  };
  if (prev != nullptr && prev->table_hash == vi->table_hash && same_versions(*prev)) {
    vi->history_hash = prev->history_hash;
    return absl::OkStatus();
  }
  std::vector<uint64_t> slots;
  if (!vi->history.empty()) {
    auto built = table != nullptr ? BuildSlotHistoryOf(*vi, *table) : BuildHistoryOf(*vi);
    if (!built.ok()) return built.status();
    slots = std::move(*built);
  }
  vi->history_hash = SlotHistoryHash(slots);
  if (keep) out->histories[vi->vip_id] = std::move(slots);
  return absl::OkStatus();
}

// Adds `vip` (its VipImage and its backends) to out->image; builds its table
// unless `prev` (the previous image of the same vip_id) has the same inputs.
absl::Status AddVip(const v1::State& state, const v1::Vip& vip, const OverrideIndex& overrides,
                    const VipImage* prev, bool keep_tables, BuiltImage* out) {
  Image& img = out->image;
  auto key = ToDataplaneKey(vip.key());
  if (!key.ok()) return key.status();
  VipImage vi;
  vi.key = *key;
  vi.vip_id = VipIdOf(state, vip.key());
  if (vi.vip_id == 0) {
    return absl::InternalError(absl::StrCat("no vip id for ", VipKeyText(vip.key())));
  }
  vi.table_size = EffectiveTableSize(vip);
  vi.active_standby = vip.ownership() == v1::ACTIVE_STANDBY;
  vi.gue = vip.mode() == v1::GUE;
  vi.quic = QuicImageOf(state, vip.key());
  const std::string prefix = absl::StrCat("backend ", VipKeyText(vip.key()), " ");
  for (const v1::Backend& b : vip.backends()) {
    const std::string addr_text = CanonicalAddress(b.address());
    const std::string bkey = prefix + addr_text;
    const auto id_it = state.ids().find(bkey);
    if (id_it == state.ids().end()) {
      return absl::InternalError(absl::StrCat("no backend id for ", bkey));
    }
    const uint32_t id = id_it->second;
    auto it = overrides.find(bkey);
    const BackendView view = ViewFromOverride(it == overrides.end() ? nullptr : it->second, b);
    auto addr = IpAddress::Parse(addr_text);
    if (!addr.ok()) return addr.status();
    BackendImage bi;
    bi.addr = *addr;
    switch (view.mode) {
      case BackendMode::kActive:
        bi.state = BALLAST_BACKEND_ACTIVE;
        break;
      case BackendMode::kDraining:
        bi.state = BALLAST_BACKEND_DRAINING;
        bi.drain_deadline_unix_ms = view.drain_deadline_unix_ms;
        break;
      case BackendMode::kEvicted:
      case BackendMode::kPinned:
        bi.state = BALLAST_BACKEND_EVICTED;
        break;
    }
    img.backends[id] = bi;
    vi.inputs.push_back(maglev::Backend{id, addr_text, view.effective_weight});
  }
  std::sort(vi.inputs.begin(), vi.inputs.end(),
            [](const maglev::Backend& a, const maglev::Backend& b) { return a.key < b.key; });
  const auto same_inputs = [&](const VipImage& p) {
    if (p.table_size != vi.table_size || p.inputs.size() != vi.inputs.size()) return false;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const auto& x = p.inputs[i];
      const auto& y = vi.inputs[i];
      if (x.id != y.id || x.key != y.key || x.weight != y.weight) return false;
    }
    return true;
  };
  if (prev != nullptr && prev->table_hash != 0 && same_inputs(*prev)) {
    vi.table_hash = prev->table_hash;
    vi.slots = prev->slots;
    if (auto s = AttachHistory(state, vip, nullptr, prev, keep_tables, &vi, out); !s.ok()) {
      return s;
    }
  } else {
    auto table = BuildTableOf(vi);
    if (!table.ok()) return table.status();
    vi.table_hash = TableHash(*table);
    for (uint32_t id : *table) {
      if (id != BALLAST_INVALID_ID) ++vi.slots[id];
    }
    if (auto s = AttachHistory(state, vip, &*table, prev, keep_tables, &vi, out); !s.ok()) {
      return s;
    }
    if (keep_tables) out->tables[vi.vip_id] = std::move(*table);
  }
  const dataplane::VipKey k = vi.key;
  img.vips[k] = std::move(vi);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<uint32_t>> BuildTableOf(const VipImage& vip) {
  auto table = maglev::BuildTable(vip.inputs, vip.table_size);
  if (!table.ok()) {
    return absl::Status(table.status().code(), absl::StrCat("building the Maglev table of vip ",
                                                            dataplane::VipKeyString(vip.key), ": ",
                                                            table.status().message()));
  }
  return table;
}

absl::StatusOr<std::vector<uint64_t>> BuildHistoryOf(const VipImage& vip) {
  if (vip.history.empty()) return std::vector<uint64_t>{};
  auto table = BuildTableOf(vip);
  if (!table.ok()) return table.status();
  return BuildSlotHistoryOf(vip, *table);
}

absl::Status RefreshHistories(const v1::State& state, const std::set<dataplane::VipKey>& keys,
                              BuiltImage* built) {
  for (const v1::Vip& vip : state.config().vips()) {
    auto key = ToDataplaneKey(vip.key());
    if (!key.ok() || keys.count(*key) == 0) continue;
    auto it = built->image.vips.find(*key);
    if (it == built->image.vips.end()) continue;
    VipImage& vi = it->second;
    auto t = built->tables.find(vi.vip_id);
    const std::vector<uint32_t>* table = t == built->tables.end() ? nullptr : &t->second;
    if (auto s = AttachHistory(state, vip, table, nullptr, /*keep=*/true, &vi, built); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<BuiltImage> BuildImage(const v1::State& state, const Image* previous,
                                      const std::set<dataplane::VipKey>* only_vips,
                                      bool keep_tables) {
  BuiltImage out;
  Image& img = out.image;
  OverrideIndex overrides;
  for (const v1::BackendOverride& o : state.overrides()) {
    overrides[BackendIdKey(o.vip(), o.address())] = &o;
  }
  std::map<uint32_t, const VipImage*> prev_by_id;
  if (previous != nullptr) {
    for (const auto& [k, v] : previous->vips) prev_by_id[v.vip_id] = &v;
  }
  const auto prev_of = [&](const v1::Vip& vip) -> const VipImage* {
    auto it = prev_by_id.find(VipIdOf(state, vip.key()));
    return it == prev_by_id.end() ? nullptr : it->second;
  };

  if (only_vips != nullptr) {
    // A delta: only the named VIPs and their backends.
    for (const v1::Vip& vip : state.config().vips()) {
      auto key = ToDataplaneKey(vip.key());
      if (!key.ok()) return key.status();
      if (only_vips->count(*key) == 0) continue;
      if (auto s = AddVip(state, vip, overrides, prev_of(vip), keep_tables, &out); !s.ok()) {
        return s;
      }
    }
  } else {
    for (const v1::Vip& vip : state.config().vips()) {
      if (auto s = AddVip(state, vip, overrides, prev_of(vip), keep_tables, &out); !s.ok()) {
        return s;
      }
    }
  }
  img.settings = SettingsOf(state.config().global());
  img.settings.flow_hash_seed = DataplaneSeedOf(state.flow_hash_seed());
  img.interface = state.config().global().interface();
  img.extra_interfaces = {state.config().global().extra_interfaces().begin(),
                          state.config().global().extra_interfaces().end()};
  for (const auto& [k, v] : img.vips) img.vip_addresses.insert(v.key.addr);
  return out;
}

void ApplyDelta(const Image& delta, const std::set<dataplane::VipKey>& scope, Image* image) {
  for (const dataplane::VipKey& k : scope) {
    auto it = image->vips.find(k);
    if (it == image->vips.end()) continue;
    for (const maglev::Backend& b : it->second.inputs) image->backends.erase(b.id);
    image->vips.erase(it);
  }
  for (const auto& [k, v] : delta.vips) image->vips[k] = v;
  for (const auto& [id, b] : delta.backends) image->backends[id] = b;
  image->settings = delta.settings;
  image->interface = delta.interface;
  image->extra_interfaces = delta.extra_interfaces;
  image->vip_addresses.clear();
  for (const auto& [k, v] : image->vips) image->vip_addresses.insert(v.key.addr);
}

std::string DescribeImage(const Image& img) {
  std::string out;
  const dataplane::Settings& s = img.settings;
  absl::StrAppend(&out, "settings src4=", s.src4.ToString(),
                  s.src4_prefix ? absl::StrCat(" src4_prefix=", s.src4_prefix->ToString()) : "",
                  " src6=", s.src6.ToString(), " policy=", s.policy, " tcp_idle_ns=", s.tcp_idle_ns,
                  " udp_idle_ns=", s.udp_idle_ns, " linger_ns=", s.linger_ns,
                  " syn_idle_ns=", s.syn_idle_ns, " syn_retry_ns=", s.syn_retry_ns,
                  " syn_reuse_idle_ns=", s.syn_reuse_idle_ns, " fib_ttl_ns=", s.fib_ttl_ns,
                  " icmp_too_big_per_s=", s.icmp_too_big_per_s,
                  " icmp_too_big_burst=", s.icmp_too_big_burst,
                  " adopted_bounce_ms=", s.adopted_bounce_ms, " gue_port=", s.gue_port, "\n");
  for (const auto& [k, v] : img.vips) {
    absl::StrAppend(&out, "vip ", dataplane::VipKeyString(k), " id=", v.vip_id,
                    " table_size=", v.table_size, v.gue ? " gue" : "",
                    v.history_hash != 0 ? " history" : "", " slots=");
    for (const auto& [id, n] : v.slots) absl::StrAppend(&out, id, ":", n, ",");
    absl::StrAppend(&out, "\n");
    // Never the keys (an image is logged): whether there is one.
    for (const dataplane::QuicConfig& c : v.quic.configs) {
      absl::StrAppend(&out, "  quic config_id=", c.config_id, " server_id_len=", c.sid_len,
                      " nonce_len=", c.nonce_len, c.key ? " encrypted" : " plaintext", "\n");
    }
    for (const dataplane::QuicServer& q : v.quic.servers) {
      absl::StrAppend(&out, "  quic server config_id=", q.config_id, " sid=",
                      absl::BytesToHexString(absl::string_view(
                          reinterpret_cast<const char*>(q.sid.data()), q.sid.size())),
                      " backend=", q.backend_id, "\n");
    }
  }
  for (const auto& [id, b] : img.backends) {
    absl::StrAppend(&out, "backend ", id, " ", b.addr.ToString(),
                    " state=", static_cast<int>(b.state), " deadline_ms=", b.drain_deadline_unix_ms,
                    "\n");
  }
  for (const IpAddress& a : img.vip_addresses) absl::StrAppend(&out, "marker ", a.ToString(), "\n");
  return out;
}

absl::StatusOr<Image> ReadImage(const dataplane::DataplanePort& dp, int64_t now_unix_ms,
                                uint64_t now_mono_ns) {
  Image img;
  auto settings = dp.GetSettings();
  if (!settings.ok()) return settings.status();
  img.settings = *settings;
  auto vips = dp.Vips();
  if (!vips.ok()) return vips.status();
  for (const dataplane::VipEntry& e : *vips) {
    VipImage vi;
    vi.key = e.key;
    vi.vip_id = e.meta.vip_id;
    vi.gue = (e.meta.flags & BALLAST_VIP_F_GUE) != 0;
    auto table = dp.GetTable(e.meta.vip_id);
    if (table.ok()) {
      vi.table_size = static_cast<uint32_t>(table->size());
      vi.table_hash = TableHash(*table);
      for (uint32_t id : *table) {
        if (id != BALLAST_INVALID_ID) ++vi.slots[id];
      }
    } else if (table.status().code() != absl::StatusCode::kNotFound) {
      return table.status();
    }
    auto quic_configs = dp.GetQuicConfigs(e.meta.vip_id);
    if (!quic_configs.ok()) return quic_configs.status();
    auto quic_servers = dp.GetQuicServers(e.meta.vip_id);
    if (!quic_servers.ok()) return quic_servers.status();
    vi.quic = {std::move(*quic_configs), std::move(*quic_servers)};
    std::sort(vi.quic.configs.begin(), vi.quic.configs.end(),
              [](const auto& a, const auto& b) { return a.config_id < b.config_id; });
    std::sort(vi.quic.servers.begin(), vi.quic.servers.end(), [](const auto& a, const auto& b) {
      return std::tie(a.config_id, a.sid) < std::tie(b.config_id, b.sid);
    });
    auto history = dp.GetHistory(e.meta.vip_id);
    if (history.ok()) {
      vi.history_hash = SlotHistoryHash(*history);
    } else if (history.status().code() != absl::StatusCode::kNotFound) {
      return history.status();
    }
    img.vips[e.key] = std::move(vi);
  }
  // Address markers (Vips() leaves them out).
  auto markers = dp.VipAddressMarkers();
  if (!markers.ok()) return markers.status();
  img.vip_addresses.insert(markers->begin(), markers->end());
  auto backends = dp.Backends();
  if (!backends.ok()) return backends.status();
  for (const dataplane::BackendEntry& b : *backends) {
    BackendImage bi;
    bi.addr = b.addr;
    bi.state = b.state;
    if (b.state == BALLAST_BACKEND_DRAINING && b.drain_deadline_ns != 0) {
      const int64_t delta_ns =
          static_cast<int64_t>(b.drain_deadline_ns) - static_cast<int64_t>(now_mono_ns);
      bi.drain_deadline_unix_ms = now_unix_ms + delta_ns / 1'000'000;
    }
    img.backends[b.id] = bi;
  }
  return img;
}

}  // namespace ballast::core
