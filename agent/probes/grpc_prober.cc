// gRPC probe: a unary call to a real method through grpc::GenericStub, on a
// channel built from a socket this probe connected itself (so it carries
// the probe's mark), with the request built from text format and
// assertions on the reply's fields (grpc_schema.h). With grpc_tls, the
// probe handshakes on that socket itself (tls_client.h: CA, server name,
// client certificate, ALPN h2) and the channel, which gRPC builds from a
// descriptor only without TLS, talks through a relay (tls_relay.h).
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_join.h"
#include "agent/base/strcat.h"
#include "agent/probes/grpc_schema.h"
#include "agent/probes/probers.h"
#include "agent/probes/socket.h"
#include "agent/probes/tls_client.h"
#include "agent/probes/tls_relay.h"

namespace ballast::probes {
namespace {

using base::AV;
using base::Cat;

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
             std::vector<Expectation> expect, SslCtxPtr tls, std::string server_name, bool insecure)
      : schema_(std::move(schema)),
        request_(std::move(request)),
        expect_(std::move(expect)),
        tls_(std::move(tls)),
        server_name_(std::move(server_name)),
        insecure_(insecure) {}

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

    std::unique_ptr<TlsRelay> relay;  // destroyed after the channel (declared first)
    int channel_fd = -1;
    if (tls_) {
      auto ssl = TlsHandshake(tls_.get(), fd->get(), server_name_, insecure_, ep, start, deadline);
      if (!ssl.ok()) return fail(Cat("TLS handshake: ", ssl.status().message()));
      auto started = TlsRelay::Start(*std::move(fd), *std::move(ssl), deadline);
      if (!started.ok()) return fail(std::string(started.status().message()));
      relay = *std::move(started);
      channel_fd = relay->release_plain_fd();
    } else {
      channel_fd = fd->release();
    }
    grpc::ChannelArguments args;
    args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, kProbeUserAgent);
    // The channel takes the connected socket (and closes it); it never
    // reconnects, so one probe is one connection.
    auto channel =
        grpc::CreateCustomInsecureChannelFromFd(HostPort(ep.address, ep.port), channel_fd, args);
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
    r.detail =
        Cat(what, ": OK in ", FormatLatency(r.latency),
            expect_.empty() ? "" : Cat(", ", expect_.size(), " assertion(s) hold"),
            tls_ ? (insecure_ ? ", over TLS, not verified (tls_insecure)" : ", over TLS") : "");
    return r;
  }

 private:
  std::unique_ptr<GrpcSchema> schema_;
  std::string request_;              // serialized request
  std::vector<Expectation> expect_;  // point into schema_'s pool
  SslCtxPtr tls_;                    // null: plaintext (no grpc_tls)
  const std::string server_name_;
  const bool insecure_;
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
  SslCtxPtr tls;
  if (spec.grpc_tls()) {
    auto ctx = MakeClientContext(spec, /*alpn_h2=*/true);
    if (!ctx.ok()) return ctx.status();
    tls = *std::move(ctx);
  }
  return std::unique_ptr<Prober>(new GrpcProber(*std::move(schema), std::move(bytes),
                                                std::move(expect), std::move(tls),
                                                spec.tls_server_name(), spec.tls_insecure()));
}

}  // namespace ballast::probes
