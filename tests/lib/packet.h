// Packet builder for BPF tests and the XDP benchmark.
//
// PacketBuilder describes one frame layer by layer (Ethernet, an optional
// 802.1Q tag, one IP header with IPv4 options or IPv6 extension headers, one
// L4 header and a payload) and serializes it with every length and checksum
// correct, unless a test asks for a defect on purpose (CutL4, Truncate).
// An ICMP error quoting another packet is built from two builders: the
// quoted packet's BuildIp() bytes are passed to Quote().
//
// Value type, no global state; not thread-safe per instance. Build() does not
// change the builder, so one description can produce a frame many times.
// Misuse (Tcp() before an IP layer, a bad address literal) aborts with a
// message: these are test fixtures, and a wrong fixture must not pass.
#ifndef BALLAST_TESTS_LIB_PACKET_H_
#define BALLAST_TESTS_LIB_PACKET_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ballast::pktgen {

using Bytes = std::vector<uint8_t>;

struct Mac {
  std::array<uint8_t, 6> b{};
  // "02:00:00:00:00:01"; aborts on a malformed literal.
  static Mac Parse(std::string_view text);
  std::string ToString() const;
  bool operator==(const Mac&) const = default;
};

// An IPv4 or IPv6 address in network byte order; IPv4 uses b[0..3] and
// leaves the rest zero (the layout of the ballast ABI's address fields).
struct Addr {
  uint8_t family = 0;  // 4 or 6
  std::array<uint8_t, 16> b{};
  // "198.18.0.1" or "2001:db8::1"; aborts on a malformed literal.
  static Addr Parse(std::string_view text);
  std::string ToString() const;
  size_t size() const { return family == 4 ? 4 : 16; }
  bool operator==(const Addr&) const = default;
};

// TCP flag bits (byte 13 of the TCP header).
namespace tcp {
inline constexpr uint8_t kFin = 0x01;
inline constexpr uint8_t kSyn = 0x02;
inline constexpr uint8_t kRst = 0x04;
inline constexpr uint8_t kPsh = 0x08;
inline constexpr uint8_t kAck = 0x10;
}  // namespace tcp

// IP protocol / IPv6 next-header numbers used by the builder and parser.
namespace proto {
inline constexpr uint8_t kHopByHop = 0;
inline constexpr uint8_t kIcmp = 1;
inline constexpr uint8_t kIpip = 4;
inline constexpr uint8_t kTcp = 6;
inline constexpr uint8_t kUdp = 17;
inline constexpr uint8_t kIpv6 = 41;
inline constexpr uint8_t kRouting = 43;
inline constexpr uint8_t kFragment = 44;
inline constexpr uint8_t kIcmp6 = 58;
inline constexpr uint8_t kNoNext = 59;
inline constexpr uint8_t kDestOpts = 60;
}  // namespace proto

// UDP port of GUE (IANA): the parser reads an IP packet right after a UDP
// header to this port as encapsulated (GUE version 1, ballast's `mode: GUE`).
inline constexpr uint16_t kGuePort = 6080;

inline constexpr uint16_t kEthIp4 = 0x0800;
inline constexpr uint16_t kEthIp6 = 0x86dd;
inline constexpr uint16_t kEthVlan = 0x8100;
inline constexpr uint16_t kEthArp = 0x0806;

void PutBe16(uint8_t* p, uint16_t v);
void PutBe32(uint8_t* p, uint32_t v);
uint16_t GetBe16(const uint8_t* p);
uint32_t GetBe32(const uint8_t* p);

class PacketBuilder {
 public:
  // ---- L2 ----
  PacketBuilder& Eth(const Mac& src, const Mac& dst);
  PacketBuilder& Vlan(uint16_t vid, uint8_t pcp = 0);
  // Ethertype after Ethernet/VLAN; set automatically from the IP layer, set
  // it explicitly for non-IP frames (then Raw() supplies the body).
  PacketBuilder& EtherType(uint16_t type);

  // ---- L3 (exactly one of Ip4/Ip6) ----
  PacketBuilder& Ip4(const Addr& src, const Addr& dst);
  PacketBuilder& Ip6(const Addr& src, const Addr& dst);
  PacketBuilder& Ttl(uint8_t ttl);  // IPv4 TTL or IPv6 hop limit (default 64)
  PacketBuilder& Tos(uint8_t tos);  // IPv4 TOS or IPv6 traffic class
  PacketBuilder& Df(bool df);       // IPv4 don't-fragment (default true)
  PacketBuilder& IpId(uint16_t id);
  // IPv4 options, padded with end-of-list bytes to a multiple of 4 (<= 40).
  PacketBuilder& Ip4Options(const Bytes& options);
  // IPv4 fragment: offset in 8-byte units, more-fragments flag.
  PacketBuilder& Ip4Fragment(uint16_t offset8, bool more);
  PacketBuilder& FlowLabel(uint32_t label);
  // IPv6 hop-by-hop (0), routing (43) or destination options (60) header of
  // 8 * (1 + len8) bytes, filled with PadN; added in call order.
  PacketBuilder& Ip6Ext(uint8_t type, uint8_t len8 = 0);
  // IPv6 fragment header (44): offset in 8-byte units, M flag, ident.
  PacketBuilder& Ip6Fragment(uint16_t offset8, bool more, uint32_t ident = 0x1234);
  // Overrides the final next-header / protocol (e.g. AH 51 with Raw()).
  PacketBuilder& L4Proto(uint8_t protocol);

  // ---- L4 (at most one) ----
  PacketBuilder& Tcp(uint16_t sport, uint16_t dport, uint8_t flags, uint32_t seq = 1000,
                     uint32_t ack = 0, uint16_t window = 64240);
  // TCP options (e.g. MSS), padded with NOPs to a multiple of 4.
  PacketBuilder& TcpOptions(const Bytes& options);
  PacketBuilder& Udp(uint16_t sport, uint16_t dport);
  // ICMP (IPv4) or ICMPv6 (IPv6) header: type, code, 32-bit rest of header.
  PacketBuilder& Icmp(uint8_t type, uint8_t code, uint32_t rest = 0);
  // Body bytes after the L4 header (or the whole L3 payload without L4, or
  // the whole frame body after the ethertype for non-IP).
  PacketBuilder& Payload(const Bytes& payload);
  PacketBuilder& PayloadSize(size_t n);  // n bytes of a recognizable pattern
  // ICMP error body: the quoted IP packet (from another builder's BuildIp()),
  // cut to `max_len` bytes.
  PacketBuilder& Quote(const Bytes& ip_packet, size_t max_len = 1232);

  // ---- defects ----
  // Keeps only the first n bytes of the L4 header + payload, computing the
  // L4 checksum first; IP lengths describe the cut packet (so the L3 is valid
  // and only L4 is truncated).
  PacketBuilder& CutL4(size_t n);

  // Full frame (Ethernet required).
  Bytes Build() const;
  // The IP packet alone (from the IP header on).
  Bytes BuildIp() const;

 private:
  struct Ext {
    uint8_t type;
    uint8_t len8;
    uint16_t frag_offset8;
    bool frag_more;
    uint32_t frag_ident;
  };
  Bytes BuildL4(const Addr& src, const Addr& dst, uint8_t l4proto) const;
  uint8_t FinalProto() const;

  std::optional<Mac> eth_src_, eth_dst_;
  std::optional<uint16_t> vlan_;
  uint8_t vlan_pcp_ = 0;
  std::optional<uint16_t> ethertype_;
  int family_ = 0;
  Addr src_, dst_;
  uint8_t ttl_ = 64;
  uint8_t tos_ = 0;
  bool df_ = true;
  uint16_t ip_id_ = 0x4242;
  Bytes ip4_options_;
  uint16_t frag_offset8_ = 0;
  bool frag_more_ = false;
  uint32_t flow_label_ = 0;
  std::vector<Ext> exts_;
  std::optional<uint8_t> l4proto_override_;
  enum class L4 { kNone, kTcp, kUdp, kIcmp } l4_ = L4::kNone;
  uint16_t sport_ = 0, dport_ = 0;
  uint8_t tcp_flags_ = 0;
  uint32_t seq_ = 0, ack_ = 0;
  uint16_t window_ = 0;
  Bytes tcp_options_;
  uint8_t icmp_type_ = 0, icmp_code_ = 0;
  uint32_t icmp_rest_ = 0;
  Bytes payload_;
  std::optional<size_t> cut_l4_;
};

// The IP packet inside an Ethernet frame (after Ethernet and any VLAN tag);
// aborts if the frame is not IP.
Bytes IpPacketOf(const Bytes& frame);

// Hex dump for failure messages.
std::string HexDump(const Bytes& bytes);

}  // namespace ballast::pktgen

#endif  // BALLAST_TESTS_LIB_PACKET_H_
