#include "tools/lbctl/client.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace ballast::lbctl {
namespace {

constexpr int kMaxMessageBytes = 64 << 20;

absl::StatusOr<std::string> ReadPem(const std::string& path, absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": cannot read: ", std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status CheckSocket(const std::string& path, const std::string& target) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == EACCES) {
      return absl::PermissionDeniedError(
          absl::StrCat("permission denied on ", target,
                       ": run as root or as a member of the socket's group "
                       "(admin.socket_group in lbagent's config)"));
    }
    return absl::UnavailableError(absl::StrCat(
        "cannot reach lbagent at ", target, ": ",
        errno == ENOENT ? "no such socket" : std::strerror(errno), ". Is lbagent running?"));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::UnavailableError(absl::StrCat("cannot reach lbagent at ", target, ": ", path,
                                               " is not a socket. Is lbagent running?"));
  }
  if (access(path.c_str(), R_OK | W_OK) != 0 && errno == EACCES) {
    return absl::PermissionDeniedError(
        absl::StrCat("permission denied on ", target,
                     ": run as root or as a member of the socket's group "
                     "(admin.socket_group in lbagent's config)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const Target& target) {
  std::unique_ptr<Client> c(new Client());
  c->timeout_ = target.timeout;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  std::string uri;
  if (!target.addr.empty()) {
    if (target.cacert.empty() || target.cert.empty() || target.key.empty()) {
      return absl::InvalidArgumentError(
          "--addr needs --cacert, --cert and --key: the admin TCP listener only accepts mutual "
          "TLS");
    }
    grpc::SslCredentialsOptions ssl;
    absl::StatusOr<std::string> ca = ReadPem(target.cacert, "--cacert");
    if (!ca.ok()) return ca.status();
    absl::StatusOr<std::string> cert = ReadPem(target.cert, "--cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem(target.key, "--key");
    if (!key.ok()) return key.status();
    ssl.pem_root_certs = *ca;
    ssl.pem_cert_chain = *cert;
    ssl.pem_private_key = *key;
    creds = grpc::SslCredentials(ssl);
    if (!target.server_name.empty()) args.SetSslTargetNameOverride(target.server_name);
    uri = target.addr;
    c->target_text_ = target.addr;
  } else {
    c->target_text_ = absl::StrCat("unix:", target.socket);
    if (absl::Status s = CheckSocket(target.socket, c->target_text_); !s.ok()) return s;
    creds = grpc::InsecureChannelCredentials();
    uri = c->target_text_;
  }
  c->channel_ = grpc::CreateCustomChannel(uri, creds, args);
  c->vips_ = v1::Vips::NewStub(c->channel_);
  c->backends_ = v1::Backends::NewStub(c->channel_);
  c->status_ = v1::Status::NewStub(c->channel_);
  c->config_ = v1::ConfigService::NewStub(c->channel_);
  c->audit_ = v1::Audit::NewStub(c->channel_);
  c->admin_ = v1::Admin::NewStub(c->channel_);
  c->cluster_ = v1::ClusterOps::NewStub(c->channel_);
  return c;
}

std::unique_ptr<grpc::ClientContext> Client::Context(bool stream) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!stream) ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  return ctx;
}

}  // namespace ballast::lbctl
