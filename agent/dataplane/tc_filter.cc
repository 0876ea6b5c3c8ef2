#include "agent/dataplane/tc_filter.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <string>

#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"

namespace ballast::dataplane {

using base::Cat;

namespace {

const char* HookName(const TcFilter& f) { return f.egress ? " egress" : " ingress"; }
bpf_tc_attach_point Point(const TcFilter& f) { return f.egress ? BPF_TC_EGRESS : BPF_TC_INGRESS; }

}  // namespace

absl::Status AttachTcFilter(const TcFilter& f, int prog_fd, int ifindex, std::string_view ifname) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = Point(f));
  std::string log;
  // libbpf logs the kernel's "exclusivity flag on" for an existing clsact
  // qdisc, which is the normal case on a restart.
  CaptureLibLogs capture(&log);
  if (int err = bpf_tc_hook_create(&hook); err != 0 && err != -EEXIST) {
    return ErrnoStatus(err, Cat("creating the clsact qdisc on ", ifname, ": ", log));
  }
  LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE, .handle = f.handle,
              .priority = f.handle);
  if (int err = bpf_tc_attach(&hook, &opts); err != 0) {
    return ErrnoStatus(err, Cat("attaching ", f.name, " to ", ifname, HookName(f), ": ", log));
  }
  return absl::OkStatus();
}

absl::Status DetachTcFilter(const TcFilter& f, int ifindex, std::string_view ifname) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = Point(f));
  LIBBPF_OPTS(bpf_tc_opts, opts, .handle = f.handle, .priority = f.handle);
  std::string log;
  CaptureLibLogs capture(&log);
  if (int err = bpf_tc_detach(&hook, &opts); err != 0 && err != -ENOENT && err != -EINVAL) {
    return ErrnoStatus(err, Cat("detaching ", f.name, " from ", ifname, HookName(f), ": ", log));
  }
  return absl::OkStatus();
}

bool TcFilterAttached(const TcFilter& f, int ifindex) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = Point(f));
  LIBBPF_OPTS(bpf_tc_opts, opts, .handle = f.handle, .priority = f.handle);
  std::string log;
  CaptureLibLogs capture(&log);  // "no such filter" is the answer, not an error
  return bpf_tc_query(&hook, &opts) == 0 && opts.prog_id != 0;
}

}  // namespace ballast::dataplane
