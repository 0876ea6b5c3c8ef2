#include "agent/api/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "agent/api/access.h"
#include "agent/api/services.h"
#include "agent/api/tls_credentials.h"
#include "agent/api/tls_material.h"
#include "agent/api/unix_listener.h"

namespace ballast::api {
namespace {

constexpr int kMaxMessageBytes = 64 << 20;  // status of 100 VIPs x 100 backends fits easily

// What StartAdminServer and Reload read and check: the TLS material (only
// with a TCP listener) and the access policy over it.
struct AdminMaterial {
  std::optional<TlsMaterial> tls;
  AccessPolicy policy;
};

absl::StatusOr<AdminMaterial> LoadAdminMaterial(const v1::AdminAccess& admin, const LogFn& log) {
  std::optional<TlsMaterial> tls;
  if (!admin.tcp_listen().empty()) {
    absl::StatusOr<TlsMaterial> m = LoadTlsMaterial(admin);
    if (!m.ok()) return m.status();
    tls = std::move(*m);
  }
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Create(admin, tls ? tls->verifier : nullptr);
  if (!policy.ok()) return policy.status();
  if (tls) {
    for (const std::string& w : tls->warnings) log("warning", w);
  } else if (admin.identities_size() > 0 || !admin.tls_crl().empty()) {
    log("warning",
        "admin.identities or admin.tls_crl is set but admin.tcp_listen is empty: they apply only "
        "to the TCP listener, which is off");
  }
  return AdminMaterial{std::move(tls), std::move(*policy)};
}

// The fields a reload cannot change: the listeners are bound to them.
absl::Status CheckBindingsUnchanged(const v1::AdminAccess& running, const v1::AdminAccess& next) {
  const struct {
    const char* field;
    const std::string& was;
    const std::string& is;
  } fields[] = {{"admin.socket_path", running.socket_path(), next.socket_path()},
                {"admin.socket_group", running.socket_group(), next.socket_group()},
                {"admin.tcp_listen", running.tcp_listen(), next.tcp_listen()}};
  for (const auto& f : fields) {
    if (f.was == f.is) continue;
    return absl::InvalidArgumentError(absl::StrCat(f.field, ": changed from '", f.was, "' to '",
                                                   f.is,
                                                   "', which takes a restart; nothing reloaded"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<AdminServer>> StartAdminServer(core::Engine& engine,
                                                              const v1::AdminAccess& admin,
                                                              AdminServerOptions options) {
  if (!options.log) options.log = StderrJsonLog;
  absl::StatusOr<AdminMaterial> material = LoadAdminMaterial(admin, options.log);
  if (!material.ok()) return material.status();
  const std::optional<TlsMaterial>& tls = material->tls;

  std::unique_ptr<AdminServer> server(new AdminServer());
  server->options_ = options;
  server->admin_ = admin;

  absl::StatusOr<std::unique_ptr<UnixListener>> unix =
      UnixListener::Bind(admin.socket_path(), admin.socket_group());
  if (!unix.ok()) return unix.status();
  server->unix_ = std::move(*unix);
  server->socket_path_ = server->unix_->path();

  UnixListener* listener = server->unix_.get();
  server->services_ = std::make_unique<AdminServices>(
      engine, std::move(material->policy), [listener](int fd) { return listener->UidOfFd(fd); },
      options.log, options.max_event_streams);

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
    server->tls_ = std::make_unique<ReloadableTlsCredentials>(*tls);
    builder.AddListeningPort(admin.tcp_listen(), server->tls_->credentials(), &selected_port);
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

absl::Status AdminServer::Reload(const v1::AdminAccess& admin) {
  if (shut_down_) return absl::FailedPreconditionError("admin API: reload after shutdown");
  if (absl::Status s = CheckBindingsUnchanged(admin_, admin); !s.ok()) return s;
  absl::StatusOr<AdminMaterial> material = LoadAdminMaterial(admin, options_.log);
  if (!material.ok()) return material.status();
  // Everything is valid: switch. tls_ exists exactly when tcp_listen is set,
  // and tcp_listen did not change.
  if (tls_ != nullptr) tls_->Update(*material->tls);
  std::string what = absl::StrCat(material->policy.identity_count(), " identities");
  if (material->tls) {
    const ClientVerifier& v = *material->tls->verifier;
    absl::StrAppend(&what, ", TLS material",
                    v.crl_count() == 0
                        ? std::string(", no CRL")
                        : absl::StrCat(", ", v.crl_count(), " CRL(s) from ", admin.tls_crl(),
                                       " revoking ", v.revoked_count(), " certificate(s)"));
  }
  services_->SetPolicy(std::move(material->policy));
  admin_ = admin;
  options_.log("info", absl::StrCat("admin API reloaded: ", what));
  return absl::OkStatus();
}

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
