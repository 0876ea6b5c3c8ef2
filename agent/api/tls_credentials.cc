#include "agent/api/tls_credentials.h"

#include <grpc/grpc.h>
#include <grpcpp/security/server_credentials.h>

#include <cstdio>
#include <cstdlib>

namespace ballast::api {
namespace {

// grpc::ServerCredentials over a C core credentials object: the C++ API of
// gRPC 1.51 has no way to build SSL credentials from a config fetcher.
class CoreServerCredentials final : public grpc::ServerCredentials {
 public:
  explicit CoreServerCredentials(grpc_server_credentials* creds) : creds_(creds) {}
  ~CoreServerCredentials() override { grpc_server_credentials_release(creds_); }

  // The admin server authorizes in its call guard (services.h), never with a
  // metadata processor; reaching this is a programming error.
  void SetAuthMetadataProcessor(const std::shared_ptr<grpc::AuthMetadataProcessor>&) override {
    std::fputs("ReloadableTlsCredentials: SetAuthMetadataProcessor is not supported\n", stderr);
    std::abort();
  }

 private:
  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    return grpc_server_add_http2_port(server, addr.c_str(), creds_);
  }

  grpc_server_credentials* const creds_;
};

}  // namespace

ReloadableTlsCredentials::ReloadableTlsCredentials(const TlsMaterial& m)
    : cert_pem_(m.cert_pem), key_pem_(m.key_pem), client_ca_pem_(m.client_ca_pem) {}

std::shared_ptr<grpc::ServerCredentials> ReloadableTlsCredentials::credentials() {
  grpc_ssl_server_credentials_options* options =
      grpc_ssl_server_credentials_create_options_using_config_fetcher(
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY, &Fetch, this);
  grpc_server_credentials* creds = grpc_ssl_server_credentials_create_with_options(options);
  return std::make_shared<CoreServerCredentials>(creds);
}

void ReloadableTlsCredentials::Update(const TlsMaterial& m) {
  std::lock_guard<std::mutex> lock(mu_);
  cert_pem_ = m.cert_pem;
  key_pem_ = m.key_pem;
  client_ca_pem_ = m.client_ca_pem;
  ++generation_;
}

grpc_ssl_certificate_config_reload_status ReloadableTlsCredentials::Fetch(
    void* self, grpc_ssl_server_certificate_config** config) {
  auto* me = static_cast<ReloadableTlsCredentials*>(self);
  std::lock_guard<std::mutex> lock(me->mu_);
  if (me->fetched_ == me->generation_) return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
  // grpc_ssl_server_certificate_config_create copies the strings.
  grpc_ssl_pem_key_cert_pair pair = {me->key_pem_.c_str(), me->cert_pem_.c_str()};
  *config = grpc_ssl_server_certificate_config_create(me->client_ca_pem_.c_str(), &pair, 1);
  me->fetched_ = me->generation_;
  return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
}

}  // namespace ballast::api
