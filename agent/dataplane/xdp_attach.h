// Attaching XDP programs to network devices (libxdp 1.3 + libbpf).
//
// One program per device. libxdp first tries its multi-program dispatcher;
// on this class of host that fails (the dispatcher's compatibility check is
// refused with EPERM, or there is no bpffs) and libxdp attaches the single
// program directly ("legacy" mode). Both outcomes are success here; the
// libbpf/libxdp chatter of the failed attempt is swallowed and shown only if
// the attach as a whole fails. A device that already runs a program is never
// clobbered: callers decide between adopting it, replacing it atomically
// (ReplaceXdp) or refusing.
//
// Devices are looked up in the calling thread's network namespace.
// Not thread-safe (libbpf/libxdp log callbacks are process-global).
#ifndef BALLAST_AGENT_DATAPLANE_XDP_ATTACH_H_
#define BALLAST_AGENT_DATAPLANE_XDP_ATTACH_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/dataplane/types.h"

namespace ballast::dataplane {

std::string_view AttachModeName(AttachMode m);  // "native", "generic", "auto"
// "native" | "generic" | "auto" (also "drv", "skb"). InvalidArgument otherwise.
absl::StatusOr<AttachMode> ParseAttachMode(std::string_view text);

// ifindex of `ifname` in the current network namespace; NotFound otherwise.
absl::StatusOr<int> IfIndex(std::string_view ifname);

// What a device runs. prog_id == 0: nothing. With a libxdp dispatcher,
// prog_id/prog_name are the dispatcher's and `dispatcher` is true.
struct XdpState {
  uint32_t prog_id = 0;
  std::string prog_name;
  AttachMode mode = AttachMode::kNative;  // kNative or kGeneric when attached
  bool dispatcher = false;
};
absl::StatusOr<XdpState> QueryXdp(int ifindex);

// Attaches `prog_fd` (not consumed) to the device through libxdp. The device
// must run no XDP program (FailedPrecondition otherwise). Returns the mode
// actually used (kNative or kGeneric).
absl::StatusOr<AttachMode> AttachXdp(int prog_fd, int ifindex, std::string_view ifname,
                                     AttachMode mode);

// Atomically replaces `old_fd` by `new_fd` on the device, in the mode the old
// one runs in (XDP_FLAGS_REPLACE: if another program was attached meanwhile
// the kernel refuses and nothing changes). No packet sees "no program".
absl::Status ReplaceXdp(int ifindex, std::string_view ifname, int old_fd, int new_fd);

// Detaches the program with id `prog_id` from the device. NotFound if the
// device runs nothing, FailedPrecondition if it runs another program.
absl::Status DetachXdp(int ifindex, std::string_view ifname, uint32_t prog_id);

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_XDP_ATTACH_H_
