#include "agent/etcd/tests/etcd_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ballast::etcd::testing {

namespace {

std::string FindEtcd() {
  if (const char* env = std::getenv("BALLAST_ETCD"); env != nullptr && *env != '\0') {
    if (access(env, X_OK) == 0) return env;
    throw std::runtime_error(std::string("BALLAST_ETCD=") + env + " is not an executable");
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/etcd";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error(
      "etcd not found on PATH: these tests need a real etcd server. Install Debian's "
      "etcd-server package (tools/setup.sh does), or set BALLAST_ETCD to the binary.");
}

// Reserves n distinct free TCP ports on 127.0.0.1 (all held open until all
// are chosen, then released for etcd to bind).
std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof(a);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      close(fd);
      throw std::runtime_error(std::string("bind 127.0.0.1:0: ") + strerror(errno));
    }
    fds.push_back(fd);
    ports.push_back(ntohs(a.sin_port));
  }
  for (int fd : fds) close(fd);
  return ports;
}

// GET /health on 127.0.0.1:port; true when the body says "health":"true".
bool HealthOnce(int port, std::chrono::milliseconds timeout) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left_ms = [&] {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - std::chrono::steady_clock::now())
                  .count();
    return static_cast<int>(ms < 0 ? 0 : ms);
  };
  bool ok = false;
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 || errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof(err);
    if (poll(&p, 1, left_ms()) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
        err == 0) {
      const std::string req =
          "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
      if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
        char buf[1024];
        while (true) {
          pollfd q{fd, POLLIN, 0};
          if (poll(&q, 1, left_ms()) != 1) break;
          ssize_t n = recv(fd, buf, sizeof(buf), 0);
          if (n <= 0) break;
          response.append(buf, static_cast<size_t>(n));
        }
        ok = response.find("\"health\":\"true\"") != std::string::npos;
      }
    }
  }
  close(fd);
  return ok;
}

}  // namespace

std::unique_ptr<EtcdCluster> EtcdCluster::Start(int members) {
  return StartTls(members, ServerTls{});
}

std::unique_ptr<EtcdCluster> EtcdCluster::StartTls(int members, const ServerTls& tls) {
  std::unique_ptr<EtcdCluster> c(new EtcdCluster());
  c->tls_ = tls;
  c->use_tls_ = !tls.cert_file.empty();
  c->etcd_path_ = FindEtcd();
  char tmpl[] = "/tmp/ballast-etcd-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr)
    throw std::runtime_error(std::string("mkdtemp: ") + strerror(errno));
  c->dir_ = tmpl;
  c->token_ = "ballast-test-" + std::to_string(getpid()) + "-" + c->dir_.substr(c->dir_.size() - 6);
  std::vector<int> ports = FreePorts(3 * members);
  for (int i = 0; i < members; ++i) {
    Member m;
    // Not "m" + std::to_string(i): GCC 12 at -O3 warns a false -Wrestrict on
    // that pattern (GCC bug 105329).
    m.name = "m";
    m.name += std::to_string(i);
    m.client_port = ports[3 * i];
    m.peer_port = ports[3 * i + 1];
    m.metrics_port = ports[3 * i + 2];
    m.data_dir = c->dir_ + "/" + m.name;
    m.log_path = c->dir_ + "/" + m.name + ".log";
    if (!c->initial_cluster_.empty()) c->initial_cluster_ += ",";
    c->initial_cluster_ += m.name + "=http://127.0.0.1:" + std::to_string(m.peer_port);
    c->members_.push_back(m);
  }
  // Members of a new cluster wait for each other: start all, then wait.
  for (int i = 0; i < members; ++i) c->Spawn(i, /*initial=*/true);
  for (int i = 0; i < members; ++i) c->WaitHealthy(i, std::chrono::seconds(30));
  return c;
}

EtcdCluster::~EtcdCluster() {
  for (int i = 0; i < size(); ++i) {
    if (members_[i].pid > 0) Kill(i);
  }
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string EtcdCluster::endpoint(int i) const {
  return (use_tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") +
         std::to_string(members_[i].client_port);
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> out;
  for (int i = 0; i < size(); ++i) out.push_back(endpoint(i));
  return out;
}

void EtcdCluster::Spawn(int i, bool initial) {
  Member& m = members_[i];
  const std::string client = endpoint(i);
  const std::string peer = "http://127.0.0.1:" + std::to_string(m.peer_port);
  std::vector<std::string> args = {
      etcd_path_,
      "--name=" + m.name,
      "--data-dir=" + m.data_dir,
      "--listen-client-urls=" + client,
      "--advertise-client-urls=" + client,
      "--listen-peer-urls=" + peer,
      "--initial-advertise-peer-urls=" + peer,
      "--initial-cluster=" + initial_cluster_,
      "--initial-cluster-token=" + token_,
      std::string("--initial-cluster-state=") + (initial ? "new" : "existing"),
      "--logger=zap",
      "--log-level=warn",
  };
  if (use_tls_) {
    args.push_back("--cert-file=" + tls_.cert_file);
    args.push_back("--key-file=" + tls_.key_file);
    args.push_back("--trusted-ca-file=" + tls_.ca_file);
    args.push_back("--client-cert-auth");
    args.push_back("--listen-metrics-urls=http://127.0.0.1:" + std::to_string(m.metrics_port));
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Prepared before fork: the child only calls async-signal-safe functions.
  int log = open(m.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) throw std::runtime_error("open " + m.log_path + ": " + strerror(errno));
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(log);
    throw std::runtime_error(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log);
  m.pid = pid;
}

bool EtcdCluster::Healthy(int i, std::chrono::milliseconds timeout) const {
  return HealthOnce(use_tls_ ? members_[i].metrics_port : members_[i].client_port, timeout);
}

void EtcdCluster::WaitHealthy(int i, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(members_[i].pid, &status, WNOHANG) == members_[i].pid) {
      members_[i].pid = -1;
      throw std::runtime_error("etcd member " + members_[i].name + " exited during start-up:\n" +
                               LogTail(i));
    }
    if (Healthy(i, std::chrono::milliseconds(500))) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("etcd member " + members_[i].name + " not healthy after " +
                           std::to_string(timeout.count()) + " s:\n" + LogTail(i));
}

void EtcdCluster::Kill(int i) {
  Member& m = members_[i];
  if (m.pid <= 0) return;
  kill(m.pid, SIGKILL);
  int status = 0;
  while (waitpid(m.pid, &status, 0) < 0 && errno == EINTR) {
  }
  m.pid = -1;
}

void EtcdCluster::Restart(int i) {
  Kill(i);
  Spawn(i, /*initial=*/false);
  WaitHealthy(i, std::chrono::seconds(30));
}

void EtcdCluster::Freeze(int i) {
  if (members_[i].pid > 0) kill(members_[i].pid, SIGSTOP);
}

void EtcdCluster::Thaw(int i) {
  if (members_[i].pid > 0) kill(members_[i].pid, SIGCONT);
}

std::string EtcdCluster::LogTail(int i) const {
  std::ifstream in(members_[i].log_path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > 20) lines.erase(lines.begin());
  }
  std::string out;
  for (const std::string& l : lines) out += "  " + l + "\n";
  return out;
}

}  // namespace ballast::etcd::testing
