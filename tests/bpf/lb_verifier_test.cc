// The verifier's budget: xdp_lb must leave room under the kernel's limit of
// 1,000,000 processed instructions. Other kernels' verifiers explore more or
// fewer states for the same program, and every feature adds paths; a program
// that loads here with little room may not load on the next kernel.
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cstdio>
#include <cstring>

#include <catch2/catch.hpp>

#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

// Half the kernel's limit (BPF_COMPLEXITY_LIMIT_INSNS). xdp_lb took 829,541
// before the flow hash and the latency histogram became global functions
// (docs/benchmarks.md); about 294,000 after, on 6.18.
constexpr uint32_t kBudget = 500000;

TEST_CASE("xdp_lb is verified in at most half the verifier's instruction limit", "[lb][verifier]") {
  LbFixture fx;
  bpf_prog_info info;
  std::memset(&info, 0, sizeof info);
  uint32_t len = sizeof info;
  REQUIRE(bpf_obj_get_info_by_fd(fx.dp().prog_fd(), &info, &len) == 0);
  std::printf("xdp_lb: %u instructions processed by the verifier (budget %u of 1000000)\n",
              info.verified_insns, kBudget);
  REQUIRE(info.verified_insns > 0);  // the kernel reports it (5.16 and later)
  CHECK(info.verified_insns <= kBudget);
}

}  // namespace
}  // namespace ballast::bpftest
