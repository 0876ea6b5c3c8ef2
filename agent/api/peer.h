// Who is on the other end of one admin API call, as the transport reports it.
//
//  - Calls on connections that the UnixListener accepted have gRPC peer
//    strings "fd:<n>" and no transport security; their uid comes from the
//    listener's SO_PEERCRED record for that fd.
//  - Calls over the TCP listener have transport_security_type "ssl"; the
//    peer carries the certificate's subject CN, its DNS and URI subject
//    alternative names, whether it has any SAN, and its PEM with the chain
//    (gRPC 1.51 properties x509_common_name, peer_dns, peer_uri,
//    x509_subject_alternative_name, x509_pem_cert, x509_pem_cert_chain).
//    Which names count is AccessPolicy's rule (access.h).
//  - Anything else is Transport::kUnknown and AccessPolicy refuses it.
#ifndef BALLAST_AGENT_API_PEER_H_
#define BALLAST_AGENT_API_PEER_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "agent/api/access.h"

namespace grpc {
class ServerContext;
}

namespace ballast::api {

// fd (from "fd:<n>") -> uid of the connecting process, if known.
using UidLookup = std::function<std::optional<uint32_t>(int fd)>;

PeerInfo PeerOf(const grpc::ServerContext& ctx, const UidLookup& uid_of_fd);

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_PEER_H_
