// absl::Status <-> grpc::Status: one-to-one for every canonical code, with
// the message intact.
#include <catch2/catch.hpp>

#include "agent/api/status_convert.h"

namespace ballast::api {
namespace {

TEST_CASE("every absl code maps to the grpc code of the same name and back", "[status]") {
  const std::pair<absl::StatusCode, grpc::StatusCode> table[] = {
      {absl::StatusCode::kOk, grpc::StatusCode::OK},
      {absl::StatusCode::kCancelled, grpc::StatusCode::CANCELLED},
      {absl::StatusCode::kUnknown, grpc::StatusCode::UNKNOWN},
      {absl::StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {absl::StatusCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
      {absl::StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {absl::StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
      {absl::StatusCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
      {absl::StatusCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::StatusCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
      {absl::StatusCode::kAborted, grpc::StatusCode::ABORTED},
      {absl::StatusCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
      {absl::StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
      {absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL},
      {absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
      {absl::StatusCode::kUnauthenticated, grpc::StatusCode::UNAUTHENTICATED},
  };
  for (const auto& [a, g] : table) {
    INFO(absl::StatusCodeToString(a));
    CHECK(ToGrpcCode(a) == g);
    CHECK(ToAbslCode(g) == a);
    if (a == absl::StatusCode::kOk) continue;
    const std::string msg = "backend 198.18.1.7: weight 3000 is out of range 0..1000";
    grpc::Status gs = ToGrpcStatus(absl::Status(a, msg));
    CHECK(gs.error_code() == g);
    CHECK(gs.error_message() == msg);
    absl::Status back = ToAbslStatus(gs);
    CHECK(back.code() == a);
    CHECK(back.message() == msg);
  }
  CHECK(ToGrpcStatus(absl::OkStatus()).ok());
  CHECK(ToAbslStatus(grpc::Status::OK).ok());
  CHECK(ToAbslCode(grpc::StatusCode::DO_NOT_USE) == absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace ballast::api
