#include "tests/lib/checksum.h"

namespace ballast::pktgen {

uint32_t SumWords(std::span<const uint8_t> bytes, uint32_t initial) {
  uint64_t sum = initial;
  size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) sum += (uint32_t{bytes[i]} << 8) | bytes[i + 1];
  if (i < bytes.size()) sum += uint32_t{bytes[i]} << 8;
  while (sum >> 32) sum = (sum & 0xffffffffu) + (sum >> 32);
  return static_cast<uint32_t>(sum);
}

uint16_t FoldComplement(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffffu) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffffu);
}

uint16_t InternetChecksum(std::span<const uint8_t> bytes) {
  return FoldComplement(SumWords(bytes));
}

uint16_t PseudoHeaderChecksum(int family, std::span<const uint8_t> src,
                              std::span<const uint8_t> dst, uint8_t proto,
                              std::span<const uint8_t> l4) {
  const size_t alen = family == 4 ? 4 : 16;
  uint32_t sum = SumWords(src.first(alen));
  sum = SumWords(dst.first(alen), sum);
  const uint32_t len = static_cast<uint32_t>(l4.size());
  // IPv4: zero, proto, 16-bit length. IPv6: 32-bit length, 3 zero, next hdr.
  sum += (len >> 16) + (len & 0xffffu) + proto;
  return FoldComplement(SumWords(l4, sum));
}

}  // namespace ballast::pktgen
