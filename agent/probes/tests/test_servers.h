// Real servers on loopback for the probe tests: an HTTP(S) server
// (cpp-httplib), a gRPC ballast.testing.v1.TestBackend, a throwaway CA and
// server certificate made with the openssl command, and a TCP listener whose
// accept queue is full (connects to it time out).
//
// Each object owns its server and stops it on destruction. Not thread-safe
// beyond what the servers themselves do.
#ifndef BALLAST_AGENT_PROBES_TESTS_TEST_SERVERS_H_
#define BALLAST_AGENT_PROBES_TESTS_TEST_SERVERS_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "agent/dataplane/bpf_util.h"

namespace httplib {
class Server;
}

namespace ballast::probes::testing {

// A temporary directory, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// CA and a server certificate for DNS:probe.test and IP:127.0.0.1, made by
// the openssl command; a second, unrelated CA for "wrong CA" cases.
struct Certs {
  std::string ca;        // PEM file of the CA that signed the server cert
  std::string other_ca;  // PEM file of an unrelated CA
  std::string cert, key;
  std::string client_cert, client_key;  // CN=probe-client, signed by `ca`
};
Certs MakeCerts(const std::string& dir);

// HTTP (or HTTPS with cert/key) server on 127.0.0.1:<ephemeral>. Routes:
//   /          200 "hello from <name>"
//   /status/N  N   "status N"
//   /slow      200 after 2 s
//   /ua        200 with the request's User-Agent as body
class HttpServer {
 public:
  // With `client_ca`, only clients with a certificate from it get in.
  explicit HttpServer(std::string name, const std::string& cert = "", const std::string& key = "",
                      const std::string& client_ca = "");
  ~HttpServer();
  int port() const { return port_; }
  std::string last_user_agent() const;

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::shared_ptr<std::string> ua_;
  std::shared_ptr<std::mutex> ua_mu_;
};

// gRPC TestBackend on 127.0.0.1:<ephemeral> answering Hello with
// name=<name>, healthy=<healthy>, message "hello <from> from <name>", and
// recording the last user agent.
class GrpcBackend {
 public:
  GrpcBackend(std::string name, bool healthy);
  // Over TLS with `certs`' server certificate; `require_client_cert`: only
  // clients with a certificate from certs.ca get in.
  GrpcBackend(std::string name, bool healthy, const Certs& certs, bool require_client_cert);
  ~GrpcBackend();
  int port() const { return port_; }
  std::string last_user_agent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// A listener with a full accept queue: new connections are not answered.
class FullListener {
 public:
  FullListener();
  int port() const { return port_; }

 private:
  dataplane::UniqueFd listener_;
  std::vector<dataplane::UniqueFd> fillers_;
  int port_ = 0;
};

// A port on 127.0.0.1 nothing listens on (connects are refused).
int ClosedPort();

}  // namespace ballast::probes::testing

#endif  // BALLAST_AGENT_PROBES_TESTS_TEST_SERVERS_H_
