#include "tools/testbackend/grpc_service.h"

#include "absl/strings/str_cat.h"

namespace ballast::testbackend {

grpc::Status TestBackendService::Hello(grpc::ServerContext* context,
                                       const ballast::testing::v1::HelloRequest* request,
                                       ballast::testing::v1::HelloReply* reply) {
  bool probe = request->from() == kProbeFrom;
  const auto& md = context->client_metadata();
  if (auto it = md.find("user-agent"); it != md.end()) {
    probe = probe || IsProbeUserAgent(absl::string_view(it->second.data(), it->second.size()));
  }
  auto abandoned = [context] { return context->IsCancelled(); };
  auto gave_up = [this](const char* while_what) {
    if (engine_->stopping()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("backend ", name_, " is stopping"));
    }
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        absl::StrCat("call abandoned while ", while_what));
  };
  Plan plan = engine_->Decide(Protocol::kGrpc, probe);
  while (plan.outcome == Outcome::kHang) {
    if (!engine_->WaitOutHang(probe, abandoned)) {
      return gave_up("hanging");
    }
    plan = engine_->Decide(Protocol::kGrpc, probe, /*count_request=*/false);
  }
  if (plan.delay_ms > 0 && !engine_->Sleep(plan.delay_ms, abandoned)) {
    return gave_up("delayed");
  }
  switch (plan.outcome) {
    case Outcome::kReset:
      context->TryCancel();
      return grpc::Status(grpc::StatusCode::CANCELLED,
                          absl::StrCat("backend ", name_, ": injected reset"));
    case Outcome::kError:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("backend ", name_, ": injected error"));
    case Outcome::kWrongBody:
      reply->set_name("wrong");
      reply->set_message(absl::StrCat("hello ", request->from(), " from wrong"));
      reply->set_healthy(false);
      return grpc::Status::OK;
    case Outcome::kAnswer:
    case Outcome::kHang:
      break;
  }
  reply->set_name(name_);
  reply->set_message(absl::StrCat("hello ", request->from(), " from ", name_));
  reply->set_healthy(!plan.faulted);
  return grpc::Status::OK;
}

}  // namespace ballast::testbackend
