// lbctl's connection to lbagent: the admin unix socket (default) or TCP with
// mutual TLS, and the per-call deadline.
#ifndef BALLAST_TOOLS_LBCTL_CLIENT_H_
#define BALLAST_TOOLS_LBCTL_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/api/status_convert.h"
#include "ballast/v1/api.grpc.pb.h"

namespace ballast::lbctl {

inline constexpr char kDefaultSocket[] = "/run/ballast/lbagent.sock";

struct Target {
  std::string socket = kDefaultSocket;  // used when addr is empty
  std::string addr;                     // "host:port": TCP with mutual TLS
  std::string cacert, cert, key;        // PEM files, all required with addr
  std::string server_name;              // expected server certificate name, if not host
  absl::Duration timeout = absl::Seconds(10);
};

class Client {
 public:
  // Checks what can be checked locally first, with complete messages:
  // missing TLS files (INVALID_ARGUMENT), no socket file (UNAVAILABLE),
  // socket not accessible to this user (PERMISSION_DENIED).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const Target& target);

  // "unix:/run/ballast/lbagent.sock" or "127.0.0.1:7443".
  const std::string& target() const { return target_text_; }

  // A context whose deadline is now + timeout (streams: no deadline).
  std::unique_ptr<grpc::ClientContext> Context(bool stream = false) const;

  // Runs one unary call and converts its status.
  template <typename Stub, typename Req, typename Resp>
  absl::Status Call(Stub& stub,
                    grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                    const Req& req, Resp* resp) const {
    std::unique_ptr<grpc::ClientContext> ctx = Context();
    return api::ToAbslStatus((stub.*method)(ctx.get(), req, resp));
  }

  v1::Vips::Stub& vips() { return *vips_; }
  v1::Backends::Stub& backends() { return *backends_; }
  v1::Status::Stub& status() { return *status_; }
  v1::ConfigService::Stub& config() { return *config_; }
  v1::Audit::Stub& audit() { return *audit_; }
  v1::Admin::Stub& admin() { return *admin_; }
  v1::ClusterOps::Stub& cluster() { return *cluster_; }

 private:
  Client() = default;

  std::string target_text_;
  absl::Duration timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Vips::Stub> vips_;
  std::unique_ptr<v1::Backends::Stub> backends_;
  std::unique_ptr<v1::Status::Stub> status_;
  std::unique_ptr<v1::ConfigService::Stub> config_;
  std::unique_ptr<v1::Audit::Stub> audit_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  std::unique_ptr<v1::ClusterOps::Stub> cluster_;
};

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_CLIENT_H_
