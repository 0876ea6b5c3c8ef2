// Internet checksums (RFC 1071) for building and checking test packets.
//
// Pure functions over byte spans; thread-safe. Values are returned in host
// order as 16-bit numbers whose big-endian encoding is what goes on the wire
// (write them with PutBe16).
#ifndef BALLAST_TESTS_LIB_CHECKSUM_H_
#define BALLAST_TESTS_LIB_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace ballast::pktgen {

// One's-complement sum of big-endian 16-bit words (odd length padded with a
// zero byte), added to `initial`, not folded.
uint32_t SumWords(std::span<const uint8_t> bytes, uint32_t initial = 0);

// Folds a 32-bit sum to 16 bits and complements it: the checksum field value.
uint16_t FoldComplement(uint32_t sum);

// Checksum of `bytes` (e.g. an IPv4 header with its checksum field zeroed).
// Verifying: InternetChecksum(header with its checksum in place) == 0.
uint16_t InternetChecksum(std::span<const uint8_t> bytes);

// TCP/UDP/ICMPv6 checksum with the pseudo-header of `family` (4 or 6):
// `src`/`dst` are 4 or 16 bytes, `l4` is the whole segment (its checksum field
// zeroed to compute, in place to verify: the result is then 0).
uint16_t PseudoHeaderChecksum(int family, std::span<const uint8_t> src,
                              std::span<const uint8_t> dst, uint8_t proto,
                              std::span<const uint8_t> l4);

}  // namespace ballast::pktgen

#endif  // BALLAST_TESTS_LIB_CHECKSUM_H_
