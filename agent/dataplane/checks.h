// What the data plane accepts: the checks every implementation of the
// port (port.h) runs before it writes anything, so the real maps and the
// in-memory fake refuse the same input with the same message. Pure
// functions; thread-safe.
#ifndef BALLAST_AGENT_DATAPLANE_CHECKS_H_
#define BALLAST_AGENT_DATAPLANE_CHECKS_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "agent/dataplane/types.h"

namespace ballast::dataplane {

// InvalidArgument unless the id is in 1..BALLAST_MAX_VIPS-1 (resp. _BACKENDS).
absl::Status CheckVipId(uint32_t vip_id);
absl::Status CheckBackendId(uint32_t id);

// Settings the program can run with: sources of the right family, known
// policy bits, non-zero timeouts, an ICMP budget in range, a SYN retry age
// below the SYN idle timeout.
absl::Status CheckSettings(const Settings& s);
// A VIP key UpsertVip takes: TCP or UDP, a specified address.
absl::Status CheckVipKey(const VipKey& key);
// SetBackend's arguments: id, state, a drain deadline only when draining,
// an address unless unused.
absl::Status CheckBackend(uint32_t id, const IpAddress& addr, ballast_backend_state state,
                          uint64_t drain_deadline_ns);
// A Maglev table SetTable takes: a prime size up to BALLAST_MAX_TABLE_SIZE,
// every slot a backend id in range (0 = none).
absl::Status CheckTable(uint32_t vip_id, std::span<const uint32_t> table);

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_CHECKS_H_
