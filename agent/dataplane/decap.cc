#include "agent/dataplane/decap.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

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

// The decap_vips key of `addr`, `proto`, `port` (host order); proto and port
// 0: the address entry.
ballast_decap_vip VipEntryKey(const IpAddress& addr, uint8_t proto, uint16_t port) {
  ballast_decap_vip k = {};
  std::memcpy(k.addr, addr.bytes().data(), sizeof(k.addr));
  k.family = addr.family();
  k.proto = proto;
  k.port = htons(port);
  return k;
}

// Writes `value` under `k` in decap_vips; `what` names the entry in errors.
absl::Status PutVipEntry(int fd, const ballast_decap_vip& k, uint32_t value,
                         const std::string& what) {
  if (bpf_map_update_elem(fd, &k, &value, BPF_ANY) == 0) return absl::OkStatus();
  if (errno == E2BIG) {
    return absl::ResourceExhaustedError(Cat("decap VIP ", what, ": the VIP set is full (",
                                            BALLAST_DECAP_MAX_VIPS,
                                            " entries, one per address and one per port)"));
  }
  return ErrnoStatus(errno, Cat("adding decap VIP ", what));
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

// The address entry of `addr` (its value says how its packets are checked)
// with `value`, unless it is there already with it; another value:
// InvalidArgument (an address is served whole or by ports, not both).
absl::Status Decap::PutVipAddress(const IpAddress& addr, uint32_t value, const std::string& what) {
  if (skel_ == nullptr) return NotLoaded();
  if (addr.is_unspecified()) {
    return absl::InvalidArgumentError(Cat("decap VIP ", what, " is unspecified"));
  }
  const ballast_decap_vip k = VipEntryKey(addr, 0, 0);
  uint32_t old = 0;
  if (bpf_map_lookup_elem(vips_fd_, &k, &old) == 0) {
    if (old == value) return absl::OkStatus();
    return absl::InvalidArgumentError(Cat(
        "decap VIP ", what, ": ", addr.ToString(),
        old == BALLAST_DECAP_VIP_ANY ? " was given alone (every port)" : " was given with ports",
        "; give its ports, or the address alone"));
  }
  return PutVipEntry(vips_fd_, k, value, what);
}

absl::Status Decap::AddVip(const VipKey& vip) {
  if (skel_ == nullptr) return NotLoaded();
  const std::string what = VipKeyString(vip);
  if (vip.proto != IPPROTO_TCP && vip.proto != IPPROTO_UDP) {
    return absl::InvalidArgumentError(Cat("decap VIP ", what, ": the protocol is not TCP or UDP"));
  }
  if (absl::Status s = PutVipAddress(vip.addr, BALLAST_DECAP_VIP_PORTS, what); !s.ok()) return s;
  if (absl::Status s = PutVipEntry(vips_fd_, VipEntryKey(vip.addr, vip.proto, vip.port), 1, what);
      !s.ok())
    return s;
  return SetPolicyBit(BALLAST_DECAP_CHECK_VIP, true);
}

absl::Status Decap::AddVipAddress(const IpAddress& addr) {
  if (absl::Status s = PutVipAddress(addr, BALLAST_DECAP_VIP_ANY, addr.ToString()); !s.ok())
    return s;
  return SetPolicyBit(BALLAST_DECAP_CHECK_VIP, true);
}

absl::StatusOr<std::vector<VipKey>> Decap::Vips() const {
  if (vips_fd_ < 0) {
    return absl::FailedPreconditionError(
        "this xdp_decap is an older build's, whose VIP set holds addresses only");
  }
  std::vector<VipKey> out;
  ballast_decap_vip key = {}, next = {};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(vips_fd_, prev, &next) == 0) {
    key = next;
    prev = &key;
    uint32_t value = 0;
    if (key.proto == 0 &&
        (bpf_map_lookup_elem(vips_fd_, &key, &value) != 0 || value != BALLAST_DECAP_VIP_ANY)) {
      continue;  // the address entry of a VIP given with ports
    }
    auto a = IpAddress::FromAbi(key.addr, key.family);
    if (a.ok()) out.push_back({*a, ntohs(key.port), key.proto});
  }
  if (errno != ENOENT) return ErrnoStatus(errno, "walking decap_vips");
  std::sort(out.begin(), out.end());
  return out;
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
  d->vips_fd_ = bpf_map__fd(d->skel_->maps.decap_vips);
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
    } else if (std::strcmp(mi->name, "decap_vips") == 0 && d->vips_fd_ < 0 &&
               mi->key_size == sizeof(ballast_decap_vip)) {
      d->vips_fd_ = fd.release();  // an older build's (by address only) is not read
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
  for (int fd : {prog_fd_, addrs_fd_, stats_fd_, vips_fd_}) {
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
