#include "agent/dataplane/tc_neigh.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "agent/dataplane/bpf_util.h"
#include "agent/base/strcat.h"
#include "tc_neigh.skel.h"

namespace ballast::dataplane {

using base::Cat;

using base::Cat;
namespace {

// tc filter identity on the ingress hook ("ln"); tc_probe uses 0x6c62 on egress.
constexpr uint32_t kTcHandle = 0x6c6e;
constexpr uint32_t kTcPriority = 0x6c6e;

}  // namespace

absl::StatusOr<std::unique_ptr<NeighHandoff>> NeighHandoff::Open() {
  std::unique_ptr<NeighHandoff> h(new NeighHandoff());
  std::string log;
  CaptureLibLogs capture(&log);
  h->skel_ = tc_neigh__open();
  if (h->skel_ == nullptr) return ErrnoStatus(errno, "opening the tc_neigh BPF object");
  if (int err = tc_neigh__load(h->skel_); err != 0) {
    return LoadFailure(err, "loading tc_neigh", log);
  }
  return h;
}

NeighHandoff::~NeighHandoff() { tc_neigh__destroy(skel_); }

int NeighHandoff::prog_fd() const { return bpf_program__fd(skel_->progs.tc_neigh); }

absl::Status NeighHandoff::Attach(int ifindex, std::string_view ifname) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  std::string log;
  // libbpf logs the kernel's "exclusivity flag on" for an existing clsact
  // qdisc, which is the normal case on a restart.
  CaptureLibLogs capture(&log);
  if (int err = bpf_tc_hook_create(&hook); err != 0 && err != -EEXIST) {
    return ErrnoStatus(err, Cat("creating the clsact qdisc on ", ifname, ": ", log));
  }
  LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog_fd(), .flags = BPF_TC_F_REPLACE,
              .handle = kTcHandle, .priority = kTcPriority);
  if (int err = bpf_tc_attach(&hook, &opts); err != 0) {
    return ErrnoStatus(err, Cat("attaching tc_neigh to ", ifname, " ingress: ", log));
  }
  return absl::OkStatus();
}

absl::Status NeighHandoff::Detach(int ifindex, std::string_view ifname) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  LIBBPF_OPTS(bpf_tc_opts, opts, .handle = kTcHandle, .priority = kTcPriority);
  std::string log;
  CaptureLibLogs capture(&log);
  if (int err = bpf_tc_detach(&hook, &opts); err != 0 && err != -ENOENT && err != -EINVAL) {
    return ErrnoStatus(err, Cat("detaching tc_neigh from ", ifname, " ingress: ", log));
  }
  return absl::OkStatus();
}

bool NeighHandoff::Attached(int ifindex) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  LIBBPF_OPTS(bpf_tc_opts, opts, .handle = kTcHandle, .priority = kTcPriority);
  std::string log;
  CaptureLibLogs capture(&log);
  return bpf_tc_query(&hook, &opts) == 0 && opts.prog_id != 0;
}

}  // namespace ballast::dataplane
