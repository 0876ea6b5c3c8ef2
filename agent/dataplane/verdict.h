// Stable names of the data plane's counters.
//
// The names are part of the operator interface (lbdp output, metrics labels
// later): snake_case, never renamed once shipped. A name exists for every
// value of enum ballast_verdict and enum ballast_decap_verdict; a value out
// of range yields "unknown". Pure functions, thread-safe.
#ifndef BALLAST_AGENT_DATAPLANE_VERDICT_H_
#define BALLAST_AGENT_DATAPLANE_VERDICT_H_

#include <string_view>

#include "ballast_abi.h"

namespace ballast::dataplane {

// e.g. BALLAST_V_PASS_NOT_VIP -> "pass_not_vip".
std::string_view VerdictName(ballast_verdict v);

// e.g. BALLAST_DECAP_V_BAD_INNER -> "bad_inner".
std::string_view DecapVerdictName(ballast_decap_verdict v);

// Snake_case name of a backend state: "unused", "active", "draining", "evicted".
std::string_view BackendStateName(ballast_backend_state s);

// Snake_case name of a flow state: "syn_sent", "established", "closing", "udp".
std::string_view FlowStateName(ballast_flow_state s);

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_VERDICT_H_
