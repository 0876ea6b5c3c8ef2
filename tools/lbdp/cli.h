// lbdp's command plumbing shared by its command files: exit codes, the
// error line, global flags, entering a network namespace.
#ifndef BALLAST_TOOLS_LBDP_CLI_H_
#define BALLAST_TOOLS_LBDP_CLI_H_

#include <string>

#include "absl/status/status.h"
#include "ballast_abi.h"

namespace ballast::lbdp {

// Exit codes: 0 ok, 2 invalid input, 3 not found, 4 system/BPF error.
constexpr int kOk = 0;
constexpr int kInvalid = 2;
constexpr int kNotFound = 3;
constexpr int kSystem = 4;

int ExitCode(const absl::Status& s);
// Prints "lbdp: <message>" to stderr; returns ExitCode(s).
int Fail(const absl::Status& s);
int Invalid(const std::string& msg);

struct Global {
  std::string pin_dir = BALLAST_PIN_DIR;
  std::string netns;
};

// Moves this process into network namespace `name` (/run/netns/<name>, or a
// path), keeping its mount namespace (so --pin-dir still means the caller's
// bpffs). No-op for "".
absl::Status EnterNetns(const std::string& name);

}  // namespace ballast::lbdp

#endif  // BALLAST_TOOLS_LBDP_CLI_H_
