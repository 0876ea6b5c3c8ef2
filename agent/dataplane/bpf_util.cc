#include "agent/dataplane/bpf_util.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ballast::dataplane {

using base::Cat;

using base::Cat;

absl::Status ErrnoStatus(int err, std::string_view what) {
  if (err < 0) err = -err;
  std::string msg = Cat(what, ": ", strerror(err));
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ESRCH:
      return absl::NotFoundError(msg);
    case EPERM:
    case EACCES:
      return absl::PermissionDeniedError(msg);
    case EINVAL:
    case E2BIG:
    case ERANGE:
      return absl::InvalidArgumentError(msg);
    case EEXIST:
      return absl::AlreadyExistsError(msg);
    case EBUSY:
    case EOPNOTSUPP:
      return absl::FailedPreconditionError(msg);
    default:
      return absl::InternalError(msg);
  }
}

std::string LogSuffix(const std::string& log) {
  if (log.empty()) return "";
  constexpr size_t kMax = 4000;
  return Cat("\nlibbpf log:\n", log.size() > kMax ? "..." + log.substr(log.size() - kMax) : log);
}

absl::Status LoadFailure(int err, std::string_view what, const std::string& log) {
  const absl::Status s = ErrnoStatus(err, what);
  std::string hint;
  if (err == -EACCES || err == EACCES) {
    // EACCES is the verifier's answer; missing privileges give EPERM.
    hint = "; the verifier rejected the program (its log is below)";
  } else if (s.code() == absl::StatusCode::kPermissionDenied) {
    hint = "; loading BPF programs needs root (CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON)";
  }
  return absl::Status(s.code(), Cat(s.message(), hint, LogSuffix(log)));
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) close(fd_);
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

absl::StatusOr<ProgInfo> GetProgInfo(int prog_fd) {
  bpf_prog_info info = {};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0) {
    return ErrnoStatus(errno, Cat("reading program info of fd ", prog_fd));
  }
  ProgInfo out;
  out.id = info.id;
  out.type = info.type;
  out.name = std::string(info.name, strnlen(info.name, sizeof(info.name)));
  std::memcpy(out.tag.data(), info.tag, BPF_TAG_SIZE);
  if (info.nr_map_ids > 0) {
    out.map_ids.resize(info.nr_map_ids);
    bpf_prog_info again = {};
    again.nr_map_ids = info.nr_map_ids;
    again.map_ids = reinterpret_cast<uint64_t>(out.map_ids.data());
    len = sizeof(again);
    if (bpf_obj_get_info_by_fd(prog_fd, &again, &len) != 0) {
      return ErrnoStatus(errno, Cat("reading map ids of program ", out.name));
    }
    out.map_ids.resize(std::min(again.nr_map_ids, info.nr_map_ids));
  }
  return out;
}

absl::StatusOr<bpf_map_info> GetMapInfo(int map_fd) {
  bpf_map_info info = {};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(map_fd, &info, &len) != 0) {
    return ErrnoStatus(errno, Cat("reading map info of fd ", map_fd));
  }
  return info;
}

absl::Status CheckOnBpffs(const std::string& dir) {
  std::string probe = dir;
  while (!probe.empty() && !PathExists(probe)) {
    // Truncated in place: `probe = probe.substr(...)` draws a false
    // -Wrestrict from GCC 12 at -O3 (a Release build).
    const size_t slash = probe.find_last_of('/');
    probe.resize(slash == std::string::npos ? 0 : slash);
    if (probe.empty() && dir.front() == '/') probe.assign(1, '/');
  }
  if (probe.empty()) probe.assign(1, '.');
  struct statfs st = {};
  if (statfs(probe.c_str(), &st) != 0) {
    return ErrnoStatus(errno, Cat("statfs ", probe, " (checking pin dir ", dir, ")"));
  }
  if (static_cast<unsigned long>(st.f_type) != BPF_FS_MAGIC) {
    return absl::FailedPreconditionError(Cat("pin dir ", dir, " is not on a bpf filesystem (",
                                             probe, " has filesystem magic 0x",
                                             absl::Hex(static_cast<unsigned long>(st.f_type)),
                                             "); mount one first: mount -t bpf bpf /sys/fs/bpf"));
  }
  return absl::OkStatus();
}

absl::Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("empty directory name");
  for (size_t pos = 1;; ++pos) {
    pos = dir.find('/', pos);
    const std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, Cat("mkdir ", part));
    }
    if (pos == std::string::npos) break;
  }
  return absl::OkStatus();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// bpffs refuses names with a dot (reserved for its own files), hence "tmp_".
absl::Status PinAtomically(int fd, const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string tmp =
      path.substr(0, slash + 1) + "tmp_" + std::to_string(getpid()) + "_" + path.substr(slash + 1);
  unlink(tmp.c_str());
  if (bpf_obj_pin(fd, tmp.c_str()) != 0) {
    return ErrnoStatus(errno, Cat("pinning at ", tmp));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(err, Cat("renaming pin ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

namespace {

std::string* g_capture = nullptr;

// Appends one formatted message whole: a verifier log arrives as a single
// message of many kilobytes, and its last lines are the ones that say why.
int Capture(const char* fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  const int n = vsnprintf(nullptr, 0, fmt, ap);
  if (g_capture != nullptr && n > 0) {
    const size_t at = g_capture->size();
    g_capture->resize(at + static_cast<size_t>(n) + 1);
    vsnprintf(g_capture->data() + at, static_cast<size_t>(n) + 1, fmt, again);
    g_capture->resize(at + static_cast<size_t>(n));  // drop the terminating NUL
  }
  va_end(again);
  return n;
}

int CaptureBpf(enum libbpf_print_level, const char* fmt, va_list ap) { return Capture(fmt, ap); }

int CaptureXdp(enum libxdp_print_level, const char* fmt, va_list ap) { return Capture(fmt, ap); }

}  // namespace

CaptureLibLogs::CaptureLibLogs(std::string* log) {
  g_capture = log;
  old_bpf_ = reinterpret_cast<void*>(libbpf_set_print(CaptureBpf));
  old_xdp_ = reinterpret_cast<void*>(libxdp_set_print(CaptureXdp));
}

CaptureLibLogs::~CaptureLibLogs() {
  libbpf_set_print(reinterpret_cast<libbpf_print_fn_t>(old_bpf_));
  libxdp_set_print(reinterpret_cast<libxdp_print_fn_t>(old_xdp_));
  g_capture = nullptr;
}

absl::StatusOr<int> PossibleCpus() {
  const int n = libbpf_num_possible_cpus();
  if (n <= 0) return ErrnoStatus(n, "counting possible CPUs");
  return n;
}

}  // namespace ballast::dataplane
