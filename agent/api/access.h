// Who may call which admin method.
//
// The method table (AllMethods) lists every RPC of ballast.v1 with its
// access class; the services consult it through AccessPolicy::Authorize
// before doing anything, so the rule lives in exactly one place.
//
// Rules
//  - Unix socket callers are trusted: the socket file is root:<group> 0660,
//    so reaching it is the authorization. Their actor is
//    "operator:unix:uid=<uid>" (SO_PEERCRED) or "operator:unix" if the uid
//    is unknown.
//  - TLS callers must present a client certificate that chains to
//    admin.tls_client_ca (enforced by the TLS handshake, and again on every
//    call against the current CA and admin.tls_crl: client_verifier.h) AND
//    one of its names (exact, case-sensitive) must equal an entry of
//    admin.identities. Its names are its DNS and URI subject alternative
//    names; its subject CN counts only when it has no SAN at all (RFC 6125),
//    so a certificate with any SAN (DNS, URI, IP, email) is never identified
//    by its CN. Their actor is "operator:tls:<identity>". If a certificate
//    matches several entries and any of them is read_only, the caller is
//    read-only (least privilege).
//  - Read-only identities may call read methods only (List*, Get*,
//    WatchEvents, QueryAudit) and ApplyConfig with dry_run=true, which
//    changes nothing (it is `lbctl config diff`).
//  - Any other caller is rejected: UNAUTHENTICATED when no verified
//    identity is presented, PERMISSION_DENIED when the identity is not
//    allowed to call the method.
//
// AccessPolicy is immutable after Create and safe to use from any thread; a
// reload replaces the whole policy (services.h).
#ifndef BALLAST_AGENT_API_ACCESS_H_
#define BALLAST_AGENT_API_ACCESS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/api/client_verifier.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::api {

enum class Access {
  kRead,           // never changes anything
  kWrite,          // changes state; admin identities only
  kWriteUnlessDry  // ApplyConfig: a dry run is a read
};

enum class Method {
  kAddVip,
  kDeleteVip,
  kListVips,
  kAddBackend,
  kDeleteBackend,
  kSetWeight,
  kDrain,
  kUndrain,
  kRelease,
  kGetStatus,
  kWatchEvents,
  kGetConfig,
  kApplyConfig,
  kQueryAudit,
  kTeardown,
  kConfigDiff,
  kSetVipOwnership,
  kYieldVip,
  kRecordDrill,
  kListFlows,
  kRelearnHealth,
  kRotateFlowHashSeed,
  kRotateQuicConfig,
  kRetireQuicConfig,
  kExportQuicConfig,
};

struct MethodInfo {
  Method method;
  absl::string_view name;  // "/ballast.v1.Vips/AddVip", as gRPC names it
  Access access;
};

// The method table: one entry per RPC of ballast.v1, in Method order.
std::span<const MethodInfo> AllMethods();
const MethodInfo& Describe(Method method);

// What the transport says about the peer of one call.
struct PeerInfo {
  enum class Transport { kUnknown, kUnix, kTls };
  Transport transport = Transport::kUnknown;
  std::optional<uint32_t> uid;  // kUnix: from SO_PEERCRED when known
  bool verified = false;        // kTls: the handshake verified the chain
  // kTls: what the client certificate says (IdentityNames picks the names).
  std::string common_name;             // subject CN, "" if none
  std::vector<std::string> san_names;  // DNS, then URI subject alternative names
  bool has_san = false;                // any SAN, also IP or email
  std::string cert_pem;                // the certificate, for ClientVerifier
  std::string chain_pem;               // what the client sent with it
  std::string address;                 // for messages, e.g. "ipv4:127.0.0.1:51234"
};

// The names a TLS caller is identified by: san_names if the certificate has
// any SAN, else its common name.
std::vector<std::string> IdentityNames(const PeerInfo& peer);

struct Caller {
  std::string actor;  // for the audit log
  bool read_only = false;
};

class AccessPolicy {
 public:
  // Checks admin.identities: names non-empty and unique. An empty list is
  // valid (only the unix socket is usable then). `verifier` re-checks TLS
  // callers' certificates on each call; null = trust the handshake alone.
  static absl::StatusOr<AccessPolicy> Create(
      const v1::AdminAccess& admin, std::shared_ptr<const ClientVerifier> verifier = nullptr);

  size_t identity_count() const { return identities_.size(); }

  // dry_run matters only for kWriteUnlessDry methods.
  absl::StatusOr<Caller> Authorize(const PeerInfo& peer, Method method, bool dry_run = false) const;

 private:
  std::vector<v1::Identity> identities_;
  std::shared_ptr<const ClientVerifier> verifier_;
};

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_ACCESS_H_
