#include "agent/api/access.h"

#include <array>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace ballast::api {
namespace {

constexpr std::array<MethodInfo, 25> kMethods = {{
    {Method::kAddVip, "/ballast.v1.Vips/AddVip", Access::kWrite},
    {Method::kDeleteVip, "/ballast.v1.Vips/DeleteVip", Access::kWrite},
    {Method::kListVips, "/ballast.v1.Vips/ListVips", Access::kRead},
    {Method::kAddBackend, "/ballast.v1.Backends/AddBackend", Access::kWrite},
    {Method::kDeleteBackend, "/ballast.v1.Backends/DeleteBackend", Access::kWrite},
    {Method::kSetWeight, "/ballast.v1.Backends/SetWeight", Access::kWrite},
    {Method::kDrain, "/ballast.v1.Backends/Drain", Access::kWrite},
    {Method::kUndrain, "/ballast.v1.Backends/Undrain", Access::kWrite},
    {Method::kRelease, "/ballast.v1.Backends/Release", Access::kWrite},
    {Method::kGetStatus, "/ballast.v1.Status/GetStatus", Access::kRead},
    {Method::kWatchEvents, "/ballast.v1.Status/WatchEvents", Access::kRead},
    {Method::kGetConfig, "/ballast.v1.ConfigService/GetConfig", Access::kRead},
    {Method::kApplyConfig, "/ballast.v1.ConfigService/ApplyConfig", Access::kWriteUnlessDry},
    {Method::kQueryAudit, "/ballast.v1.Audit/QueryAudit", Access::kRead},
    {Method::kTeardown, "/ballast.v1.Admin/Teardown", Access::kWrite},
    {Method::kConfigDiff, "/ballast.v1.ConfigService/ConfigDiff", Access::kRead},
    {Method::kSetVipOwnership, "/ballast.v1.ClusterOps/SetVipOwnership", Access::kWrite},
    {Method::kYieldVip, "/ballast.v1.ClusterOps/YieldVip", Access::kWrite},
    {Method::kRecordDrill, "/ballast.v1.ClusterOps/RecordDrill", Access::kWrite},
    {Method::kListFlows, "/ballast.v1.Status/ListFlows", Access::kRead},
    {Method::kRelearnHealth, "/ballast.v1.Vips/RelearnHealth", Access::kWrite},
    {Method::kRotateFlowHashSeed, "/ballast.v1.Admin/RotateFlowHashSeed", Access::kWrite},
    {Method::kRotateQuicConfig, "/ballast.v1.Vips/RotateQuicConfig", Access::kWrite},
    {Method::kRetireQuicConfig, "/ballast.v1.Vips/RetireQuicConfig", Access::kWrite},
    // Returns keys: admin identities only, although it changes nothing.
    {Method::kExportQuicConfig, "/ballast.v1.Vips/ExportQuicConfig", Access::kWrite},
}};

// The table is indexed by Method; keep it in enum order.
constexpr bool TableInEnumOrder() {
  for (size_t i = 0; i < kMethods.size(); ++i) {
    if (static_cast<size_t>(kMethods[i].method) != i) return false;
  }
  return true;
}
static_assert(TableInEnumOrder(), "kMethods must be in Method order");

absl::string_view ShortName(const MethodInfo& info) {
  absl::string_view n = info.name;
  if (!n.empty() && n.front() == '/') n.remove_prefix(1);
  absl::ConsumePrefix(&n, "ballast.v1.");
  return n;  // "Backends/SetWeight"
}

}  // namespace

std::span<const MethodInfo> AllMethods() { return kMethods; }

const MethodInfo& Describe(Method method) { return kMethods[static_cast<size_t>(method)]; }

std::vector<std::string> IdentityNames(const PeerInfo& peer) {
  if (peer.has_san) return peer.san_names;
  if (peer.common_name.empty()) return {};
  return {peer.common_name};
}

absl::StatusOr<AccessPolicy> AccessPolicy::Create(const v1::AdminAccess& admin,
                                                  std::shared_ptr<const ClientVerifier> verifier) {
  AccessPolicy policy;
  policy.verifier_ = std::move(verifier);
  std::set<std::string> seen;
  for (int i = 0; i < admin.identities_size(); ++i) {
    const v1::Identity& id = admin.identities(i);
    if (id.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("admin.identities[", i, "].name: must not be empty"));
    }
    if (!seen.insert(id.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("admin.identities[", i, "].name: '", id.name(), "' is listed twice"));
    }
    policy.identities_.push_back(id);
  }
  return policy;
}

absl::StatusOr<Caller> AccessPolicy::Authorize(const PeerInfo& peer, Method method,
                                               bool dry_run) const {
  const MethodInfo& info = Describe(method);
  Caller caller;
  switch (peer.transport) {
    case PeerInfo::Transport::kUnix:
      caller.actor = peer.uid ? absl::StrCat("operator:unix:uid=", *peer.uid) : "operator:unix";
      return caller;
    case PeerInfo::Transport::kUnknown:
      return absl::UnauthenticatedError(
          absl::StrCat("call from ", peer.address.empty() ? "an unknown peer" : peer.address,
                       " came over neither the admin unix socket nor mutual TLS; refused"));
    case PeerInfo::Transport::kTls:
      break;
  }
  if (!peer.verified) {
    return absl::UnauthenticatedError(
        absl::StrCat("client ", peer.address,
                     " presented no verified client certificate; the admin TCP "
                     "listener requires one issued by admin.tls_client_ca"));
  }
  if (verifier_ != nullptr) {
    if (absl::Status s = verifier_->Verify(peer.cert_pem, peer.chain_pem); !s.ok()) {
      return absl::UnauthenticatedError(
          absl::StrCat("client ", peer.address, " refused: ", s.message()));
    }
  }
  // Said when a certificate is refused although its CN is in the list.
  const std::string cn_ignored =
      peer.has_san && !peer.common_name.empty()
          ? absl::StrCat(" (its CN '", peer.common_name,
                         "' does not count: the certificate has subject alternative names)")
          : std::string();
  const std::vector<std::string> names = IdentityNames(peer);
  if (names.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "client ", peer.address,
        " presented a certificate with no name to match admin.identities: no DNS or URI subject "
        "alternative name",
        cn_ignored.empty() ? " and no CN" : cn_ignored));
  }
  const v1::Identity* match = nullptr;
  for (const v1::Identity& id : identities_) {
    for (const std::string& name : names) {
      if (name != id.name()) continue;
      // Least privilege: a read-only match wins over an admin match.
      if (match == nullptr || id.read_only()) match = &id;
    }
  }
  if (match == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("client certificate names [", absl::StrJoin(names, ", "),
                     "] match no entry of admin.identities", cn_ignored,
                     "; add one of them to the agent's allow-list"));
  }
  caller.actor = absl::StrCat("operator:tls:", match->name());
  caller.read_only = match->read_only();
  const bool writes =
      info.access == Access::kWrite || (info.access == Access::kWriteUnlessDry && !dry_run);
  if (writes && caller.read_only) {
    return absl::PermissionDeniedError(
        absl::StrCat("identity '", match->name(), "' is read-only; ", ShortName(info),
                     info.access == Access::kWriteUnlessDry ? " (without dry_run)" : "",
                     " changes state and needs an admin identity"));
  }
  return caller;
}

}  // namespace ballast::api
