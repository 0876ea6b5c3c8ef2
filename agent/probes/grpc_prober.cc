// gRPC probe: a unary call to a real method through grpc::GenericStub, on a
// channel built from a socket this probe connected itself (so it carries
// the probe's mark), with the request built from text format and
// assertions on the reply's fields (grpc_schema.h).
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_join.h"
#include "agent/dataplane/strcat.h"
#include "agent/probes/grpc_schema.h"
#include "agent/probes/probers.h"
#include "agent/probes/socket.h"

namespace ballast::probes {
namespace {

using dataplane::AV;
using dataplane::Cat;

const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::OK:
      return "OK";
    case grpc::CANCELLED:
      return "CANCELLED";
    case grpc::UNKNOWN:
      return "UNKNOWN";
    case grpc::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::ABORTED:
      return "ABORTED";
    case grpc::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::INTERNAL:
      return "INTERNAL";
    case grpc::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "?";
  }
}

class GrpcProber : public Prober {
 public:
  GrpcProber(std::unique_ptr<GrpcSchema> schema, std::string request,
             std::vector<Expectation> expect)
      : schema_(std::move(schema)), request_(std::move(request)), expect_(std::move(expect)) {}

  ProbeResult Run(const Endpoint& ep, Clock::time_point deadline) const override {
    const auto start = Clock::now();
    ProbeResult r;
    const std::string what = Cat("gRPC ", schema_->full_method(), " on ", ep.description);
    auto fail = [&](std::string why) {
      r.latency = Clock::now() - start;
      r.detail = Cat(what, ": ", why);
      return r;
    };
    auto fd = ConnectTcp(ep, deadline);
    if (!fd.ok()) return fail(std::string(fd.status().message()));

    grpc::ChannelArguments args;
    args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, kProbeUserAgent);
    // The channel takes the connected socket (and closes it); it never
    // reconnects, so one probe is one connection.
    auto channel =
        grpc::CreateCustomInsecureChannelFromFd(HostPort(ep.address, ep.port), fd->release(), args);
    grpc::GenericStub stub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + (deadline - Clock::now()));
    ctx.AddMetadata("x-ballast-probe", "1");
    grpc::Slice slice(request_);
    grpc::ByteBuffer req(&slice, 1);
    grpc::ByteBuffer resp;
    grpc::Status status;
    grpc::CompletionQueue cq;
    auto call = stub.PrepareUnaryCall(&ctx, schema_->full_method(), req, &cq);
    call->StartCall();
    call->Finish(&resp, &status, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    cq.Next(&tag, &ok);
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    if (!status.ok()) {
      return fail(Cat(CodeName(status.error_code()), ": ", status.error_message()));
    }
    std::vector<grpc::Slice> slices;
    if (!resp.Dump(&slices).ok()) return fail("cannot read the reply");
    std::string bytes;
    for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    auto reply = schema_->NewReply();
    if (!reply->ParseFromString(bytes)) {
      return fail(Cat("reply is not a ", reply->GetDescriptor()->full_name()));
    }
    std::vector<std::string> failed;
    for (const auto& e : expect_) {
      if (std::string why = e.Check(*reply); !why.empty()) failed.push_back(why);
    }
    if (!failed.empty()) return fail(absl::StrJoin(failed, "; "));
    r.ok = true;
    r.latency = Clock::now() - start;
    r.detail = Cat(what, ": OK in ", FormatLatency(r.latency),
                   expect_.empty() ? "" : Cat(", ", expect_.size(), " assertion(s) hold"));
    return r;
  }

 private:
  std::unique_ptr<GrpcSchema> schema_;
  std::string request_;              // serialized request
  std::vector<Expectation> expect_;  // point into schema_'s pool
};

}  // namespace

absl::StatusOr<std::unique_ptr<Prober>> MakeGrpcProber(const v1::ProbeSpec& spec) {
  auto schema = GrpcSchema::Load(spec.grpc_descriptor_set(), spec.grpc_method());
  if (!schema.ok()) return schema.status();
  auto req = (*schema)->ParseRequest(spec.grpc_request_text());
  if (!req.ok()) return req.status();
  std::string bytes;
  if (!(*req)->SerializeToString(&bytes)) {
    return absl::InternalError("cannot serialize the gRPC probe request");
  }
  std::vector<Expectation> expect;
  for (const auto& text : spec.grpc_expect()) {
    auto e = Expectation::Parse(text, (*schema)->method()->output_type());
    if (!e.ok()) return e.status();
    expect.push_back(*std::move(e));
  }
  return std::unique_ptr<Prober>(
      new GrpcProber(*std::move(schema), std::move(bytes), std::move(expect)));
}

}  // namespace ballast::probes
