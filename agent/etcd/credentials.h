// TLS credentials for the etcd client's channels (endpoint.h has the
// options and the rules). Files are read once, when the client is created;
// errors name the option and the file.
#ifndef BALLAST_AGENT_ETCD_CREDENTIALS_H_
#define BALLAST_AGENT_ETCD_CREDENTIALS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "agent/etcd/endpoint.h"

namespace grpc {
class ChannelCredentials;
}  // namespace grpc

namespace ballast::etcd {

// Credentials for TLS endpoints (reads the files), or the insecure ones.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeCredentials(bool tls,
                                                                          const TlsOptions& opts);

}  // namespace ballast::etcd

#endif  // BALLAST_AGENT_ETCD_CREDENTIALS_H_
