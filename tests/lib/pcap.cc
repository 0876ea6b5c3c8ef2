#include "tests/lib/pcap.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace ballast::pktgen {
namespace {

// The pcap format stores integers in the writer's byte order; the magic
// number tells the reader which one. We write little-endian explicitly.
void Le32(Bytes& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void Le16(Bytes& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}

constexpr uint32_t kMagicMicros = 0xa1b2c3d4;
constexpr uint32_t kSnapLen = 262144;
constexpr uint32_t kLinkTypeEthernet = 1;

}  // namespace

absl::Status WritePcap(const std::string& path, const std::vector<Bytes>& frames) {
  Bytes out;
  Le32(out, kMagicMicros);
  Le16(out, 2);  // version major
  Le16(out, 4);  // version minor
  Le32(out, 0);  // thiszone
  Le32(out, 0);  // sigfigs
  Le32(out, kSnapLen);
  Le32(out, kLinkTypeEthernet);
  for (size_t i = 0; i < frames.size(); ++i) {
    const uint32_t len = static_cast<uint32_t>(frames[i].size());
    Le32(out, 0);                             // ts_sec
    Le32(out, static_cast<uint32_t>(i + 1));  // ts_usec
    Le32(out, len);                           // incl_len
    Le32(out, len);                           // orig_len
    out.insert(out.end(), frames[i].begin(), frames[i].end());
  }
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return absl::InternalError(absl::StrCat("pcap ", path, ": open: ", strerror(errno)));
  if (std::fwrite(out.data(), 1, out.size(), f.get()) != out.size())
    return absl::InternalError(absl::StrCat("pcap ", path, ": write: ", strerror(errno)));
  return absl::OkStatus();
}

}  // namespace ballast::pktgen
