// Real etcd servers for tests: an EtcdCluster starts 1..n etcd members on
// 127.0.0.1 (free client and peer ports, one temporary data directory),
// waits until every member reports healthy (HTTP GET /health on its client
// port, independent of the client under test), and on destruction SIGKILLs
// every member it started, by PID, and removes the directory. Members also
// die with the test process (PR_SET_PDEATHSIG), so a crashed test leaves no
// server behind.
//
// The etcd binary is $BALLAST_ETCD, else `etcd` on PATH. When it is missing,
// Start throws, naming the package to install: the tests fail, never skip.
//
// Not thread-safe: drive it from the test's main thread (the thread that
// forks the servers, which PR_SET_PDEATHSIG ties them to).
#ifndef BALLAST_AGENT_ETCD_TESTS_ETCD_HARNESS_H_
#define BALLAST_AGENT_ETCD_TESTS_ETCD_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace ballast::etcd::testing {

// A TLS client listener (etcd --cert-file/--key-file/--trusted-ca-file
// --client-cert-auth): clients must present a certificate from `ca_file`.
// /health is then served on a separate plaintext metrics port.
struct ServerTls {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
};

class EtcdCluster {
 public:
  static std::unique_ptr<EtcdCluster> Start(int members);
  static std::unique_ptr<EtcdCluster> StartTls(int members, const ServerTls& tls);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  int size() const { return static_cast<int>(members_.size()); }
  // "http(s)://127.0.0.1:<client port>" of member i / of every member.
  std::string endpoint(int i) const;
  std::vector<std::string> endpoints() const;
  pid_t pid(int i) const { return members_[i].pid; }

  // SIGKILL member i and reap it.
  void Kill(int i);
  // Start member i again on its ports and data; waits until it is healthy.
  void Restart(int i);
  // SIGSTOP / SIGCONT member i.
  void Freeze(int i);
  void Thaw(int i);
  // True when member i answers /health with "true" within `timeout`.
  bool Healthy(int i, std::chrono::milliseconds timeout) const;
  // The last lines of member i's log, for failure messages.
  std::string LogTail(int i) const;

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    int metrics_port = 0;  // TLS mode: /health here
    std::string data_dir;
    std::string log_path;
    pid_t pid = -1;
  };
  EtcdCluster() = default;
  void Spawn(int i, bool initial);
  void WaitHealthy(int i, std::chrono::seconds timeout);

  std::string etcd_path_;
  std::string dir_;
  std::string initial_cluster_;
  std::string token_;
  std::vector<Member> members_;
  ServerTls tls_;
  bool use_tls_ = false;
};

}  // namespace ballast::etcd::testing

#endif  // BALLAST_AGENT_ETCD_TESTS_ETCD_HARNESS_H_
