// A client of BIRD 2's control socket (the unix socket birdc talks to).
//
// One connection, one command at a time: send "<command>\n", read lines until
// the reply's final line (see bird_reply.h). The connection is opened lazily
// and reopened after any failure; a command whose connection turns out to be
// dead before any byte of its reply arrived (BIRD restarted since the last
// command) is sent once more on a fresh connection. Only use it for commands
// that are safe to repeat (show, enable, disable are).
//
// Every call is bounded by Options::timeout (connect + greeting, or send +
// whole reply). Errors are absl::Status values:
//   Unavailable       cannot connect, connection closed, or a read/write error
//   DeadlineExceeded  no complete reply within the timeout (connection closed)
//   InvalidArgument   a command BIRD rejected as a parse error (9xxx), or a
//                     command we refuse to send (newline, too long)
//   FailedPrecondition  BIRD's run-time errors (8xxx)
//   PermissionDenied  the socket is in restricted mode (0016)
//   Internal          the daemon sent something that is not the protocol
// Messages carry the socket path and BIRD's own text.
//
// Not thread-safe: one owner (the Announcer serialises its calls).
#ifndef BALLAST_AGENT_BGP_BIRD_CLIENT_H_
#define BALLAST_AGENT_BGP_BIRD_CLIENT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/bgp/bird_reply.h"

namespace ballast::bgp {

class BirdClient {
 public:
  struct Options {
    std::string socket_path = "/run/bird/bird.ctl";
    absl::Duration timeout = absl::Seconds(5);
  };

  explicit BirdClient(Options options);
  ~BirdClient();
  BirdClient(const BirdClient&) = delete;
  BirdClient& operator=(const BirdClient&) = delete;

  // Connects and reads the greeting, unless connected already.
  absl::Status Connect();
  // Closes the connection (the next command reconnects).
  void Close();
  bool connected() const { return fd_ >= 0; }
  // "BIRD 2.0.12" from the last greeting; empty before the first.
  const std::string& version() const { return version_; }
  const std::string& socket_path() const { return options_.socket_path; }

  // Sends `command` and returns its reply when the reply's code is a success
  // (0xxx); otherwise the error described above. The returned Reply holds
  // every line, table rows included.
  absl::StatusOr<Reply> Command(absl::string_view command);

 private:
  // One attempt on the current connection. `*nothing_read` tells whether the
  // attempt failed before any byte of the reply came back.
  absl::StatusOr<Reply> Attempt(absl::string_view command, bool* nothing_read);
  // Reads one complete reply (greeting or answer) before `deadline`.
  absl::StatusOr<Reply> ReadReply(absl::Time deadline, bool* nothing_read);
  absl::Status WriteAll(absl::string_view data, absl::Time deadline);
  absl::Status Fail(absl::Status s);  // closes the connection, returns s

  Options options_;
  int fd_ = -1;
  std::string buffer_;  // bytes read but not yet parsed
  std::string version_;
};

}  // namespace ballast::bgp

#endif  // BALLAST_AGENT_BGP_BIRD_CLIENT_H_
