// Classic libpcap file writer (format 2.4, microsecond timestamps, link type
// Ethernet), so test outputs can be read by tshark / wireshark.
//
// Writes the whole file at once; no state is kept between calls.
#ifndef BALLAST_TESTS_LIB_PCAP_H_
#define BALLAST_TESTS_LIB_PCAP_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tests/lib/packet.h"

namespace ballast::pktgen {

// Writes `frames` (Ethernet) to `path`, replacing it; frame i gets the
// timestamp i microseconds after the epoch so the order is visible.
absl::Status WritePcap(const std::string& path, const std::vector<Bytes>& frames);

}  // namespace ballast::pktgen

#endif  // BALLAST_TESTS_LIB_PCAP_H_
