// How the agent names things: VIP keys as operators write them, canonical
// address text, and the keys of State.ids.
//
// Pure functions, thread-safe.
#ifndef BALLAST_AGENT_CORE_NAMES_H_
#define BALLAST_AGENT_CORE_NAMES_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/dataplane/vip_key.h"
#include "ballast/v1/config.pb.h"
#include "absl/strings/string_view.h"

namespace ballast::core {

// "tcp", "udp", or "proto<N>" for anything else.
std::string ProtocolName(v1::Protocol p);

// The operator's spelling of a VIP: "198.18.0.10:80/tcp", "[2001:db8::10]:443/udp".
// The address is canonicalized when it parses; otherwise it is used verbatim
// (so that error messages can still show what was given).
std::string VipKeyText(const v1::VipKey& key);

// Parses the VipKeyText() form. InvalidArgument with an example otherwise.
absl::StatusOr<v1::VipKey> ParseVipKeyText(absl::string_view text);

// The data plane's view of a VIP key. InvalidArgument on a bad address or
// protocol (callers validate first; this is the boundary check).
absl::StatusOr<dataplane::VipKey> ToDataplaneKey(const v1::VipKey& key);

// Whether `stored` (a VIP key of a state's config) names `key`: port and
// protocol are compared first, and the address is parsed only when they
// match. A stored key that does not parse names nothing.
bool SameVip(const v1::VipKey& stored, const dataplane::VipKey& key);

// Canonical text of an address ("2001:DB8::1" -> "2001:db8::1"); the input
// unchanged if it does not parse.
std::string CanonicalAddress(absl::string_view text);

// A copy of `key` with its address canonicalized.
v1::VipKey CanonicalVipKey(const v1::VipKey& key);

// Keys of State.ids (see agent.proto): "vip <vip text>" and
// "backend <vip text> <address>", both with canonical addresses.
std::string VipIdKey(const v1::VipKey& key);
std::string BackendIdKey(const v1::VipKey& vip, absl::string_view address);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_NAMES_H_
