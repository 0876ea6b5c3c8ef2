// The RouterEngine's health-checking port: what HealthController
// (health_controller.h) reads from the engine (HealthInputs), what it hands
// back (HealthDecision, HealthRecord) and the status-only view it sets
// (HealthView). Plain values; no locking of their own.
#ifndef BALLAST_AGENT_CORE_ENGINE_HEALTH_H_
#define BALLAST_AGENT_CORE_ENGINE_HEALTH_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/core/image.h"
#include "ballast/v1/agent.pb.h"
#include "ballast/v1/config.pb.h"
#include "ballast_abi.h"

namespace ballast::core {

// One backend as health checking sees it.
struct HealthBackend {
  std::string address;  // canonical
  uint32_t backend_id = 0;
  uint32_t nominal_weight = 0;
  uint32_t effective_weight = 0;  // what the table uses now (image.h ViewFromOverride)
  BackendMode mode = BackendMode::kActive;
  bool has_mark = false;
  v1::HealthMark mark;               // valid when has_mark
  ballast_backend_stats counters{};  // cumulative, summed over CPUs
  uint64_t refused_syns = 0;         // cumulative: SYNs it bounced (no listener)
  bool has_probe = false;            // the config gives a probe spec (else the default)
  v1::ProbeSpec probe;
};
struct HealthPool {
  v1::VipKey key;  // canonical
  dataplane::VipKey vip;
  std::string key_text;  // the pool's name in records and probe ids
  // How many times the operator asked to relearn this pool (RelearnHealth)
  // since the agent started: the controller relearns when it changes.
  uint64_t relearn_requests = 0;
  // The VIP is mode GUE: its probes go in GUE to this port (global.gue_port),
  // as its clients' packets do. 0: IP-in-IP.
  uint16_t gue_port = 0;
  std::vector<HealthBackend> backends;
};
struct HealthInputs {
  bool enabled = false;  // global.health is present
  v1::HealthSettings settings;
  std::vector<HealthPool> pools;
};

// What health checking decided for one backend.
struct HealthDecision {
  v1::VipKey vip;
  std::string address;
  bool clear = false;  // remove the mark (health checking was turned off)
  v1::HealthMark mark;
  bool pin = false;  // flap damping pinned it out, in this evaluation
};
// One automated action: audited (actor "automation") and sent as an event.
struct HealthRecord {
  std::string action;  // e.g. demote, promote, ramp_step, pin, freeze, health_weight
  std::string vip;
  std::string backend;
  std::string inputs_json;  // the observations that caused it
  std::string message;
};

// Status-only health details (not persisted): the score, conditions and
// last probe per backend and the fleet guard per VIP, shown by GetStatus().
struct BackendHealthView {
  uint32_t score = 100;
  std::string state;  // healthy | degraded | ramping | down | pinned | unchecked (no probe, no
                      // passive data)
  uint32_t ramp_percent = 100;
  std::vector<std::string> conditions;
  std::string last_probe;
  // This agent's record of `state` (HealthHistory, timeline.h) and of the
  // backend's probes.
  int64_t since_unix_ms = 0;
  uint64_t transitions = 0;
  int64_t down_ms = 0;
  uint64_t probe_failures = 0;
};
struct VipHealthView {
  bool frozen = false;
  int64_t frozen_since_unix_ms = 0;
};
struct HealthView {
  std::map<std::string, BackendHealthView> backends;  // by BackendIdKey(vip, address)
  std::map<dataplane::VipKey, VipHealthView> vips;
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_ENGINE_HEALTH_H_
