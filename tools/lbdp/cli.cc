#include "tools/lbdp/cli.h"

#include <fcntl.h>
#include <sched.h>

#include <cstdio>

#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"

namespace ballast::lbdp {

int ExitCode(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return kOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
      return kInvalid;
    case absl::StatusCode::kNotFound:
      return kNotFound;
    default:
      return kSystem;
  }
}

int Fail(const absl::Status& s) {
  fprintf(stderr, "lbdp: %s\n", std::string(s.message()).c_str());
  return ExitCode(s);
}

int Invalid(const std::string& msg) { return Fail(absl::InvalidArgumentError(msg)); }

absl::Status EnterNetns(const std::string& name) {
  if (name.empty()) return absl::OkStatus();
  const std::string path = name.find('/') == std::string::npos ? "/run/netns/" + name : name;
  dataplane::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return dataplane::ErrnoStatus(errno, base::Cat("opening network namespace ", path));
  if (setns(fd.get(), CLONE_NEWNET) != 0) {
    return dataplane::ErrnoStatus(errno, base::Cat("entering network namespace ", path));
  }
  return absl::OkStatus();
}

}  // namespace ballast::lbdp
