#include "agent/core/quic_ids.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <map>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "agent/core/ids.h"
#include "agent/core/names.h"
#include "agent/dataplane/bpf_util.h"

namespace ballast::core {
namespace {

constexpr int64_t kMinQuicGraceMs = 600'000;

bool SameShape(const v1::QuicLbConfig& c, const v1::QuicLb& shape) {
  return c.server_id_len() == shape.server_id_len() && c.nonce_len() == shape.nonce_len() &&
         c.key().empty() != shape.encrypted();
}

// The largest server ID `len` octets hold.
uint64_t MaxServerId(uint32_t len) {
  return len >= 8 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << (8 * len)) - 1;
}

// The largest server ID every configuration of `q` holds (and `extra_len`, 0 = none).
uint64_t ServerIdCap(const v1::QuicVipState& q, uint32_t extra_len) {
  uint64_t cap = extra_len == 0 ? std::numeric_limits<uint64_t>::max() : MaxServerId(extra_len);
  for (const v1::QuicLbConfig& c : q.configs()) cap = std::min(cap, MaxServerId(c.server_id_len()));
  return cap;
}

// FailedPrecondition unless every backend's server ID fits in `len` octets.
absl::Status CheckIdsFit(const v1::QuicVipState& q, uint32_t len) {
  for (const v1::QuicServerId& s : q.servers()) {
    if (s.server_id() > MaxServerId(len)) {
      return absl::FailedPreconditionError(
          absl::StrCat("vip ", VipKeyText(q.vip()), ": quic_lb.server_id_len ", len,
                       " cannot hold server ID ", s.server_id(), " of backend ", s.address()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::QuicLbConfig> NewConfig(uint32_t config_id, const v1::QuicLb& shape,
                                           int64_t now_ms, const QuicKeySource& draw) {
  v1::QuicLbConfig c;
  c.set_config_id(config_id);
  c.set_server_id_len(shape.server_id_len());
  c.set_nonce_len(shape.nonce_len());
  c.set_started_unix_ms(now_ms);
  if (shape.encrypted()) {
    auto key = draw ? draw() : RandomQuicKey();
    if (!key.ok()) return key.status();
    c.set_key(std::string(key->begin(), key->end()));
  }
  return c;
}

// Gives each backend of `vip` a server ID, retires those of backends that
// left, forgets retired IDs past the grace.
absl::Status AssignServers(v1::QuicVipState* q, const v1::Vip& vip, int64_t now_ms,
                           int64_t grace_ms) {
  std::vector<std::string> want;
  for (const v1::Backend& b : vip.backends()) want.push_back(CanonicalAddress(b.address()));
  const auto wanted = [&](const std::string& a) {
    return std::find(want.begin(), want.end(), a) != want.end();
  };
  std::map<std::string, uint64_t> live;
  for (const v1::QuicServerId& s : q->servers()) {
    if (wanted(s.address())) {
      live[s.address()] = s.server_id();
    } else {
      v1::QuicServerId* r = q->add_retired();
      r->set_address(s.address());
      r->set_server_id(s.server_id());
      r->set_retired_unix_ms(now_ms);
    }
  }
  std::set<uint64_t> used;
  for (const auto& [a, id] : live) used.insert(id);
  std::vector<v1::QuicServerId> kept_retired;
  for (const v1::QuicServerId& r : q->retired()) {
    if (r.retired_unix_ms() + grace_ms <= now_ms) continue;  // past the grace: free again
    kept_retired.push_back(r);
    used.insert(r.server_id());
  }
  const uint64_t cap = ServerIdCap(*q, 0);
  uint64_t cursor = q->next_server_id();
  if (cursor < 1 || cursor > cap) cursor = 1;
  q->clear_servers();
  for (const std::string& a : want) {
    uint64_t id = 0;
    if (auto it = live.find(a); it != live.end()) {
      id = it->second;
    } else if (auto r = std::find_if(kept_retired.begin(), kept_retired.end(),
                                     [&](const v1::QuicServerId& x) { return x.address() == a; });
               r != kept_retired.end() && r->server_id() <= cap) {
      id = r->server_id();  // the same backend back within the grace: its own ID
      kept_retired.erase(r);
    } else {
      uint64_t c = cursor;
      for (size_t n = 0; n <= used.size() && n < cap; ++n) {
        if (used.count(c) == 0) {
          id = c;
          break;
        }
        c = c >= cap ? 1 : c + 1;
      }
      if (id == 0) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "vip ", VipKeyText(q->vip()), ": no free QUIC server ID for backend ", a, " (", cap,
            " IDs of quic_lb.server_id_len, in use or retired within the last ", grace_ms / 1000,
            " s)"));
      }
      used.insert(id);
      cursor = id >= cap ? 1 : id + 1;
    }
    v1::QuicServerId* s = q->add_servers();
    s->set_address(a);
    s->set_server_id(id);
  }
  q->clear_retired();
  for (v1::QuicServerId& r : kept_retired) *q->add_retired() = std::move(r);
  q->set_next_server_id(cursor);
  return absl::OkStatus();
}

const v1::QuicServerId* FindServer(const v1::QuicVipState& q, const std::string& address) {
  const std::string want = CanonicalAddress(address);
  for (const v1::QuicServerId& s : q.servers()) {
    if (s.address() == want) return &s;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<dataplane::QuicKey> RandomQuicKey() {
  dataplane::QuicKey key;
  if (getrandom(key.data(), key.size(), 0) != static_cast<ssize_t>(key.size())) {
    return dataplane::ErrnoStatus(errno, "drawing a QUIC-LB key (getrandom)");
  }
  return key;
}

absl::Status ValidateQuicLb(const v1::Vip& vip, const FieldPath& at) {
  if (!vip.has_quic_lb()) return absl::OkStatus();
  const FieldPath q = at.Child("quic_lb");
  if (vip.key().protocol() != v1::UDP) {
    return q.Invalid("is for UDP VIPs only (QUIC runs over UDP)");
  }
  const v1::QuicLb& lb = vip.quic_lb();
  if (auto p = dataplane::QuicShapeProblemOf(lb.server_id_len(), lb.nonce_len(), lb.encrypted())) {
    // The config names the key's presence `encrypted`.
    const std::string_view field = p->field == "key" ? "encrypted" : p->field;
    return q.Child(absl::string_view(field.data(), field.size())).Invalid(p->problem);
  }
  return absl::OkStatus();
}

int64_t QuicIdGraceMs(const v1::Global& global) {
  return std::max<int64_t>(kMinQuicGraceMs, int64_t{DrainTimeoutOf(global)} * 1000);
}

const v1::QuicVipState* FindQuicState(const v1::State& state, const dataplane::VipKey& vip) {
  for (const v1::QuicVipState& q : state.quic()) {
    if (SameVip(q.vip(), vip)) return &q;
  }
  return nullptr;
}

absl::Status RotateQuic(v1::QuicVipState* q, const v1::QuicLb& shape, int64_t now_ms,
                        const QuicKeySource& draw) {
  if (q->configs_size() >= 2) {
    return absl::FailedPreconditionError(
        absl::StrCat("vip ", VipKeyText(q->vip()), ": quic_lb: config_id ",
                     q->configs(1).config_id(), " is still live beside ", q->configs(0).config_id(),
                     " (two at most): retire it first (lbctl vip quic-retire)"));
  }
  if (auto s = CheckIdsFit(*q, shape.server_id_len()); !s.ok()) return s;
  const uint32_t id =
      q->configs_size() == 0 ? 0 : (q->configs(0).config_id() + 1) % BALLAST_QUIC_CR_UNROUTABLE;
  auto c = NewConfig(id, shape, now_ms, draw);
  if (!c.ok()) return c.status();
  *q->add_configs() = std::move(*c);
  // The new one first.
  auto* configs = q->mutable_configs();
  for (int i = configs->size() - 1; i > 0; --i) configs->SwapElements(i, i - 1);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> RetireQuicPrevious(v1::QuicVipState* q) {
  if (q->configs_size() < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "vip ", VipKeyText(q->vip()), ": no previous QUIC-LB configuration to retire (config_id ",
        q->configs_size() == 0 ? 0 : q->configs(0).config_id(), " is the only one)"));
  }
  const uint32_t id = q->configs(1).config_id();
  q->mutable_configs()->RemoveLast();
  return id;
}

absl::Status UpdateQuicState(v1::State* state, const std::set<dataplane::VipKey>* only,
                             int64_t now_ms, const QuicKeySource& draw) {
  const int64_t grace_ms = QuicIdGraceMs(state->config().global());
  std::set<dataplane::VipKey> quic_vips;
  for (const v1::Vip& vip : state->config().vips()) {
    auto key = ToDataplaneKey(vip.key());
    if (!key.ok()) return key.status();
    if (vip.has_quic_lb()) quic_vips.insert(*key);
    if (!vip.has_quic_lb() || (only != nullptr && only->count(*key) == 0)) continue;
    v1::QuicVipState* q = nullptr;
    for (v1::QuicVipState& s : *state->mutable_quic()) {
      if (SameVip(s.vip(), *key)) q = &s;
    }
    if (q == nullptr) {
      q = state->add_quic();
      *q->mutable_vip() = CanonicalVipKey(vip.key());
      q->set_next_server_id(1);
    }
    if (q->configs_size() == 0 || !SameShape(q->configs(0), vip.quic_lb())) {
      if (auto s = RotateQuic(q, vip.quic_lb(), now_ms, draw); !s.ok()) return s;
    }
    if (auto s = AssignServers(q, vip, now_ms, grace_ms); !s.ok()) return s;
  }
  auto* all = state->mutable_quic();
  for (int i = all->size() - 1; i >= 0; --i) {
    auto key = ToDataplaneKey(all->Get(i).vip());
    if (!key.ok()) return key.status();
    if (quic_vips.count(*key) != 0 || (only != nullptr && only->count(*key) == 0)) continue;
    all->DeleteSubrange(i, 1);
  }
  return absl::OkStatus();
}

std::vector<uint8_t> ServerIdBytes(uint64_t id, uint32_t len) {
  std::vector<uint8_t> out(len, 0);
  for (uint32_t i = 0; i < len && i < 8; ++i) {
    out[len - 1 - i] = static_cast<uint8_t>(id >> (8 * i));
  }
  return out;
}

std::string ServerIdHex(uint64_t id, uint32_t len) {
  const auto bytes = ServerIdBytes(id, len);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

QuicImage QuicImageOf(const v1::State& state, const v1::VipKey& vip) {
  QuicImage img;
  auto key = ToDataplaneKey(vip);
  if (!key.ok()) return img;
  const v1::QuicVipState* q = FindQuicState(state, *key);
  if (q == nullptr) return img;
  for (const v1::QuicLbConfig& c : q->configs()) {
    dataplane::QuicConfig d{.config_id = static_cast<uint8_t>(c.config_id()),
                            .sid_len = static_cast<uint8_t>(c.server_id_len()),
                            .nonce_len = static_cast<uint8_t>(c.nonce_len())};
    if (c.key().size() == 16) {
      dataplane::QuicKey k;
      std::copy(c.key().begin(), c.key().end(), k.begin());
      d.key = k;
    }
    img.configs.push_back(d);
    for (const v1::QuicServerId& s : q->servers()) {
      const uint32_t backend = BackendIdOf(state, q->vip(), s.address());
      if (backend == 0) continue;
      img.servers.push_back({.config_id = d.config_id,
                             .sid = ServerIdBytes(s.server_id(), c.server_id_len()),
                             .backend_id = backend});
    }
  }
  std::sort(img.configs.begin(), img.configs.end(),
            [](const auto& a, const auto& b) { return a.config_id < b.config_id; });
  std::sort(img.servers.begin(), img.servers.end(), [](const auto& a, const auto& b) {
    return std::tie(a.config_id, a.sid) < std::tie(b.config_id, b.sid);
  });
  return img;
}

void FillQuicStatus(const v1::QuicVipState& q, v1::VipStatus* out) {
  for (const v1::QuicLbConfig& c : q.configs()) {
    v1::QuicConfigStatus* s = out->add_quic();
    s->set_config_id(c.config_id());
    s->set_server_id_len(c.server_id_len());
    s->set_nonce_len(c.nonce_len());
    s->set_encrypted(!c.key().empty());
    s->set_started_unix_ms(c.started_unix_ms());
  }
}

std::string QuicServerIdText(const v1::QuicVipState& q, const std::string& address) {
  const v1::QuicServerId* s = FindServer(q, address);
  if (s == nullptr || q.configs_size() == 0) return "";
  return ServerIdHex(s->server_id(), q.configs(0).server_id_len());
}

absl::StatusOr<v1::ExportQuicConfigResponse> ExportQuicConfigOf(const v1::State& state,
                                                                const v1::VipKey& vip,
                                                                const std::string& address) {
  auto key = ToDataplaneKey(vip);
  if (!key.ok()) return key.status();
  const v1::QuicVipState* q = FindQuicState(state, *key);
  if (q == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("vip ", VipKeyText(vip), " is not a QUIC VIP (no quic_lb section)"));
  }
  const v1::QuicServerId* s = FindServer(*q, address);
  if (s == nullptr) {
    return absl::NotFoundError(absl::StrCat("vip ", VipKeyText(vip), " has no backend ", address));
  }
  v1::ExportQuicConfigResponse out;
  for (int i = 0; i < q->configs_size(); ++i) {
    const v1::QuicLbConfig& c = q->configs(i);
    v1::QuicServerConfig* e = out.add_configs();
    e->set_config_id(c.config_id());
    e->set_server_id_len(c.server_id_len());
    e->set_nonce_len(c.nonce_len());
    const std::vector<uint8_t> sid = ServerIdBytes(s->server_id(), c.server_id_len());
    e->set_server_id(std::string(sid.begin(), sid.end()));
    e->set_key(c.key());
    e->set_current(i == 0);
  }
  return out;
}

absl::Status ValidateQuicState(const v1::State& state) {
  std::set<std::string> seen_vips;
  for (int i = 0; i < state.quic_size(); ++i) {
    const v1::QuicVipState& q = state.quic(i);
    const FieldPath at = FieldPath::Index(absl::StrCat("quic[", i, "]"));
    auto key = ToDataplaneKey(q.vip());
    if (!key.ok()) return at.Child("vip").Invalid(key.status().message());
    const int vi = [&] {
      for (int j = 0; j < state.config().vips_size(); ++j) {
        if (SameVip(state.config().vips(j).key(), *key)) return j;
      }
      return -1;
    }();
    if (vi < 0 || !state.config().vips(vi).has_quic_lb()) {
      return at.Child("vip").Invalid(
          absl::StrCat(VipKeyText(q.vip()), " is not a configured QUIC VIP"));
    }
    if (!seen_vips.insert(VipKeyText(q.vip())).second) {
      return at.Child("vip").Invalid(absl::StrCat(VipKeyText(q.vip()), " given twice"));
    }
    if (q.configs_size() < 1 || q.configs_size() > 2) {
      return at.Child("configs").Invalid(
          absl::StrCat(q.configs_size(), " configurations; 1 or 2 are live"));
    }
    std::vector<dataplane::QuicConfig> configs;
    for (int c = 0; c < q.configs_size(); ++c) {
      const v1::QuicLbConfig& k = q.configs(c);
      const FieldPath cat = at.Child(absl::StrCat("configs[", c, "]"));
      if (!k.key().empty() && k.key().size() != 16) {
        return cat.Child("key").Invalid(absl::StrCat("has ", k.key().size(), " octets, not 16"));
      }
      dataplane::QuicConfig d{.config_id = static_cast<uint8_t>(std::min(k.config_id(), 255u)),
                              .sid_len = static_cast<uint8_t>(std::min(k.server_id_len(), 255u)),
                              .nonce_len = static_cast<uint8_t>(std::min(k.nonce_len(), 255u))};
      if (!k.key().empty()) d.key = dataplane::QuicKey{};
      configs.push_back(d);
    }
    if (auto s = dataplane::CheckQuicConfigs(configs); !s.ok()) {
      return at.Child("configs").Invalid(s.message());
    }
    std::set<uint64_t> ids;
    std::set<std::string> backends;
    for (const v1::Backend& b : state.config().vips(vi).backends()) {
      backends.insert(CanonicalAddress(b.address()));
    }
    const uint64_t cap = ServerIdCap(q, 0);
    for (const auto* list : {&q.servers(), &q.retired()}) {
      for (const v1::QuicServerId& s : *list) {
        // A retired ID may be of a longer, retired configuration.
        if (s.server_id() < 1 || (list == &q.servers() && s.server_id() > cap)) {
          return at.Invalid(absl::StrCat("server ID ", s.server_id(), " of ", s.address(),
                                         " is out of range 1..", cap));
        }
        if (!ids.insert(s.server_id()).second) {
          return at.Invalid(absl::StrCat("server ID ", s.server_id(), " is given twice"));
        }
        if (list == &q.servers() && backends.count(s.address()) == 0) {
          return at.Child("servers").Invalid(
              absl::StrCat(s.address(), " is not a backend of ", VipKeyText(q.vip())));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace ballast::core
