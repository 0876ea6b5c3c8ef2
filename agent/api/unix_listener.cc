#include "agent/api/unix_listener.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ballast::api {
namespace {

std::string Errno(int err) { return std::strerror(err); }

absl::Status ErrnoStatus(int err, absl::string_view what) {
  std::string msg = absl::StrCat(what, ": ", Errno(err));
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::InternalError(msg);
}

absl::StatusOr<gid_t> LookupGroup(const std::string& group) {
  std::vector<char> buf(16384);
  struct group gr;
  struct group* result = nullptr;
  int rc = getgrnam_r(group.c_str(), &gr, buf.data(), buf.size(), &result);
  if (rc != 0) return ErrnoStatus(rc, absl::StrCat("admin.socket_group: looking up '", group, "'"));
  if (result == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("admin.socket_group: there is no group named '", group, "' on this host"));
  }
  return result->gr_gid;
}

// mkdir -p for the socket's directory; existing directories are not touched.
absl::Status MakeParents(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return absl::OkStatus();
  std::string dir = path.substr(0, slash);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, absl::StrCat("admin.socket_path: creating directory ", prefix));
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("admin.socket_path: ", dir, " is not a directory"));
  }
  // Whoever may write the directory may replace the socket with their own,
  // and lbctl would then talk to an impostor.
  if (st.st_uid != 0 && st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("admin.socket_path: ", dir, " belongs to uid ", st.st_uid,
                     "; the admin socket's directory must belong to root (e.g. /run/ballast)"));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("admin.socket_path: ", dir, " is writable by its group or by others (mode ",
                     absl::StrFormat("%04o", st.st_mode & 07777),
                     "), who could replace the admin socket; use a directory only "
                     "root can write (e.g. /run/ballast, mode 0755)"));
  }
  return absl::OkStatus();
}

bool FillAddr(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, path.data(), path.size());
  return true;
}

// Removes a stale socket file; refuses to touch a live one or a non-socket.
absl::Status RemoveStale(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("admin.socket_path: stat ", path));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "admin.socket_path: ", path, " exists and is not a socket; refusing to remove it"));
  }
  int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return ErrnoStatus(errno, "socket(AF_UNIX)");
  sockaddr_un addr;
  FillAddr(path, &addr);
  int rc = connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int err = errno;
  close(probe);
  if (rc == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("admin.socket_path: another process is serving on ", path,
                     " (is another lbagent running?); stop it first"));
  }
  if (err != ECONNREFUSED && err != ENOENT) {
    return ErrnoStatus(err, absl::StrCat("admin.socket_path: probing existing socket ", path));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrCat("admin.socket_path: removing stale socket ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Bind(const std::string& path_in,
                                                                 const std::string& group_in) {
  const std::string path = path_in.empty() ? kDefaultSocketPath : path_in;
  const std::string group = group_in.empty() ? kDefaultSocketGroup : group_in;
  sockaddr_un addr;
  if (!FillAddr(path, &addr)) {
    return absl::InvalidArgumentError(absl::StrCat("admin.socket_path: '", path, "' is ",
                                                   path.size(), " bytes; the limit is ",
                                                   sizeof(addr.sun_path) - 1));
  }
  if (path.front() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("admin.socket_path: '", path, "' must be an absolute path"));
  }
  absl::StatusOr<gid_t> gid = LookupGroup(group);
  if (!gid.ok()) return gid.status();
  if (absl::Status s = MakeParents(path); !s.ok()) return s;
  if (absl::Status s = RemoveStale(path); !s.ok()) return s;

  std::unique_ptr<UnixListener> l(new UnixListener());
  l->path_ = path;
  l->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l->listen_fd_ < 0) return ErrnoStatus(errno, "socket(AF_UNIX)");
  if (bind(l->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoStatus(errno, absl::StrCat("admin.socket_path: bind ", path));
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("admin.socket_path: stat ", path));
  }
  l->dev_ = st.st_dev;
  l->ino_ = st.st_ino;
  // Not connectable yet (no listen), so the order of these is not a race.
  if (chown(path.c_str(), geteuid(), *gid) != 0) {
    absl::Status s =
        ErrnoStatus(errno, absl::StrCat("admin.socket_path: chown ", path, " to group ", group));
    l->Stop();
    return s;
  }
  if (chmod(path.c_str(), 0660) != 0) {
    absl::Status s = ErrnoStatus(errno, absl::StrCat("admin.socket_path: chmod 0660 ", path));
    l->Stop();
    return s;
  }
  if (listen(l->listen_fd_, 64) != 0) {
    absl::Status s = ErrnoStatus(errno, absl::StrCat("admin.socket_path: listen ", path));
    l->Stop();
    return s;
  }
  l->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (l->wake_fd_ < 0) {
    absl::Status s = ErrnoStatus(errno, "eventfd");
    l->Stop();
    return s;
  }
  return l;
}

UnixListener::~UnixListener() { Stop(); }

absl::Status UnixListener::Start(grpc::Server* server, LogFn log) {
  if (thread_.joinable() || listen_fd_ < 0) {
    return absl::FailedPreconditionError("admin unix listener: already started or stopped");
  }
  thread_ = std::thread([this, server, log = std::move(log)] { AcceptLoop(server, log); });
  return absl::OkStatus();
}

void UnixListener::AcceptLoop(grpc::Server* server, const LogFn& log) {
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int n = poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      log("error", absl::StrCat("admin socket ", path_, ": poll: ", Errno(errno),
                                "; no longer accepting connections"));
      return;
    }
    if (stopping_.load() || (fds[1].revents & POLLIN)) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors or memory: say so and back off instead of spinning.
        log("warning", absl::StrCat("admin socket ", path_, ": accept: ", Errno(errno)));
        poll(nullptr, 0, 100);
        continue;
      }
      log("warning", absl::StrCat("admin socket ", path_, ": accept: ", Errno(errno)));
      continue;
    }
    ucred cred;
    socklen_t len = sizeof(cred);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred)) {
        uid_by_fd_[fd] = static_cast<uint32_t>(cred.uid);
      } else {
        uid_by_fd_.erase(fd);
      }
    }
    // gRPC owns fd from here and closes it when the connection ends.
    grpc::AddInsecureChannelFromFd(server, fd);
  }
}

void UnixListener::Stop() {
  stopping_.store(true);
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    ssize_t ignored = write(wake_fd_, &one, sizeof(one));
    (void)ignored;
  }
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    struct stat st;
    if (!path_.empty() && stat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
      unlink(path_.c_str());
    }
  }
  if (wake_fd_ >= 0) {
    close(wake_fd_);
    wake_fd_ = -1;
  }
}

std::optional<uint32_t> UnixListener::UidOfFd(int fd) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = uid_by_fd_.find(fd);
  if (it == uid_by_fd_.end()) return std::nullopt;
  return it->second;
}

}  // namespace ballast::api
