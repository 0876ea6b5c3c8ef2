#include "agent/probes/forwarder.h"

#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/tc_filter.h"
#include "agent/base/strcat.h"
#include "agent/probes/rtnl.h"
#include "ballast_abi.h"
#include "tc_probe.skel.h"

namespace ballast::probes {
namespace {

using base::Cat;
using dataplane::ErrnoStatus;
using dataplane::LoadFailure;

// The probe program's tc filter on the device's egress hook.
constexpr dataplane::TcFilter kTcFilter = {.egress = true, .handle = 0x6c62, .name = "tc_probe"};
constexpr uint32_t kEncapRoom = 48;  // largest outer headers (IPv6 + GUE's UDP)

}  // namespace

absl::StatusOr<std::unique_ptr<ProbeForwarder>> ProbeForwarder::Open(const Options& options) {
  if (options.device.empty()) {
    return absl::InvalidArgumentError("probe forwarder: no backend-facing device given");
  }
  if (!options.src4.is_v4() || options.src6.is_v4()) {
    return absl::InvalidArgumentError("probe forwarder: src4 must be IPv4 and src6 IPv6");
  }
  if (options.src4.is_unspecified() && options.src6.is_unspecified()) {
    return absl::InvalidArgumentError(
        "probe forwarder: neither src4 nor src6 is set (the outer source of encapsulated probes)");
  }
  std::unique_ptr<ProbeForwarder> f(new ProbeForwarder());
  f->options_ = options;
  std::string& dir = f->options_.pin_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (!dir.empty()) {
    if (absl::Status s = dataplane::CheckOnBpffs(dir); !s.ok()) return s;
    if (absl::Status s = dataplane::MakeDirs(dir); !s.ok()) return s;
  }

  std::string log;
  {
    dataplane::CaptureLibLogs capture(&log);
    f->skel_ = tc_probe__open();
    if (f->skel_ == nullptr) return ErrnoStatus(errno, "opening the tc_probe BPF object");
    bpf_map* m;
    bpf_object__for_each_map(m, f->skel_->obj) {
      if (bpf_map__is_internal(m)) continue;
      const std::string path = dir.empty() ? "" : Cat(dir, "/", bpf_map__name(m));
      if (int err = bpf_map__set_pin_path(m, dir.empty() ? nullptr : path.c_str()); err != 0) {
        return ErrnoStatus(err, Cat("setting the pin path of ", bpf_map__name(m)));
      }
    }
    if (int err = tc_probe__load(f->skel_); err != 0) {
      return LoadFailure(
          err,
          Cat("loading tc_probe (pinned maps under ", dir.empty() ? std::string("-") : dir,
              " must match this build; remove them with Detach)"),
          log);
    }
  }

  ballast_probe_settings s{};
  std::memcpy(s.src4, options.src4.bytes().data(), 4);
  std::memcpy(s.src6, options.src6.bytes().data(), 16);
  s.mark_base = BALLAST_PROBE_MARK_BASE;
  s.mark_mask = BALLAST_PROBE_MARK_MASK;
  const uint32_t zero = 0;
  if (bpf_map_update_elem(bpf_map__fd(f->skel_->maps.probe_settings), &zero, &s, BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing probe_settings");
  }
  return f;
}

ProbeForwarder::~ProbeForwarder() { tc_probe__destroy(skel_); }

absl::Status ProbeForwarder::Attach() {
  auto ifindex = rtnl::IfIndex(options_.device);
  if (!ifindex.ok()) return ifindex.status();
  if (absl::Status s = dataplane::AttachTcFilter(kTcFilter, bpf_program__fd(skel_->progs.tc_probe),
                                                 *ifindex, options_.device);
      !s.ok()) {
    return s;
  }
  if (!options_.manage_routing) return absl::OkStatus();
  return InstallRouting(*ifindex);
}

IpAddress ProbeForwarder::Nexthop4() { return *IpAddress::Parse("169.254.108.98"); }
IpAddress ProbeForwarder::Nexthop6() { return *IpAddress::Parse("fe80::6c62"); }

absl::Status ProbeForwarder::InstallRouting(int ifindex) {
  auto mtu = rtnl::DeviceMtu(options_.device);
  if (!mtu.ok()) return mtu.status();
  auto mac = rtnl::DeviceMac(options_.device);
  if (!mac.ok()) return mac.status();
  const uint32_t route_mtu = *mtu > kEncapRoom + 576 ? *mtu - kEncapRoom : 0;
  struct Fam {
    int family;
    IpAddress nexthop;
    const IpAddress& src;
  };
  for (const Fam& f :
       {Fam{AF_INET, Nexthop4(), options_.src4}, Fam{AF_INET6, Nexthop6(), options_.src6}}) {
    std::optional<IpAddress> gw;
    if (!f.src.is_unspecified()) {
      // The frame leaves for the tc hook addressed to the device itself;
      // the program rewrites both MACs (or the kernel does, for
      // bpf_redirect_neigh), so this address never reaches a wire.
      if (absl::Status s = rtnl::ReplacePermanentNeighbour(ifindex, f.nexthop, *mac); !s.ok()) {
        return s;
      }
      gw = f.nexthop;
    }
    if (absl::Status s = rtnl::ReplaceDefaultRoute(f.family, options_.table, gw, ifindex,
                                                   std::optional<IpAddress>(f.src), route_mtu,
                                                   /*onlink=*/f.family == AF_INET);
        !s.ok()) {
      return s;
    }
    absl::Status s = rtnl::AddFwmarkRule(f.family, BALLAST_PROBE_MARK_BASE, BALLAST_PROBE_MARK_MASK,
                                         options_.table, options_.rule_priority);
    if (!s.ok() && !absl::IsAlreadyExists(s)) return s;
  }
  return absl::OkStatus();
}

absl::Status ProbeForwarder::RemoveRouting(int ifindex) {
  absl::Status first;
  if (ifindex > 0) {
    for (const IpAddress& nh : {Nexthop4(), Nexthop6()}) {
      absl::Status s = rtnl::DeleteNeighbour(ifindex, nh);
      if (!s.ok() && !absl::IsNotFound(s)) first.Update(s);
    }
  }
  for (int family : {AF_INET, AF_INET6}) {
    absl::Status s =
        rtnl::DeleteFwmarkRule(family, BALLAST_PROBE_MARK_BASE, BALLAST_PROBE_MARK_MASK,
                               options_.table, options_.rule_priority);
    if (!s.ok() && !absl::IsNotFound(s)) first.Update(s);
    s = rtnl::DeleteDefaultRoute(family, options_.table);
    if (!s.ok() && !absl::IsNotFound(s)) first.Update(s);
  }
  return first;
}

absl::Status ProbeForwarder::Detach() {
  absl::Status first;
  auto ifindex = rtnl::IfIndex(options_.device);
  if (ifindex.ok()) {
    first.Update(dataplane::DetachTcFilter(kTcFilter, *ifindex, options_.device));
  } else if (!absl::IsNotFound(ifindex.status())) {
    first.Update(ifindex.status());
  }
  if (options_.manage_routing) first.Update(RemoveRouting(ifindex.ok() ? *ifindex : 0));
  if (!options_.pin_dir.empty()) {
    bpf_map* m;
    bpf_object__for_each_map(m, skel_->obj) {
      if (bpf_map__is_internal(m)) continue;
      if (int err = bpf_map__unpin(m, nullptr); err != 0 && err != -ENOENT) {
        first.Update(ErrnoStatus(err, Cat("unpinning ", bpf_map__name(m))));
      }
    }
    rmdir(options_.pin_dir.c_str());  // only if empty; other pins may share it
  }
  return first;
}

int ProbeForwarder::prog_fd() const { return bpf_program__fd(skel_->progs.tc_probe); }

absl::Status ProbeForwarder::SetTarget(uint32_t backend_id, const Target& target) {
  const IpAddress& backend = target.backend;
  if (backend_id == BALLAST_INVALID_ID || backend_id >= BALLAST_MAX_BACKENDS) {
    return absl::InvalidArgumentError(Cat("probe target ", backend.ToString(), ": backend id ",
                                          backend_id, " is out of range 1..",
                                          BALLAST_MAX_BACKENDS - 1));
  }
  if (backend.is_unspecified()) {
    return absl::InvalidArgumentError(Cat("probe target ", backend_id, ": no backend address"));
  }
  ballast_probe_target t{};
  std::memcpy(t.addr, backend.bytes().data(), 16);
  t.family = backend.family();
  if (target.gue_port != 0) {
    t.flags = BALLAST_PROBE_F_GUE;
    t.gue_port = target.gue_port;
  }
  const uint32_t mark = MarkOf(backend_id);
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.probe_targets), &mark, &t, BPF_ANY) != 0) {
    return ErrnoStatus(errno,
                       Cat("programming probe target ", backend_id, " -> ", backend.ToString()));
  }
  return absl::OkStatus();
}

absl::Status ProbeForwarder::RemoveTarget(uint32_t backend_id) {
  const uint32_t mark = MarkOf(backend_id);
  if (bpf_map_delete_elem(bpf_map__fd(skel_->maps.probe_targets), &mark) != 0) {
    return ErrnoStatus(errno, Cat("removing probe target ", backend_id));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<uint32_t, ProbeForwarder::Target>> ProbeForwarder::Targets() const {
  std::map<uint32_t, Target> out;
  const int fd = bpf_map__fd(skel_->maps.probe_targets);
  uint32_t key = 0, next = 0;
  uint32_t* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    ballast_probe_target t{};
    if (bpf_map_lookup_elem(fd, &next, &t) == 0) {
      auto a = IpAddress::FromAbi(t.addr, t.family);
      const uint16_t port = (t.flags & BALLAST_PROBE_F_GUE) != 0 ? t.gue_port : 0;
      if (a.ok()) out.emplace(next & ~BALLAST_PROBE_MARK_MASK, Target{*a, port});
    }
    key = next;
    prev = &key;
  }
  if (errno != ENOENT) return ErrnoStatus(errno, "listing probe targets");
  return out;
}

absl::StatusOr<std::array<uint64_t, BALLAST_PROBE_V_MAX>> ProbeForwarder::Stats() const {
  auto ncpu = dataplane::PossibleCpus();
  if (!ncpu.ok()) return ncpu.status();
  std::array<uint64_t, BALLAST_PROBE_V_MAX> out{};
  std::vector<uint64_t> per_cpu(static_cast<size_t>(*ncpu));
  for (uint32_t i = 0; i < BALLAST_PROBE_V_MAX; ++i) {
    if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.probe_stats), &i, per_cpu.data()) != 0) {
      return ErrnoStatus(errno, "reading probe_stats");
    }
    for (uint64_t v : per_cpu) out[i] += v;
  }
  return out;
}

}  // namespace ballast::probes
