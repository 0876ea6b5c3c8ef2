// `lbctl vip quic-config|quic-rotate|quic-retire` (commands.cc's table
// lists them): a QUIC VIP's configurations, and a backend's export in the
// form docs/operations.md ("QUIC backends") describes.
#ifndef BALLAST_TOOLS_LBCTL_QUIC_COMMANDS_H_
#define BALLAST_TOOLS_LBCTL_QUIC_COMMANDS_H_

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "ballast/v1/api.pb.h"
#include "tools/lbctl/commands.h"

namespace ballast::lbctl {

absl::Status RunVipQuicConfig(Session& s, const Args& a, std::FILE* out);
absl::Status RunVipQuicRotate(Session& s, const Args& a, std::FILE* out);
absl::Status RunVipQuicRetire(Session& s, const Args& a, std::FILE* out);

// The export of backend `backend` of `vip` as a server loads it: one
// block of key=value lines per live configuration, the current one first
// (pure).
std::string FormatQuicServerConfig(const v1::VipKey& vip, const std::string& backend,
                                   const v1::ExportQuicConfigResponse& resp);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_QUIC_COMMANDS_H_
