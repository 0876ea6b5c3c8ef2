// lbctl's command table: every noun/verb pair with its options and the
// function that runs it (commands.cc). main() is RunLbctl (run.cc), which
// adds `help` and `version`; tests call RunLbctl directly.
//
//   lbctl status | flows
//   lbctl vip add|del|list|set-ownership|relearn|quic-config|quic-rotate|quic-retire
//   lbctl backend add|del|weight|drain|undrain|release
//   lbctl config get|apply|diff
//   lbctl events | audit | digest
//   lbctl drill --vip VIP [--mode fence|stop]
//   lbctl teardown --yes
//   lbctl help [COMMAND...] | version
//
// Global flags: --socket PATH | --addr HOST:PORT --cacert --cert --key
// [--tls-server-name], --json, --timeout. Exit codes: exit_codes.h.
#ifndef BALLAST_TOOLS_LBCTL_COMMANDS_H_
#define BALLAST_TOOLS_LBCTL_COMMANDS_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tools/lbctl/client.h"

namespace CLI {
class App;
}
namespace google::protobuf {
class Message;
}

namespace ballast::lbctl {

// Everything any command can be given; CLI11 binds the options to these.
struct Args {
  // Global.
  std::string socket = kDefaultSocket;
  std::string addr, cacert, cert, key, server_name;
  bool json = false;
  std::string timeout = "10s";
  // Positionals and per-command options.
  std::string vip;
  std::string backend;
  std::string weight;  // backend weight VIP ADDR W
  uint32_t add_weight = 100;
  uint32_t table_size = 0;
  std::string name;
  std::string vip_mode;  // vip add --mode: encap | gue; empty = the default (encap)
  std::vector<std::string> backends;
  std::string deadline;
  std::string file;
  bool dry_run = false;
  bool allow_empty = false;
  std::string since = "24h";
  std::string digest_since = "7d";
  uint32_t limit = 0;
  uint64_t count = 0;
  bool yes = false;
  // status --watch.
  bool watch = false;
  std::string interval;  // empty: 2s
  uint64_t frames = 0;   // 0: until interrupted
  // vip set-ownership VIP MODE.
  std::string ownership;
  // drill.
  std::string drill_mode = "fence";
  std::string drill_timeout = "30s";
  std::string stable_window = "2s";
  std::vector<std::string> drill_nodes;  // NAME=ADDR overrides
  // flow-hash rotate, vip quic-rotate|quic-retire.
  std::string reason;
};

// The connection, opened on first use so that bad input is reported (exit
// 2) before lbctl tries to reach the agent.
class Session {
 public:
  explicit Session(Target target) : target_(std::move(target)) {}
  absl::StatusOr<Client*> client();
  std::string target_text() const;
  const Target& target() const { return target_; }

 private:
  Target target_;
  std::unique_ptr<Client> client_;
};

struct Command {
  absl::string_view noun;
  absl::string_view verb;  // empty: the noun alone is the command
  absl::string_view help;
  void (*add_options)(CLI::App& cmd, Args& args);
  absl::Status (*run)(Session& session, const Args& args, std::FILE* out);
};

std::span<const Command> Commands();

// Prints `msg` as JSON (--json) or `human` otherwise.
absl::Status Emit(const Args& args, std::FILE* out, const google::protobuf::Message& msg,
                  const std::string& human);

// Parses argv, connects, runs the command; returns the exit code. A
// command line it cannot parse is exit 2 with one "lbctl: " message that
// names an unknown command or option and the closest known one.
int RunLbctl(int argc, const char* const* argv, std::FILE* out, std::FILE* err);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_COMMANDS_H_
