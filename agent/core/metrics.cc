#include "agent/core/metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "agent/core/image.h"
#include "agent/core/names.h"
#include "agent/health/machine.h"
#include "absl/strings/string_view.h"

namespace ballast::core {
namespace {

// Accumulates the exposition text and hands it to `emit` in pieces of about
// kFlushBytes, each ending at a line end, so that a scrape of thousands of
// backends never holds the whole text, or one family's, in memory (one
// histogram family of 10,000 backends is about 25 MB of text).
class Writer {
 public:
  explicit Writer(const MetricsSink& emit) : emit_(emit) {}
  ~Writer() { Flush(); }
  // Starts a family: HELP and TYPE lines.
  void Family(absl::string_view name, absl::string_view type, absl::string_view help) {
    absl::StrAppend(&out_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
    MaybeFlush();
  }
  void Sample(absl::string_view name, absl::string_view labels, double value) {
    absl::StrAppend(&out_, name, labels.empty() ? "" : "{", labels, labels.empty() ? "" : "}", " ",
                    Num(value), "\n");
    MaybeFlush();
  }
  void Sample(absl::string_view name, absl::string_view labels, uint64_t value) {
    absl::StrAppend(&out_, name, labels.empty() ? "" : "{", labels, labels.empty() ? "" : "}", " ",
                    value, "\n");
    MaybeFlush();
  }
  void Flush() {
    if (!out_.empty()) emit_(out_);
    out_.clear();
  }
  void MaybeFlush() {
    if (out_.size() >= kFlushBytes) Flush();
  }

 private:
  static constexpr size_t kFlushBytes = 64 * 1024;
  static std::string Num(double v) {
    char buf[64];
    snprintf(buf, sizeof(buf), "%.17g", v);
    return buf;
  }
  const MetricsSink& emit_;
  std::string out_;
};

std::string Label(absl::string_view k, absl::string_view v) {
  return absl::StrCat(k, "=\"", EscapeLabelValue(v), "\"");
}

struct BackendRow {
  std::string labels;  // vip="...",backend="..."
  const v1::BackendStatus* b;
};

// The states a backend's admin state and its health take, as the API
// names them.
std::vector<std::string> BackendStates() {
  std::vector<std::string> out;
  for (BackendMode m : {BackendMode::kActive, BackendMode::kDraining, BackendMode::kEvicted,
                        BackendMode::kPinned}) {
    out.emplace_back(BackendModeName(m));
  }
  return out;
}
std::vector<std::string> HealthStates() {
  std::vector<std::string> out;
  for (health::HealthState s :
       {health::HealthState::kHealthy, health::HealthState::kDegraded,
        health::HealthState::kRamping, health::HealthState::kDown, health::HealthState::kPinned}) {
    out.emplace_back(health::HealthStateName(s));
  }
  out.emplace_back("unchecked");  // HealthController: no probe and no passive data
  return out;
}

// A state set (HAProxy's haproxy_server_status, OpenMetrics' StateSet): one
// series per state, 1 for `current` and 0 for the others, so a query needs
// no knowledge of which states exist and a state change is a value change,
// not a series that vanishes. A state not in `states` gets its own series.
void StateSet(Writer& w, absl::string_view name, absl::string_view labels,
              absl::string_view current, const std::vector<std::string>& states) {
  bool known = false;
  for (const std::string& s : states) {
    known = known || s == current;
    w.Sample(name, absl::StrCat(labels, ",", Label("state", s)), uint64_t{s == current ? 1u : 0u});
  }
  if (!known && !current.empty()) {
    w.Sample(name, absl::StrCat(labels, ",", Label("state", current)), uint64_t{1});
  }
}

}  // namespace

std::string EscapeLabelValue(absl::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

absl::StatusOr<ProcessStats> ReadProcessStats() {
  ProcessStats p;
  const long page = sysconf(_SC_PAGESIZE);
  const long hz = sysconf(_SC_CLK_TCK);
  {
    std::ifstream f("/proc/self/statm");
    uint64_t size = 0;
    uint64_t resident = 0;
    if (!(f >> size >> resident)) return absl::InternalError("reading /proc/self/statm");
    p.resident_bytes = resident * static_cast<uint64_t>(page);
  }
  uint64_t start_ticks = 0;
  {
    std::ifstream f("/proc/self/stat");
    std::string line;
    if (!std::getline(f, line)) return absl::InternalError("reading /proc/self/stat");
    // Fields after the command name (which is in parentheses and may hold spaces).
    const size_t rp = line.rfind(')');
    if (rp == std::string::npos) return absl::InternalError("parsing /proc/self/stat");
    std::vector<std::string> fields = absl::StrSplit(line.substr(rp + 2), ' ');
    // fields[0] is field 3 (state); utime = field 14, stime = 15, starttime = 22.
    if (fields.size() < 20) return absl::InternalError("parsing /proc/self/stat");
    const uint64_t utime = std::stoull(fields[11]);
    const uint64_t stime = std::stoull(fields[12]);
    start_ticks = std::stoull(fields[19]);
    p.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(hz);
  }
  {
    std::ifstream f("/proc/stat");
    std::string key;
    uint64_t btime = 0;
    while (f >> key) {
      if (key == "btime") {
        f >> btime;
        break;
      }
      f.ignore(1 << 20, '\n');
    }
    p.start_time_seconds =
        static_cast<double>(btime) + static_cast<double>(start_ticks) / static_cast<double>(hz);
  }
  if (DIR* d = opendir("/proc/self/fd"); d != nullptr) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') ++p.open_fds;
    }
    closedir(d);
    if (p.open_fds > 0) --p.open_fds;  // the directory stream itself
  }
  return p;
}

std::string RenderMetrics(const v1::StatusResponse* status, const EngineHealth& health,
                          const ProcessStats* process) {
  std::string text;
  RenderMetrics(status, health, process,
                [&text](absl::string_view piece) { text.append(piece.data(), piece.size()); });
  return text;
}

void RenderMetrics(const v1::StatusResponse* status, const EngineHealth& health,
                   const ProcessStats* process, const MetricsSink& emit) {
  Writer w(emit);
  w.Family("ballast_up", "gauge", "1 if the agent could read its data plane for this scrape.");
  w.Sample("ballast_up", "", uint64_t{status != nullptr ? 1u : 0u});
  w.Family("ballast_agent_info", "gauge", "Agent version and where its program is attached.");
  w.Sample("ballast_agent_info",
           status == nullptr ? ""
                             : absl::StrCat(Label("version", status->agent_version()), ",",
                                            Label("interface", status->interface()), ",",
                                            Label("attach_mode", status->attach_mode())),
           uint64_t{1});
  w.Family("ballast_config_generation", "gauge", "Generation of the applied state.");
  w.Sample("ballast_config_generation", "", health.generation);
  w.Family("ballast_last_map_update_timestamp_seconds", "gauge",
           "Unix time of the last successful update of the data plane's maps.");
  w.Sample("ballast_last_map_update_timestamp_seconds", "",
           static_cast<double>(health.last_map_update_unix_ms) / 1000.0);
  w.Family("ballast_map_update_errors_total", "counter",
           "Programming passes of the data plane that failed (and were rolled back).");
  w.Sample("ballast_map_update_errors_total", "", health.map_update_errors);
  w.Family("ballast_audit_append_failures_total", "counter",
           "Audit records that could not be written or synced (disk full, I/O error); their "
           "changes were applied.");
  w.Sample("ballast_audit_append_failures_total", "", health.audit_append_failures);
  w.Family("ballast_audit_records_dropped_total", "counter",
           "Audit records dropped because the audit log's queue was full (its disk too slow); "
           "their changes were applied.");
  w.Sample("ballast_audit_records_dropped_total", "", health.audit_records_dropped);
  w.Family("ballast_evictions_total", "counter",
           "Draining backends evicted because their drain deadline passed.");
  w.Sample("ballast_evictions_total", "", health.evictions);
  w.Family("ballast_health_actions_total", "counter",
           "Automated health actions, by kind (demote, promote, ramp_step, pin, freeze, "
           "disagreement, ...).");
  for (const auto& [kind, n] : health.health_actions) {
    w.Sample("ballast_health_actions_total", Label("kind", kind), n);
  }
  w.Family("ballast_health_alerts_total", "counter",
           "Health actions that should page a human (pin, freeze, disagreement), by kind.");
  for (const char* kind : {"pin", "freeze", "disagreement"}) {
    auto it = health.health_actions.find(kind);
    w.Sample("ballast_health_alerts_total", Label("kind", kind),
             it == health.health_actions.end() ? uint64_t{0} : it->second);
  }
  if (status != nullptr && status->coordination().mode() == "cluster") {
    const v1::Coordination& c = status->coordination();
    w.Family("ballast_coordination_up", "gauge", "1 while etcd is reachable (cluster mode).");
    w.Sample("ballast_coordination_up", "", uint64_t{c.up() ? 1u : 0u});
    w.Family("ballast_coordination_frozen", "gauge",
             "1 while this node makes no changes (etcd unreachable); it forwards on its last "
             "known state.");
    w.Sample("ballast_coordination_frozen", "", uint64_t{c.frozen() ? 1u : 0u});
    w.Family("ballast_coordination_leader", "gauge", "1 while this node is the cluster's leader.");
    w.Sample("ballast_coordination_leader", "", uint64_t{c.is_leader() ? 1u : 0u});
    w.Family("ballast_coordination_live_nodes", "gauge", "Nodes with a live record in etcd.");
    w.Sample("ballast_coordination_live_nodes", "", uint64_t{c.live_nodes()});
    if (c.owners_size() > 0) {
      w.Family("ballast_vip_owner", "gauge",
               "1 while this node owns the active/standby VIP and forwards it, 0 while it is "
               "its standby (VIP stopped).");
      for (const v1::VipOwnerStatus& o : c.owners()) {
        w.Sample("ballast_vip_owner", Label("vip", o.vip()), uint64_t{o.owner() ? 1u : 0u});
      }
      w.Family("ballast_vip_fenced_packets_total", "counter",
               "Packets of the active/standby VIP dropped past its owner deadline.");
      for (const v1::VipOwnerStatus& o : c.owners()) {
        w.Sample("ballast_vip_fenced_packets_total", Label("vip", o.vip()), o.fenced());
      }
    }
    w.Family("ballast_config_differences", "gauge",
             "Live nodes whose configuration or Maglev table hashes differ from this node's. "
             "Must be 0.");
    w.Sample("ballast_config_differences", "", uint64_t{c.differences()});
    w.Family("ballast_split_views", "gauge",
             "Backends whose observers disagree (some, but fewer than a quorum, vote it out).");
    w.Sample("ballast_split_views", "", uint64_t{c.split_views()});
    w.Family("ballast_state_revision", "gauge", "etcd revision of the applied replicated state.");
    w.Sample("ballast_state_revision", "", static_cast<uint64_t>(c.state_revision()));
    w.Family("ballast_replicated_applies_total", "counter",
             "Replicated states applied from etcd, and the map writes they made.");
    w.Sample("ballast_replicated_applies_total", "", health.adopted);
    w.Family("ballast_replicated_map_writes_total", "counter",
             "Map writes made by applying replicated states (0 for an identical state).");
    w.Sample("ballast_replicated_map_writes_total", "", health.adopted_map_writes);
  }
  if (status != nullptr && status->announcement().enabled()) {
    const v1::Announcement& a = status->announcement();
    w.Family("ballast_bird_up", "gauge",
             "1 while BIRD's control socket answered the last reconcile (bgp section).");
    w.Sample("ballast_bird_up", "", uint64_t{a.bird_reachable() ? 1u : 0u});
    w.Family("ballast_bird_errors_total", "counter",
             "Announcement reconciles that failed (BIRD unreachable, a command refused, a VIP "
             "protocol missing from BIRD's config).");
    w.Sample("ballast_bird_errors_total", "", a.bird_errors());
    w.Family("ballast_dataplane_healthy", "gauge",
             "1 while the announcer finds the XDP program attached and the pinned maps readable; "
             "0 withdraws every VIP.");
    w.Sample("ballast_dataplane_healthy", "", uint64_t{a.dataplane_healthy() ? 1u : 0u});
    w.Family("ballast_vip_announce_desired", "gauge",
             "1 while lbagent wants the VIP address announced over BGP, 0 while it withdraws it "
             "(label prefix: an address announces every VIP key on it, so it is not the vip "
             "label's ADDR:PORT/PROTO).");
    for (const v1::VipAnnouncement& v : a.vips()) {
      w.Sample("ballast_vip_announce_desired", Label("prefix", v.prefix()),
               uint64_t{v.announce() ? 1u : 0u});
    }
    w.Family("ballast_vip_announced", "gauge",
             "1 while BIRD shows the VIP address's protocol up (announced to its BGP peers).");
    for (const v1::VipAnnouncement& v : a.vips()) {
      w.Sample("ballast_vip_announced", Label("prefix", v.prefix()),
               uint64_t{v.bird_state() == "announced" ? 1u : 0u});
    }
  }
  if (status != nullptr) {
    w.Family("ballast_verdict_packets_total", "counter",
             "Packets seen by the lb XDP program, by verdict.");
    // Sorted by name (the map is unordered).
    std::map<std::string, uint64_t> verdicts(status->verdicts().begin(), status->verdicts().end());
    for (const auto& [name, n] : verdicts) {
      w.Sample("ballast_verdict_packets_total", Label("verdict", name), n);
    }
    w.Family("ballast_icmp_too_big_limited_total", "counter",
             "Oversize packets not answered with ICMP too-big because the CPU's budget "
             "(global.icmp_too_big_per_s) was spent; also in verdict drop_too_big.");
    w.Sample("ballast_icmp_too_big_limited_total", "", status->icmp_too_big_limited());
    {
      const v1::EstablishedSecondChance& e = status->established_second_chance();
      w.Family(
          "ballast_established_second_chance_total", "counter",
          "Established second chance: adopted = TCP flows adopted mid-stream (ECMP moved "
          "them here, or their entry expired); adopted_changed = of those, on a slot whose "
          "backend changed (probed); moved = sent on to a previous backend; returned = no "
          "backend in the history held it (the table's pick answered: a late packet, or "
          "history too short); skipped_unusable = previous backends passed over (evicted, "
          "removed, drain over); forwarded = packets in flight sent on; stranger = bounces "
          "dropped (no probing flow, wrong source or sequence); budget = past the hop budget.");
      const std::pair<const char*, uint64_t> events[] = {{"adopted", e.adopted()},
                                                         {"adopted_changed", e.adopted_changed()},
                                                         {"budget", e.budget()},
                                                         {"forwarded", e.forwarded()},
                                                         {"moved", e.moved()},
                                                         {"returned", e.returned()},
                                                         {"skipped_unusable", e.skipped_unusable()},
                                                         {"stranger", e.stranger()}};
      for (const auto& [event, n] : events) {
        w.Sample("ballast_established_second_chance_total", Label("event", event), n);
      }
      w.Family("ballast_established_second_chance_window_seconds", "gauge",
               "timeouts.adopted_bounce_ms: how long an adopted flow's packets may be bounced "
               "to a previous backend (0 = established second chance off).");
      w.Sample("ballast_established_second_chance_window_seconds", "",
               static_cast<double>(e.window_ms()) / 1000.0);
    }
    w.Family("ballast_bounce_interface", "gauge",
             "Always 1; a device the agent attached the lb program to by itself because "
             "backends' second-chance bounces arrive there (global.no_auto_bounce_interfaces "
             "off).");
    for (const std::string& dev : status->bounce_interfaces()) {
      w.Sample("ballast_bounce_interface", Label("device", dev), uint64_t{1});
    }
    if (status->flow_tables_size() > 0) {
      w.Family("ballast_flow_table_entries", "gauge",
               "Entries in a map of the connection table (live or not yet evicted; bounded "
               "scan): a full map evicts its least recently used flow for each new one.");
      for (const v1::FlowTable& t : status->flow_tables()) {
        w.Sample("ballast_flow_table_entries", Label("table", t.map()), t.entries());
      }
      w.Family("ballast_flow_table_capacity", "gauge",
               "Entries a map of the connection table holds (flow_capacity).");
      for (const v1::FlowTable& t : status->flow_tables()) {
        w.Sample("ballast_flow_table_capacity", Label("table", t.map()), t.capacity());
      }
    }

    std::vector<std::pair<std::string, const v1::VipStatus*>> vips;
    std::vector<BackendRow> rows;
    for (const v1::VipStatus& v : status->vips()) {
      const std::string vl = Label("vip", VipKeyText(v.key()));
      vips.emplace_back(vl, &v);
      for (const v1::BackendStatus& b : v.backends()) {
        rows.push_back({absl::StrCat(vl, ",", Label("backend", b.address())), &b});
      }
    }
    auto vip_family = [&](absl::string_view name, absl::string_view type, absl::string_view help,
                          auto get) {
      w.Family(name, type, help);
      for (const auto& [l, v] : vips) w.Sample(name, l, static_cast<uint64_t>(get(*v)));
    };
    vip_family("ballast_vip_packets_total", "counter", "Packets to the VIP.",
               [](const v1::VipStatus& v) { return v.packets(); });
    vip_family("ballast_vip_bytes_total", "counter", "Bytes to the VIP.",
               [](const v1::VipStatus& v) { return v.bytes(); });
    vip_family("ballast_vip_dropped_packets_total", "counter",
               "Packets to the VIP that were dropped (no backend, fenced, too big, ...).",
               [](const v1::VipStatus& v) { return v.dropped(); });
    vip_family("ballast_vip_table_size", "gauge", "Slots of the VIP's Maglev table.",
               [](const v1::VipStatus& v) { return v.table_size(); });
    vip_family("ballast_vip_backends", "gauge", "Backends configured for the VIP.",
               [](const v1::VipStatus& v) { return v.backends_size(); });
    vip_family("ballast_vip_table_history_versions", "gauge",
               "Earlier table versions kept for the VIP (established second chance: a "
               "connection moved between routers reaches a backend its slot had in them).",
               [](const v1::VipStatus& v) { return v.history_versions(); });
    vip_family("ballast_vip_frozen", "gauge",
               "1 while the fleet guard holds the VIP's weights (more than the configured share "
               "of its backends unwell at once: fleet-wide degradation).",
               [](const v1::VipStatus& v) { return v.frozen() ? 1 : 0; });

    auto backend_family = [&](absl::string_view name, absl::string_view type,
                              absl::string_view help, auto get) {
      w.Family(name, type, help);
      for (const BackendRow& r : rows) w.Sample(name, r.labels, static_cast<uint64_t>(get(*r.b)));
    };
    backend_family("ballast_backend_nominal_weight", "gauge", "Configured weight (0..1000).",
                   [](const v1::BackendStatus& b) { return b.nominal_weight(); });
    backend_family("ballast_backend_effective_weight", "gauge",
                   "Weight the Maglev table uses (0 while draining, evicted or pinned).",
                   [](const v1::BackendStatus& b) { return b.effective_weight(); });
    w.Family("ballast_backend_state", "gauge",
             "1 for the backend's current state, 0 for the others (active, draining, evicted, "
             "pinned).");
    for (const BackendRow& r : rows) {
      StateSet(w, "ballast_backend_state", r.labels, r.b->state(), BackendStates());
    }
    w.Family("ballast_backend_drain_deadline_timestamp_seconds", "gauge",
             "Unix time at which a draining backend's remaining flows are re-steered (only "
             "draining and evicted backends).");
    for (const BackendRow& r : rows) {
      if (r.b->drain_deadline_unix_ms() == 0) continue;
      w.Sample("ballast_backend_drain_deadline_timestamp_seconds", r.labels,
               static_cast<double>(r.b->drain_deadline_unix_ms()) / 1000.0);
    }
    backend_family("ballast_backend_score", "gauge", "Health score 0..100.",
                   [](const v1::BackendStatus& b) { return b.score(); });
    w.Family("ballast_backend_health", "gauge",
             "1 for what health checking decided, 0 for the other states (healthy, degraded, "
             "ramping, down, pinned; unchecked: no probe and no passive data). Absent while "
             "health checking is off.");
    for (const BackendRow& r : rows) {
      if (r.b->health().empty()) continue;
      StateSet(w, "ballast_backend_health", r.labels, r.b->health(), HealthStates());
    }
    // Health checking's per-backend record (HAProxy's check_failures_total,
    // check_up_down_total, check_last_change_seconds, downtime_seconds_total),
    // for the backends health checking evaluated; since this agent started.
    auto health_family = [&](absl::string_view name, absl::string_view type, absl::string_view help,
                             auto get) {
      w.Family(name, type, help);
      for (const BackendRow& r : rows) {
        if (!r.b->health().empty() && r.b->health_since_unix_ms() != 0) {
          w.Sample(name, r.labels, get(*r.b));
        }
      }
    };
    health_family("ballast_backend_probe_failures_total", "counter",
                  "Probes of the backend that failed, since the agent started.",
                  [](const v1::BackendStatus& b) { return b.probe_failures(); });
    health_family("ballast_backend_health_transitions_total", "counter",
                  "Changes of the backend's health state, since the agent started.",
                  [](const v1::BackendStatus& b) { return b.health_transitions(); });
    health_family("ballast_backend_health_last_change_timestamp_seconds", "gauge",
                  "Unix time the backend's health state took its current value (the agent's first "
                  "evaluation of it while it never changed).",
                  [](const v1::BackendStatus& b) {
                    return static_cast<double>(b.health_since_unix_ms()) / 1000.0;
                  });
    health_family("ballast_backend_health_down_seconds_total", "counter",
                  "Seconds health checking held the backend out (down or pinned), since the "
                  "agent started.",
                  [](const v1::BackendStatus& b) {
                    return static_cast<double>(b.health_down_ms()) / 1000.0;
                  });
    w.Family("ballast_backend_ramp_ratio", "gauge",
             "Share of the nominal weight the ramp allows, 0..1 (1 when not ramping).");
    for (const BackendRow& r : rows) {
      const bool ramp = !r.b->health().empty() && r.b->ramp_percent() > 0;
      w.Sample("ballast_backend_ramp_ratio", r.labels,
               ramp ? static_cast<double>(r.b->ramp_percent()) / 100.0 : 1.0);
    }
    backend_family("ballast_backend_table_slots", "gauge",
                   "Slots of the VIP's Maglev table that point at the backend.",
                   [](const v1::BackendStatus& b) { return b.table_slots(); });
    backend_family("ballast_backend_flows", "gauge",
                   "Live connections on the backend in the connection table (bounded scan).",
                   [](const v1::BackendStatus& b) { return b.flows(); });
    backend_family("ballast_backend_new_flows_total", "counter",
                   "New flows steered to the backend.",
                   [](const v1::BackendStatus& b) { return b.counters().new_flows(); });
    backend_family("ballast_backend_packets_total", "counter", "Packets forwarded to the backend.",
                   [](const v1::BackendStatus& b) { return b.counters().packets(); });
    backend_family("ballast_backend_bytes_total", "counter", "Bytes forwarded to the backend.",
                   [](const v1::BackendStatus& b) { return b.counters().bytes(); });
    backend_family("ballast_backend_syn_retransmits_total", "counter",
                   "Client SYNs repeated while waiting for the backend's handshake.",
                   [](const v1::BackendStatus& b) { return b.counters().syn_retransmits(); });
    backend_family("ballast_backend_client_rsts_total", "counter",
                   "RSTs sent by clients on the backend's flows.",
                   [](const v1::BackendStatus& b) { return b.counters().client_rsts(); });
    backend_family("ballast_backend_refused_syns_total", "counter",
                   "Client SYNs the backend bounced back: no listener there (second chance).",
                   [](const v1::BackendStatus& b) { return b.counters().refused_syns(); });
    backend_family("ballast_backend_second_chance_syns_total", "counter",
                   "Bounced SYNs sent to the backend as the flow's next choice.",
                   [](const v1::BackendStatus& b) { return b.counters().second_chance_syns(); });
    w.Family("ballast_backend_bounce_path_ok", "gauge",
             "1 while the lb program runs on the device through which the router reaches the "
             "backend, where its second-chance bounces arrive; 0 while they are lost there "
             "(lbctl status says why). Absent until the agent has looked.");
    for (const BackendRow& r : rows) {
      if (!r.b->has_bounce_path()) continue;
      w.Sample("ballast_backend_bounce_path_ok", r.labels,
               uint64_t{r.b->bounce_path().ok() ? 1u : 0u});
    }
    backend_family("ballast_backend_resteered_away_total", "counter",
                   "Flows moved off the backend (evicted, drain deadline).",
                   [](const v1::BackendStatus& b) { return b.counters().resteered_away(); });
    // Histograms: the data plane's buckets (bucket i: below 2^(16 + i) ns,
    // the last unbounded) made cumulative; _count is their total, _sum the
    // backend_stats sum of the same samples.
    auto histogram = [&](absl::string_view name, absl::string_view help, auto buckets,
                         auto sum_ns) {
      w.Family(name, "histogram", help);
      const std::string bucket_name = absl::StrCat(name, "_bucket");
      for (const BackendRow& r : rows) {
        const auto& b = buckets(*r.b);
        uint64_t cumulative = 0;
        for (int i = 0; i < b.size(); ++i) {
          cumulative += b[i];
          if (i + 1 == b.size()) break;
          w.Sample(
              bucket_name,
              absl::StrCat(r.labels, ",",
                           Label("le", absl::StrFormat("%.10g", std::ldexp(1.0, 16 + i) / 1e9))),
              cumulative);
        }
        w.Sample(bucket_name, absl::StrCat(r.labels, ",", Label("le", "+Inf")), cumulative);
        w.Sample(absl::StrCat(name, "_sum"), r.labels, static_cast<double>(sum_ns(*r.b)) / 1e9);
        w.Sample(absl::StrCat(name, "_count"), r.labels, cumulative);
      }
    };
    histogram(
        "ballast_backend_handshake_seconds",
        "TCP handshake time seen by the data plane (SYN to the client's completing ACK).",
        [](const v1::BackendStatus& b) -> const auto& { return b.counters().handshake_buckets(); },
        [](const v1::BackendStatus& b) { return b.counters().handshake_ns_sum(); });
    histogram(
        "ballast_backend_first_response_seconds",
        "Time from the client's first payload to its first ACK of server bytes.",
        [](const v1::BackendStatus& b) -> const auto& {
          return b.counters().first_response_buckets();
        },
        [](const v1::BackendStatus& b) { return b.counters().first_response_ns_sum(); });
  }

  if (process != nullptr) {
    w.Family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    w.Sample("process_resident_memory_bytes", "", process->resident_bytes);
    w.Family("process_cpu_seconds_total", "counter", "User and system CPU time in seconds.");
    w.Sample("process_cpu_seconds_total", "", process->cpu_seconds);
    w.Family("process_start_time_seconds", "gauge", "Unix time the process started.");
    w.Sample("process_start_time_seconds", "", process->start_time_seconds);
    w.Family("process_open_fds", "gauge", "Open file descriptors.");
    w.Sample("process_open_fds", "", process->open_fds);
  }
}

}  // namespace ballast::core
