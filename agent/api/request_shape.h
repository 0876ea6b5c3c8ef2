// Shape checks for admin API requests: every field the method needs is
// present. Values (address syntax, ranges, primes, duplicates) are the
// engine's to validate against its state (agent/core/validate.h); this layer
// only rejects requests that cannot mean anything, before they reach it.
//
// Each function returns OK or INVALID_ARGUMENT with a message naming the
// missing field by its path in the request ("vip.key.address is required").
// Pure functions, thread-safe.
#ifndef BALLAST_AGENT_API_REQUEST_SHAPE_H_
#define BALLAST_AGENT_API_REQUEST_SHAPE_H_

#include "absl/status/status.h"
#include "ballast/v1/api.pb.h"

namespace ballast::api {

absl::Status CheckShape(const v1::AddVipRequest& req);
absl::Status CheckShape(const v1::DeleteVipRequest& req);
absl::Status CheckShape(const v1::RelearnHealthRequest& req);
absl::Status CheckShape(const v1::RotateQuicConfigRequest& req);
absl::Status CheckShape(const v1::RetireQuicConfigRequest& req);
absl::Status CheckShape(const v1::ExportQuicConfigRequest& req);
absl::Status CheckShape(const v1::AddBackendRequest& req);
absl::Status CheckShape(const v1::DeleteBackendRequest& req);
absl::Status CheckShape(const v1::SetWeightRequest& req);
absl::Status CheckShape(const v1::DrainRequest& req);
absl::Status CheckShape(const v1::UndrainRequest& req);
absl::Status CheckShape(const v1::ReleaseRequest& req);
absl::Status CheckShape(const v1::ApplyConfigRequest& req);
absl::Status CheckShape(const v1::QueryAuditRequest& req);
absl::Status CheckShape(const v1::TeardownRequest& req);
absl::Status CheckShape(const v1::SetVipOwnershipRequest& req);
absl::Status CheckShape(const v1::YieldVipRequest& req);
absl::Status CheckShape(const v1::RecordDrillRequest& req);

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_REQUEST_SHAPE_H_
