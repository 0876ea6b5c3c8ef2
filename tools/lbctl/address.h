// Addresses as operators write them on the lbctl command line.
//
//   VIP      198.18.0.10:80/tcp   [2001:db8::10]:443/tcp   198.18.0.10:0/udp
//            (port 0 = every port of the address; IPv6 always in brackets)
//   backend  198.18.1.10   198.18.1.10:50   2001:db8::1   [2001:db8::1]:50
//            (the number after the address is the weight, not a port:
//             backends receive the VIP's own port through encapsulation)
//
// Addresses come back in canonical text (inet_ntop), so "2001:DB8:0::10"
// and "2001:db8::10" name the same VIP or backend. Errors are
// INVALID_ARGUMENT with a message that shows the accepted form. Pure
// functions, thread-safe.
#ifndef BALLAST_TOOLS_LBCTL_ADDRESS_H_
#define BALLAST_TOOLS_LBCTL_ADDRESS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ballast/v1/config.pb.h"

namespace ballast::lbctl {

// An IPv4 or IPv6 address (IPv6 optionally in brackets), canonicalized.
absl::StatusOr<std::string> ParseIp(absl::string_view text);

absl::StatusOr<v1::VipKey> ParseVipKey(absl::string_view text);
// Inverse of ParseVipKey: "198.18.0.10:80/tcp", "[2001:db8::10]:443/tcp".
std::string FormatVipKey(const v1::VipKey& key);

struct BackendSpec {
  std::string address;
  std::optional<uint32_t> weight;  // absent: the caller's default
};
absl::StatusOr<BackendSpec> ParseBackendSpec(absl::string_view text);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_ADDRESS_H_
