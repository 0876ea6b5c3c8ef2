// tshark as an independent dissector of frames the data plane emits.
//
// Dissect() writes the frames to a pcap file in a private temporary
// directory, runs tshark on it with IPv4/TCP/UDP checksum validation turned
// on, and returns the requested fields for each frame (a field that occurs
// several times, e.g. ip.src of an IPv4-in-IPv4 packet, comes back as
// "outer,inner"). The temporary files are removed before it returns.
// tshark missing or failing is an error (tests must fail, not skip).
#ifndef BALLAST_TESTS_BPF_TSHARK_H_
#define BALLAST_TESTS_BPF_TSHARK_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/lib/packet.h"

namespace ballast::bpftest {

using TsharkRow = std::map<std::string, std::string>;  // field -> value ("" = absent)

// `options` are more tshark options, e.g. "-d udp.port==6080,ip" (decode
// as: GUE has no dissector of its own).
absl::StatusOr<std::vector<TsharkRow>> Dissect(const std::vector<pktgen::Bytes>& frames,
                                               const std::vector<std::string>& fields,
                                               const std::string& options = "");

// Values of a multi-occurrence field ("a,b" -> {"a","b"}; "" -> {}).
std::vector<std::string> SplitValues(const std::string& value);

}  // namespace ballast::bpftest

#endif  // BALLAST_TESTS_BPF_TSHARK_H_
