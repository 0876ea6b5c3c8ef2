#include "agent/core/state_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/core/file_util.h"
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include "absl/strings/string_view.h"

namespace ballast::core {
namespace {

constexpr char kMagic[8] = {'B', 'A', 'L', 'L', 'A', 'S', 'T', 'S'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 24;
constexpr uint64_t kMaxPayload = 256ull << 20;  // far beyond any valid state

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t GetLe(absl::string_view in, size_t off, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[off + i])) << (8 * i);
  }
  return v;
}

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

}  // namespace

uint32_t Crc32c(absl::string_view data) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  uint32_t c = 0xFFFFFFFFu;
  for (char ch : data) c = table[(c ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string StateStore::Encode(const v1::State& state) {
  std::string payload;
  {
    google::protobuf::io::StringOutputStream raw(&payload);
    google::protobuf::io::CodedOutputStream coded(&raw);
    state.SerializeToCodedStream(&coded);
  }
  std::string out(kMagic, sizeof(kMagic));
  PutLe(&out, kVersion, 4);
  PutLe(&out, Crc32c(payload), 4);
  PutLe(&out, payload.size(), 8);
  out += payload;
  return out;
}

absl::StatusOr<v1::State> StateStore::Decode(absl::string_view bytes, absl::string_view what) {
  auto corrupt = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat(
        what, " is corrupt: ", why,
        ". Refusing to start with an unknown state. Inspect it with `lbagent --dump-state ", what,
        "`; restore a backup or move it away to start from the config's initial state"));
  };
  if (bytes.size() < kHeaderSize) {
    return corrupt(absl::StrCat("only ", bytes.size(), " bytes, shorter than the ", kHeaderSize,
                                "-byte header"));
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("it does not start with \"BALLASTS\" (not a ballast state file)");
  }
  const uint64_t version = GetLe(bytes, 8, 4);
  if (version != kVersion) {
    return corrupt(
        absl::StrCat("format version ", version, ", this build reads version ", kVersion));
  }
  const uint32_t crc = static_cast<uint32_t>(GetLe(bytes, 12, 4));
  const uint64_t len = GetLe(bytes, 16, 8);
  if (len > kMaxPayload || len != bytes.size() - kHeaderSize) {
    return corrupt(absl::StrCat("the header announces ", len, " payload bytes but ",
                                bytes.size() - kHeaderSize, " follow"));
  }
  const absl::string_view payload = bytes.substr(kHeaderSize);
  if (Crc32c(payload) != crc) return corrupt("checksum mismatch");
  v1::State state;
  if (!state.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return corrupt("the payload is not a ballast.v1.State message");
  }
  return state;
}

absl::StatusOr<v1::State> StateStore::Load() const {
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("opening state file ", path_));
  std::string bytes;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return ErrnoStatus(err, absl::StrCat("reading state file ", path_));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
    if (bytes.size() > kMaxPayload + kHeaderSize) {
      close(fd);
      return absl::DataLossError(absl::StrCat(path_, " is larger than any valid state"));
    }
  }
  close(fd);
  return Decode(bytes, path_);
}

absl::Status StateStore::Save(const v1::State& state) {
  const std::string dir = DirOf(path_);
  if (auto s = MakeDirs(dir); !s.ok()) return s;
  const std::string tmp = absl::StrCat(path_, ".tmp");
  const std::string bytes = Encode(state);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("creating ", tmp));
  absl::Status s = WriteAll(fd, bytes, absl::StrCat("writing ", tmp));
  if (s.ok() && fsync(fd) != 0) s = ErrnoStatus(errno, absl::StrCat("fsync of ", tmp));
  if (close(fd) != 0 && s.ok()) s = ErrnoStatus(errno, absl::StrCat("closing ", tmp));
  if (!s.ok()) {
    unlink(tmp.c_str());
    return s;
  }
  if (rename(tmp.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(err, absl::StrCat("renaming ", tmp, " to ", path_));
  }
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return ErrnoStatus(errno, absl::StrCat("opening directory ", dir, " to fsync it"));
  const int rc = fsync(dfd);
  const int err = errno;
  close(dfd);
  if (rc != 0) return ErrnoStatus(err, absl::StrCat("fsync of directory ", dir));
  return absl::OkStatus();
}

}  // namespace ballast::core
