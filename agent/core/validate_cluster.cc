// ValidateCluster (validate.h): the cluster block of lbagent's config. Pure:
// no file is read (the credential files are read when the node starts).
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/core/validate.h"
#include "agent/etcd/endpoint.h"

namespace ballast::core {

absl::Status ValidateCluster(const v1::Cluster& cl, const FieldPath& at) {
  if (cl.endpoints_size() == 0) {
    return at.Child("endpoints").Invalid("at least one etcd endpoint is required");
  }
  etcd::TlsOptions tls;
  tls.ca_file = cl.etcd_ca_file();
  tls.allow_plaintext_remote = cl.etcd_allow_plaintext_remote();
  for (int i = 0; i < cl.endpoints_size(); ++i) {
    if (auto t = etcd::ParseEndpoint(cl.endpoints(i), tls); !t.ok()) {
      return at.Child(absl::StrCat("endpoints[", i, "]")).Invalid(t.status().message());
    }
  }
  for (const auto& [name, path] :
       {std::pair<const char*, const std::string*>{"etcd_ca_file", &cl.etcd_ca_file()},
        {"etcd_cert_file", &cl.etcd_cert_file()},
        {"etcd_key_file", &cl.etcd_key_file()},
        {"etcd_password_file", &cl.etcd_password_file()}}) {
    if (!path->empty() && path->front() != '/') {
      return at.Child(name).Invalid(absl::StrCat("\"", *path, "\" must be an absolute path"));
    }
  }
  if (cl.etcd_cert_file().empty() != cl.etcd_key_file().empty()) {
    return at.Child(cl.etcd_cert_file().empty() ? "etcd_cert_file" : "etcd_key_file")
        .Invalid("etcd_cert_file and etcd_key_file go together (the certificate and its key)");
  }
  if (cl.etcd_username().empty() != cl.etcd_password_file().empty()) {
    return at.Child(cl.etcd_username().empty() ? "etcd_username" : "etcd_password_file")
        .Invalid("etcd_username and etcd_password_file go together");
  }
  if (!cl.prefix().empty() && (cl.prefix().front() != '/' || cl.prefix().back() == '/' ||
                               cl.prefix().find_first_of(" \t\r\n") != std::string::npos)) {
    return at.Child("prefix").Invalid(absl::StrCat(
        "\"", cl.prefix(), "\" must start with '/', not end with '/', and have no spaces"));
  }
  if (cl.node().empty() || cl.node().size() > 63 ||
      cl.node().find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789-_.") != std::string::npos) {
    return at.Child("node").Invalid(absl::StrCat(
        "\"", cl.node(), "\" is not a node name (1..63 of letters, digits, '-', '_', '.')"));
  }
  if (cl.lease_ttl_s() != 0) {
    if (auto s = CheckRange(cl.lease_ttl_s(), 2, 300, at.Child("lease_ttl_s")); !s.ok()) return s;
  }
  return CheckRange(cl.drift_alert_s(), 0, 3600, at.Child("drift_alert_s"));
}

}  // namespace ballast::core
