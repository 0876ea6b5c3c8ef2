#include "agent/api/peer.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/auth_context.h>
#include <grpcpp/server_context.h>

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace ballast::api {
namespace {

void AddValues(const grpc::AuthContext& auth, const char* property, std::vector<std::string>* out) {
  for (const grpc::string_ref& v : auth.FindPropertyValues(property)) {
    std::string s(v.data(), v.size());
    if (!s.empty() && std::find(out->begin(), out->end(), s) == out->end()) {
      out->push_back(std::move(s));
    }
  }
}

std::string FirstValue(const grpc::AuthContext& auth, const char* property) {
  const std::vector<grpc::string_ref> values = auth.FindPropertyValues(property);
  return values.empty() ? std::string() : std::string(values[0].data(), values[0].size());
}

}  // namespace

PeerInfo PeerOf(const grpc::ServerContext& ctx, const UidLookup& uid_of_fd) {
  PeerInfo peer;
  peer.address = ctx.peer();
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  std::string security;
  if (auth != nullptr) {
    for (const grpc::string_ref& v :
         auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME)) {
      security.assign(v.data(), v.size());
    }
  }
  if (security == GRPC_SSL_TRANSPORT_SECURITY_TYPE) {
    peer.transport = PeerInfo::Transport::kTls;
    peer.verified = auth->IsPeerAuthenticated();
    peer.common_name = FirstValue(*auth, GRPC_X509_CN_PROPERTY_NAME);
    AddValues(*auth, GRPC_PEER_DNS_PROPERTY_NAME, &peer.san_names);
    AddValues(*auth, GRPC_PEER_URI_PROPERTY_NAME, &peer.san_names);
    peer.has_san = !auth->FindPropertyValues(GRPC_X509_SAN_PROPERTY_NAME).empty();
    peer.cert_pem = FirstValue(*auth, GRPC_X509_PEM_CERT_PROPERTY_NAME);
    peer.chain_pem = FirstValue(*auth, GRPC_X509_PEM_CERT_CHAIN_PROPERTY_NAME);
    return peer;
  }
  // Connections we accepted on the unix socket ourselves are insecure
  // channels named "fd:<n>". Nothing else is insecure on this server.
  constexpr absl::string_view kFdPrefix = "fd:";
  absl::string_view addr = peer.address;
  int fd = -1;
  if (security.empty() && absl::StartsWith(addr, kFdPrefix) &&
      absl::SimpleAtoi(addr.substr(kFdPrefix.size()), &fd) && fd >= 0) {
    peer.transport = PeerInfo::Transport::kUnix;
    if (uid_of_fd) peer.uid = uid_of_fd(fd);
  }
  return peer;
}

}  // namespace ballast::api
