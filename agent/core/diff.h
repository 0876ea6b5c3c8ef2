// The readable difference between two declarative configs: what
// `lbctl config diff` and `config apply --dry-run` print, and what a real
// apply reports having done.
//
// Lines, in a fixed order (global first, then VIPs by key text, within a VIP
// its own fields, then its backends by address):
//   "~ global.timeouts.tcp_idle_s 300 -> 600"
//   "+ vip 198.18.0.10:80/tcp"
//   "~ vip 198.18.0.10:80/tcp table_size 65537 -> 65521"
//   "- vip 198.18.0.11:80/tcp"
//   "+ backend 198.18.0.10:80/tcp 198.18.1.2 weight 1"
//   "~ backend 198.18.0.10:80/tcp 198.18.1.2 weight 1 -> 3"
//   "~ backend 198.18.0.10:80/tcp 198.18.1.2 probe.interval_ms 1000 -> 2000"
//   "- backend 198.18.0.10:80/tcp 198.18.1.3"
// A removed VIP lists its backends as removed too. Values are the config's
// own field values (0 = "default" stays 0). Equal configs give no lines.
//
// Pure and deterministic (same inputs, same lines, on every host);
// thread-safe. Inputs should be validated and canonical (CanonicalConfig) so
// that the same VIP or backend written two ways is not reported as changed.
#ifndef BALLAST_AGENT_CORE_DIFF_H_
#define BALLAST_AGENT_CORE_DIFF_H_

#include <string>
#include <vector>

#include "ballast/v1/config.pb.h"

namespace ballast::core {

std::vector<std::string> DiffConfig(const v1::Config& from, const v1::Config& to);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_DIFF_H_
