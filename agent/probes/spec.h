// Validation and effective values of a v1::ProbeSpec's kind-specific fields.
//
// ValidateProbeSpec() checks what agent/core/validate.cc does not: the
// fields that only one kind uses (HTTP method, body regex, TLS options, gRPC
// method and descriptor set) and that each is well formed (the regex
// compiles, file paths are absolute). It reads no file: a configuration is
// valid or not whatever the files on this host are.
//
// CheckProbeFiles() checks what needs the files: the CA bundle is readable,
// the descriptor set loads and defines the method, the request text parses
// as the method's input message, and every assertion names an existing
// field with a literal of its type. MakeProber() runs it; a probe whose
// files are missing or wrong is a failing probe, not an invalid config.
//
// Errors of both are InvalidArgument "<field_path>.<field>: <problem>".
// Stateless and thread-safe.
#ifndef BALLAST_AGENT_PROBES_SPEC_H_
#define BALLAST_AGENT_PROBES_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "ballast/v1/config.pb.h"

namespace ballast::probes {

absl::Status ValidateProbeSpec(const v1::ProbeSpec& spec, std::string_view field_path);
absl::Status CheckProbeFiles(const v1::ProbeSpec& spec, std::string_view field_path);

// Largest udp_request: one datagram that fits any path (1280-byte IPv6
// minimum, less the outer header of the encapsulation and the headers).
inline constexpr size_t kMaxUdpRequest = 1024;

// Effective values (defaults applied).
v1::ProbeSpec::Kind KindOf(const v1::ProbeSpec& spec);            // UNSPECIFIED -> TCP
std::string HttpMethodOf(const v1::ProbeSpec& spec);              // "" -> "GET"
std::string HttpPathOf(const v1::ProbeSpec& spec);                // "" -> "/"
std::vector<uint32_t> HttpStatusesOf(const v1::ProbeSpec& spec);  // [] -> [200]
// SNI / certificate name: tls_server_name, else http_host, else "".
std::string TlsServerNameOf(const v1::ProbeSpec& spec);
uint32_t IntervalMsOf(const v1::ProbeSpec& spec);  // 0 -> 1000
uint32_t TimeoutMsOf(const v1::ProbeSpec& spec);   // 0 -> min(500, interval)
const char* KindName(v1::ProbeSpec::Kind kind);    // "TCP", "HTTP", ...

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_SPEC_H_
