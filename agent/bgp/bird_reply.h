// BIRD 2 control-socket replies: the line protocol and the one table the
// announcer reads (`show protocols`).
//
// The protocol (BIRD User's Guide, "Remote control", and doc/reply_codes):
// every line the daemon writes is one of
//   "dddd-text"  a line with a 4-digit code; more lines of the reply follow
//   " text"      a continuation: same code as the line before it
//   "dddd text"  the last line of the reply (code and a space; text may be empty)
//   "+dddd text" a spontaneous printout (only with `echo`), not part of a reply
// Codes: 0xxx done, 1xxx table entry, 2xxx table heading, 8xxx run-time
// error, 9xxx parse-time error. The greeting is the reply "0001 BIRD <version>
// ready." sent right after connecting.
//
// Pure functions and value types; no I/O. Thread-compatible.
#ifndef BALLAST_AGENT_BGP_BIRD_REPLY_H_
#define BALLAST_AGENT_BGP_BIRD_REPLY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"

namespace ballast::bgp {

struct ReplyLine {
  int code = 0;      // the line's code; a continuation line carries its predecessor's
  std::string text;  // without the code, the separator and the newline
};

struct Reply {
  int code = 0;                  // code of the final line
  std::vector<ReplyLine> lines;  // every line in order, the final one included

  // Every line's text joined with '\n'.
  std::string Text() const;
  // Lines whose code is `code`, in order.
  std::vector<std::string> TextsWithCode(int code) const;
};

// Incremental parser: feed the daemon's lines one at a time (without '\n').
class ReplyParser {
 public:
  // True when `line` completed a reply (then call Take()). InvalidArgument on
  // a line that is none of the forms above, or a continuation with nothing to
  // continue; the parser is then reset.
  absl::StatusOr<bool> AddLine(absl::string_view line);
  // The completed reply; resets the parser for the next one.
  Reply Take();
  // True while a reply has started but not ended.
  bool InProgress() const { return !current_.lines.empty(); }

 private:
  Reply current_;
  bool done_ = false;
  bool in_spontaneous_ = false;  // skipping a '+' printout and its continuations
};

// Parses a whole reply (lines separated by '\n'; a trailing '\n' is allowed).
// InvalidArgument when the text holds no complete reply or more than one.
absl::StatusOr<Reply> ParseReply(absl::string_view text);

// OK for 0xxx codes other than 0016 (access restricted: PermissionDenied);
// 8xxx: FailedPrecondition, 9xxx: InvalidArgument; anything else: Internal.
// The message names the command and carries BIRD's own text.
absl::Status ReplyStatus(absl::string_view command, const Reply& reply);

// One row of `show protocols`.
struct ProtocolRow {
  std::string name;
  std::string proto;  // "Static", "BGP", "Device", ...
  std::string table;  // "master4", "---", ...
  std::string state;  // "up", "down", "start", "stop", "flush"
  std::string since;  // as BIRD formats it (time, date, or date and time)
  std::string info;   // e.g. "Established", "Active  Socket: Connection refused"
};

// The rows (code 1002 and their continuations) of a `show protocols` reply.
// InvalidArgument when a row has fewer than four columns.
absl::StatusOr<std::vector<ProtocolRow>> ParseShowProtocols(const Reply& reply);

}  // namespace ballast::bgp

#endif  // BALLAST_AGENT_BGP_BIRD_REPLY_H_
