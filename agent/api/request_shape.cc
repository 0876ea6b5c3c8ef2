#include "agent/api/request_shape.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace ballast::api {
namespace {

absl::Status Required(absl::string_view field) {
  return absl::InvalidArgumentError(absl::StrCat(field, " is required"));
}

// A VIP key needs an address and a protocol; port 0 means "all ports" and
// is therefore a legitimate value, not a missing one.
absl::Status CheckKey(bool present, const v1::VipKey& key, absl::string_view field) {
  if (!present) return Required(field);
  if (key.address().empty()) return Required(absl::StrCat(field, ".address"));
  if (key.protocol() == v1::PROTOCOL_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".protocol is required (TCP or UDP)"));
  }
  return absl::OkStatus();
}

template <typename Req>
absl::Status CheckVipAndAddress(const Req& req) {
  if (absl::Status s = CheckKey(req.has_vip(), req.vip(), "vip"); !s.ok()) return s;
  if (req.address().empty()) return Required("address");
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckShape(const v1::AddVipRequest& req) {
  if (!req.has_vip()) return Required("vip");
  if (absl::Status s = CheckKey(req.vip().has_key(), req.vip().key(), "vip.key"); !s.ok()) {
    return s;
  }
  for (int i = 0; i < req.vip().backends_size(); ++i) {
    if (req.vip().backends(i).address().empty()) {
      return Required(absl::StrCat("vip.backends[", i, "].address"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckShape(const v1::DeleteVipRequest& req) {
  return CheckKey(req.has_key(), req.key(), "key");
}

absl::Status CheckShape(const v1::RelearnHealthRequest& req) {
  return CheckKey(req.has_vip(), req.vip(), "vip");
}

absl::Status CheckShape(const v1::RotateQuicConfigRequest& req) {
  return CheckKey(req.has_vip(), req.vip(), "vip");
}

absl::Status CheckShape(const v1::RetireQuicConfigRequest& req) {
  return CheckKey(req.has_vip(), req.vip(), "vip");
}

absl::Status CheckShape(const v1::ExportQuicConfigRequest& req) {
  if (absl::Status s = CheckKey(req.has_vip(), req.vip(), "vip"); !s.ok()) return s;
  if (req.address().empty()) return Required("address");
  return absl::OkStatus();
}

absl::Status CheckShape(const v1::AddBackendRequest& req) {
  if (absl::Status s = CheckKey(req.has_vip(), req.vip(), "vip"); !s.ok()) return s;
  if (!req.has_backend()) return Required("backend");
  if (req.backend().address().empty()) return Required("backend.address");
  return absl::OkStatus();
}

absl::Status CheckShape(const v1::DeleteBackendRequest& req) { return CheckVipAndAddress(req); }
absl::Status CheckShape(const v1::SetWeightRequest& req) { return CheckVipAndAddress(req); }
absl::Status CheckShape(const v1::DrainRequest& req) { return CheckVipAndAddress(req); }
absl::Status CheckShape(const v1::UndrainRequest& req) { return CheckVipAndAddress(req); }
absl::Status CheckShape(const v1::ReleaseRequest& req) { return CheckVipAndAddress(req); }

absl::Status CheckShape(const v1::ApplyConfigRequest& req) {
  // An absent config is a client bug; an empty one is a deliberate "no VIPs".
  if (!req.has_config()) return Required("config");
  for (int i = 0; i < req.config().vips_size(); ++i) {
    const v1::Vip& vip = req.config().vips(i);
    const std::string field = absl::StrCat("config.vips[", i, "]");
    if (absl::Status s = CheckKey(vip.has_key(), vip.key(), absl::StrCat(field, ".key")); !s.ok()) {
      return s;
    }
    for (int j = 0; j < vip.backends_size(); ++j) {
      if (vip.backends(j).address().empty()) {
        return Required(absl::StrCat(field, ".backends[", j, "].address"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckShape(const v1::QueryAuditRequest& req) {
  if (req.since_unix_ms() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("since_unix_ms: ", req.since_unix_ms(), " is negative; use 0 for all"));
  }
  return absl::OkStatus();
}

absl::Status CheckShape(const v1::SetVipOwnershipRequest& req) {
  return CheckKey(req.has_vip(), req.vip(), "vip");
}

absl::Status CheckShape(const v1::YieldVipRequest& req) {
  return CheckKey(req.has_vip(), req.vip(), "vip");
}

absl::Status CheckShape(const v1::RecordDrillRequest& req) {
  if (!req.has_result()) return Required("result");
  if (absl::Status s = CheckKey(req.result().has_vip(), req.result().vip(), "result.vip");
      !s.ok()) {
    return s;
  }
  if (req.result().mode().empty()) return Required("result.mode");
  return absl::OkStatus();
}

absl::Status CheckShape(const v1::TeardownRequest& req) {
  if (!req.confirm()) {
    return absl::InvalidArgumentError(
        "confirm must be true: teardown detaches the XDP program, unpins every map and stops "
        "lbagent");
  }
  return absl::OkStatus();
}

}  // namespace ballast::api
