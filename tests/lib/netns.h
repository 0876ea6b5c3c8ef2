// A network namespace of the test's own, for BPF tests whose program asks
// the kernel (bpf_fib_lookup) about routes and neighbours.
//
// Create() makes the namespace `name`, runs the set-up commands (shell
// command lines; they name the namespace themselves, `ip -n NAME ...`), and
// moves the calling thread into it. Destruction moves the thread back and
// deletes the namespace, with whatever the set-up put in it (veths, routes),
// also when the test failed. Not thread-safe: one per thread.
#ifndef BALLAST_TESTS_LIB_NETNS_H_
#define BALLAST_TESTS_LIB_NETNS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ballast::pktgen {

class ScopedNetns {
 public:
  static absl::StatusOr<std::unique_ptr<ScopedNetns>> Create(const std::string& name,
                                                             const std::vector<std::string>& setup);
  ~ScopedNetns();
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;

 private:
  explicit ScopedNetns(std::string name) : name_(std::move(name)) {}
  std::string name_;
  int orig_ = -1;
};

// Runs a shell command line; its output on failure ("exit N: ..."), or "".
std::string RunCommand(const std::string& cmd);

}  // namespace ballast::pktgen

#endif  // BALLAST_TESTS_LIB_NETNS_H_
