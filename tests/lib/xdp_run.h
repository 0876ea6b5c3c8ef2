// One BPF_PROG_TEST_RUN of an XDP (or tc) program on a frame.
//
// RunXdp() hands `frame` to the program as if it had arrived on
// `ingress_ifindex` (default 1, the loopback device of the current network
// namespace, so a next hop on ifindex 1 means XDP_TX) and returns the action
// and the frame as the program left it. The kernel refuses frames shorter
// than an Ethernet header (EINVAL, also when XDP metadata is put in front to
// make up the length; checked on 6.18), so RunXdp rejects them up front:
// a truncated Ethernet header cannot be fed to the program this way.
//
// Stateless; thread-safe as far as the program and its maps are.
#ifndef BALLAST_TESTS_LIB_XDP_RUN_H_
#define BALLAST_TESTS_LIB_XDP_RUN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "tests/lib/packet.h"

namespace ballast::pktgen {

struct XdpRunOptions {
  uint32_t ingress_ifindex = 1;  // 0 = no device (ctx ingress_ifindex 0)
  uint32_t repeat = 1;
};

struct XdpResult {
  int action = -1;           // XDP_PASS, XDP_TX, ...
  Bytes out;                 // the frame after the (last) run
  Bytes meta;                // the XDP metadata the program left in front of it
  uint32_t duration_ns = 0;  // kernel's average per run
};

absl::StatusOr<XdpResult> RunXdp(int prog_fd, const Bytes& frame,
                                 const XdpRunOptions& options = {});

// One BPF_PROG_TEST_RUN of a tc (sched_cls) program on `frame`, as if it
// left through the loopback device.
struct TcResult {
  int action = -1;  // TC_ACT_OK, TC_ACT_SHOT, ...
  Bytes out;        // the frame as the program left it
  uint32_t duration_ns = 0;
};
absl::StatusOr<TcResult> RunTc(int prog_fd, const Bytes& frame);

// "XDP_TX", "XDP_PASS", ... for messages.
const char* XdpActionName(int action);

}  // namespace ballast::pktgen

#endif  // BALLAST_TESTS_LIB_XDP_RUN_H_
