#include "agent/dataplane/xdp_attach.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"

namespace ballast::dataplane {

using base::Cat;

using base::Cat;
namespace {

// The captured libbpf/libxdp log, indented, for an error message.
std::string LogTail(const std::string& log) {
  if (log.empty()) return "";
  constexpr size_t kMax = 2000;
  std::string tail = log.size() > kMax ? "..." + log.substr(log.size() - kMax) : log;
  return Cat("\nlibbpf/libxdp log:\n", tail);
}

// libxdp keeps its dispatcher's pins under <bpffs>/xdp (bpffs: LIBXDP_BPFFS,
// default /sys/fs/bpf) and creates that directory on every attach, even when
// it falls back to attaching the program alone (the dispatcher does not load
// on every kernel), which pins nothing there.
std::string LibxdpDir() {
  const char* bpffs = getenv("LIBXDP_BPFFS");
  return Cat(bpffs != nullptr && *bpffs != '\0' ? bpffs : "/sys/fs/bpf", "/xdp");
}

absl::Status LibxdpAttach(int prog_fd, int ifindex, std::string_view ifname, AttachMode mode,
                          std::string* log) {
  // An empty libxdp directory that this attach created is removed again
  // (rmdir leaves a directory with pins in it alone).
  const std::string libxdp_dir = LibxdpDir();
  const bool libxdp_dir_existed = access(libxdp_dir.c_str(), F_OK) == 0;
  struct RemoveIfCreated {
    const std::string& dir;
    bool existed;
    ~RemoveIfCreated() {
      if (!existed) rmdir(dir.c_str());
    }
  } remove_if_created{libxdp_dir, libxdp_dir_existed};
  CaptureLibLogs capture(log);
  xdp_program* prog = xdp_program__from_fd(prog_fd);  // dups prog_fd
  if (const long err = libxdp_get_error(prog); err != 0) {
    return ErrnoStatus(static_cast<int>(err), "libxdp: wrapping the program fd");
  }
  const xdp_attach_mode xmode = mode == AttachMode::kGeneric ? XDP_MODE_SKB : XDP_MODE_NATIVE;
  const int err = xdp_program__attach(prog, ifindex, xmode, 0);
  xdp_program__close(prog);  // closes libxdp's dup; the attachment keeps the program
  if (err != 0) {
    return ErrnoStatus(
        err, Cat("attaching XDP program to dev ", ifname, " in ", AttachModeName(mode), " mode"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view AttachModeName(AttachMode m) {
  switch (m) {
    case AttachMode::kNative:
      return "native";
    case AttachMode::kGeneric:
      return "generic";
    case AttachMode::kAuto:
      return "auto";
  }
  return "unknown";
}

absl::StatusOr<AttachMode> ParseAttachMode(std::string_view text) {
  if (text == "native" || text == "drv") return AttachMode::kNative;
  if (text == "generic" || text == "skb") return AttachMode::kGeneric;
  if (text == "auto") return AttachMode::kAuto;
  return absl::InvalidArgumentError(
      Cat("attach mode \"", text, "\" is not one of native, generic, auto"));
}

absl::StatusOr<int> IfIndex(std::string_view ifname) {
  if (ifname.empty() || ifname.size() >= IF_NAMESIZE) {
    return absl::InvalidArgumentError(Cat("\"", ifname, "\" is not a device name"));
  }
  const std::string name(ifname);
  const unsigned idx = if_nametoindex(name.c_str());
  if (idx == 0) {
    return absl::NotFoundError(Cat("no network device \"", ifname, "\" in this network namespace"));
  }
  return static_cast<int>(idx);
}

absl::StatusOr<XdpState> QueryXdp(int ifindex) {
  bpf_xdp_query_opts q = {};
  q.sz = sizeof(q);
  if (const int err = bpf_xdp_query(ifindex, 0, &q); err != 0) {
    return ErrnoStatus(err, Cat("querying XDP state of ifindex ", ifindex));
  }
  XdpState st;
  switch (q.attach_mode) {
    case XDP_ATTACHED_NONE:
      return st;
    case XDP_ATTACHED_DRV:
      st.prog_id = q.drv_prog_id;
      break;
    case XDP_ATTACHED_SKB:
      st.prog_id = q.skb_prog_id;
      st.mode = AttachMode::kGeneric;
      break;
    default:
      // Offloaded or several modes at once: not something ballast sets up.
      return absl::FailedPreconditionError(Cat(
          "ifindex ", ifindex, " has XDP programs in hardware or in several modes (attach mode ",
          q.attach_mode, "); remove them with: ip link set dev <dev> xdp off"));
  }
  UniqueFd fd(bpf_prog_get_fd_by_id(st.prog_id));
  if (fd) {
    if (auto info = GetProgInfo(fd.get()); info.ok()) st.prog_name = info->name;
  }
  st.dispatcher = st.prog_name == "xdp_dispatcher";
  return st;
}

absl::StatusOr<AttachMode> AttachXdp(int prog_fd, int ifindex, std::string_view ifname,
                                     AttachMode mode) {
  auto st = QueryXdp(ifindex);
  if (!st.ok()) return st.status();
  if (st->prog_id != 0) {
    return absl::FailedPreconditionError(
        Cat("dev ", ifname, " already runs XDP program id ", st->prog_id, " \"", st->prog_name,
            "\" in ", AttachModeName(st->mode), " mode; remove it first (ip link set dev ", ifname,
            " xdp off, or xdp-loader unload ", ifname, " --all)"));
  }
  std::string log;
  if (mode != AttachMode::kAuto) {
    if (absl::Status s = LibxdpAttach(prog_fd, ifindex, ifname, mode, &log); !s.ok()) {
      return absl::Status(s.code(), Cat(s.message(), LogTail(log)));
    }
    return mode;
  }
  absl::Status native = LibxdpAttach(prog_fd, ifindex, ifname, AttachMode::kNative, &log);
  if (native.ok()) return AttachMode::kNative;
  std::string log2;
  absl::Status generic = LibxdpAttach(prog_fd, ifindex, ifname, AttachMode::kGeneric, &log2);
  if (!generic.ok()) {
    return absl::Status(generic.code(), Cat(generic.message(), " (native mode failed too: ",
                                            native.message(), ")", LogTail(log + log2)));
  }
  fprintf(stderr,
          "warning: dev %.*s: native XDP failed (%.*s); attached in generic (SKB) mode, which "
          "is much slower\n",
          static_cast<int>(ifname.size()), ifname.data(), static_cast<int>(native.message().size()),
          native.message().data());
  return AttachMode::kGeneric;
}

absl::Status ReplaceXdp(int ifindex, std::string_view ifname, int old_fd, int new_fd) {
  auto st = QueryXdp(ifindex);
  if (!st.ok()) return st.status();
  auto old_info = GetProgInfo(old_fd);
  if (!old_info.ok()) return old_info.status();
  if (st->prog_id != old_info->id) {
    return absl::FailedPreconditionError(Cat("dev ", ifname, " runs XDP program id ", st->prog_id,
                                             ", not ", old_info->id, " which was to be replaced"));
  }
  bpf_xdp_attach_opts opts = {};
  opts.sz = sizeof(opts);
  opts.old_prog_fd = old_fd;
  const uint32_t flags =
      XDP_FLAGS_REPLACE |
      (st->mode == AttachMode::kGeneric ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
  if (const int err = bpf_xdp_attach(ifindex, new_fd, flags, &opts); err != 0) {
    return ErrnoStatus(err, Cat("replacing XDP program id ", old_info->id, " on dev ", ifname));
  }
  return absl::OkStatus();
}

absl::Status DetachXdp(int ifindex, std::string_view ifname, uint32_t prog_id) {
  auto st = QueryXdp(ifindex);
  if (!st.ok()) return st.status();
  if (st->prog_id == 0) {
    return absl::NotFoundError(Cat("dev ", ifname, " runs no XDP program"));
  }
  if (st->prog_id != prog_id) {
    return absl::FailedPreconditionError(Cat("dev ", ifname, " runs XDP program id ", st->prog_id,
                                             " \"", st->prog_name, "\", not ballast's program id ",
                                             prog_id, "; not detaching it"));
  }
  // The kernel checks the id again (XDP_FLAGS_REPLACE with old_prog_fd), so a
  // program attached between the query and here is left alone.
  UniqueFd old(bpf_prog_get_fd_by_id(prog_id));
  if (!old) return ErrnoStatus(errno, Cat("opening XDP program id ", prog_id));
  bpf_xdp_attach_opts opts = {};
  opts.sz = sizeof(opts);
  opts.old_prog_fd = old.get();
  const uint32_t flags =
      XDP_FLAGS_REPLACE |
      (st->mode == AttachMode::kGeneric ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
  if (const int err = bpf_xdp_attach(ifindex, -1, flags, &opts); err != 0) {
    return ErrnoStatus(err, Cat("detaching XDP program id ", prog_id, " from dev ", ifname));
  }
  return absl::OkStatus();
}

}  // namespace ballast::dataplane
