#include "agent/bgp/bird_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ballast::bgp {
namespace {

constexpr size_t kMaxCommand = 1000;         // far below BIRD's own line limit
constexpr size_t kMaxReplyBytes = 16 << 20;  // a runaway reply is an error, not OOM

std::string Errno(int e) { return std::strerror(e); }

// Milliseconds left until `deadline`, for poll(); at least 0.
int MsLeft(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(left + absl::Milliseconds(1)));
}

}  // namespace

BirdClient::BirdClient(Options options) : options_(std::move(options)) {}

BirdClient::~BirdClient() { Close(); }

void BirdClient::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  buffer_.clear();
}

absl::Status BirdClient::Fail(absl::Status s) {
  Close();
  return s;
}

absl::Status BirdClient::Connect() {
  if (fd_ >= 0) return absl::OkStatus();
  const std::string& path = options_.socket_path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bird control socket path '", path, "' is empty or too long"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const absl::Time deadline = absl::Now() + options_.timeout;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket(AF_UNIX): ", Errno(errno)));
  // A unix-socket connect completes or fails at once (EAGAIN: backlog full).
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int e = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to bird at ", path, ": ", Errno(e),
                     e == ENOENT || e == ECONNREFUSED ? " (is bird running?)" : ""));
  }
  fd_ = fd;
  buffer_.clear();
  bool nothing_read = true;
  absl::StatusOr<Reply> greeting = ReadReply(deadline, &nothing_read);
  if (!greeting.ok()) {
    return Fail(absl::Status(greeting.status().code(),
                             absl::StrCat("bird at ", path, ": waiting for the greeting: ",
                                          greeting.status().message())));
  }
  // "0001 BIRD 2.0.12 ready."
  const std::string text = greeting->Text();
  if (greeting->code != 1 || !absl::StartsWith(text, "BIRD ")) {
    return Fail(absl::InternalError(absl::StrCat("bird at ", path, ": unexpected greeting '", text,
                                                 "' (code ", greeting->code, ")")));
  }
  version_ = text;
  if (absl::EndsWith(version_, " ready.")) version_.resize(version_.size() - 7);
  return absl::OkStatus();
}

absl::Status BirdClient::WriteAll(absl::string_view data, absl::Time deadline) {
  while (!data.empty()) {
    const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      const int r = poll(&p, 1, MsLeft(deadline));
      if (r == 0) return absl::DeadlineExceededError("timed out sending the command");
      if (r < 0 && errno != EINTR) return absl::UnavailableError(Errno(errno));
      continue;
    }
    return absl::UnavailableError(absl::StrCat("send: ", Errno(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Reply> BirdClient::ReadReply(absl::Time deadline, bool* nothing_read) {
  ReplyParser parser;
  size_t total = 0;
  for (;;) {
    // Parse whatever complete lines are buffered.
    size_t nl;
    while ((nl = buffer_.find('\n')) != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      absl::StatusOr<bool> done = parser.AddLine(line);
      if (!done.ok()) return absl::InternalError(done.status().message());
      if (*done) return parser.Take();
    }
    if (total > kMaxReplyBytes) {
      return absl::InternalError(absl::StrCat("reply longer than ", kMaxReplyBytes, " bytes"));
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, MsLeft(deadline));
    if (r == 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("no complete reply within ", absl::FormatDuration(options_.timeout),
                       parser.InProgress() ? " (reply started)" : ""));
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat("poll: ", Errno(errno)));
    }
    char buf[8192];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return absl::UnavailableError(absl::StrCat("recv: ", Errno(errno)));
    }
    if (n == 0) {
      return absl::UnavailableError(parser.InProgress() || !buffer_.empty()
                                        ? "connection closed in the middle of a reply"
                                        : "connection closed by bird");
    }
    *nothing_read = false;
    total += static_cast<size_t>(n);
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

absl::StatusOr<Reply> BirdClient::Attempt(absl::string_view command, bool* nothing_read) {
  *nothing_read = true;
  const absl::Time deadline = absl::Now() + options_.timeout;
  absl::Status s = WriteAll(absl::StrCat(command, "\n"), deadline);
  if (!s.ok()) return s;
  return ReadReply(deadline, nothing_read);
}

absl::StatusOr<Reply> BirdClient::Command(absl::string_view command) {
  if (command.empty() || command.size() > kMaxCommand ||
      command.find_first_of("\r\n") != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("bird command must be one line of 1..",
                                                   kMaxCommand, " characters: '", command, "'"));
  }
  const bool was_connected = connected();
  if (absl::Status s = Connect(); !s.ok()) return s;
  bool nothing_read = true;
  absl::StatusOr<Reply> reply = Attempt(command, &nothing_read);
  if (!reply.ok() && was_connected && nothing_read &&
      reply.status().code() == absl::StatusCode::kUnavailable) {
    // The connection predates this command and died without answering: BIRD
    // was most likely restarted. Once more on a fresh connection.
    Close();
    if (absl::Status s = Connect(); !s.ok()) return s;
    reply = Attempt(command, &nothing_read);
  }
  if (!reply.ok()) {
    const absl::Status& st = reply.status();
    // After a timeout or an I/O error the stream position is unknown.
    return Fail(absl::Status(st.code(), absl::StrCat("bird at ", options_.socket_path, ": '",
                                                     command, "': ", st.message())));
  }
  if (absl::Status s = ReplyStatus(command, *reply); !s.ok()) return s;
  return reply;
}

}  // namespace ballast::bgp
