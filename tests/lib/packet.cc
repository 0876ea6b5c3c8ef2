#include "tests/lib/packet.h"

#include <arpa/inet.h>

#include <algorithm>

#include <cstdio>
#include <cstdlib>

#include "tests/lib/checksum.h"

namespace ballast::pktgen {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "pktgen: %s\n", what.c_str());
  std::abort();
}

}  // namespace

void PutBe16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void PutBe32(uint8_t* p, uint32_t v) {
  PutBe16(p, static_cast<uint16_t>(v >> 16));
  PutBe16(p + 2, static_cast<uint16_t>(v));
}
uint16_t GetBe16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t GetBe32(const uint8_t* p) { return (uint32_t{GetBe16(p)} << 16) | GetBe16(p + 2); }

Mac Mac::Parse(std::string_view text) {
  Mac m;
  unsigned v[6];
  std::string s(text);
  if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
    Die("bad MAC literal '" + s + "'");
  for (int i = 0; i < 6; ++i) m.b[i] = static_cast<uint8_t>(v[i]);
  return m;
}

std::string Mac::ToString() const {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4],
                b[5]);
  return buf;
}

Addr Addr::Parse(std::string_view text) {
  Addr a;
  std::string s(text);
  if (inet_pton(AF_INET, s.c_str(), a.b.data()) == 1) {
    a.family = 4;
  } else if (inet_pton(AF_INET6, s.c_str(), a.b.data()) == 1) {
    a.family = 6;
  } else {
    Die("bad IP literal '" + s + "'");
  }
  return a;
}

std::string Addr::ToString() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (family == 4) inet_ntop(AF_INET, b.data(), buf, sizeof buf);
  if (family == 6) inet_ntop(AF_INET6, b.data(), buf, sizeof buf);
  return buf;
}

PacketBuilder& PacketBuilder::Eth(const Mac& src, const Mac& dst) {
  eth_src_ = src;
  eth_dst_ = dst;
  return *this;
}
PacketBuilder& PacketBuilder::Vlan(uint16_t vid, uint8_t pcp) {
  vlan_ = vid;
  vlan_pcp_ = pcp;
  return *this;
}
PacketBuilder& PacketBuilder::EtherType(uint16_t type) {
  ethertype_ = type;
  return *this;
}
PacketBuilder& PacketBuilder::Ip4(const Addr& src, const Addr& dst) {
  if (src.family != 4 || dst.family != 4) Die("Ip4() needs IPv4 addresses");
  family_ = 4;
  src_ = src;
  dst_ = dst;
  return *this;
}
PacketBuilder& PacketBuilder::Ip6(const Addr& src, const Addr& dst) {
  if (src.family != 6 || dst.family != 6) Die("Ip6() needs IPv6 addresses");
  family_ = 6;
  src_ = src;
  dst_ = dst;
  return *this;
}
PacketBuilder& PacketBuilder::Ttl(uint8_t ttl) {
  ttl_ = ttl;
  return *this;
}
PacketBuilder& PacketBuilder::Tos(uint8_t tos) {
  tos_ = tos;
  return *this;
}
PacketBuilder& PacketBuilder::Df(bool df) {
  df_ = df;
  return *this;
}
PacketBuilder& PacketBuilder::IpId(uint16_t id) {
  ip_id_ = id;
  return *this;
}
PacketBuilder& PacketBuilder::Ip4Options(const Bytes& options) {
  ip4_options_ = options;
  while (ip4_options_.size() % 4) ip4_options_.push_back(0);  // end of option list
  if (ip4_options_.size() > 40) Die("IPv4 options longer than 40 bytes");
  return *this;
}
PacketBuilder& PacketBuilder::Ip4Fragment(uint16_t offset8, bool more) {
  frag_offset8_ = offset8;
  frag_more_ = more;
  df_ = false;
  return *this;
}
PacketBuilder& PacketBuilder::FlowLabel(uint32_t label) {
  flow_label_ = label & 0xfffffu;
  return *this;
}
PacketBuilder& PacketBuilder::Ip6Ext(uint8_t type, uint8_t len8) {
  exts_.push_back(Ext{type, len8, 0, false, 0});
  return *this;
}
PacketBuilder& PacketBuilder::Ip6Fragment(uint16_t offset8, bool more, uint32_t ident) {
  exts_.push_back(Ext{proto::kFragment, 0, offset8, more, ident});
  return *this;
}
PacketBuilder& PacketBuilder::L4Proto(uint8_t protocol) {
  l4proto_override_ = protocol;
  return *this;
}
PacketBuilder& PacketBuilder::Tcp(uint16_t sport, uint16_t dport, uint8_t flags, uint32_t seq,
                                  uint32_t ack, uint16_t window) {
  l4_ = L4::kTcp;
  sport_ = sport;
  dport_ = dport;
  tcp_flags_ = flags;
  seq_ = seq;
  ack_ = ack;
  window_ = window;
  return *this;
}
PacketBuilder& PacketBuilder::TcpOptions(const Bytes& options) {
  tcp_options_ = options;
  while (tcp_options_.size() % 4) tcp_options_.push_back(1);  // NOP
  if (tcp_options_.size() > 40) Die("TCP options longer than 40 bytes");
  return *this;
}
PacketBuilder& PacketBuilder::Udp(uint16_t sport, uint16_t dport) {
  l4_ = L4::kUdp;
  sport_ = sport;
  dport_ = dport;
  return *this;
}
PacketBuilder& PacketBuilder::Icmp(uint8_t type, uint8_t code, uint32_t rest) {
  l4_ = L4::kIcmp;
  icmp_type_ = type;
  icmp_code_ = code;
  icmp_rest_ = rest;
  return *this;
}
PacketBuilder& PacketBuilder::Payload(const Bytes& payload) {
  payload_ = payload;
  return *this;
}
PacketBuilder& PacketBuilder::PayloadSize(size_t n) {
  payload_.resize(n);
  for (size_t i = 0; i < n; ++i) payload_[i] = static_cast<uint8_t>('a' + i % 26);
  return *this;
}
PacketBuilder& PacketBuilder::Quote(const Bytes& ip_packet, size_t max_len) {
  payload_.assign(ip_packet.begin(),
                  ip_packet.begin() + static_cast<long>(std::min(max_len, ip_packet.size())));
  return *this;
}
PacketBuilder& PacketBuilder::CutL4(size_t n) {
  cut_l4_ = n;
  return *this;
}

uint8_t PacketBuilder::FinalProto() const {
  if (l4proto_override_) return *l4proto_override_;
  switch (l4_) {
    case L4::kTcp:
      return proto::kTcp;
    case L4::kUdp:
      return proto::kUdp;
    case L4::kIcmp:
      return family_ == 4 ? proto::kIcmp : proto::kIcmp6;
    case L4::kNone:
      break;
  }
  return proto::kNoNext;
}

Bytes PacketBuilder::BuildL4(const Addr& src, const Addr& dst, uint8_t l4proto) const {
  Bytes l4;
  switch (l4_) {
    case L4::kNone:
      l4 = payload_;
      break;
    case L4::kTcp: {
      const size_t hlen = 20 + tcp_options_.size();
      l4.assign(hlen, 0);
      PutBe16(&l4[0], sport_);
      PutBe16(&l4[2], dport_);
      PutBe32(&l4[4], seq_);
      PutBe32(&l4[8], ack_);
      l4[12] = static_cast<uint8_t>((hlen / 4) << 4);
      l4[13] = tcp_flags_;
      PutBe16(&l4[14], window_);
      std::copy(tcp_options_.begin(), tcp_options_.end(), l4.begin() + 20);
      l4.insert(l4.end(), payload_.begin(), payload_.end());
      PutBe16(&l4[16], PseudoHeaderChecksum(family_, src.b, dst.b, l4proto, l4));
      break;
    }
    case L4::kUdp: {
      l4.assign(8, 0);
      PutBe16(&l4[0], sport_);
      PutBe16(&l4[2], dport_);
      l4.insert(l4.end(), payload_.begin(), payload_.end());
      PutBe16(&l4[4], static_cast<uint16_t>(l4.size()));
      uint16_t c = PseudoHeaderChecksum(family_, src.b, dst.b, l4proto, l4);
      PutBe16(&l4[6], c == 0 ? 0xffff : c);
      break;
    }
    case L4::kIcmp: {
      l4.assign(8, 0);
      l4[0] = icmp_type_;
      l4[1] = icmp_code_;
      PutBe32(&l4[4], icmp_rest_);
      l4.insert(l4.end(), payload_.begin(), payload_.end());
      const uint16_t c = family_ == 4 ? InternetChecksum(l4)
                                      : PseudoHeaderChecksum(6, src.b, dst.b, proto::kIcmp6, l4);
      PutBe16(&l4[2], c);
      break;
    }
  }
  if (cut_l4_ && *cut_l4_ < l4.size()) l4.resize(*cut_l4_);
  return l4;
}

Bytes PacketBuilder::BuildIp() const {
  if (family_ == 0) Die("BuildIp() without an IP layer");
  const uint8_t l4proto = FinalProto();
  Bytes l4 = BuildL4(src_, dst_, l4proto);
  Bytes ip;
  if (family_ == 4) {
    const size_t hlen = 20 + ip4_options_.size();
    ip.assign(hlen, 0);
    ip[0] = static_cast<uint8_t>(0x40 | (hlen / 4));
    ip[1] = tos_;
    PutBe16(&ip[2], static_cast<uint16_t>(hlen + l4.size()));
    PutBe16(&ip[4], ip_id_);
    uint16_t frag = frag_offset8_ & 0x1fff;
    if (df_) frag |= 0x4000;
    if (frag_more_) frag |= 0x2000;
    PutBe16(&ip[6], frag);
    ip[8] = ttl_;
    ip[9] = l4proto;
    std::copy(src_.b.begin(), src_.b.begin() + 4, ip.begin() + 12);
    std::copy(dst_.b.begin(), dst_.b.begin() + 4, ip.begin() + 16);
    std::copy(ip4_options_.begin(), ip4_options_.end(), ip.begin() + 20);
    PutBe16(&ip[10], InternetChecksum(ip));
  } else {
    Bytes exts;
    for (size_t i = 0; i < exts_.size(); ++i) {
      const Ext& e = exts_[i];
      const uint8_t next = i + 1 < exts_.size() ? exts_[i + 1].type : l4proto;
      const size_t start = exts.size();
      if (e.type == proto::kFragment) {
        exts.resize(start + 8, 0);
        exts[start] = next;
        PutBe16(&exts[start + 2],
                static_cast<uint16_t>((e.frag_offset8 << 3) | (e.frag_more ? 1 : 0)));
        PutBe32(&exts[start + 4], e.frag_ident);
        continue;
      }
      const size_t len = 8 * (1 + size_t{e.len8});
      exts.resize(start + len, 0);
      exts[start] = next;
      exts[start + 1] = e.len8;
      if (e.type == proto::kRouting) {
        exts[start + 2] = 253;  // experimental routing type, segments left 0: ignored
      } else {
        exts[start + 2] = 1;  // PadN covering the rest of the header
        exts[start + 3] = static_cast<uint8_t>(len - 4);
      }
    }
    ip.assign(40, 0);
    PutBe32(&ip[0], (6u << 28) | (uint32_t{tos_} << 20) | flow_label_);
    PutBe16(&ip[4], static_cast<uint16_t>(exts.size() + l4.size()));
    ip[6] = exts_.empty() ? l4proto : exts_[0].type;
    ip[7] = ttl_;
    std::copy(src_.b.begin(), src_.b.end(), ip.begin() + 8);
    std::copy(dst_.b.begin(), dst_.b.end(), ip.begin() + 24);
    ip.insert(ip.end(), exts.begin(), exts.end());
  }
  ip.insert(ip.end(), l4.begin(), l4.end());
  return ip;
}

Bytes PacketBuilder::Build() const {
  if (!eth_src_ || !eth_dst_) Die("Build() without Eth()");
  Bytes f(12);
  std::copy(eth_dst_->b.begin(), eth_dst_->b.end(), f.begin());
  std::copy(eth_src_->b.begin(), eth_src_->b.end(), f.begin() + 6);
  uint16_t type = ethertype_ ? *ethertype_ : (family_ == 6 ? kEthIp6 : kEthIp4);
  if (vlan_) {
    f.resize(16);
    PutBe16(&f[12], kEthVlan);
    PutBe16(&f[14], static_cast<uint16_t>((vlan_pcp_ << 13) | (*vlan_ & 0x0fff)));
  }
  f.resize(f.size() + 2);
  PutBe16(&f[f.size() - 2], type);
  if (family_ == 0) {
    f.insert(f.end(), payload_.begin(), payload_.end());
  } else {
    Bytes ip = BuildIp();
    f.insert(f.end(), ip.begin(), ip.end());
  }
  return f;
}

Bytes IpPacketOf(const Bytes& frame) {
  if (frame.size() < 14) Die("IpPacketOf: frame shorter than Ethernet");
  size_t off = 12;
  uint16_t type = GetBe16(&frame[off]);
  if (type == kEthVlan) {
    off += 4;
    if (frame.size() < off + 2) Die("IpPacketOf: truncated VLAN tag");
    type = GetBe16(&frame[off]);
  }
  if (type != kEthIp4 && type != kEthIp6) Die("IpPacketOf: not an IP frame");
  return Bytes(frame.begin() + static_cast<long>(off + 2), frame.end());
}

std::string HexDump(const Bytes& bytes) {
  std::string out;
  char buf[24];
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i % 16 == 0) {
      std::snprintf(buf, sizeof buf, "%s%04zx:", i ? "\n" : "", i);
      out += buf;
    }
    std::snprintf(buf, sizeof buf, " %02x", bytes[i]);
    out += buf;
  }
  return out;
}

}  // namespace ballast::pktgen
