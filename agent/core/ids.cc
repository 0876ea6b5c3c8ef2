#include "agent/core/ids.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "agent/core/names.h"
#include "agent/core/validate.h"

namespace ballast::core {
namespace {

constexpr char kNextVip[] = "next vip";
constexpr char kNextBackend[] = "next backend";

// First id in 1..max not in `used`, scanning from `cursor` and wrapping.
uint32_t Allocate(const std::set<uint32_t>& used, uint32_t max, uint32_t cursor) {
  if (cursor < 1 || cursor > max) cursor = 1;
  for (uint32_t n = 0; n < max; ++n) {
    const uint32_t id = (cursor - 1 + n) % max + 1;
    if (used.count(id) == 0) return id;
  }
  return 0;
}

uint32_t Get(const v1::State& s, const std::string& key) {
  auto it = s.ids().find(key);
  return it == s.ids().end() ? 0 : it->second;
}

}  // namespace

namespace {

// Allocates the ids `vips` (in order) lack; `vip_used`/`backend_used` hold
// the ids in use.
absl::Status AllocateMissing(v1::State* state, absl::Span<const v1::Vip* const> vips,
                             std::set<uint32_t>& vip_used, std::set<uint32_t>& backend_used) {
  auto* ids = state->mutable_ids();
  uint32_t next_vip = Get(*state, kNextVip);
  uint32_t next_backend = Get(*state, kNextBackend);
  for (const v1::Vip* vip : vips) {
    const std::string vkey = VipIdKey(vip->key());
    if (ids->count(vkey) == 0) {
      const uint32_t id = Allocate(vip_used, kMaxVips, next_vip);
      if (id == 0) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "no free VIP id for ", VipKeyText(vip->key()), " (", kMaxVips, " in use)"));
      }
      (*ids)[vkey] = id;
      vip_used.insert(id);
      next_vip = id % kMaxVips + 1;
    }
    for (const v1::Backend& b : vip->backends()) {
      const std::string bkey = BackendIdKey(vip->key(), b.address());
      if (ids->count(bkey) != 0) continue;
      const uint32_t id = Allocate(backend_used, kMaxBackendsTotal, next_backend);
      if (id == 0) {
        return absl::ResourceExhaustedError(absl::StrCat("no free backend id for ", bkey.substr(8),
                                                         " (", kMaxBackendsTotal, " in use)"));
      }
      (*ids)[bkey] = id;
      backend_used.insert(id);
      next_backend = id % kMaxBackendsTotal + 1;
    }
  }
  if (next_vip != 0) (*ids)[kNextVip] = next_vip;
  if (next_backend != 0) (*ids)[kNextBackend] = next_backend;
  return absl::OkStatus();
}

bool IsCursor(const std::string& key) { return key == kNextVip || key == kNextBackend; }

}  // namespace

absl::Status AssignIds(v1::State* state) {
  std::set<std::string> wanted;
  for (const v1::Vip& vip : state->config().vips()) {
    wanted.insert(VipIdKey(vip.key()));
    for (const v1::Backend& b : vip.backends()) wanted.insert(BackendIdKey(vip.key(), b.address()));
  }
  auto* ids = state->mutable_ids();
  std::set<uint32_t> vip_used;
  std::set<uint32_t> backend_used;
  for (auto it = ids->begin(); it != ids->end();) {
    const std::string& key = it->first;
    if (IsCursor(key)) {
      ++it;
      continue;
    }
    if (wanted.count(key) == 0) {
      it = ids->erase(it);
      continue;
    }
    (key.rfind("vip ", 0) == 0 ? vip_used : backend_used).insert(it->second);
    ++it;
  }
  // Allocate in config order, so that two routers given the same config
  // from scratch assign the same ids.
  std::vector<const v1::Vip*> vips;
  for (const v1::Vip& vip : state->config().vips()) vips.push_back(&vip);
  return AllocateMissing(state, vips, vip_used, backend_used);
}

absl::Status UpdateIdsOfVip(v1::State* state, const v1::VipKey& key, const v1::Vip* vip) {
  const std::string vkey = VipIdKey(key);
  const std::string prefix = absl::StrCat("backend ", VipKeyText(key), " ");
  std::set<std::string> keep;
  if (vip != nullptr) {
    for (const v1::Backend& b : vip->backends()) keep.insert(BackendIdKey(key, b.address()));
  }
  auto* ids = state->mutable_ids();
  std::set<uint32_t> vip_used;
  std::set<uint32_t> backend_used;
  for (auto it = ids->begin(); it != ids->end();) {
    const std::string& k = it->first;
    if (IsCursor(k)) {
      ++it;
      continue;
    }
    const bool ours_vip = k == vkey;
    const bool ours_backend =
        !ours_vip && k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0;
    if ((ours_vip && vip == nullptr) || (ours_backend && keep.count(k) == 0)) {
      it = ids->erase(it);
      continue;
    }
    (k.rfind("vip ", 0) == 0 ? vip_used : backend_used).insert(it->second);
    ++it;
  }
  if (vip == nullptr) return absl::OkStatus();
  const v1::Vip* one[] = {vip};
  return AllocateMissing(state, one, vip_used, backend_used);
}

uint32_t VipIdOf(const v1::State& state, const v1::VipKey& vip) {
  return Get(state, VipIdKey(vip));
}

uint32_t BackendIdOf(const v1::State& state, const v1::VipKey& vip, const std::string& address) {
  return Get(state, BackendIdKey(vip, address));
}

}  // namespace ballast::core
