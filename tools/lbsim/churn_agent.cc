#include "tools/lbsim/churn_agent.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/core/engine_util.h"
#include "agent/core/ids.h"
#include "agent/core/names.h"
#include "agent/core/table_history.h"
#include "agent/core/validate.h"
#include "ballast_abi.h"

namespace ballast::lbsim {

int ProgrammedTable::HistoryAt(uint32_t slot, int i) const {
  if (slot >= history.size()) return -1;
  const uint32_t id = static_cast<uint32_t>(history[slot] >> (i * BALLAST_HISTORY_ID_BITS)) &
                      BALLAST_HISTORY_ID_MASK;
  return id == BALLAST_INVALID_ID ? -1 : IndexOfId(id);
}

std::string VipAgent::AddressOf(int i) {
  if (i < 9) return absl::StrCat("198.18.3", i + 1, ".2");
  return absl::StrCat("198.20.", i / 250, ".", i % 250 + 1);
}

VipAgent::VipAgent(int count, uint32_t weight, uint32_t table_size)
    : count_(count), weight_(weight), table_size_(table_size) {
  key_.set_address("198.18.0.10");
  key_.set_port(80);
  key_.set_protocol(v1::TCP);
}

v1::Vip* VipAgent::MutableVip(v1::State* st) const { return st->mutable_config()->mutable_vips(0); }

absl::StatusOr<VipAgent> VipAgent::Create(int count, uint32_t weight,
                                          const std::vector<int>& absent, uint32_t table_size,
                                          int64_t now_unix_ms) {
  VipAgent a(count, weight, table_size);
  v1::State st;
  v1::Config* c = st.mutable_config();
  c->mutable_global()->set_source_v4("198.18.0.1");
  v1::Vip* vip = c->add_vips();
  *vip->mutable_key() = a.key_;
  vip->set_table_size(table_size);
  vip->set_name("lbsim");
  for (int i = 0; i < count; ++i) {
    if (std::find(absent.begin(), absent.end(), i) != absent.end()) continue;
    v1::Backend* b = vip->add_backends();
    b->set_address(AddressOf(i));
    b->set_weight(weight);
  }
  if (absl::Status s = a.Commit(std::move(st), now_unix_ms); !s.ok()) return s;
  return a;
}

absl::Status VipAgent::Commit(v1::State next, int64_t now_unix_ms) {
  if (absl::Status s = core::ValidateConfig(next.config(), core::FieldPath::Index()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the agent refuses the config: ", s.message()));
  }
  if (absl::Status s = core::AssignIds(&next); !s.ok()) return s;
  const bool first = image_.vips.empty();
  auto built = core::BuildImage(next, first ? nullptr : &image_);
  if (!built.ok()) return built.status();
  // As RouterEngine::Commit: the tables this change replaces become history.
  const std::set<dataplane::VipKey> changed =
      core::RecordTableChanges(image_, built->image, nullptr, now_unix_ms, &next);
  if (!changed.empty()) {
    if (absl::Status s = core::RefreshHistories(next, changed, &*built); !s.ok()) return s;
  }
  if (built->image.vips.size() != 1) return absl::InternalError("expected one VIP in the image");
  const core::VipImage& vi = built->image.vips.begin()->second;
  auto table = core::BuildTableOf(vi);
  if (!table.ok()) return table.status();
  auto history = core::BuildHistoryOf(vi);
  if (!history.ok()) return history.status();

  ProgrammedTable p;
  p.index_of_id.assign(BALLAST_MAX_BACKENDS, -1);
  p.backends.resize(count_);
  const v1::Vip& vip = next.config().vips(0);
  for (int i = 0; i < count_; ++i) {
    const std::string addr = AddressOf(i);
    DataplaneBackend& d = p.backends[i];
    for (const v1::Backend& b : vip.backends()) {
      if (b.address() != addr) continue;
      d.configured = true;
      d.nominal_weight = b.weight();
      d.id = core::BackendIdOf(next, key_, addr);
    }
    if (!d.configured) continue;
    if (d.id == 0 || d.id >= BALLAST_MAX_BACKENDS) {
      return absl::InternalError(absl::StrCat("no data-plane id for ", addr));
    }
    p.index_of_id[d.id] = i;
    auto it = built->image.backends.find(d.id);
    if (it == built->image.backends.end()) {
      return absl::InternalError(absl::StrCat("backend ", addr, " is not in the image"));
    }
    d.state = it->second.state;
    d.drain_deadline_unix_ms = it->second.drain_deadline_unix_ms;
  }
  p.table.resize(table->size());
  for (size_t s = 0; s < table->size(); ++s) {
    const uint32_t id = (*table)[s];
    p.table[s] = id == BALLAST_INVALID_ID ? -1 : p.IndexOfId(id);
    if (!programmed_.table.empty() && p.table[s] != programmed_.table[s]) ++p.slots_moved;
  }
  p.history = std::move(*history);
  if (const v1::TableHistory* h = core::FindTableHistory(next, key_)) {
    p.versions = h->versions_size();
  }
  state_ = std::move(next);
  image_ = std::move(built->image);
  programmed_ = std::move(p);
  return absl::OkStatus();
}

absl::Status VipAgent::Apply(const TableChange& c, int64_t now_unix_ms) {
  v1::State next = state_;
  v1::Vip* vip = MutableVip(&next);
  const std::string what = std::string(TableChangeKindName(c.kind));
  for (int i : c.backends) {
    const std::string addr = AddressOf(i);
    int pos = -1;
    for (int j = 0; j < vip->backends_size(); ++j) {
      if (vip->backends(j).address() == addr) pos = j;
    }
    if (c.kind != TableChangeKind::kAdd && pos < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": backend ", i, " is not configured at that time"));
    }
    switch (c.kind) {
      case TableChangeKind::kWeight:
        vip->mutable_backends(pos)->set_weight(c.weight);
        break;
      case TableChangeKind::kAdd: {
        if (pos >= 0) {
          return absl::FailedPreconditionError(
              absl::StrCat("add: backend ", i, " is already configured"));
        }
        v1::Backend* b = vip->add_backends();
        b->set_address(addr);
        b->set_weight(c.weight != 0 ? c.weight : weight_);
        break;
      }
      case TableChangeKind::kRemove:
        vip->mutable_backends()->DeleteSubrange(pos, 1);
        core::engine_util::EraseOverride(next, key_, addr);
        break;
      case TableChangeKind::kDrain: {
        v1::BackendOverride* o = core::engine_util::FindOverrideMut(next, key_, addr);
        if (o != nullptr && (o->evicted() || o->pinned())) {
          return absl::FailedPreconditionError(
              absl::StrCat("drain: backend ", i, " is evicted; undrain it first"));
        }
        if (o == nullptr) {
          o = next.add_overrides();
          *o->mutable_vip() = key_;
          o->set_address(addr);
        }
        o->set_drain_deadline_unix_ms(now_unix_ms + absl::ToInt64Milliseconds(c.deadline));
        o->set_evicted(false);
        break;
      }
      case TableChangeKind::kUndrain: {
        const v1::BackendOverride* o = core::engine_util::FindOverrideMut(next, key_, addr);
        if (o == nullptr || (o->drain_deadline_unix_ms() == 0 && !o->evicted())) {
          return absl::FailedPreconditionError(
              absl::StrCat("undrain: backend ", i, " is not draining or evicted"));
        }
        core::engine_util::EraseOverride(next, key_, addr);
        break;
      }
    }
  }
  return Commit(std::move(next), now_unix_ms);
}

absl::StatusOr<bool> VipAgent::Evict(int backend, int64_t now_unix_ms) {
  v1::State next = state_;
  v1::BackendOverride* o = core::engine_util::FindOverrideMut(next, key_, AddressOf(backend));
  if (o == nullptr || o->evicted() || o->pinned() || o->drain_deadline_unix_ms() == 0 ||
      o->drain_deadline_unix_ms() > now_unix_ms) {
    return false;
  }
  o->set_evicted(true);
  if (absl::Status s = Commit(std::move(next), now_unix_ms); !s.ok()) return s;
  return true;
}

}  // namespace ballast::lbsim
