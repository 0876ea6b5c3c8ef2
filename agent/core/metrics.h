// Prometheus metrics in the text exposition format (version 0.0.4).
//
// Families (labels vip="198.18.0.10:80/tcp", backend="198.18.1.2"):
//   agent:   ballast_up, ballast_agent_info{version,interface,attach_mode},
//            ballast_config_generation, ballast_last_map_update_timestamp_seconds,
//            ballast_map_update_errors_total, ballast_evictions_total,
//            ballast_audit_append_failures_total,
//            ballast_audit_records_dropped_total (the start time is
//            process_start_time_seconds)
//   data plane: ballast_verdict_packets_total{verdict} (names from
//            dataplane::VerdictName)
//   per VIP: ballast_vip_{packets,bytes,dropped}_total, ballast_vip_table_size,
//            ballast_vip_backends
//   per backend: ballast_backend_{nominal,effective}_weight,
//            ballast_backend_state{state} and ballast_backend_health{state}
//            (state sets: a series per state, 1 for the current one, 0 for
//            the others), ballast_backend_ramp_ratio (0..1),
//            ballast_backend_{probe_failures,health_transitions}_total,
//            ballast_backend_health_last_change_timestamp_seconds,
//            ballast_backend_health_down_seconds_total (health checking on),
//            ballast_backend_drain_deadline_timestamp_seconds (draining and
//            evicted backends),
//            ballast_backend_score, ballast_backend_table_slots,
//            ballast_backend_flows, ballast_backend_{new_flows,packets,bytes,
//            syn_retransmits,client_rsts,resteered_away}_total,
//            ballast_backend_handshake_seconds and
//            ballast_backend_first_response_seconds (summaries: _sum, _count)
//   process: process_resident_memory_bytes, process_cpu_seconds_total,
//            process_start_time_seconds, process_open_fds
//
// Pure rendering (RenderMetrics) is separate from reading /proc
// (ReadProcessStats), so it is tested on fixed inputs. Thread-safe.
#ifndef BALLAST_AGENT_CORE_METRICS_H_
#define BALLAST_AGENT_CORE_METRICS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "agent/core/router_engine.h"
#include "ballast/v1/api.pb.h"
#include "absl/strings/string_view.h"

namespace ballast::core {

struct ProcessStats {
  uint64_t resident_bytes = 0;
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // unix
  uint64_t open_fds = 0;
};

// Reads /proc/self/{stat,statm,fd} and /proc/stat (boot time).
absl::StatusOr<ProcessStats> ReadProcessStats();

// `status` may be null when it could not be read (ballast_up is then 0 and
// only agent and process families are written).
std::string RenderMetrics(const v1::StatusResponse* status, const EngineHealth& health,
                          const ProcessStats* process);

// The same text, handed to `emit` in pieces (each ending at a line end) as
// it is rendered, for streaming a large scrape.
using MetricsSink = std::function<void(absl::string_view)>;
void RenderMetrics(const v1::StatusResponse* status, const EngineHealth& health,
                   const ProcessStats* process, const MetricsSink& emit);

// The label value escaping of the text format (\\, \", \n).
std::string EscapeLabelValue(absl::string_view v);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_METRICS_H_
