#include "agent/core/table_history.h"

#include <algorithm>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "agent/core/names.h"
#include "ballast_abi.h"

namespace ballast::core {

namespace {

bool SameInputs(const std::vector<maglev::Backend>& a, const std::vector<maglev::Backend>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key || a[i].weight != b[i].weight) return false;
  }
  return true;
}

v1::TableVersion VersionOf(const VipImage& vip, int64_t now_unix_ms) {
  v1::TableVersion v;
  v.set_table_size(vip.table_size);
  v.set_replaced_unix_ms(now_unix_ms);
  for (const maglev::Backend& b : vip.inputs) {  // sorted by key
    v1::WeightedBackend* w = v.add_backends();
    w->set_address(b.key);
    w->set_weight(b.weight);
  }
  return v;
}

v1::TableHistory* MutableHistory(v1::State* state, const v1::VipKey& key) {
  const std::string want = VipKeyText(key);
  for (v1::TableHistory& h : *state->mutable_table_history()) {
    if (VipKeyText(h.vip()) == want) return &h;
  }
  v1::TableHistory* h = state->add_table_history();
  *h->mutable_vip() = key;
  return h;
}

// The newest kTableVersions versions, and for each backend of `draining`
// the newest version in which it had weight; in order, most recent first.
void Prune(const std::set<std::string>& draining, v1::TableHistory* h) {
  std::set<std::string> covered;
  auto* versions = h->mutable_versions();
  std::vector<bool> keep(versions->size(), false);
  for (int i = 0; i < versions->size(); ++i) {
    const v1::TableVersion& v = versions->Get(i);
    if (static_cast<size_t>(i) < kTableVersions) keep[i] = true;
    for (const v1::WeightedBackend& b : v.backends()) {
      if (b.weight() == 0 || draining.count(b.address()) == 0) continue;
      if (covered.insert(b.address()).second) keep[i] = true;
    }
  }
  for (int i = versions->size() - 1; i >= 0; --i) {
    if (!keep[i]) versions->DeleteSubrange(i, 1);
  }
}

}  // namespace

const v1::TableHistory* FindTableHistory(const v1::State& state, const v1::VipKey& key) {
  if (state.table_history().empty()) return nullptr;
  const std::string want = VipKeyText(key);
  for (const v1::TableHistory& h : state.table_history()) {
    if (VipKeyText(h.vip()) == want) return &h;
  }
  return nullptr;
}

std::set<dataplane::VipKey> RecordTableChanges(const Image& before, const Image& after,
                                               const std::set<dataplane::VipKey>* scope,
                                               int64_t now_unix_ms, v1::State* next) {
  std::set<dataplane::VipKey> changed;
  // The VIPs `next` has, by data-plane key.
  std::map<dataplane::VipKey, const v1::Vip*> vips;
  for (const v1::Vip& vip : next->config().vips()) {
    if (auto k = ToDataplaneKey(vip.key()); k.ok()) vips[*k] = &vip;
  }
  // History of VIPs that are gone.
  auto* all = next->mutable_table_history();
  for (int i = all->size() - 1; i >= 0; --i) {
    auto k = ToDataplaneKey(all->Get(i).vip());
    if (k.ok() && vips.count(*k) != 0) continue;
    if (k.ok()) changed.insert(*k);
    all->DeleteSubrange(i, 1);
  }
  for (const auto& [key, now] : after.vips) {
    if (scope != nullptr && scope->count(key) == 0) continue;
    auto vit = vips.find(key);
    if (vit == vips.end()) continue;
    auto it = before.vips.find(key);
    if (it == before.vips.end() || it->second.vip_id != now.vip_id) continue;  // a new VIP
    const VipImage& was = it->second;
    if (was.table_size == now.table_size && SameInputs(was.inputs, now.inputs)) continue;
    v1::TableHistory* h = MutableHistory(next, vit->second->key());
    if (was.table_size != now.table_size) {
      h->clear_versions();  // slots of another size do not correspond
    } else {
      *h->add_versions() = VersionOf(was, now_unix_ms);
      // newest first
      auto* versions = h->mutable_versions();
      for (int i = versions->size() - 1; i > 0; --i) versions->SwapElements(i, i - 1);
      std::set<std::string> draining;
      for (const maglev::Backend& b : now.inputs) {
        auto bit = after.backends.find(b.id);
        if (bit != after.backends.end() && bit->second.state == BALLAST_BACKEND_DRAINING) {
          draining.insert(b.key);
        }
      }
      Prune(draining, h);
    }
    if (h->versions().empty()) {
      for (int i = all->size() - 1; i >= 0; --i) {
        if (&all->Get(i) == h) all->DeleteSubrange(i, 1);
      }
    }
    changed.insert(key);
  }
  return changed;
}

std::vector<std::vector<maglev::Backend>> HistoryInputs(
    const v1::TableHistory& history, uint32_t table_size,
    const std::map<std::string, uint32_t>& ids_by_address) {
  std::vector<std::vector<maglev::Backend>> out;
  for (const v1::TableVersion& v : history.versions()) {
    if (v.table_size() != table_size) continue;
    std::vector<maglev::Backend> in;
    for (const v1::WeightedBackend& b : v.backends()) {
      auto it = ids_by_address.find(b.address());
      in.push_back(maglev::Backend{it != ids_by_address.end() ? it->second : BALLAST_INVALID_ID,
                                   b.address(), b.weight()});
    }
    out.push_back(std::move(in));
  }
  return out;
}

std::vector<uint64_t> SlotHistory(std::span<const uint32_t> current,
                                  std::span<const std::vector<uint32_t>> previous) {
  std::vector<uint64_t> out(current.size(), 0);
  for (size_t s = 0; s < current.size(); ++s) {
    uint32_t chain[BALLAST_HISTORY_DEPTH] = {};
    int n = 0;
    for (const std::vector<uint32_t>& t : previous) {
      if (n == BALLAST_HISTORY_DEPTH) break;
      if (s >= t.size()) continue;
      const uint32_t b = t[s];
      if (b == BALLAST_INVALID_ID || b > BALLAST_HISTORY_ID_MASK || b == current[s]) continue;
      if (std::find(chain, chain + n, b) != chain + n) continue;
      chain[n++] = b;
    }
    uint64_t word = 0;
    for (int i = 0; i < n; ++i) word |= uint64_t{chain[i]} << (i * BALLAST_HISTORY_ID_BITS);
    out[s] = word;
  }
  return out;
}

absl::StatusOr<std::vector<uint64_t>> BuildSlotHistoryOf(const VipImage& vip,
                                                         std::span<const uint32_t> table) {
  if (vip.history.empty()) return std::vector<uint64_t>{};
  std::vector<std::vector<uint32_t>> previous;
  for (const std::vector<maglev::Backend>& version : vip.history) {
    // Built with ids 1..n (a backend that is gone has no id of its own);
    // the slots are then named by the backends' ids now, 0 for one gone.
    std::vector<maglev::Backend> in = version;
    for (size_t i = 0; i < in.size(); ++i) in[i].id = static_cast<uint32_t>(i + 1);
    auto t = maglev::BuildTable(in, vip.table_size);
    if (!t.ok()) {
      return absl::Status(
          t.status().code(),
          absl::StrCat("building an earlier Maglev table of vip ", dataplane::VipKeyString(vip.key),
                       ": ", t.status().message()));
    }
    for (uint32_t& slot : *t) {
      if (slot != BALLAST_INVALID_ID) slot = version[slot - 1].id;
    }
    previous.push_back(std::move(*t));
  }
  return SlotHistory(table, previous);
}

size_t SlotHistoryHash(std::span<const uint64_t> history) {
  if (history.empty()) return 0;
  const size_t h = absl::HashOf(absl::MakeConstSpan(history.data(), history.size()));
  return h == 0 ? 1 : h;
}

}  // namespace ballast::core
