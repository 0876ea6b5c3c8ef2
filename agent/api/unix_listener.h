// The admin unix socket: created safely, accepted by our own thread so that
// each connection's credentials (SO_PEERCRED) are known, then handed to the
// gRPC server as an insecure channel.
//
// Bind() sequence (no window in which the socket is connectable with the
// wrong permissions: connect() fails until listen()):
//   mkdir -p <parent> (0755, only if missing)
//   if <path> exists: a socket nobody answers on is stale and removed;
//     a live socket means another lbagent is serving (FAILED_PRECONDITION);
//     anything that is not a socket is left alone (FAILED_PRECONDITION)
//   socket, bind, chown <euid>:<group>, chmod 0660, listen
//
// Ownership: the listener owns the listening fd and the socket file; Stop()
// (also run by the destructor) stops the accept thread, closes the fd and
// unlinks the file if it is still the one we created (a newer agent's socket
// is never removed). Accepted fds are owned by gRPC once handed over.
//
// Thread-safety: Start/Stop from one owner thread; UidOfFd from any thread.
#ifndef BALLAST_AGENT_API_UNIX_LISTENER_H_
#define BALLAST_AGENT_API_UNIX_LISTENER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "agent/api/log.h"

namespace grpc {
class Server;
}

namespace ballast::api {

inline constexpr char kDefaultSocketPath[] = "/run/ballast/lbagent.sock";
inline constexpr char kDefaultSocketGroup[] = "root";

class UnixListener {
 public:
  // path "" = kDefaultSocketPath, group "" = kDefaultSocketGroup.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Bind(const std::string& path,
                                                            const std::string& group);
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Starts accepting; every accepted connection is added to `server`, which
  // must stay alive until Stop() returns. Accept errors go to `log`.
  absl::Status Start(grpc::Server* server, LogFn log);
  // Idempotent.
  void Stop();

  // The uid of the process that opened the connection now using `fd`
  // (the number in a gRPC peer string "fd:<n>"), if known. An entry is
  // overwritten when the kernel reuses a closed fd for a new connection.
  // gRPC closes a connection's fd only when its transport is destroyed,
  // which in-flight calls keep alive, so a call sees its own connection's
  // uid. The uid is for the audit log only; access to the socket is decided
  // by its file permissions.
  std::optional<uint32_t> UidOfFd(int fd) const;

  const std::string& path() const { return path_; }

 private:
  UnixListener() = default;
  void AcceptLoop(grpc::Server* server, const LogFn& log);

  std::string path_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the accept loop for Stop()
  dev_t dev_ = 0;     // identity of the socket file we created
  ino_t ino_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::map<int, uint32_t> uid_by_fd_;  // guarded by mu_
};

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_UNIX_LISTENER_H_
