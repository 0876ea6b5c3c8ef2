#include "agent/dataplane/decap.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/base/ip_prefix.h"
#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/tc_filter.h"
#include "xdp_decap.skel.h"

namespace ballast::dataplane {

using base::Cat;

namespace {

constexpr char kProgName[] = "xdp_decap";
// tc_decap_rst on the egress hook ("ld"; tc_probe uses 0x6c62 on egress,
// tc_neigh 0x6c6e on ingress).
constexpr TcFilter kRstFilter = {.egress = true, .handle = 0x6c64, .name = "tc_decap_rst"};

ballast_decap_addr ToKey(const IpAddress& a) {
  ballast_decap_addr k = {};
  std::memcpy(k.addr, a.bytes().data(), sizeof(k.addr));
  k.family = a.family();
  return k;
}

// Sources and VIPs are set on a copy this process loaded (Load), whose
// skeleton holds the maps.
absl::Status NotLoaded() {
  return absl::FailedPreconditionError(
      "decap sources and VIPs are set on a copy this process loaded (lbdp decap attach)");
}

}  // namespace

absl::Status Decap::SetPolicyBit(uint32_t bit, bool on) {
  const int fd = bpf_map__fd(skel_->maps.decap_policy);
  const uint32_t zero = 0;
  uint32_t flags = 0;
  if (bpf_map_lookup_elem(fd, &zero, &flags) != 0)
    return ErrnoStatus(errno, "reading decap_policy");
  flags = on ? flags | bit : flags & ~bit;
  if (bpf_map_update_elem(fd, &zero, &flags, BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing decap_policy");
  }
  return absl::OkStatus();
}

absl::Status Decap::AddSource(std::string_view prefix) {
  if (skel_ == nullptr) return NotLoaded();
  auto parsed = IpPrefix::Parse(prefix);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(Cat("decap source: ", parsed.status().message()));
  }
  // Host bits past the prefix are ignored by the trie's match but kept in
  // the key: Parse() clears them, so 198.18.0.1/24 and 198.18.0.0/24 are one.
  ballast_decap_prefix k = {};
  k.prefixlen = 8 + static_cast<uint32_t>(parsed->length());
  k.family = parsed->address().family();
  std::memcpy(k.addr, parsed->address().bytes().data(), parsed->address().is_v4() ? 4 : 16);
  const uint32_t one = 1;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.decap_sources), &k, &one, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("adding decap source ", prefix));
  }
  return SetPolicyBit(BALLAST_DECAP_CHECK_SOURCE, true);
}

absl::Status Decap::AddVip(const IpAddress& vip) {
  if (skel_ == nullptr) return NotLoaded();
  if (vip.is_unspecified()) {
    return absl::InvalidArgumentError(Cat("decap VIP ", vip.ToString(), " is unspecified"));
  }
  const ballast_decap_addr k = ToKey(vip);
  const uint32_t one = 1;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.decap_vips), &k, &one, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("adding decap VIP ", vip.ToString()));
  }
  return SetPolicyBit(BALLAST_DECAP_CHECK_VIP, true);
}

absl::Status Decap::SetGuePort(uint16_t port) {
  if (skel_ == nullptr) return NotLoaded();
  const uint32_t key = 1, value = port;  // decap_policy[1]: the GUE port, host order
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.decap_policy), &key, &value, BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing the GUE port to decap_policy");
  }
  return absl::OkStatus();
}

absl::Status Decap::SetBounce(bool on) {
  if (skel_ == nullptr) return NotLoaded();
  return SetPolicyBit(BALLAST_DECAP_NO_BOUNCE, !on);
}

absl::StatusOr<std::unique_ptr<Decap>> Decap::Load() {
  std::unique_ptr<Decap> d(new Decap());
  std::string log;
  {
    CaptureLibLogs capture(&log);
    d->skel_ = xdp_decap__open_and_load();
  }
  if (d->skel_ == nullptr) return LoadFailure(-errno, "loading the xdp_decap program", log);
  d->prog_fd_ = bpf_program__fd(d->skel_->progs.xdp_decap);
  d->addrs_fd_ = bpf_map__fd(d->skel_->maps.decap_addrs);
  d->stats_fd_ = bpf_map__fd(d->skel_->maps.decap_stats);
  return d;
}

absl::StatusOr<std::unique_ptr<Decap>> Decap::FromDevice(std::string_view ifname) {
  auto ifindex = IfIndex(ifname);
  if (!ifindex.ok()) return ifindex.status();
  auto st = QueryXdp(*ifindex);
  if (!st.ok()) return st.status();
  if (st->prog_id == 0) {
    return absl::NotFoundError(Cat("dev ", ifname, " runs no XDP program"));
  }
  if (st->prog_name != kProgName) {
    return absl::FailedPreconditionError(
        Cat("dev ", ifname, " runs XDP program \"", st->prog_name, "\", not xdp_decap"));
  }
  std::unique_ptr<Decap> d(new Decap());
  d->prog_fd_ = bpf_prog_get_fd_by_id(st->prog_id);
  if (d->prog_fd_ < 0) {
    return ErrnoStatus(errno, Cat("opening XDP program id ", st->prog_id));
  }
  auto info = GetProgInfo(d->prog_fd_);
  if (!info.ok()) return info.status();
  for (uint32_t id : info->map_ids) {
    UniqueFd fd(bpf_map_get_fd_by_id(id));
    if (!fd) return ErrnoStatus(errno, Cat("opening map id ", id));
    auto mi = GetMapInfo(fd.get());
    if (!mi.ok()) return mi.status();
    if (std::strcmp(mi->name, "decap_addrs") == 0 && d->addrs_fd_ < 0) {
      d->addrs_fd_ = fd.release();
    } else if (std::strcmp(mi->name, "decap_stats") == 0 && d->stats_fd_ < 0) {
      d->stats_fd_ = fd.release();
    }
  }
  if (d->addrs_fd_ < 0 || d->stats_fd_ < 0) {
    return absl::FailedPreconditionError(
        Cat("the xdp_decap program on dev ", ifname,
            " lacks the decap_addrs/decap_stats maps (another build?)"));
  }
  return d;
}

absl::Status Decap::DetachFrom(std::string_view ifname) {
  auto ifindex = IfIndex(ifname);
  if (!ifindex.ok()) return ifindex.status();
  auto st = QueryXdp(*ifindex);
  if (!st.ok()) return st.status();
  if (st->prog_id == 0) {
    return absl::NotFoundError(Cat("dev ", ifname, " runs no XDP program"));
  }
  if (st->prog_name != kProgName) {
    return absl::FailedPreconditionError(Cat("dev ", ifname, " runs XDP program \"", st->prog_name,
                                             "\", not xdp_decap; not detaching"));
  }
  if (absl::Status s = DetachXdp(*ifindex, ifname, st->prog_id); !s.ok()) return s;
  return DetachTcFilter(kRstFilter, *ifindex, ifname);
}

absl::StatusOr<bool> Decap::HoldsRsts(std::string_view ifname) {
  auto ifindex = IfIndex(ifname);
  if (!ifindex.ok()) return ifindex.status();
  return TcFilterAttached(kRstFilter, *ifindex);
}

Decap::~Decap() {
  if (skel_ != nullptr) {
    xdp_decap__destroy(skel_);
    return;
  }
  for (int fd : {prog_fd_, addrs_fd_, stats_fd_}) {
    if (fd >= 0) close(fd);
  }
}

absl::Status Decap::AddAddress(const IpAddress& addr) {
  if (addr.is_unspecified()) {
    return absl::InvalidArgumentError(Cat("decap address ", addr.ToString(), " is unspecified"));
  }
  const ballast_decap_addr k = ToKey(addr);
  const uint32_t one = 1;
  if (bpf_map_update_elem(addrs_fd_, &k, &one, BPF_ANY) != 0) {
    if (errno == E2BIG) {
      return absl::ResourceExhaustedError(
          Cat("decap address ", addr.ToString(), ": the address set is full"));
    }
    return ErrnoStatus(errno, Cat("adding decap address ", addr.ToString()));
  }
  return absl::OkStatus();
}

absl::Status Decap::RemoveAddress(const IpAddress& addr) {
  const ballast_decap_addr k = ToKey(addr);
  if (bpf_map_delete_elem(addrs_fd_, &k) != 0) {
    return ErrnoStatus(errno, Cat("removing decap address ", addr.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<IpAddress>> Decap::Addresses() const {
  std::vector<IpAddress> out;
  ballast_decap_addr key = {};
  ballast_decap_addr next = {};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(addrs_fd_, prev, &next) == 0) {
    key = next;
    prev = &key;
    auto a = IpAddress::FromAbi(key.addr, key.family);
    if (a.ok()) out.push_back(*a);
  }
  if (errno != ENOENT) return ErrnoStatus(errno, "walking decap_addrs");
  return out;
}

int Decap::rst_prog_fd() const {
  return skel_ != nullptr ? bpf_program__fd(skel_->progs.tc_decap_rst) : -1;
}

absl::StatusOr<AttachMode> Decap::Attach(std::string_view ifname, AttachMode mode) {
  if (skel_ == nullptr) {
    return absl::FailedPreconditionError("only a copy this process loaded can be attached");
  }
  auto ifindex = IfIndex(ifname);
  if (!ifindex.ok()) return ifindex.status();
  auto st = QueryXdp(*ifindex);
  if (!st.ok()) return st.status();
  const bool replacing = st->prog_id != 0 && st->prog_name == kProgName;
  if (st->prog_id != 0 && !replacing) {
    // AttachXdp refuses it with the program's name; nothing is touched.
    return AttachXdp(prog_fd_, *ifindex, ifname, mode);
  }
  if (absl::Status s = AttachTcFilter(kRstFilter, rst_prog_fd(), *ifindex, ifname); !s.ok())
    return s;
  if (replacing) {
    UniqueFd old(bpf_prog_get_fd_by_id(st->prog_id));
    if (!old) return ErrnoStatus(errno, Cat("opening XDP program id ", st->prog_id));
    if (absl::Status s = ReplaceXdp(*ifindex, ifname, old.get(), prog_fd_); !s.ok()) return s;
    return st->mode;
  }
  auto attached = AttachXdp(prog_fd_, *ifindex, ifname, mode);
  if (!attached.ok()) (void)DetachTcFilter(kRstFilter, *ifindex, ifname);  // as it was
  return attached;
}

absl::StatusOr<std::array<uint64_t, BALLAST_DECAP_V_MAX>> Decap::Stats() const {
  auto ncpus = PossibleCpus();
  if (!ncpus.ok()) return ncpus.status();
  std::array<uint64_t, BALLAST_DECAP_V_MAX> out{};
  std::vector<uint64_t> per_cpu(static_cast<size_t>(*ncpus));
  for (uint32_t k = 0; k < BALLAST_DECAP_V_MAX; ++k) {
    if (bpf_map_lookup_elem(stats_fd_, &k, per_cpu.data()) != 0) {
      if (errno == ENOENT) continue;  // an older build's program has fewer counters
      return ErrnoStatus(errno, Cat("reading decap_stats[", k, "]"));
    }
    for (uint64_t v : per_cpu) out[k] += v;
  }
  return out;
}

}  // namespace ballast::dataplane
