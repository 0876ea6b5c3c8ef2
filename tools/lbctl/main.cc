// lbctl: the operator's command line for lbagent. See docs/lbctl.md.
#include <grpc/support/log.h>

#include <cstdio>
#include <cstdlib>

#include "tools/lbctl/commands.h"

int main(int argc, char** argv) {
  // lbctl explains failures itself ("cannot reach lbagent at ..."); gRPC's
  // own plain-text lines (e.g. a TLS handshake failure) would only repeat
  // them less clearly. GRPC_VERBOSITY=debug brings them back.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function([](gpr_log_func_args*) {});
  }
  return ballast::lbctl::RunLbctl(argc, argv, stdout, stderr);
}
