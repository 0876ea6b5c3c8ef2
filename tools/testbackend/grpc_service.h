// The backend's gRPC service: ballast.testing.v1.TestBackend/Hello.
//
// Normal reply: name=<name>, message "hello <from> from <name>", healthy=true.
// Fault knobs (FaultEngine) shape each call:
//   delay      the reply (whatever it is) leaves after delay_ms (+ jitter);
//   error      status UNAVAILABLE "backend <name>: injected error";
//   reset      the call is cancelled: the server sends RST_STREAM and the
//              client sees CANCELLED (the HTTP/2 connection itself stays up;
//              grpc++ has no way to abort it from a handler);
//   hang       no reply while hang stays set (the client's deadline ends the
//              call); when cleared, the held call gets a fresh decision;
//   wrong_body name "wrong", message "hello <from> from wrong", healthy=false.
// Any reply while a knob applies to the call carries healthy=false.
// A call is a probe when a token of its "user-agent" metadata starts with
// "ballast-probe" (set the channel's GRPC_ARG_PRIMARY_USER_AGENT_STRING;
// grpc++ sends "grpc-c++/<v> <primary> grpc-c/<v> ...") or HelloRequest.from
// is exactly "ballast-probe"; with real_only set, probes get the normal reply.
//
// Thread-safety: grpc++ calls Hello concurrently; the service only reads
// immutable members and the thread-safe engine.
#ifndef BALLAST_TOOLS_TESTBACKEND_GRPC_SERVICE_H_
#define BALLAST_TOOLS_TESTBACKEND_GRPC_SERVICE_H_

#include <string>

#include "ballast/testing/v1/testbackend.grpc.pb.h"
#include "tools/testbackend/fault_engine.h"

namespace ballast::testbackend {

inline constexpr absl::string_view kProbeFrom = "ballast-probe";

class TestBackendService final : public ballast::testing::v1::TestBackend::Service {
 public:
  // `engine` must outlive the service.
  TestBackendService(std::string name, FaultEngine* engine)
      : name_(std::move(name)), engine_(engine) {}

  grpc::Status Hello(grpc::ServerContext* context,
                     const ballast::testing::v1::HelloRequest* request,
                     ballast::testing::v1::HelloReply* reply) override;

 private:
  const std::string name_;
  FaultEngine* const engine_;
};

}  // namespace ballast::testbackend

#endif  // BALLAST_TOOLS_TESTBACKEND_GRPC_SERVICE_H_
