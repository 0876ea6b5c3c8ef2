// Independent parser for frames the data plane emits, used by CHECK steps.
//
// It shares no code with the BPF program: it decodes Ethernet, one VLAN tag,
// IPv4 (options), IPv6 (extension headers), TCP, UDP, ICMP and ICMPv6, and
// follows encapsulation (IP protocol 4 / 41) and ICMP error quotes into an
// inner IpView. Every checksum that can be verified is verified and reported,
// not asserted, so tests can say which one is wrong.
//
// Pure functions; the views own copies of the bytes they describe.
#ifndef BALLAST_TESTS_LIB_PARSE_H_
#define BALLAST_TESTS_LIB_PARSE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/lib/packet.h"

namespace ballast::pktgen {

struct IpView;

struct L4View {
  uint8_t proto = 0;
  size_t offset = 0;      // from the start of the IP packet
  size_t length = 0;      // L4 bytes per the IP length fields
  bool complete = false;  // all `length` bytes are present
  uint16_t sport = 0, dport = 0;
  uint32_t seq = 0, ack = 0;
  uint8_t flags = 0;
  uint8_t icmp_type = 0, icmp_code = 0;
  uint32_t icmp_rest = 0;
  // Verified when the segment is complete and not a fragment; nullopt when
  // it cannot be checked (truncated quote, fragment, UDP checksum 0).
  std::optional<bool> checksum_ok;
  Bytes payload;  // bytes after the L4 header that are present
};

struct IpView {
  int family = 0;
  Addr src, dst;
  uint8_t ttl = 0;
  uint8_t tos = 0;                 // IPv4 TOS / IPv6 traffic class
  uint8_t proto = 0;               // final protocol after extension headers
  size_t header_len = 0;           // IPv4 header with options / IPv6 header + extensions
  size_t total_len = 0;            // per the length field(s)
  bool header_checksum_ok = true;  // IPv4 only
  bool df = false, mf = false;
  uint16_t frag_offset8 = 0;
  bool is_fragment = false;
  uint16_t id = 0;
  uint32_t flow_label = 0;
  std::vector<uint8_t> ext_types;  // IPv6 extension headers in order
  Bytes bytes;                     // the packet as present (at most total_len)
  std::optional<L4View> l4;
  // Encapsulated packet (proto 4/41) or the packet quoted by an ICMP error.
  std::shared_ptr<const IpView> inner;
};

struct FrameView {
  Mac src, dst;
  std::optional<uint16_t> vlan;
  uint16_t ethertype = 0;
  std::optional<IpView> ip;  // set for IPv4/IPv6 frames
};

// Parses an Ethernet frame; an error says which layer is malformed.
absl::StatusOr<FrameView> ParseFrame(std::span<const uint8_t> frame);

// Parses an IP packet. With `quoted` (the body of an ICMP error) the packet
// may be cut short of its length fields.
absl::StatusOr<IpView> ParseIp(std::span<const uint8_t> packet, bool quoted = false);

// OK if every verifiable checksum in `ip` and its inner packets is right;
// otherwise names the first bad one.
absl::Status CheckChecksums(const IpView& ip);

}  // namespace ballast::pktgen

#endif  // BALLAST_TESTS_LIB_PARSE_H_
