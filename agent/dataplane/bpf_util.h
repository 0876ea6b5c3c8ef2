// Small wrappers at the libbpf boundary shared by the data-plane loaders.
//
// Negative errno values from libbpf and the bpf(2) syscall stop here: every
// function returns an absl::Status whose message says what was being done,
// on which object, and strerror() of the cause. Functions are stateless and
// thread-safe unless stated otherwise.
#ifndef BALLAST_AGENT_DATAPLANE_BPF_UTIL_H_
#define BALLAST_AGENT_DATAPLANE_BPF_UTIL_H_

#include <linux/bpf.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/base/strcat.h"

namespace ballast::dataplane {

// Turns an errno value (positive or negative) into a Status with the code
// that fits it (ENOENT -> NotFound, EPERM/EACCES -> PermissionDenied,
// EINVAL -> InvalidArgument, EEXIST/EBUSY -> AlreadyExists/FailedPrecondition,
// else Internal). The message is "<what>: <strerror>".
absl::Status ErrnoStatus(int err, std::string_view what);

// "\nlibbpf log:\n" and the last 4000 characters of `log` ("" if empty): a
// verifier log says why at its end.
std::string LogSuffix(const std::string& log);

// A failed BPF object load (`err`: libbpf's negative errno): ErrnoStatus,
// what EACCES and EPERM mean (the verifier refused the program / the caller
// lacks the capabilities), and the end of libbpf's log.
absl::Status LoadFailure(int err, std::string_view what, const std::string& log);

// An owned file descriptor (closed on destruction). Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release();
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// bpf_prog_info / bpf_map_info of an fd, with the program's map ids.
struct ProgInfo {
  uint32_t id = 0;
  uint32_t type = 0;
  std::string name;
  std::array<uint8_t, BPF_TAG_SIZE> tag{};
  std::vector<uint32_t> map_ids;
};
absl::StatusOr<ProgInfo> GetProgInfo(int prog_fd);
absl::StatusOr<bpf_map_info> GetMapInfo(int map_fd);

// Checks that `dir` (existing or to be created) lies on a bpf filesystem, by
// statfs() of its nearest existing ancestor. FailedPrecondition naming the
// filesystem found and the mount command otherwise.
absl::Status CheckOnBpffs(const std::string& dir);

// mkdir -p with mode 0700 for the missing components.
absl::Status MakeDirs(const std::string& dir);

// True if `path` exists (lstat succeeds).
bool PathExists(const std::string& path);

// Pins `fd` at `path` atomically: pins under a temporary name in the same
// directory and rename()s it over `path`, so readers see the old or the new
// object, never a missing pin.
absl::Status PinAtomically(int fd, const std::string& path);

// Runs `fn` while libbpf and libxdp log into `log` instead of stderr.
// Not thread-safe: libbpf/libxdp print callbacks are process-global.
class CaptureLibLogs {
 public:
  explicit CaptureLibLogs(std::string* log);
  ~CaptureLibLogs();
  CaptureLibLogs(const CaptureLibLogs&) = delete;
  CaptureLibLogs& operator=(const CaptureLibLogs&) = delete;

 private:
  void* old_bpf_;
  void* old_xdp_;
};

// Number of possible CPUs (size of a per-CPU map value array).
absl::StatusOr<int> PossibleCpus();

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_BPF_UTIL_H_
