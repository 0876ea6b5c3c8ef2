#include "agent/core/engine_util.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "agent/core/names.h"

namespace ballast::core::engine_util {

std::string ToJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

absl::Status Annotate(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

v1::Event MakeEvent(std::string kind, std::string vip, std::string backend, std::string message) {
  v1::Event e;
  e.set_kind(std::move(kind));
  e.set_vip(std::move(vip));
  e.set_backend(std::move(backend));
  e.set_message(std::move(message));
  return e;
}

v1::BackendOverride* FindOverrideMut(v1::State& state, const v1::VipKey& vip,
                                     const std::string& address) {
  const std::string want = BackendIdKey(vip, address);
  for (v1::BackendOverride& o : *state.mutable_overrides()) {
    if (BackendIdKey(o.vip(), o.address()) == want) return &o;
  }
  return nullptr;
}

void EraseOverride(v1::State& state, const v1::VipKey& vip, const std::string& address) {
  const std::string want = BackendIdKey(vip, address);
  auto* o = state.mutable_overrides();
  for (int i = 0; i < o->size(); ++i) {
    if (BackendIdKey(o->Get(i).vip(), o->Get(i).address()) == want) {
      o->DeleteSubrange(i, 1);
      return;
    }
  }
}

int VipIndex(const v1::State& state, const dataplane::VipKey& key) {
  const auto& vips = state.config().vips();
  for (int i = 0; i < vips.size(); ++i) {
    if (SameVip(vips.Get(i).key(), key)) return i;
  }
  return -1;
}

v1::Vip* FindVip(v1::State& state, const dataplane::VipKey& key) {
  const int i = VipIndex(state, key);
  return i < 0 ? nullptr : state.mutable_config()->mutable_vips(i);
}

v1::Vip* FindVip(v1::State& state, const v1::VipKey& key) {
  auto k = ToDataplaneKey(key);
  return k.ok() ? FindVip(state, *k) : nullptr;
}

// Drops overrides of backends the config no longer has, and overrides that
// hold nothing. O(overrides x backends of their VIP).
void PruneOverrides(v1::State& state) {
  auto* o = state.mutable_overrides();
  for (int i = o->size() - 1; i >= 0; --i) {
    const v1::BackendOverride& x = o->Get(i);
    bool keep = x.drain_deadline_unix_ms() != 0 || x.evicted() || x.pinned() || x.has_health();
    if (keep) {
      keep = false;
      if (const v1::Vip* v = FindVip(state, x.vip()); v != nullptr) {
        const std::string want = CanonicalAddress(x.address());
        for (const v1::Backend& b : v->backends()) {
          keep = keep || CanonicalAddress(b.address()) == want;
        }
      }
    }
    if (!keep) o->DeleteSubrange(i, 1);
  }
}

}  // namespace ballast::core::engine_util
