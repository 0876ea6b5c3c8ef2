// RouterEngine: status (GetStatus), the data plane's counters and the flow
// counts, and the audit queries.
#include <arpa/inet.h>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "agent/core/engine_util.h"
#include "agent/core/ids.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/core/quic_ids.h"
#include "agent/core/router_engine.h"
#include "agent/core/validate.h"
#include "agent/core/table_history.h"
#include "agent/dataplane/verdict.h"

namespace ballast::core {
namespace {

absl::string_view AttachModeText(dataplane::AttachMode m) {
  switch (m) {
    case dataplane::AttachMode::kNative:
      return "native";
    case dataplane::AttachMode::kGeneric:
      return "generic";
    case dataplane::AttachMode::kAuto:
      return "auto";
  }
  return "auto";
}

// How long a flow in `state` lives without packets (its state's timeout).
uint64_t FlowTtl(const dataplane::Settings& set, uint8_t state) {
  switch (state) {
    case BALLAST_FLOW_SYN_SENT:
      return set.syn_idle_ns;
    case BALLAST_FLOW_CLOSING:
      return set.linger_ns;
    case BALLAST_FLOW_UDP:
      return set.udp_idle_ns;
    default:
      return set.tcp_idle_ns;
  }
}

// Alive: not yet removable by its state's timeout (last_seen is touched at
// most every BALLAST_TOUCH_NS).
bool FlowLive(const dataplane::Settings& set, const ballast_flow& f, uint64_t now_ns) {
  return f.last_seen_ns + FlowTtl(set, f.state) + BALLAST_TOUCH_NS >= now_ns;
}

constexpr uint32_t kDefaultFlowList = 1000;
constexpr uint32_t kMaxFlowList = 100000;

}  // namespace

using namespace engine_util;  // NOLINT: the engine's own helpers

// ---- status ---------------------------------------------------------------------------

absl::StatusOr<v1::StatusResponse> RouterEngine::GetStatus() const {
  v1::StatusResponse out;
  dataplane::Settings timeouts;
  std::string attached_if;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = StatusLocked(&out); !s.ok()) return s;
    // Every record lost counts: failed writes and records a full queue
    // refused (metrics tell them apart).
    const AuditLog::Stats audit = audit_->stats();
    out.set_audit_append_failures(audit.failed + audit.dropped);
    out.set_last_audit_error(audit.last_error);
    if (health_.torn_down) return out;
    timeouts = image_.settings;
    attached_if = attached_if_;
  }
  // The data plane's counters are read outside mu_ too (a few hundred map
  // reads for a few hundred backends): ids are those of the moment above.
  if (absl::Status s = ReadCounters(attached_if, &out); !s.ok()) return s;
  // The connection table is read outside mu_ (a million entries take about
  // half a second), so writers and other readers of the engine do not wait
  // for it; scans take turns among themselves. Backends whose id changed
  // meanwhile show the new id's count: status is a view of a moment.
  std::lock_guard<std::mutex> scan(flow_scan_mu_);
  std::vector<uint64_t> flows(BALLAST_MAX_BACKENDS, 0);  // by backend id
  auto seen = CountLiveFlows(timeouts, &flows, &out);
  if (!seen.ok()) return seen.status();
  out.set_flows_read(*seen);
  out.set_flows_partial(*seen >= FlowScanLimit());
  for (v1::VipStatus& vs : *out.mutable_vips()) {
    for (v1::BackendStatus& bs : *vs.mutable_backends()) {
      if (bs.backend_id() < flows.size()) bs.set_flows(flows[bs.backend_id()]);
    }
  }
  return out;
}

// Entries per system call of the status read's flow scan. Each call keeps a
// CPU in the kernel for its whole batch, and a table swap (SetTable of a new
// VIP or size) or a backend's removal waits for every CPU to leave such a
// section (an RCU grace period): smaller batches let those through sooner
// while scrapers scan (docs/benchmarks.md, "Writers under scrapers").
constexpr size_t kFlowScanBatch = 512;

size_t RouterEngine::FlowScanLimit() const {
  return options_.flow_scan_limit != 0 ? options_.flow_scan_limit
                                       : std::numeric_limits<size_t>::max();
}

absl::StatusOr<size_t> RouterEngine::ScanFlowMaps(const FlowVisit& visit,
                                                  const FlowMapDone& done) const {
  const size_t scan_limit = FlowScanLimit();
  size_t seen = 0;
  for (const char* map : dataplane::kFlowMaps) {
    auto n = dp_->ForEachFlowIn(
        map, scan_limit - seen,
        [&](const ballast_flow_key& k, const ballast_flow& f) { visit(map, k, f); },
        kFlowScanBatch);
    if (!n.ok()) return n.status();
    seen += *n;
    if (done) done(map, *n);
    if (seen >= scan_limit) break;
  }
  return seen;
}

absl::StatusOr<size_t> RouterEngine::CountLiveFlows(const dataplane::Settings& set,
                                                    std::vector<uint64_t>* flows,
                                                    v1::StatusResponse* out) const {
  // Live flows per backend id: entries not yet expired by their state's
  // timeout.
  const uint64_t now_ns = clock_->NowMonotonicNs();
  return ScanFlowMaps(
      [&](const char*, const ballast_flow_key&, const ballast_flow& f) {
        if (!FlowLive(set, f, now_ns) || f.backend_id >= flows->size()) return;
        ++(*flows)[f.backend_id];
      },
      [&](const char* map, size_t n) {
        v1::FlowTable& t = *out->add_flow_tables();
        t.set_map(map);
        t.set_entries(n);
        if (auto cap = dp_->MapCapacity(map); cap.ok()) t.set_capacity(*cap);
      });
}

absl::StatusOr<v1::ListFlowsResponse> RouterEngine::ListFlows(
    const v1::ListFlowsRequest& req) const {
  auto key = ToDataplaneKey(req.vip());
  if (!key.ok()) return key.status();
  const uint32_t limit = req.limit() == 0 ? kDefaultFlowList : req.limit();
  if (limit > kMaxFlowList) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit ", req.limit(), " is above ", kMaxFlowList));
  }
  const std::string vip_text = dataplane::VipKeyString(*key);
  dataplane::Settings timeouts;
  std::map<uint32_t, std::string> backend_of;  // data-plane id -> address
  uint32_t only_id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_.torn_down) return absl::FailedPreconditionError("the data plane is torn down");
    const v1::Vip* vip = nullptr;
    if (const int i = VipIndex(*state_, *key); i >= 0) vip = &state_->config().vips(i);
    if (vip == nullptr)
      return absl::NotFoundError(absl::StrCat("vip ", vip_text, " does not exist"));
    for (const v1::Backend& b : vip->backends()) {
      const uint32_t id = BackendIdOf(*state_, vip->key(), b.address());
      if (id != 0) backend_of[id] = b.address();
      if (!req.backend().empty() && b.address() == req.backend()) only_id = id;
    }
    if (!req.backend().empty() && only_id == 0) {
      return absl::NotFoundError(
          absl::StrCat("backend ", req.backend(), " of vip ", vip_text, " does not exist"));
    }
    timeouts = image_.settings;
  }
  // Read outside mu_, taking turns with the status scans (GetStatus).
  std::lock_guard<std::mutex> scan(flow_scan_mu_);
  const uint64_t now_ns = clock_->NowMonotonicNs();
  const uint8_t family = key->addr.family();
  v1::ListFlowsResponse out;
  std::vector<std::pair<std::pair<std::string, uint16_t>, v1::Flow>> rows;
  auto take = [&](const char* table, const ballast_flow_key& k, const ballast_flow& f) {
    if (k.family != family || k.proto != key->proto) return;
    if (key->port != 0 && ntohs(k.dport) != key->port) return;
    auto dst = IpAddress::FromAbi(k.dst, k.family);
    if (!dst.ok() || !(*dst == key->addr) || !FlowLive(timeouts, f, now_ns)) return;
    if (only_id != 0 && f.backend_id != only_id) return;
    out.set_matched(out.matched() + 1);
    if (rows.size() >= limit) return;
    auto src = IpAddress::FromAbi(k.src, k.family);
    if (!src.ok()) return;
    v1::Flow fl;
    fl.set_client(src->ToString());
    fl.set_client_port(ntohs(k.sport));
    fl.set_vip_port(ntohs(k.dport));
    auto b = backend_of.find(f.backend_id);
    fl.set_backend(b != backend_of.end() ? b->second : absl::StrCat("id ", f.backend_id));
    fl.set_state(std::string(dataplane::FlowStateName(static_cast<ballast_flow_state>(f.state))));
    fl.set_table(table);
    const uint64_t idle = f.last_seen_ns < now_ns ? now_ns - f.last_seen_ns : 0;
    fl.set_idle_ms(idle / 1000000);
    const uint64_t ttl = FlowTtl(timeouts, f.state);
    fl.set_expires_in_ms(idle < ttl ? (ttl - idle) / 1000000 : 0);
    rows.push_back({{fl.client(), fl.client_port()}, std::move(fl)});
  };
  auto seen = ScanFlowMaps(take, nullptr);
  if (!seen.ok()) return seen.status();
  out.set_scanned(*seen);
  out.set_partial(*seen >= FlowScanLimit());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& r : rows) *out.add_flows() = std::move(r.second);
  return out;
}

absl::Status RouterEngine::StatusLocked(v1::StatusResponse* status) const {
  v1::StatusResponse& out = *status;
  out.set_config_generation(state_->generation());
  out.set_last_map_update_unix_ms(health_.last_map_update_unix_ms);
  out.set_interface(state_->config().global().interface());
  out.set_agent_version(options_.agent_version);
  *out.mutable_coordination() = coordination_;
  if (out.coordination().mode().empty()) out.mutable_coordination()->set_mode("standalone");
  if (announcement_.enabled()) *out.mutable_announcement() = announcement_;
  if (health_.torn_down) return absl::OkStatus();
  out.mutable_established_second_chance()->set_window_ms(
      TimeoutsOf(state_->config().global()).adopted_bounce_ms);
  for (const std::string& dev : bounce_.attached) out.add_bounce_interfaces(dev);

  std::map<std::string, const v1::BackendOverride*> overrides;
  for (const v1::BackendOverride& o : state_->overrides()) {
    overrides[BackendIdKey(o.vip(), o.address())] = &o;
  }
  for (const v1::Vip& vip : state_->config().vips()) {
    v1::VipStatus* vs = out.add_vips();
    *vs->mutable_key() = vip.key();
    vs->set_name(vip.name());
    const uint32_t vip_id = VipIdOf(*state_, vip.key());
    vs->set_vip_id(vip_id);
    vs->set_table_size(EffectiveTableSize(vip));
    vs->set_mode(vip.mode());
    if (const v1::TableHistory* th = FindTableHistory(*state_, vip.key())) {
      vs->set_history_versions(static_cast<uint32_t>(th->versions_size()));
    }
    const VipImage* vi = nullptr;
    const v1::QuicVipState* quic = nullptr;
    if (auto key = ToDataplaneKey(vip.key()); key.ok()) {
      quic = FindQuicState(*state_, *key);
      if (quic != nullptr) FillQuicStatus(*quic, vs);
      if (auto h = health_view_.vips.find(*key); h != health_view_.vips.end()) {
        vs->set_frozen(h->second.frozen);
        vs->set_frozen_since_unix_ms(h->second.frozen_since_unix_ms);
      }
      if (auto it = image_.vips.find(*key); it != image_.vips.end()) vi = &it->second;
    }
    for (const v1::Backend& b : vip.backends()) {
      v1::BackendStatus* bs = vs->add_backends();
      const std::string bkey = BackendIdKey(vip.key(), b.address());
      const auto id_it = state_->ids().find(bkey);
      const uint32_t id = id_it == state_->ids().end() ? 0 : id_it->second;
      const auto o_it = overrides.find(bkey);
      const BackendView view =
          ViewFromOverride(o_it == overrides.end() ? nullptr : o_it->second, b);
      bs->set_address(b.address());
      bs->set_backend_id(id);
      if (quic != nullptr) bs->set_quic_server_id(QuicServerIdText(*quic, b.address()));
      bs->set_nominal_weight(view.nominal_weight);
      bs->set_effective_weight(view.effective_weight);
      bs->set_state(std::string(BackendModeName(view.mode)));
      bs->set_drain_deadline_unix_ms(view.drain_deadline_unix_ms);
      bs->set_score(100);
      if (state_->config().global().has_health()) {
        if (auto h = health_view_.backends.find(bkey); h != health_view_.backends.end()) {
          bs->set_score(h->second.score);
          bs->set_health(h->second.state);
          bs->set_ramp_percent(h->second.ramp_percent);
          for (const std::string& c : h->second.conditions) bs->add_conditions(c);
          bs->set_last_probe(h->second.last_probe);
          bs->set_health_since_unix_ms(h->second.since_unix_ms);
          bs->set_health_transitions(h->second.transitions);
          bs->set_health_down_ms(static_cast<uint64_t>(h->second.down_ms));
          bs->set_probe_failures(h->second.probe_failures);
        } else if (o_it != overrides.end() && o_it->second->has_health()) {
          // Not evaluated since this agent started: what was last decided.
          const v1::HealthMark& mark = o_it->second->health();
          bs->set_score(mark.score());
          bs->set_health(mark.state());
          bs->set_ramp_percent(mark.ramp_percent());
        }
      }
      if (vi != nullptr) {
        if (auto it = vi->slots.find(id); it != vi->slots.end()) bs->set_table_slots(it->second);
      }
      if (auto addr = IpAddress::Parse(b.address()); addr.ok()) {
        if (auto it = bounce_view_.find(*addr); it != bounce_view_.end()) {
          v1::BouncePath* bp = bs->mutable_bounce_path();
          bp->set_device(it->second.device);
          bp->set_ok(it->second.ok);
          bp->set_via(it->second.via);
          bp->set_problem(it->second.problem);
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RouterEngine::ReadCounters(const std::string& attached_if,
                                        v1::StatusResponse* status) const {
  v1::StatusResponse& out = *status;
  if (!attached_if.empty()) {
    if (auto mode = dp_->AttachedMode(attached_if); mode.ok()) {
      out.set_attach_mode(std::string(AttachModeText(*mode)));
    }
  }
  auto verdicts = dp_->Verdicts();
  if (!verdicts.ok()) return verdicts.status();
  for (int v = 0; v < BALLAST_V_MAX; ++v) {
    (*out.mutable_verdicts())[std::string(
        dataplane::VerdictName(static_cast<ballast_verdict>(v)))] = (*verdicts)[v];
  }
  auto limited = dp_->IcmpTooBigLimited();
  if (!limited.ok()) return limited.status();
  out.set_icmp_too_big_limited(*limited);
  auto esc = dp_->EscStats();
  if (!esc.ok()) return esc.status();
  v1::EstablishedSecondChance* e = out.mutable_established_second_chance();
  e->set_adopted(esc->adopted);
  e->set_adopted_changed(esc->adopted_changed);
  e->set_moved(esc->moved);
  e->set_returned(esc->returned);
  e->set_skipped_unusable(esc->skipped_unusable);
  e->set_forwarded(esc->forwarded);
  e->set_stranger(esc->stranger);
  e->set_budget(esc->budget);
  for (v1::VipStatus& vs : *out.mutable_vips()) {
    auto vst = dp_->VipStats(vs.vip_id());
    if (!vst.ok()) return vst.status();
    vs.set_packets(vst->packets);
    vs.set_bytes(vst->bytes);
    vs.set_dropped(vst->dropped);
    for (v1::BackendStatus& b : *vs.mutable_backends()) {
      const uint32_t id = b.backend_id();
      v1::BackendStatus* bs = &b;
      auto st = dp_->BackendStats(id);
      if (!st.ok()) return st.status();
      v1::BackendCounters* c = bs->mutable_counters();
      c->set_new_flows(st->new_flows);
      c->set_packets(st->packets);
      c->set_bytes(st->bytes);
      c->set_syn_retransmits(st->syn_retransmits);
      c->set_client_rsts(st->client_rsts);
      c->set_handshake_ns_sum(st->handshake_ns_sum);
      c->set_handshake_count(st->handshake_count);
      c->set_first_response_ns_sum(st->first_response_ns_sum);
      c->set_first_response_count(st->first_response_count);
      c->set_resteered_away(st->resteered_away);
      auto bb = dp_->BackendBounces(id);
      if (!bb.ok()) return bb.status();
      c->set_refused_syns(bb->refused);
      c->set_second_chance_syns(bb->received);
      auto lat = dp_->BackendLatency(id);
      if (!lat.ok()) return lat.status();
      for (uint64_t n : lat->handshake) c->add_handshake_buckets(n);
      for (uint64_t n : lat->first_response) c->add_first_response_buckets(n);
    }
  }
  return absl::OkStatus();
}

}  // namespace ballast::core
