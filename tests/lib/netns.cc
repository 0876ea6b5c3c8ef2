#include "tests/lib/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ballast::pktgen {

std::string RunCommand(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return "popen failed";
  char buf[512];
  while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  const int rc = pclose(p);
  return rc == 0 ? std::string() : absl::StrCat("exit ", rc, ": ", out);
}

absl::StatusOr<std::unique_ptr<ScopedNetns>> ScopedNetns::Create(
    const std::string& name, const std::vector<std::string>& setup) {
  RunCommand("ip netns del " + name);  // a leftover of a killed run
  std::unique_ptr<ScopedNetns> ns(new ScopedNetns(name));
  if (std::string err = RunCommand("ip netns add " + name); !err.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("creating netns ", name, " (needs root): ", err));
  }
  ns->orig_ = -2;  // from here on, the destructor deletes it
  for (const std::string& cmd : setup) {
    if (std::string err = RunCommand(cmd); !err.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("netns ", name, ": ", cmd, ": ", err));
    }
  }
  const int orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  const int fd = open(("/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  const bool ok = orig >= 0 && fd >= 0 && setns(fd, CLONE_NEWNET) == 0;
  const int err = errno;
  if (fd >= 0) close(fd);
  if (!ok) {
    if (orig >= 0) close(orig);
    return absl::FailedPreconditionError(
        absl::StrCat("entering netns ", name, ": ", std::strerror(err)));
  }
  ns->orig_ = orig;
  return ns;
}

ScopedNetns::~ScopedNetns() {
  if (orig_ >= 0) {
    setns(orig_, CLONE_NEWNET);
    close(orig_);
  }
  if (orig_ != -1) RunCommand("ip netns del " + name_);
}

}  // namespace ballast::pktgen
