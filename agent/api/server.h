// lbagent's admin server: the ballast.v1 gRPC services on the admin unix
// socket and, optionally, on a TCP listener with mutual TLS.
//
//  - Unix socket (always on): admin.socket_path (default
//    /run/ballast/lbagent.sock), owner = the agent's user (root in
//    production), group admin.socket_group (default root), mode 0660. See
//    unix_listener.h for how it is created and how stale sockets are handled.
//  - TCP (admin.tcp_listen non-empty): TLS with the server certificate
//    admin.tls_cert/admin.tls_key; every client must present a certificate
//    that chains to admin.tls_client_ca (verified in the handshake), is
//    not revoked by admin.tls_crl if set, and whose name is in
//    admin.identities (see access.h). Starting a TCP listener without all
//    three files or without identities is an error.
//
// StartAdminServer validates all of admin first and either returns a
// running server or an error naming the field; it never leaves a
// half-started server or a socket file behind.
//
// Reload (the agent calls it on SIGHUP) re-reads tls_cert, tls_key,
// tls_client_ca and tls_crl and takes the new identities without a
// restart. It validates everything first: on any error it changes nothing
// and returns the error naming the field. On success every call that starts
// afterwards is checked against the new CA, CRL and allow-list (on new and
// open connections); new connections get the new server certificate.
// socket_path, socket_group and tcp_listen change only with a restart: a
// reload that changes them is refused.
//
// Lifetime: the Engine must outlive the AdminServer. Shutdown() (also run by
// the destructor) ends event streams, lets in-flight calls finish for up to
// AdminServerOptions::shutdown_grace, then cancels them, and removes the
// socket file. Call Shutdown from one thread (the agent's main loop), never
// from inside a handler. Reload and Shutdown: the same thread.
#ifndef BALLAST_AGENT_API_SERVER_H_
#define BALLAST_AGENT_API_SERVER_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/api/log.h"
#include "agent/core/engine.h"
#include "ballast/v1/agent.pb.h"

namespace grpc {
class Server;
}

namespace ballast::api {

class AdminServices;
class ReloadableTlsCredentials;
class UnixListener;

struct AdminServerOptions {
  LogFn log = StderrJsonLog;
  int max_event_streams = 32;
  std::chrono::milliseconds shutdown_grace{2000};
  int max_threads = 64;  // gRPC sync server threads (event streams hold one each)
};

class AdminServer {
 public:
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Idempotent.
  void Shutdown();

  // See above. `admin` as given to StartAdminServer, with the new values.
  absl::Status Reload(const v1::AdminAccess& admin);

  const std::string& socket_path() const { return socket_path_; }
  // The bound TCP port (the chosen one if tcp_listen asked for port 0);
  // 0 when there is no TCP listener.
  int tcp_port() const { return tcp_port_; }

 private:
  friend absl::StatusOr<std::unique_ptr<AdminServer>> StartAdminServer(core::Engine&,
                                                                       const v1::AdminAccess&,
                                                                       AdminServerOptions);
  AdminServer() = default;

  AdminServerOptions options_;
  v1::AdminAccess admin_;  // what the server runs with (the last reload)
  std::string socket_path_;
  int tcp_port_ = 0;
  bool shut_down_ = false;
  std::unique_ptr<AdminServices> services_;
  std::unique_ptr<UnixListener> unix_;
  std::unique_ptr<ReloadableTlsCredentials> tls_;  // before server_: outlives it
  std::unique_ptr<grpc::Server> server_;
};

absl::StatusOr<std::unique_ptr<AdminServer>> StartAdminServer(core::Engine& engine,
                                                              const v1::AdminAccess& admin,
                                                              AdminServerOptions options = {});

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_SERVER_H_
