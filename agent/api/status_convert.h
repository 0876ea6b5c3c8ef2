// Conversion between absl::Status (the agent's error type) and grpc::Status
// (what goes over the wire).
//
// The two code spaces are the same seventeen canonical codes; the mapping is
// one-to-one in both directions and the message is carried unchanged, so an
// operator sees exactly the text the engine wrote ("backend 198.18.1.7:
// weight 3000 is out of range 0..1000"). Pure functions, thread-safe.
#ifndef BALLAST_AGENT_API_STATUS_CONVERT_H_
#define BALLAST_AGENT_API_STATUS_CONVERT_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace ballast::api {

grpc::StatusCode ToGrpcCode(absl::StatusCode code);
absl::StatusCode ToAbslCode(grpc::StatusCode code);

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status ToAbslStatus(const grpc::Status& status);

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_STATUS_CONVERT_H_
