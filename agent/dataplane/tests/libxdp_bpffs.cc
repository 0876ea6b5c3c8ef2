// The data-plane tests' run-wide set-up: libxdp's state on a private bpffs.
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#define CATCH_CONFIG_EXTERNAL_INTERFACES  // TestEventListenerBase
#include <catch2/catch.hpp>
#include <string>

namespace {

// libxdp keeps its own state under <bpffs>/xdp. The attach tests switch
// network namespaces but share the host's mount namespace, so without this
// libxdp would create /sys/fs/bpf/xdp on the host. For the whole run it is
// pointed (LIBXDP_BPFFS, read at its first use) at a private bpffs that is
// unmounted when the run ends, pass or fail.
class PrivateLibxdpBpffs : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testRunStarting(Catch::TestRunInfo const& info) override {
    TestEventListenerBase::testRunStarting(info);
    char tmpl[] = "/tmp/ballast-dpt-libxdp-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;  // the tests then fail on their own
    dir_ = tmpl;
    if (mount("bpf", dir_.c_str(), "bpf", 0, "mode=0700") != 0) {
      rmdir(dir_.c_str());
      dir_.clear();
      return;  // not root: every test fails with that reason
    }
    setenv("LIBXDP_BPFFS", dir_.c_str(), 1);
  }

  void testRunEnded(Catch::TestRunStats const& stats) override {
    if (!dir_.empty()) {
      umount2(dir_.c_str(), MNT_DETACH);
      rmdir(dir_.c_str());
    }
    TestEventListenerBase::testRunEnded(stats);
  }

 private:
  std::string dir_;
};
CATCH_REGISTER_LISTENER(PrivateLibxdpBpffs)

}  // namespace
