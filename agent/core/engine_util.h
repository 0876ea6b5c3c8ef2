// Small helpers shared by the RouterEngine's files (router_engine.cc,
// engine_*.cc): editing a state copy, audit inputs, events. Not an API:
// nothing outside the engine includes this. Pure functions on their
// arguments; thread-safety is the caller's (the engine holds its lock).
#ifndef BALLAST_AGENT_CORE_ENGINE_UTIL_H_
#define BALLAST_AGENT_CORE_ENGINE_UTIL_H_

#include <string>

#include <google/protobuf/message.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/dataplane/vip_key.h"
#include "ballast/v1/agent.pb.h"
#include "ballast/v1/api.pb.h"
#include "ballast/v1/config.pb.h"

namespace ballast::core::engine_util {

// `m` as JSON with the proto's field names (an audit record's inputs).
std::string ToJson(const google::protobuf::Message& m);

// `s` with "what: " before its message (OK stays OK).
absl::Status Annotate(const absl::Status& s, absl::string_view what);

v1::Event MakeEvent(std::string kind, std::string vip, std::string backend, std::string message);

// The index in `state`'s config of the VIP with key `key`, or -1.
int VipIndex(const v1::State& state, const dataplane::VipKey& key);

// The VIP of `state` with key `key`, or null (also when `key` does not
// parse: it names no VIP).
v1::Vip* FindVip(v1::State& state, const dataplane::VipKey& key);
v1::Vip* FindVip(v1::State& state, const v1::VipKey& key);

// The override of a backend of `vip` in `state`, or null.
v1::BackendOverride* FindOverrideMut(v1::State& state, const v1::VipKey& vip,
                                     const std::string& address);
void EraseOverride(v1::State& state, const v1::VipKey& vip, const std::string& address);

// Drops overrides of backends the config no longer has, and overrides that
// hold nothing. O(overrides x backends of their VIP).
void PruneOverrides(v1::State& state);

}  // namespace ballast::core::engine_util

#endif  // BALLAST_AGENT_CORE_ENGINE_UTIL_H_
