#include "tests/lib/parse.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/lib/checksum.h"

namespace ballast::pktgen {
namespace {

bool IsIcmpError(int family, uint8_t type) {
  if (family == 4) return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
  return type >= 1 && type <= 4;
}

bool IsExtHeader(uint8_t next) {
  return next == proto::kHopByHop || next == proto::kRouting || next == proto::kDestOpts ||
         next == proto::kFragment;
}

// Decodes the L4 header at `off` of `ip.bytes` (whose L4 length per the IP
// header is `length`).
absl::Status ParseL4(IpView& ip, size_t off, size_t length, bool quoted) {
  const Bytes& p = ip.bytes;
  L4View l4;
  l4.proto = ip.proto;
  l4.offset = off;
  l4.length = length;
  const size_t avail = p.size() > off ? p.size() - off : 0;
  l4.complete = avail >= length;
  const uint8_t* h = p.data() + off;
  size_t hlen = 0;
  if (ip.proto == proto::kTcp) {
    hlen = 20;
    if (avail >= 4) {
      l4.sport = GetBe16(h);
      l4.dport = GetBe16(h + 2);
    }
    if (avail >= 8) l4.seq = GetBe32(h + 4);
    if (avail >= 20) {
      l4.ack = GetBe32(h + 8);
      l4.flags = h[13];
      hlen = static_cast<size_t>(h[12] >> 4) * 4;
      if (hlen < 20 && !quoted) return absl::InvalidArgumentError("TCP data offset < 5");
    }
  } else if (ip.proto == proto::kUdp) {
    hlen = 8;
    if (avail >= 4) {
      l4.sport = GetBe16(h);
      l4.dport = GetBe16(h + 2);
    }
  } else if ((ip.family == 4 && ip.proto == proto::kIcmp) ||
             (ip.family == 6 && ip.proto == proto::kIcmp6)) {
    hlen = 8;
    if (avail >= 8) {
      l4.icmp_type = h[0];
      l4.icmp_code = h[1];
      l4.icmp_rest = GetBe32(h + 4);
    }
  } else if (ip.proto == proto::kIpip || ip.proto == proto::kIpv6) {
    auto inner = ParseIp(std::span<const uint8_t>(h, avail), quoted);
    if (!inner.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("encapsulated packet: ", inner.status().message()));
    ip.inner = std::make_shared<IpView>(*std::move(inner));
    return absl::OkStatus();
  } else {
    return absl::OkStatus();  // unknown L4: no view
  }
  if (avail < hlen) l4.complete = false;
  if (!quoted && avail < hlen) {
    ip.l4 = l4;
    return absl::OkStatus();  // truncated header: complete == false
  }
  if (avail > hlen) l4.payload.assign(h + hlen, h + avail);
  // GUE version 1 (an IP packet right after the UDP header) on its IANA
  // port, as ballast's lb program sends it.
  const bool gue = ip.proto == proto::kUdp && l4.dport == kGuePort && !l4.payload.empty() &&
                   (l4.payload[0] >> 4 == 4 || l4.payload[0] >> 4 == 6);
  if (l4.complete && !ip.is_fragment) {
    std::span<const uint8_t> seg(h, length);
    if (ip.proto == proto::kIcmp) {
      l4.checksum_ok = InternetChecksum(seg) == 0;
    } else if (ip.proto == proto::kUdp && length >= 8 && GetBe16(h + 6) == 0 &&
               (ip.family == 4 || gue)) {
      l4.checksum_ok = std::nullopt;  // UDP without checksum (IPv6: a tunnel's, RFC 6935)
    } else {
      l4.checksum_ok = PseudoHeaderChecksum(ip.family, ip.src.b, ip.dst.b, ip.proto, seg) == 0;
    }
  }
  ip.l4 = l4;
  if (gue) {
    auto inner = ParseIp(std::span<const uint8_t>(h + 8, avail - 8), quoted);
    if (!inner.ok())
      return absl::InvalidArgumentError(absl::StrCat("GUE packet: ", inner.status().message()));
    ip.inner = std::make_shared<IpView>(*std::move(inner));
    return absl::OkStatus();
  }
  if (hlen == 8 && avail >= 8 && l4.icmp_type != 0 && IsIcmpError(ip.family, l4.icmp_type) &&
      (ip.proto == proto::kIcmp || ip.proto == proto::kIcmp6)) {
    auto quoted_ip = ParseIp(std::span<const uint8_t>(h + 8, avail - 8), /*quoted=*/true);
    if (!quoted_ip.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("ICMP quoted packet: ", quoted_ip.status().message()));
    ip.inner = std::make_shared<IpView>(*std::move(quoted_ip));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<IpView> ParseIp(std::span<const uint8_t> p, bool quoted) {
  IpView ip;
  if (p.empty()) return absl::InvalidArgumentError("empty IP packet");
  const int version = p[0] >> 4;
  size_t off = 0;
  if (version == 4) {
    if (p.size() < 20) return absl::InvalidArgumentError("IPv4 header truncated");
    ip.family = 4;
    ip.header_len = size_t{p[0] & 0xfu} * 4;
    if (ip.header_len < 20) return absl::InvalidArgumentError("IPv4 IHL < 5");
    if (p.size() < ip.header_len) return absl::InvalidArgumentError("IPv4 options truncated");
    ip.tos = p[1];
    ip.total_len = GetBe16(&p[2]);
    if (ip.total_len < ip.header_len)
      return absl::InvalidArgumentError("IPv4 total length < header length");
    if (!quoted && ip.total_len > p.size())
      return absl::InvalidArgumentError(
          absl::StrCat("IPv4 total length ", ip.total_len, " > bytes present ", p.size()));
    ip.id = GetBe16(&p[4]);
    const uint16_t frag = GetBe16(&p[6]);
    ip.df = frag & 0x4000;
    ip.mf = frag & 0x2000;
    ip.frag_offset8 = frag & 0x1fff;
    ip.is_fragment = ip.mf || ip.frag_offset8 != 0;
    ip.ttl = p[8];
    ip.proto = p[9];
    ip.header_checksum_ok = InternetChecksum(p.first(ip.header_len)) == 0;
    ip.src.family = ip.dst.family = 4;
    std::copy(&p[12], &p[16], ip.src.b.begin());
    std::copy(&p[16], &p[20], ip.dst.b.begin());
    off = ip.header_len;
  } else if (version == 6) {
    if (p.size() < 40) return absl::InvalidArgumentError("IPv6 header truncated");
    ip.family = 6;
    const uint32_t w0 = GetBe32(&p[0]);
    ip.tos = static_cast<uint8_t>(w0 >> 20);
    ip.flow_label = w0 & 0xfffffu;
    ip.total_len = 40 + size_t{GetBe16(&p[4])};
    if (!quoted && ip.total_len > p.size())
      return absl::InvalidArgumentError(absl::StrCat("IPv6 payload length ", ip.total_len - 40,
                                                     " > bytes present ", p.size() - 40));
    ip.ttl = p[7];
    ip.src.family = ip.dst.family = 6;
    std::copy(&p[8], &p[24], ip.src.b.begin());
    std::copy(&p[24], &p[40], ip.dst.b.begin());
    uint8_t next = p[6];
    off = 40;
    const size_t avail = std::min(p.size(), ip.total_len);
    for (int i = 0; i < 8 && IsExtHeader(next); ++i) {
      if (off + 8 > avail) return absl::InvalidArgumentError("IPv6 extension header truncated");
      ip.ext_types.push_back(next);
      size_t len = 8;
      if (next == proto::kFragment) {
        const uint16_t fo = GetBe16(&p[off + 2]);
        ip.frag_offset8 = fo >> 3;
        ip.mf = fo & 1;
        ip.is_fragment = true;
        ip.id = static_cast<uint16_t>(GetBe32(&p[off + 4]));
      } else {
        len = 8 * (1 + size_t{p[off + 1]});
      }
      next = p[off];
      off += len;
    }
    if (off > avail) return absl::InvalidArgumentError("IPv6 extension header truncated");
    ip.proto = next;
    ip.header_len = off;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("IP version ", version));
  }
  ip.bytes.assign(p.begin(), p.begin() + static_cast<long>(std::min(p.size(), ip.total_len)));
  if (ip.is_fragment && ip.frag_offset8 != 0) return ip;  // no L4 header in this fragment
  if (auto s = ParseL4(ip, off, ip.total_len - off, quoted); !s.ok()) return s;
  return ip;
}

absl::StatusOr<FrameView> ParseFrame(std::span<const uint8_t> f) {
  FrameView v;
  if (f.size() < 14) return absl::InvalidArgumentError("Ethernet header truncated");
  std::copy(&f[0], &f[6], v.dst.b.begin());
  std::copy(&f[6], &f[12], v.src.b.begin());
  size_t off = 12;
  v.ethertype = GetBe16(&f[off]);
  if (v.ethertype == kEthVlan) {
    if (f.size() < 18) return absl::InvalidArgumentError("VLAN tag truncated");
    v.vlan = GetBe16(&f[14]) & 0x0fff;
    off = 16;
    v.ethertype = GetBe16(&f[off]);
  }
  off += 2;
  if (v.ethertype == kEthIp4 || v.ethertype == kEthIp6) {
    auto ip = ParseIp(f.subspan(off));
    if (!ip.ok()) return ip.status();
    const int want = v.ethertype == kEthIp4 ? 4 : 6;
    if (ip->family != want)
      return absl::InvalidArgumentError(
          absl::StrCat("ethertype says IPv", want, ", header says IPv", ip->family));
    v.ip = *std::move(ip);
  }
  return v;
}

absl::Status CheckChecksums(const IpView& ip) {
  if (ip.family == 4 && !ip.header_checksum_ok)
    return absl::DataLossError(absl::StrCat("bad IPv4 header checksum (", ip.src.ToString(), " -> ",
                                            ip.dst.ToString(), ")"));
  if (ip.l4 && ip.l4->checksum_ok.has_value() && !*ip.l4->checksum_ok)
    return absl::DataLossError(absl::StrCat("bad L4 checksum, protocol ", ip.proto, " (",
                                            ip.src.ToString(), " -> ", ip.dst.ToString(), ")"));
  if (ip.inner) return CheckChecksums(*ip.inner);
  return absl::OkStatus();
}

}  // namespace ballast::pktgen
