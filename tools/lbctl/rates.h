// Rates between two status snapshots for `lbctl status --watch`: packets
// and new flows per second per VIP and backend. Pure; thread-safe.
#ifndef BALLAST_TOOLS_LBCTL_RATES_H_
#define BALLAST_TOOLS_LBCTL_RATES_H_

#include <string>

#include "ballast/v1/api.pb.h"

namespace ballast::lbctl {

// A table of packets/s and new flows/s per VIP and backend over `seconds`
// between `prev` and `cur`. VIPs and backends are matched by key and
// address; one new in `cur`, or a counter that went backwards (the backend
// was deleted and added again), shows "-".
std::string FormatRates(const v1::StatusResponse& prev, const v1::StatusResponse& cur,
                        double seconds);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_RATES_H_
