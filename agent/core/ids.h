// Stable data-plane ids for VIPs and backends, kept in State.ids.
//
// The ids are what the pinned maps hold (vip_id indexes maglev_tables and
// vip_stats; backend ids fill the Maglev slots and the flow table), so they
// must survive restarts: a restarted agent reads them from the state file and
// finds the maps already consistent with them.
//
// Keys of State.ids:
//   "vip <vip text>"                  -> vip_id in 1..1023
//   "backend <vip text> <address>"    -> backend id in 1..16383
//   "next vip", "next backend"        -> allocation cursors
// A new VIP or backend gets the first free id at or after the cursor
// (wrapping), and the cursor moves past it. So an id that was just released
// (a deleted backend, whose flows may still sit in the connection table) is
// not handed out again until every other id has been used.
//
// Pure functions on the State message; thread-safe.
#ifndef BALLAST_AGENT_CORE_IDS_H_
#define BALLAST_AGENT_CORE_IDS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::core {

// Makes state->ids match state->config: keeps the ids of VIPs and backends
// that are still configured, drops the others, allocates new ones.
// ResourceExhausted if the config needs more ids than exist (validated
// configs never do).
absl::Status AssignIds(v1::State* state);

// The same for a change confined to one VIP: makes the ids of the VIP `key`
// match `vip` (its new config; null when the VIP was deleted), i.e. drops the
// ids of its removed backends (or all its ids) and allocates the missing
// ones. Given that every other VIP's ids were already right, the result
// equals AssignIds(state). `key` and `vip` hold canonical addresses.
absl::Status UpdateIdsOfVip(v1::State* state, const v1::VipKey& key, const v1::Vip* vip);

// The id of a configured VIP / backend, 0 if it has none.
uint32_t VipIdOf(const v1::State& state, const v1::VipKey& vip);
uint32_t BackendIdOf(const v1::State& state, const v1::VipKey& vip, const std::string& address);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_IDS_H_
