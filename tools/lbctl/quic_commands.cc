#include "tools/lbctl/quic_commands.h"

#include <type_traits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "agent/base/status_macros.h"
#include "tools/lbctl/client.h"
#include "tools/lbctl/address.h"

namespace ballast::lbctl {

std::string FormatQuicServerConfig(const v1::VipKey& vip, const std::string& backend,
                                   const v1::ExportQuicConfigResponse& resp) {
  std::string out = absl::StrCat(
      "# QUIC-LB server configuration of backend ", backend, " of VIP ", FormatVipKey(vip),
      "\n# (docs/operations.md, \"QUIC backends\"). Secret: it holds the key.\n");
  for (const v1::QuicServerConfig& c : resp.configs()) {
    absl::StrAppend(&out, "\nconfig_id=", c.config_id(), "\nserver_id_len=", c.server_id_len(),
                    "\nnonce_len=", c.nonce_len(),
                    "\nserver_id=", absl::BytesToHexString(c.server_id()), "\n");
    if (!c.key().empty()) absl::StrAppend(&out, "key=", absl::BytesToHexString(c.key()), "\n");
    absl::StrAppend(&out, "current=", c.current() ? 1 : 0, "\n");
  }
  return out;
}

absl::Status RunVipQuicConfig(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(key, ParseVipKey(a.vip));
  BALLAST_ASSIGN_OR_RETURN(address, ParseIp(a.backend));
  v1::ExportQuicConfigRequest req;
  *req.mutable_vip() = key;
  req.set_address(address);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::ExportQuicConfigResponse resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->vips(), &v1::Vips::Stub::ExportQuicConfig, req, &resp));
  return Emit(a, out, resp, FormatQuicServerConfig(key, address, resp));
}

namespace {

// Rotation (RotateQuicConfig) or retirement (RetireQuicConfig), by the request type.
template <typename Request>
absl::Status ChangeQuic(Session& s, const Args& a, std::FILE* out) {
  constexpr bool rotate = std::is_same_v<Request, v1::RotateQuicConfigRequest>;
  BALLAST_ASSIGN_OR_RETURN(key, ParseVipKey(a.vip));
  Request req;
  *req.mutable_vip() = key;
  req.set_reason(a.reason);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::QuicConfigChangeResponse resp;
  if constexpr (rotate) {
    BALLAST_RETURN_IF_ERROR(c->Call(c->vips(), &v1::Vips::Stub::RotateQuicConfig, req, &resp));
  } else {
    BALLAST_RETURN_IF_ERROR(c->Call(c->vips(), &v1::Vips::Stub::RetireQuicConfig, req, &resp));
  }
  const std::string vip = FormatVipKey(key);
  return Emit(a, out, resp,
              rotate ? absl::StrCat("VIP ", vip, ": QUIC-LB config_id ", resp.config_id(),
                                    " started (generation ", resp.generation(), "); config_id ",
                                    resp.previous_config_id(),
                                    " stays live: load each backend's new configuration (lbctl vip "
                                    "quic-config ",
                                    vip, " BACKEND), then lbctl vip quic-retire ", vip, "\n")
                     : absl::StrCat("VIP ", vip, ": QUIC-LB config_id ", resp.previous_config_id(),
                                    " retired (generation ", resp.generation(), "); config_id ",
                                    resp.config_id(), " is the only one\n"));
}

}  // namespace

absl::Status RunVipQuicRotate(Session& s, const Args& a, std::FILE* out) {
  return ChangeQuic<v1::RotateQuicConfigRequest>(s, a, out);
}

absl::Status RunVipQuicRetire(Session& s, const Args& a, std::FILE* out) {
  return ChangeQuic<v1::RetireQuicConfigRequest>(s, a, out);
}

}  // namespace ballast::lbctl
