// testbackend_grpc_call: one call of ballast.testing.v1.TestBackend/Hello.
//
// usage: testbackend_grpc_call TARGET FROM [USER_AGENT] [TIMEOUT_MS]
// Prints one line: "code=<n> name=<..> message=<..> healthy=<0|1> ms=<elapsed>"
// ("error=<text>" instead of the reply fields when the call failed).
// Exit 0 when the call returned OK, 1 otherwise, 2 on usage errors.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ballast/testing/v1/testbackend.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) {
    std::fprintf(stderr, "usage: %s TARGET FROM [USER_AGENT] [TIMEOUT_MS]\n", argv[0]);
    return 2;
  }
  grpc::ChannelArguments args;
  if (argc >= 4 && argv[3][0] != '\0') args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, argv[3]);
  int timeout_ms = argc >= 5 ? std::atoi(argv[4]) : 2000;
  auto channel = grpc::CreateCustomChannel(argv[1], grpc::InsecureChannelCredentials(), args);
  auto stub = ballast::testing::v1::TestBackend::NewStub(channel);
  grpc::ClientContext ctx;
  auto start = std::chrono::steady_clock::now();
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  ballast::testing::v1::HelloRequest req;
  req.set_from(argv[2]);
  ballast::testing::v1::HelloReply reply;
  grpc::Status st = stub->Hello(&ctx, req, &reply);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  if (st.ok()) {
    std::printf("code=0 name=%s message=%s healthy=%d ms=%lld\n", reply.name().c_str(),
                reply.message().c_str(), reply.healthy() ? 1 : 0, static_cast<long long>(ms));
    return 0;
  }
  std::printf("code=%d error=%s ms=%lld\n", static_cast<int>(st.error_code()),
              st.error_message().c_str(), static_cast<long long>(ms));
  return 1;
}
