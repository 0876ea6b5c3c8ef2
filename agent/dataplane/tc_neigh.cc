#include "agent/dataplane/tc_neigh.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/tc_filter.h"
#include "agent/base/strcat.h"
#include "tc_neigh.skel.h"

namespace ballast::dataplane {

using base::Cat;

namespace {

// On the ingress hook ("ln"); tc_probe uses 0x6c62 on egress, tc_decap_rst 0x6c64.
constexpr TcFilter kFilter = {.egress = false, .handle = 0x6c6e, .name = "tc_neigh"};

}  // namespace

absl::StatusOr<std::unique_ptr<NeighHandoff>> NeighHandoff::Open(int handoff_map_fd) {
  std::unique_ptr<NeighHandoff> h(new NeighHandoff());
  std::string log;
  CaptureLibLogs capture(&log);
  h->skel_ = tc_neigh__open();
  if (h->skel_ == nullptr) return ErrnoStatus(errno, "opening the tc_neigh BPF object");
  if (int err = bpf_map__reuse_fd(h->skel_->maps.neigh_handoff, handoff_map_fd); err != 0) {
    return ErrnoStatus(err, "giving tc_neigh the lb program's neigh_handoff map");
  }
  if (int err = tc_neigh__load(h->skel_); err != 0) {
    return LoadFailure(err, "loading tc_neigh", log);
  }
  return h;
}

NeighHandoff::~NeighHandoff() { tc_neigh__destroy(skel_); }

int NeighHandoff::prog_fd() const { return bpf_program__fd(skel_->progs.tc_neigh); }

absl::Status NeighHandoff::Attach(int ifindex, std::string_view ifname) {
  return AttachTcFilter(kFilter, prog_fd(), ifindex, ifname);
}

absl::Status NeighHandoff::Detach(int ifindex, std::string_view ifname) {
  return DetachTcFilter(kFilter, ifindex, ifname);
}

bool NeighHandoff::Attached(int ifindex) { return TcFilterAttached(kFilter, ifindex); }

}  // namespace ballast::dataplane
