// Catch2 main for bpf_tests: BPF_PROG_TEST_RUN on the real lb object.
//
// These tests need root (CAP_BPF + CAP_NET_ADMIN) and a loopback device with
// ifindex 1 in the current network namespace. Without them the run fails
// loudly with the reason: a BPF test that cannot run has not passed.
#define CATCH_CONFIG_RUNNER
#include <net/if.h>
#include <unistd.h>

#include <cstdio>

#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::fprintf(stderr,
                 "bpf_tests: FAIL: must run as root (loads BPF programs and runs them with "
                 "BPF_PROG_TEST_RUN); try: sudo %s\n",
                 argv[0]);
    return 1;
  }
  char name[IF_NAMESIZE] = {};
  if (if_indextoname(1, name) == nullptr) {
    std::fprintf(stderr,
                 "bpf_tests: FAIL: no network device with ifindex 1 in this namespace; the "
                 "tests pass ingress_ifindex 1 (loopback) to BPF_PROG_TEST_RUN\n");
    return 1;
  }
  return Catch::Session().run(argc, argv);
}
