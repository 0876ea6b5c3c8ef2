#include "agent/api/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "agent/api/access.h"
#include "agent/api/services.h"
#include "agent/api/tls_material.h"
#include "agent/api/unix_listener.h"

namespace ballast::api {
namespace {

constexpr int kMaxMessageBytes = 64 << 20;  // status of 100 VIPs x 100 backends fits easily

}  // namespace

absl::StatusOr<std::unique_ptr<AdminServer>> StartAdminServer(core::Engine& engine,
                                                              const v1::AdminAccess& admin,
                                                              AdminServerOptions options) {
  if (!options.log) options.log = StderrJsonLog;
  std::optional<TlsMaterial> tls;
  if (!admin.tcp_listen().empty()) {
    absl::StatusOr<TlsMaterial> m = LoadTlsMaterial(admin);
    if (!m.ok()) return m.status();
    for (const std::string& w : m->warnings) options.log("warning", w);
    tls = std::move(*m);
  } else if (admin.identities_size() > 0) {
    options.log("warning",
                "admin.identities is set but admin.tcp_listen is empty: identities apply only "
                "to the TCP listener, which is off");
  }
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Create(admin, tls ? tls->verifier : nullptr);
  if (!policy.ok()) return policy.status();

  std::unique_ptr<AdminServer> server(new AdminServer());
  server->options_ = options;

  absl::StatusOr<std::unique_ptr<UnixListener>> unix =
      UnixListener::Bind(admin.socket_path(), admin.socket_group());
  if (!unix.ok()) return unix.status();
  server->unix_ = std::move(*unix);
  server->socket_path_ = server->unix_->path();

  UnixListener* listener = server->unix_.get();
  server->services_ = std::make_unique<AdminServices>(
      engine, std::move(*policy), [listener](int fd) { return listener->UidOfFd(fd); }, options.log,
      options.max_event_streams);

  grpc::ServerBuilder builder;
  for (grpc::Service* s : server->services_->services()) builder.RegisterService(s);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  grpc::ResourceQuota quota("ballast-admin");
  quota.SetMaxThreads(options.max_threads);
  builder.SetResourceQuota(quota);
  // gRPC enables SO_REUSEPORT by default, which would let a second agent
  // bind the same admin port silently. One listener per port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int selected_port = 0;
  if (tls) {
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = tls->client_ca_pem;
    ssl.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
    builder.AddListeningPort(admin.tcp_listen(), grpc::SslServerCredentials(ssl), &selected_port);
  }
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr) {
    return absl::UnavailableError(
        tls ? absl::StrCat("admin.tcp_listen: cannot listen on ", admin.tcp_listen(),
                           " (address in use, not local, or TLS material rejected by gRPC)")
            : std::string("admin API: gRPC server failed to start"));
  }
  if (tls) {
    if (selected_port == 0) {
      server->server_->Shutdown();
      return absl::UnavailableError(absl::StrCat("admin.tcp_listen: cannot listen on ",
                                                 admin.tcp_listen(),
                                                 " (address in use or not local)"));
    }
    server->tcp_port_ = selected_port;
  }
  if (absl::Status s = server->unix_->Start(server->server_.get(), options.log); !s.ok()) {
    return s;
  }
  options.log("info", absl::StrCat("admin API listening on unix:", server->socket_path_,
                                   tls ? absl::StrCat(" and on ", admin.tcp_listen(),
                                                      " (mutual TLS, port ", selected_port, ")")
                                       : std::string()));
  return server;
}

AdminServer::~AdminServer() { Shutdown(); }

void AdminServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // No new connections, then end streams, then drain calls.
  if (unix_) unix_->Stop();
  if (services_) services_->BeginShutdown();
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + options_.shutdown_grace);
    server_->Wait();
  }
}

}  // namespace ballast::api
