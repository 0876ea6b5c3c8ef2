// RouterEngine: turning state into maps. Program() writes the difference
// between two images (image.h computes them); ReconcileLocked() programs a
// state over what the maps hold.
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/core/engine_util.h"
#include "agent/core/log.h"
#include "agent/core/router_engine.h"

namespace ballast::core {
namespace {

bool SettingsEqual(const dataplane::Settings& a, const dataplane::Settings& b) {
  return a.src4 == b.src4 && a.src4_prefix == b.src4_prefix && a.src6 == b.src6 &&
         a.policy == b.policy && a.tcp_idle_ns == b.tcp_idle_ns && a.udp_idle_ns == b.udp_idle_ns &&
         a.linger_ns == b.linger_ns && a.syn_idle_ns == b.syn_idle_ns &&
         a.syn_retry_ns == b.syn_retry_ns && a.syn_reuse_idle_ns == b.syn_reuse_idle_ns &&
         a.fib_ttl_ns == b.fib_ttl_ns && a.icmp_too_big_per_s == b.icmp_too_big_per_s &&
         a.icmp_too_big_burst == b.icmp_too_big_burst && a.gue_port == b.gue_port &&
         a.adopted_bounce_ms == b.adopted_bounce_ms && a.flow_hash_seed == b.flow_hash_seed;
}

// Map contents read back carry deadlines converted through two clocks, so
// compare them with a tolerance.
bool BackendClose(const BackendImage& a, const BackendImage& b) {
  return a.addr == b.addr && a.state == b.state &&
         std::llabs(a.drain_deadline_unix_ms - b.drain_deadline_unix_ms) <= 1000;
}

}  // namespace

using namespace engine_util;  // NOLINT: the engine's own helpers

absl::Status RouterEngine::Program(const Image& from, const BuiltImage& built,
                                   const std::set<dataplane::VipKey>* scope, ProgramStats* stats) {
  const Image& to = built.image;
  const auto in_scope = [scope](const dataplane::VipKey& k) {
    return scope == nullptr || scope->count(k) != 0;
  };
  dataplane::DataplanePort& dp = *dp_;
  const int64_t now_ms = clock_->NowUnixMs();
  const uint64_t now_ns = clock_->NowMonotonicNs();

  if (!SettingsEqual(from.settings, to.settings)) {
    if (auto s = dp.SetSettings(to.settings); !s.ok()) return s;
    ++stats->settings;
  }
  // Backends first, so that a new table never names a backend the map lacks.
  for (const auto& [id, b] : to.backends) {
    auto it = from.backends.find(id);
    if (it != from.backends.end() && BackendClose(it->second, b)) continue;
    const uint64_t deadline_ns = b.state == BALLAST_BACKEND_DRAINING && b.drain_deadline_unix_ms > 0
                                     ? ToMonotonicNs(b.drain_deadline_unix_ms, now_ms, now_ns)
                                     : 0;
    if (auto s = dp.SetBackend(id, b.addr, b.state, deadline_ns); !s.ok()) return s;
    ++stats->backends_set;
  }
  // VIPs that go away (or whose id changes) before tables are written, so a
  // reused vip_id never has its new table deleted. A VIP whose id changes
  // is added again below and keeps its address marker meanwhile; so does
  // one that goes when addresses are retired (NoteRetired).
  std::set<IpAddress> emptied;
  for (const auto& [k, v] : from.vips) {
    if (!in_scope(k)) continue;
    auto it = to.vips.find(k);
    if (it != to.vips.end() && it->second.vip_id == v.vip_id) continue;
    const bool stays = it != to.vips.end();
    dataplane::DeleteVipOptions dvo;
    dvo.keep_address_marker = stays || options_.retire_addresses;
    if (auto s = dp.DeleteVip(v.key, dvo); !s.ok() && s.code() != absl::StatusCode::kNotFound) {
      return s;
    }
    ++stats->vips_deleted;
    if (!stays) emptied.insert(v.key.addr);
  }
  if (options_.retire_addresses) NoteRetired(from, to, scope, emptied, now_ns);
  for (const auto& [k, v] : to.vips) {
    auto it = from.vips.find(k);
    const bool same = it != from.vips.end() && it->second.vip_id == v.vip_id &&
                      it->second.table_size == v.table_size &&
                      it->second.table_hash == v.table_hash;
    if (same) continue;
    auto t = built.tables.find(v.vip_id);
    if (t != built.tables.end()) {
      if (auto s = dp.SetTable(v.vip_id, t->second); !s.ok()) return s;
    } else {
      auto table = BuildTableOf(v);  // one table at a time (start-up)
      if (!table.ok()) return table.status();
      if (TableHash(*table) != v.table_hash) {
        return absl::InternalError(
            absl::StrCat("the table of vip ", dataplane::VipKeyString(k), " is not deterministic"));
      }
      if (auto s = dp.SetTable(v.vip_id, *table); !s.ok()) return s;
    }
    ++stats->tables_set;
  }
  // Slot histories after the tables they describe (established second
  // chance; the program reads a history only beside its table's size).
  for (const auto& [k, v] : to.vips) {
    auto it = from.vips.find(k);
    const bool same = it != from.vips.end() && it->second.vip_id == v.vip_id &&
                      it->second.history_hash == v.history_hash;
    if (same) continue;
    auto h = built.histories.find(v.vip_id);
    if (h != built.histories.end()) {
      if (auto s = dp.SetHistory(v.vip_id, h->second); !s.ok()) return s;
    } else {
      auto history = BuildHistoryOf(v);  // one at a time (start-up)
      if (!history.ok()) return history.status();
      if (auto s = dp.SetHistory(v.vip_id, *history); !s.ok()) return s;
    }
    ++stats->histories_set;
  }
  for (const auto& [k, v] : to.vips) {
    auto it = from.vips.find(k);
    const bool exists = it != from.vips.end() && it->second.vip_id == v.vip_id;
    // A new VIP, or one whose mode changed (the upsert keeps its ownership).
    if (!exists || it->second.gue != v.gue) {
      dataplane::VipOptions vo;
      if (options_.vip_ownership && v.active_standby) vo.owner_deadline_if_new = 0;  // stopped
      vo.gue = v.gue;
      if (auto s = dp.UpsertVip(v.key, v.vip_id, vo); !s.ok()) return s;
      ++stats->vips_upserted;
      if (!exists) continue;
    }
    // An existing VIP that is (now) ACTIVE_STANDBY but forwarded without
    // a fence (switched at runtime): stopped here, in the same pass as the
    // state change; the owner loop starts it once it holds the lease. One
    // already in owned mode is the owner loop's (a deadline, maybe live).
    if (!options_.vip_ownership || !v.active_standby) continue;
    auto owner = dp.GetVipOwner(v.key);
    if (!owner.ok()) return owner.status();
    if (owner->deadline_ns.has_value()) continue;
    if (auto s = dp.SetVipOwnerDeadline(v.key, 0); !s.ok()) return s;
    ++stats->owners_stopped;
  }
  // QUIC-LB once the VIPs and their backends are there, before backends
  // go: a VIP's configurations (their change takes the server IDs of the
  // configurations that end), then its whole set of server IDs.
  for (const auto& [k, v] : to.vips) {
    auto it = from.vips.find(k);
    const QuicImage none;
    const QuicImage& was =
        it != from.vips.end() && it->second.vip_id == v.vip_id ? it->second.quic : none;
    if (was == v.quic) continue;
    if (was.configs != v.quic.configs) {
      if (auto s = dp.SetQuicConfigs(v.vip_id, v.quic.configs); !s.ok()) return s;
    }
    if (!v.quic.configs.empty()) {
      if (auto s = dp.SetQuicServers(v.vip_id, v.quic.servers); !s.ok()) return s;
    }
    ++stats->quic_set;
  }
  // Backends that go away last: no table names them any more. (A backend
  // id belongs to one VIP, so in a scoped pass the candidates are the ids
  // the scoped VIPs had.)
  std::vector<uint32_t> candidates;
  if (scope == nullptr) {
    for (const auto& [id, b] : from.backends) candidates.push_back(id);
  } else {
    for (const dataplane::VipKey& k : *scope) {
      auto it = from.vips.find(k);
      if (it == from.vips.end()) continue;
      for (const maglev::Backend& b : it->second.inputs) candidates.push_back(b.id);
    }
  }
  for (uint32_t id : candidates) {
    if (to.backends.count(id) != 0 || from.backends.count(id) == 0) continue;
    if (auto s = dp.ClearBackend(id); !s.ok()) return s;
    ++stats->backends_cleared;
  }
  // Attachment: attach where the config says (a no-op when our program
  // already runs there); detach only from a device the config moved away from.
  if (!to.interface.empty() && to.interface != attached_if_) {
    if (auto s = dp.Attach(to.interface, options_.attach_mode); !s.ok()) {
      return Annotate(s, absl::StrCat("attaching to ", to.interface));
    }
    ++stats->attached;
    if (!attached_if_.empty() && !KeepForBounces(attached_if_)) {
      if (auto s = dp.Detach(attached_if_); !s.ok() && s.code() != absl::StatusCode::kNotFound) {
        Log(LogLevel::kWarning, "could not detach from the previous interface",
            {{"interface", attached_if_}, {"error", std::string(s.message())}});
      }
      ++stats->detached;
    }
    attached_if_ = to.interface;
  } else if (to.interface.empty() && !attached_if_.empty()) {
    if (auto s = dp.Detach(attached_if_); !s.ok() && s.code() != absl::StatusCode::kNotFound) {
      return Annotate(s, absl::StrCat("detaching from ", attached_if_));
    }
    ++stats->detached;
    attached_if_.clear();
  }
  return ProgramExtraInterfaces(
      dp, to.interface.empty() ? std::set<std::string>{} : to.extra_interfaces, stats);
}

void RouterEngine::NoteRetired(const Image& from, const Image& to,
                               const std::set<dataplane::VipKey>* scope,
                               const std::set<IpAddress>& emptied, uint64_t now_ns) {
  // The addresses of the result: `to`'s VIPs, and (a scoped pass) the VIPs
  // of `from` the pass did not touch.
  std::set<IpAddress> used;
  for (const auto& [k, v] : to.vips) used.insert(k.addr);
  if (scope != nullptr) {
    for (const auto& [k, v] : from.vips) {
      if (scope->count(k) == 0) used.insert(k.addr);
    }
  }
  for (const IpAddress& a : emptied) {
    if (used.count(a) != 0) continue;
    retired_.insert_or_assign(a, now_ns);
    Log(LogLevel::kInfo, "VIP address retired: its marker stays until its route is withdrawn",
        {{"address", a.ToString()}});
  }
  for (const IpAddress& a : used) {
    if (retired_.erase(a) != 0) {
      Log(LogLevel::kInfo, "retired VIP address in use again", {{"address", a.ToString()}});
    }
  }
}

std::map<IpAddress, uint64_t> RouterEngine::RetiredAddresses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return retired_;
}

absl::StatusOr<std::vector<IpAddress>> RouterEngine::ReleaseRetiredAddresses(
    const std::map<IpAddress, uint64_t>& addresses) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<IpAddress> released;
  if (health_.torn_down) return released;
  for (const auto& [a, since] : addresses) {
    auto it = retired_.find(a);
    if (it == retired_.end() || it->second != since) continue;
    if (image_.vip_addresses.count(a) != 0) {  // cannot be: in use means not retired
      retired_.erase(it);
      continue;
    }
    if (absl::Status s = dp_->DeleteVipAddressMarker(a);
        !s.ok() && s.code() != absl::StatusCode::kNotFound) {
      return Annotate(s, absl::StrCat("releasing the retired VIP address ", a.ToString()));
    }
    retired_.erase(it);
    released.push_back(a);
    Log(LogLevel::kInfo, "retired VIP address released: its marker is gone",
        {{"address", a.ToString()},
         {"held_ms", static_cast<int64_t>((clock_->NowMonotonicNs() - since) / 1'000'000)}});
  }
  return released;
}

absl::Status RouterEngine::ProgramExtraInterfaces(dataplane::DataplanePort& dp,
                                                  const std::set<std::string>& want,
                                                  ProgramStats* stats) {
  for (const std::string& dev : want) {
    if (attached_extra_.count(dev) != 0) continue;
    if (auto s = dp.Attach(dev, options_.attach_mode); !s.ok()) {
      return Annotate(s, absl::StrCat("attaching to ", dev, " (extra_interfaces)"));
    }
    ++stats->attached;
    attached_extra_.insert(dev);
  }
  for (auto it = attached_extra_.begin(); it != attached_extra_.end();) {
    if (want.count(*it) != 0) {
      ++it;
      continue;
    }
    // Now the interface (attached above), or still where bounces arrive:
    // it keeps the program.
    if (*it == attached_if_ || KeepForBounces(*it)) {
      it = attached_extra_.erase(it);
      continue;
    }
    if (auto s = dp.Detach(*it); !s.ok() && s.code() != absl::StatusCode::kNotFound) {
      return Annotate(s, absl::StrCat("detaching from ", *it, " (extra_interfaces)"));
    }
    ++stats->detached;
    it = attached_extra_.erase(it);
  }
  return absl::OkStatus();
}

absl::Status RouterEngine::ReconcileLocked(const v1::State& state, ProgramStats* stats) {
  auto actual = ReadImage(*dp_, clock_->NowUnixMs(), clock_->NowMonotonicNs());
  if (!actual.ok()) return Annotate(actual.status(), "reading the data plane's maps");
  auto built = Build(state, nullptr, nullptr, /*keep_tables=*/false);
  if (!built.ok()) return built.status();
  // The attachment is not part of what the maps say; on start-up the
  // engine has attached nothing yet, and Attach() is a no-op where our
  // program already runs.
  actual->interface = attached_if_;
  actual->extra_interfaces = attached_extra_;
  if (auto s = Program(*actual, *built, nullptr, stats); !s.ok()) return s;
  // UpsertVip/DeleteVip keep one address marker per VIP address; a marker
  // left behind by something else (no VIP uses its address) is removed
  // here, or, when addresses are retired, kept as retired: a run before
  // this one may have been waiting for its route to be withdrawn.
  for (const IpAddress& a : actual->vip_addresses) {
    if (built->image.vip_addresses.count(a) != 0) continue;
    if (options_.retire_addresses) {
      if (retired_.emplace(a, clock_->NowMonotonicNs()).second) {
        Log(LogLevel::kInfo, "VIP address retired: its marker stays until its route is withdrawn",
            {{"address", a.ToString()}, {"found", "a marker no VIP uses"}});
      }
      continue;
    }
    if (absl::Status s = dp_->DeleteVipAddressMarker(a);
        !s.ok() && s.code() != absl::StatusCode::kNotFound) {
      return s;
    }
    ++stats->markers_deleted;
  }
  image_ = std::move(built->image);
  return absl::OkStatus();
}

}  // namespace ballast::core
