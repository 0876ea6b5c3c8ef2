#include "agent/etcd/credentials.h"

#include <grpcpp/security/credentials.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ballast::etcd {
namespace {

absl::StatusOr<std::string> ReadPem(absl::string_view option, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd ", option, " \"", path, "\": cannot be read"));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string pem = ss.str();
  if (!absl::StrContains(pem, "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd ", option, " \"", path, "\": not a PEM file"));
  }
  return pem;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeCredentials(bool tls,
                                                                          const TlsOptions& opts) {
  if (opts.cert_file.empty() != opts.key_file.empty()) {
    return absl::InvalidArgumentError(
        "etcd cert_file and key_file: give both (the client certificate and its key) or neither");
  }
  if (!tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!opts.ca_file.empty()) {
    auto ca = ReadPem("ca_file", opts.ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!opts.cert_file.empty()) {
    auto cert = ReadPem("cert_file", opts.cert_file);
    if (!cert.ok()) return cert.status();
    auto key = ReadPem("key_file", opts.key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace ballast::etcd
