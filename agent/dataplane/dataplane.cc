#include "agent/dataplane/dataplane.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <net/if.h>
#include <sys/mman.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "agent/base/strcat.h"
#include "agent/dataplane/bpf_util.h"
#include "ballast_flow_hash.h"
#include "xdp_lb.skel.h"

namespace ballast::dataplane {

using base::Cat;

using base::Cat;
namespace {

constexpr char kProgPinName[] = "prog_xdp_lb";

bool IsPrime(uint64_t n) {
  if (n < 2) return false;
  if (n % 2 == 0) return n == 2;
  for (uint64_t d = 3; d * d <= n; d += 2) {
    if (n % d == 0) return false;
  }
  return true;
}

std::string TagHex(const std::array<uint8_t, BPF_TAG_SIZE>& tag) {
  std::string s;
  for (uint8_t b : tag) s += absl::StrCat(absl::Hex(b, absl::kZeroPad2));
  return s;
}

// Compares a pinned map with what this build wants, so that an incompatible
// pin is reported with the actual difference rather than libbpf's EINVAL.
absl::Status CheckPinnedCompatible(const bpf_map* m, const std::string& path) {
  UniqueFd fd(bpf_obj_get(path.c_str()));
  if (!fd) return ErrnoStatus(errno, Cat("opening pinned object ", path));
  auto info = GetMapInfo(fd.get());
  if (!info.ok()) {
    return absl::FailedPreconditionError(
        Cat(path, " is not a BPF map (", info.status().message(), ")"));
  }
  auto diff = [&](const char* what, uint64_t pinned, uint64_t want) -> absl::Status {
    return absl::FailedPreconditionError(
        Cat("pinned map ", path, " has ", what, " ", pinned, " but this build needs ", want,
            "; the running data plane was left untouched. Changing a map's layout interrupts "
            "traffic: run `lbdp teardown` (drops the pins and the flow table), then start again"));
  };
  if (info->type != bpf_map__type(m)) return diff("type", info->type, bpf_map__type(m));
  if (info->key_size != bpf_map__key_size(m)) {
    return diff("key size", info->key_size, bpf_map__key_size(m));
  }
  if (info->value_size != bpf_map__value_size(m)) {
    return diff("value size", info->value_size, bpf_map__value_size(m));
  }
  if (info->max_entries != bpf_map__max_entries(m)) {
    return diff("max_entries", info->max_entries, bpf_map__max_entries(m));
  }
  if (info->map_flags != bpf_map__map_flags(m)) {
    return diff("flags", info->map_flags, bpf_map__map_flags(m));
  }
  return absl::OkStatus();
}

// True for a pinned `verdicts` map with fewer slots than this build has
// verdicts, and otherwise the same layout: a build that adds a verdict
// (always at the end, ballast_abi.h) replaces it instead of refusing to
// start. No other map may change its size this way.
bool GrowsCounters(const bpf_map* m, const std::string& path) {
  if (std::string_view(bpf_map__name(m)) != "verdicts") return false;
  UniqueFd fd(bpf_obj_get(path.c_str()));
  if (!fd) return false;
  auto info = GetMapInfo(fd.get());
  return info.ok() && info->type == bpf_map__type(m) && info->key_size == bpf_map__key_size(m) &&
         info->value_size == bpf_map__value_size(m) && info->map_flags == bpf_map__map_flags(m) &&
         info->max_entries < bpf_map__max_entries(m);
}

ballast_vip_key ToAbi(const VipKey& k) {
  ballast_vip_key out = {};
  std::memcpy(out.addr, k.addr.bytes().data(), sizeof(out.addr));
  out.port = htons(k.port);
  out.proto = k.proto;
  out.family = k.addr.family();
  return out;
}

// ---- vip_refs: the established-flow shortcut (struct ballast_vip_ref) ----------
//
// Invariants kept here: an entry is written before the `vips` entry it
// mirrors appears; gen never decreases for a vip_id; every change to which
// flows a vip_id covers (id given to another key, VIP deleted, a port-0 VIP
// shadowed by a new one-port VIP) advances gen, so flows recorded under
// the old meaning re-resolve through `vips`.

absl::StatusOr<ballast_vip_ref> ReadVipRef(int fd, uint32_t vip_id) {
  ballast_vip_ref r = {};
  if (bpf_map_lookup_elem(fd, &vip_id, &r) != 0) {
    return ErrnoStatus(errno, Cat("reading vip_refs[", vip_id, "]"));
  }
  return r;
}

absl::Status WriteVipRef(int fd, uint32_t vip_id, const ballast_vip_ref& r) {
  if (bpf_map_update_elem(fd, &vip_id, &r, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing vip_refs[", vip_id, "]"));
  }
  return absl::OkStatus();
}

// Makes vip_refs[meta.vip_id] describe (key, meta). The generation moves
// on unless the entry already described this same key under this id (a
// flags or owner-deadline change keeps the flows' shortcut).
absl::Status PublishVipRef(int fd, const ballast_vip_key& key, const ballast_vip_meta& meta) {
  auto r = ReadVipRef(fd, meta.vip_id);
  if (!r.ok()) return r.status();
  const bool same =
      r->meta.vip_id == meta.vip_id && std::memcmp(&r->key, &key, sizeof(key)) == 0 && r->gen != 0;
  r->key = key;
  r->meta = meta;
  if (!same) ++r->gen;
  return WriteVipRef(fd, meta.vip_id, *r);
}

// Advances vip_refs[vip_id].gen; with `retire`, also marks the id unused.
// A no-op for an entry that does not describe a VIP.
absl::Status BumpVipRef(int fd, uint32_t vip_id, bool retire) {
  auto r = ReadVipRef(fd, vip_id);
  if (!r.ok()) return r.status();
  if (r->meta.vip_id != vip_id) return absl::OkStatus();
  ++r->gen;
  if (retire) r->meta = ballast_vip_meta{};
  return WriteVipRef(fd, vip_id, *r);
}

absl::Status CheckVipId(uint32_t vip_id) {
  if (vip_id == BALLAST_INVALID_ID || vip_id >= BALLAST_MAX_VIPS) {
    return absl::InvalidArgumentError(
        Cat("vip id ", vip_id, " is out of range 1..", BALLAST_MAX_VIPS - 1));
  }
  return absl::OkStatus();
}

absl::Status CheckBackendId(uint32_t id) {
  if (id == BALLAST_INVALID_ID || id >= BALLAST_MAX_BACKENDS) {
    return absl::InvalidArgumentError(
        Cat("backend id ", id, " is out of range 1..", BALLAST_MAX_BACKENDS - 1));
  }
  return absl::OkStatus();
}

std::string ProtoName(uint8_t proto) {
  if (proto == IPPROTO_TCP) return "tcp";
  if (proto == IPPROTO_UDP) return "udp";
  return Cat(proto);
}

// Sums a per-CPU value made only of __u64 fields.
template <typename T>
T SumU64Fields(const std::vector<T>& per_cpu) {
  static_assert(sizeof(T) % sizeof(uint64_t) == 0);
  constexpr size_t kWords = sizeof(T) / sizeof(uint64_t);
  uint64_t sum[kWords] = {};
  for (const T& v : per_cpu) {
    uint64_t words[kWords];
    std::memcpy(words, &v, sizeof(T));
    for (size_t i = 0; i < kWords; ++i) sum[i] += words[i];
  }
  T out;
  std::memcpy(&out, sum, sizeof(T));
  return out;
}

}  // namespace

std::string VipKeyString(const VipKey& k) {
  const std::string addr = k.addr.is_v4() ? k.addr.ToString() : Cat("[", k.addr.ToString(), "]");
  return Cat(addr, ":", k.port, "/", ProtoName(k.proto));
}

absl::StatusOr<VipKey> ParseVipKey(std::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(Cat("VIP \"", text, "\": ", why,
                                          " (expected ADDR:PORT/PROTO, e.g. 198.18.0.10:80/tcp or "
                                          "[2001:db8::10]:443/udp; port 0 = every port)"));
  };
  const size_t slash = text.rfind('/');
  if (slash == std::string_view::npos) return bad("missing /tcp or /udp");
  const std::string_view proto = text.substr(slash + 1);
  VipKey k;
  if (proto == "tcp") {
    k.proto = IPPROTO_TCP;
  } else if (proto == "udp") {
    k.proto = IPPROTO_UDP;
  } else {
    return bad(Cat("protocol \"", proto, "\" is not tcp or udp"));
  }
  const std::string_view hostport = text.substr(0, slash);
  const size_t colon = hostport.rfind(':');
  if (colon == std::string_view::npos) return bad("missing :PORT");
  std::string_view host = hostport.substr(0, colon);
  const std::string_view port = hostport.substr(colon + 1);
  if (host.find(':') != std::string_view::npos &&
      (host.size() < 2 || host.front() != '[' || host.back() != ']')) {
    return bad("an IPv6 address must be written in brackets");
  }
  auto addr = IpAddress::Parse(host);
  if (!addr.ok()) return bad(addr.status().message());
  if (addr->is_unspecified()) return bad("the address is unspecified");
  k.addr = *addr;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return bad(Cat("port \"", port, "\" is not a number in 0..65535"));
  }
  k.port = static_cast<uint16_t>(value);
  return k;
}

uint32_t HandshakeSetsFor(uint32_t flow_capacity) {
  const uint64_t sets =
      std::bit_ceil((uint64_t{flow_capacity} + kFlowsPerHandshakeSet - 1) / kFlowsPerHandshakeSet);
  return static_cast<uint32_t>(std::max<uint64_t>(BALLAST_HANDSHAKE_SETS, sets));
}

absl::StatusOr<std::unique_ptr<Dataplane>> Dataplane::Open(const Options& options) {
  if (options.flow_capacity == 0) {
    return absl::InvalidArgumentError("flow capacity 0: the connection table needs entries");
  }
  if (options.handshake_sets != 0 &&
      (!std::has_single_bit(options.handshake_sets) || options.handshake_sets < 1024 ||
       options.handshake_sets > (1u << 24))) {
    return absl::InvalidArgumentError(Cat("handshake sets ", options.handshake_sets,
                                          ": must be a power of two in 1024..16777216"));
  }
  std::unique_ptr<Dataplane> dp(new Dataplane());
  dp->pin_dir_ = options.pin_dir;
  while (dp->pin_dir_.size() > 1 && dp->pin_dir_.back() == '/') dp->pin_dir_.pop_back();
  const bool pinning = !dp->pin_dir_.empty();
  if (pinning) {
    if (absl::Status s = CheckOnBpffs(dp->pin_dir_); !s.ok()) return s;
    if (absl::Status s = MakeDirs(dp->pin_dir_); !s.ok()) return s;
  }

  std::string log;
  {
    CaptureLibLogs capture(&log);
    dp->skel_ = xdp_lb__open();
  }
  if (dp->skel_ == nullptr) {
    return absl::Status(
        ErrnoStatus(errno, "opening the embedded xdp_lb BPF object").code(),
        Cat("opening the embedded xdp_lb BPF object: ", strerror(errno), LogSuffix(log)));
  }
  if (const bpf_map* inner = bpf_map__inner_map(dp->skel_->maps.maglev_tables)) {
    dp->inner_flags_ = bpf_map__map_flags(inner);
  }
  // The three flow maps (one per class: seen, adopted, UDP) each hold the
  // configured capacity, so that no class can evict another's flows.
  for (bpf_map* flows :
       {dp->skel_->maps.flows, dp->skel_->maps.flows_adopted, dp->skel_->maps.flows_udp}) {
    if (int err = bpf_map__set_max_entries(flows, options.flow_capacity); err != 0) {
      return ErrnoStatus(err, Cat("setting the capacity of ", bpf_map__name(flows)));
    }
  }
  // The handshake slots grow with the flow table; the program indexes them
  // with the mask it is loaded with (a constant to the verifier).
  dp->handshake_sets_ = options.handshake_sets != 0 ? options.handshake_sets
                                                    : HandshakeSetsFor(options.flow_capacity);
  if (int err = bpf_map__set_max_entries(dp->skel_->maps.handshakes, dp->handshake_sets_);
      err != 0) {
    return ErrnoStatus(err, "setting the handshake table's size");
  }
  dp->skel_->rodata->handshake_set_mask = dp->handshake_sets_ - 1;
  bpf_map* m = nullptr;
  bpf_object__for_each_map(m, dp->skel_->obj) {
    if (!pinning || bpf_map__is_internal(m)) {
      if (int err = bpf_map__set_pin_path(m, nullptr); err != 0) {
        return ErrnoStatus(err, Cat("clearing the pin path of map ", bpf_map__name(m)));
      }
      continue;
    }
    const std::string path = Cat(dp->pin_dir_, "/", bpf_map__name(m));
    if (PathExists(path) && GrowsCounters(m, path)) {
      // Only counts are lost; the running program keeps the old map until
      // Attach() replaces it.
      if (unlink(path.c_str()) != 0) return ErrnoStatus(errno, Cat("unpinning ", path));
      fprintf(stderr,
              "note: %s had fewer verdict slots than this build; replaced (counts restart)\n",
              path.c_str());
    }
    if (PathExists(path)) {
      if (absl::Status s = CheckPinnedCompatible(m, path); !s.ok()) return s;
    }
    if (int err = bpf_map__set_pin_path(m, path.c_str()); err != 0) {
      return ErrnoStatus(err, Cat("setting the pin path ", path));
    }
  }
  int err = 0;
  {
    CaptureLibLogs capture(&log);
    err = xdp_lb__load(dp->skel_);
  }
  if (err != 0) {
    return LoadFailure(err, "loading the xdp_lb program (map creation/verifier)", log);
  }
  bpf_program* prog = bpf_object__next_program(dp->skel_->obj, nullptr);
  if (prog == nullptr) return absl::InternalError("the xdp_lb object has no program");
  dp->prog_fd_ = bpf_program__fd(prog);
  bpf_object__for_each_map(m, dp->skel_->obj) {
    if (!bpf_map__is_internal(m)) dp->maps_[bpf_map__name(m)] = bpf_map__fd(m);
  }
  // VIPs adopted from pins written by a build without vip_refs (or by
  // anything that wrote `vips` alone) get their shortcut entries.
  {
    auto vips = dp->Vips();
    if (!vips.ok()) return vips.status();
    for (const VipEntry& e : *vips) {
      if (e.meta.vip_id == BALLAST_INVALID_ID || e.meta.vip_id >= BALLAST_MAX_VIPS) continue;
      if (absl::Status s = PublishVipRef(dp->map_fd("vip_refs"), ToAbi(e.key), e.meta); !s.ok()) {
        return s;
      }
    }
  }
  if (pinning) {
    if (absl::Status s = dp->AdoptOrPinProgram(); !s.ok()) return s;
  }
  return dp;
}

absl::Status Dataplane::AdoptOrPinProgram() {
  const std::string path = Cat(pin_dir_, "/", kProgPinName);
  if (!PathExists(path)) return PinAtomically(prog_fd_, path);

  UniqueFd pinned(bpf_obj_get(path.c_str()));
  if (!pinned) return ErrnoStatus(errno, Cat("opening pinned program ", path));
  auto old_info = GetProgInfo(pinned.get());
  if (!old_info.ok() || old_info->type != BPF_PROG_TYPE_XDP) {
    return absl::FailedPreconditionError(
        Cat(path, " is not an XDP program; remove it (rm ", path, ") and retry"));
  }
  auto new_info = GetProgInfo(prog_fd_);
  if (!new_info.ok()) return new_info.status();

  // Same build = same instructions (the tag ignores map fd numbers) and the
  // running program uses the very maps we just reused from the pins.
  std::set<uint32_t> ours;
  bpf_map* m = nullptr;
  bpf_object__for_each_map(m, skel_->obj) {
    if (bpf_map__is_internal(m)) continue;
    auto info = GetMapInfo(bpf_map__fd(m));
    if (!info.ok()) return info.status();
    ours.insert(info->id);
  }
  const std::set<uint32_t> old_maps(old_info->map_ids.begin(), old_info->map_ids.end());
  bool same = old_info->tag == new_info->tag;
  for (uint32_t id : new_info->map_ids) {
    if (ours.count(id) != 0 && old_maps.count(id) == 0) same = false;
  }
  if (same) {
    adopted_fd_ = pinned.release();
    prog_fd_ = adopted_fd_;
  } else {
    stale_fd_ = pinned.release();
    fprintf(stderr,
            "note: %s is program id %u (tag %s) of another build; this build (tag %s) replaces "
            "it atomically on the devices it is attached to\n",
            path.c_str(), old_info->id, TagHex(old_info->tag).c_str(),
            TagHex(new_info->tag).c_str());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Dataplane>> Dataplane::OpenPinned(std::string_view pin_dir) {
  std::unique_ptr<Dataplane> dp(new Dataplane());
  dp->pin_dir_ = std::string(pin_dir);
  while (dp->pin_dir_.size() > 1 && dp->pin_dir_.back() == '/') dp->pin_dir_.pop_back();
  if (dp->pin_dir_.empty()) return absl::InvalidArgumentError("OpenPinned needs a pin dir");
  const std::string prog_pin = Cat(dp->pin_dir_, "/", kProgPinName);
  if (!PathExists(prog_pin)) {
    if (absl::Status s = CheckOnBpffs(dp->pin_dir_); !s.ok()) return s;
    return absl::NotFoundError(Cat("no ballast data plane is pinned at ", dp->pin_dir_, " (",
                                   prog_pin, " does not exist); load it first: lbdp attach"));
  }
  // The embedded object, opened but not loaded, tells which maps to expect
  // and their layout.
  std::string log;
  xdp_lb* spec = nullptr;
  {
    CaptureLibLogs capture(&log);
    spec = xdp_lb__open();
  }
  if (spec == nullptr) {
    return ErrnoStatus(errno, Cat("opening the embedded xdp_lb BPF object", LogSuffix(log)));
  }
  if (const bpf_map* inner = bpf_map__inner_map(spec->maps.maglev_tables)) {
    dp->inner_flags_ = bpf_map__map_flags(inner);
  }
  absl::Status status;
  bpf_map* m = nullptr;
  bpf_object__for_each_map(m, spec->obj) {
    if (bpf_map__is_internal(m)) continue;
    const std::string path = Cat(dp->pin_dir_, "/", bpf_map__name(m));
    UniqueFd fd(bpf_obj_get(path.c_str()));
    if (!fd) {
      status = ErrnoStatus(errno, Cat("opening pinned map ", path));
      break;
    }
    // The sizes of the flow table and of the handshake slots are chosen at
    // load time; take what is pinned.
    auto info = GetMapInfo(fd.get());
    if (info.ok() &&
        (m == spec->maps.flows || m == spec->maps.flows_adopted || m == spec->maps.flows_udp)) {
      bpf_map__set_max_entries(m, info->max_entries);
    }
    if (info.ok() && m == spec->maps.handshakes) {
      bpf_map__set_max_entries(m, info->max_entries);
      dp->handshake_sets_ = info->max_entries;
    }
    if (status = CheckPinnedCompatible(m, path); !status.ok()) break;
    dp->maps_[bpf_map__name(m)] = fd.release();
  }
  xdp_lb__destroy(spec);
  if (!status.ok()) return status;
  dp->adopted_fd_ = bpf_obj_get(prog_pin.c_str());
  if (dp->adopted_fd_ < 0) return ErrnoStatus(errno, Cat("opening pinned program ", prog_pin));
  dp->prog_fd_ = dp->adopted_fd_;
  return dp;
}

Dataplane::~Dataplane() {
  if (skel_ != nullptr) {
    xdp_lb__destroy(skel_);
  } else {
    for (const auto& [name, fd] : maps_) close(fd);
  }
  if (adopted_fd_ >= 0) close(adopted_fd_);
  if (stale_fd_ >= 0) close(stale_fd_);
}

bool Dataplane::IsOurs(uint32_t prog_id) const {
  if (prog_id == 0) return false;
  for (int fd : {prog_fd_, stale_fd_}) {
    if (fd < 0) continue;
    if (auto info = GetProgInfo(fd); info.ok() && info->id == prog_id) return true;
  }
  return false;
}

absl::Status Dataplane::Attach(std::string_view ifname, AttachMode mode) {
  auto ifindex = IfIndex(ifname);
  if (!ifindex.ok()) return ifindex.status();
  // The hand-off first, so the program's first frames with an unresolved
  // next hop find it.
  if (neigh_ == nullptr) {
    auto h = NeighHandoff::Open();
    if (!h.ok()) return h.status();
    neigh_ = std::move(*h);
  }
  if (absl::Status s = neigh_->Attach(*ifindex, ifname); !s.ok()) return s;
  auto st = QueryXdp(*ifindex);
  if (!st.ok()) return st.status();
  auto mine = GetProgInfo(prog_fd_);
  if (!mine.ok()) return mine.status();
  const std::string prog_pin = Cat(pin_dir_, "/", kProgPinName);

  if (st->prog_id != 0 && st->prog_id == mine->id) {
    if (mode != AttachMode::kAuto && mode != st->mode) {
      fprintf(stderr,
              "warning: dev %.*s already runs ballast in %s mode; keeping it (asked for %s; "
              "detach first to change the mode)\n",
              static_cast<int>(ifname.size()), ifname.data(),
              std::string(AttachModeName(st->mode)).c_str(),
              std::string(AttachModeName(mode)).c_str());
    }
    attached_[std::string(ifname)] = st->mode;
    return absl::OkStatus();
  }
  if (st->prog_id != 0 && stale_fd_ >= 0 && IsOurs(st->prog_id)) {
    if (absl::Status s = ReplaceXdp(*ifindex, ifname, stale_fd_, prog_fd_); !s.ok()) return s;
    if (!pin_dir_.empty()) {
      if (absl::Status s = PinAtomically(prog_fd_, prog_pin); !s.ok()) return s;
    }
    fprintf(stderr, "note: dev %.*s: replaced program id %u by id %u (no interruption)\n",
            static_cast<int>(ifname.size()), ifname.data(), st->prog_id, mine->id);
    attached_[std::string(ifname)] = st->mode;
    return absl::OkStatus();
  }
  auto used = AttachXdp(prog_fd_, *ifindex, ifname, mode);
  if (!used.ok()) return used.status();
  if (!pin_dir_.empty() && stale_fd_ >= 0) {
    if (absl::Status s = PinAtomically(prog_fd_, prog_pin); !s.ok()) return s;
  }
  attached_[std::string(ifname)] = *used;
  return absl::OkStatus();
}

absl::StatusOr<AttachMode> Dataplane::AttachedMode(std::string_view ifname) const {
  auto it = attached_.find(ifname);
  if (it == attached_.end()) {
    return absl::NotFoundError(Cat("dev ", ifname, " was not attached by this process"));
  }
  return it->second;
}

absl::Status Dataplane::Detach(std::string_view ifname) {
  auto ifindex = IfIndex(ifname);
  if (!ifindex.ok()) return ifindex.status();
  auto st = QueryXdp(*ifindex);
  if (!st.ok()) return st.status();
  if (st->prog_id == 0) {
    attached_.erase(std::string(ifname));
    return absl::NotFoundError(Cat("dev ", ifname, " runs no XDP program"));
  }
  if (!IsOurs(st->prog_id)) {
    return absl::FailedPreconditionError(Cat("dev ", ifname, " runs XDP program id ", st->prog_id,
                                             " \"", st->prog_name,
                                             "\", which is not ballast's; not detaching it"));
  }
  if (absl::Status s = DetachXdp(*ifindex, ifname, st->prog_id); !s.ok()) return s;
  attached_.erase(std::string(ifname));
  return NeighHandoff::Detach(*ifindex, ifname);
}

absl::Status Dataplane::Teardown() {
  absl::Status first;
  auto keep = [&first](absl::Status s) {
    if (!s.ok() && first.ok()) first = std::move(s);
  };
  if (struct if_nameindex* names = if_nameindex(); names != nullptr) {
    for (struct if_nameindex* n = names; n->if_index != 0 && n->if_name != nullptr; ++n) {
      auto st = QueryXdp(static_cast<int>(n->if_index));
      if (!st.ok() || !IsOurs(st->prog_id)) continue;
      keep(DetachXdp(static_cast<int>(n->if_index), n->if_name, st->prog_id));
      keep(NeighHandoff::Detach(static_cast<int>(n->if_index), n->if_name));
    }
    if_freenameindex(names);
  } else {
    keep(ErrnoStatus(errno, "listing network devices"));
  }
  attached_.clear();
  if (pin_dir_.empty()) return first;
  DIR* dir = opendir(pin_dir_.c_str());
  if (dir == nullptr) {
    if (errno != ENOENT) keep(ErrnoStatus(errno, Cat("opening pin dir ", pin_dir_)));
    return first;
  }
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = Cat(pin_dir_, "/", name);
    if (unlink(path.c_str()) != 0) keep(ErrnoStatus(errno, Cat("unpinning ", path)));
  }
  closedir(dir);
  if (rmdir(pin_dir_.c_str()) != 0) {
    keep(ErrnoStatus(errno, Cat("removing pin dir ", pin_dir_)));
  }
  return first;
}

int Dataplane::map_fd(std::string_view name) const {
  auto it = maps_.find(name);
  return it == maps_.end() ? -1 : it->second;
}

absl::Status Dataplane::SetSettings(const Settings& s) {
  if (!s.src4.is_v4()) {
    return absl::InvalidArgumentError(
        Cat("IPv4 source address ", s.src4.ToString(), " is not an IPv4 address"));
  }
  if (s.src6.family() != BALLAST_FAMILY_V6) {
    return absl::InvalidArgumentError(
        Cat("IPv6 source address ", s.src6.ToString(), " is not an IPv6 address"));
  }
  constexpr uint32_t kKnownPolicy = BALLAST_POLICY_DROP_MALFORMED | BALLAST_POLICY_ICMP_TOO_BIG;
  if ((s.policy & ~kKnownPolicy) != 0) {
    return absl::InvalidArgumentError(Cat("policy 0x", absl::Hex(s.policy),
                                          " has unknown bits (known: 0x", absl::Hex(kKnownPolicy),
                                          ")"));
  }
  const std::pair<const char*, uint64_t> timeouts[] = {{"tcp idle timeout", s.tcp_idle_ns},
                                                       {"udp idle timeout", s.udp_idle_ns},
                                                       {"linger", s.linger_ns},
                                                       {"syn idle timeout", s.syn_idle_ns},
                                                       {"fib ttl", s.fib_ttl_ns}};
  for (const auto& [name, ns] : timeouts) {
    if (ns == 0) return absl::InvalidArgumentError(Cat(name, " must be > 0"));
  }
  if (s.icmp_too_big_per_s > kMaxIcmpTooBigPerS) {
    return absl::InvalidArgumentError(
        Cat("ICMP too-big rate ", s.icmp_too_big_per_s, "/s is above ", kMaxIcmpTooBigPerS, "/s"));
  }
  if (s.icmp_too_big_per_s != 0 &&
      (s.icmp_too_big_burst == 0 || s.icmp_too_big_burst > s.icmp_too_big_per_s)) {
    return absl::InvalidArgumentError(Cat("ICMP too-big burst ", s.icmp_too_big_burst,
                                          " is out of range 1..", s.icmp_too_big_per_s,
                                          " (the rate per second)"));
  }
  if (s.syn_retry_ns >= s.syn_idle_ns) {
    return absl::InvalidArgumentError(Cat("SYN retry age ", s.syn_retry_ns,
                                          " ns is not below the syn idle timeout ", s.syn_idle_ns,
                                          " ns"));
  }
  // The budget and the handshake settings first: a failure leaves the
  // settings map as it was.
  if (absl::Status st = SetIcmpBudget(s.icmp_too_big_per_s, s.icmp_too_big_burst); !st.ok()) {
    return st;
  }
  ballast_handshake_settings hs = {};
  hs.syn_retry_ns = s.syn_retry_ns;
  hs.syn_reuse_idle_ns = s.syn_reuse_idle_ns;
  const uint32_t zero = 0;
  if (bpf_map_update_elem(map_fd("handshake_settings"), &zero, &hs, BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing the handshake_settings map");
  }
  ballast_settings v = {};
  std::memcpy(v.src4, s.src4.bytes().data(), sizeof(v.src4));
  std::memcpy(v.src6, s.src6.bytes().data(), sizeof(v.src6));
  v.policy = s.policy;
  v.tcp_idle_ns = s.tcp_idle_ns;
  v.udp_idle_ns = s.udp_idle_ns;
  v.linger_ns = s.linger_ns;
  v.syn_idle_ns = s.syn_idle_ns;
  v.fib_ttl_ns = s.fib_ttl_ns;
  const uint32_t key = 0;
  if (bpf_map_update_elem(map_fd("settings"), &key, &v, BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing the settings map");
  }
  return absl::OkStatus();
}

absl::StatusOr<Settings> Dataplane::GetSettings() const {
  ballast_settings v = {};
  const uint32_t key = 0;
  if (bpf_map_lookup_elem(map_fd("settings"), &key, &v) != 0) {
    return ErrnoStatus(errno, "reading the settings map");
  }
  Settings s;
  s.src4 = IpAddress::V4(v.src4);
  s.src6 = IpAddress::V6(v.src6);
  s.policy = v.policy;
  s.tcp_idle_ns = v.tcp_idle_ns;
  s.udp_idle_ns = v.udp_idle_ns;
  s.linger_ns = v.linger_ns;
  s.syn_idle_ns = v.syn_idle_ns;
  s.fib_ttl_ns = v.fib_ttl_ns;
  ballast_handshake_settings hs = {};
  if (bpf_map_lookup_elem(map_fd("handshake_settings"), &key, &hs) != 0) {
    return ErrnoStatus(errno, "reading the handshake_settings map");
  }
  s.syn_retry_ns = hs.syn_retry_ns;
  s.syn_reuse_idle_ns = hs.syn_reuse_idle_ns;
  // Every CPU holds the same configuration; CPU 0's is read back.
  auto budget = ReadPerCpu<ballast_icmp_budget>(map_fd("icmp_budget"), 0, "icmp_budget");
  if (!budget.ok()) return budget.status();
  s.icmp_too_big_per_s = (*budget)[0].per_s;
  s.icmp_too_big_burst = (*budget)[0].burst;
  return s;
}

// Writes the rate and burst on every CPU, keeping each CPU's bucket time and
// its count of refused answers (a read, then a write of every CPU's value:
// refusals counted between the two are lost). Nothing is written when every
// CPU already has this rate and burst, so only a change of the ICMP budget
// itself opens that window, not every settings change.
absl::Status Dataplane::SetIcmpBudget(uint32_t per_s, uint32_t burst) {
  const int fd = map_fd("icmp_budget");
  auto v = ReadPerCpu<ballast_icmp_budget>(fd, 0, "icmp_budget");
  if (!v.ok()) return v.status();
  const uint64_t interval_ns = per_s == 0 ? 0 : 1'000'000'000ull / per_s;
  const uint32_t burst_set = per_s == 0 ? 0 : burst;
  bool same = true;
  for (ballast_icmp_budget& b : *v) {
    same = same && b.per_s == per_s && b.burst == burst_set && b.interval_ns == interval_ns &&
           b.burst_ns == interval_ns * burst_set;
    b.per_s = per_s;
    b.burst = burst_set;
    b.interval_ns = interval_ns;
    b.burst_ns = interval_ns * burst_set;
  }
  if (same) return absl::OkStatus();
  const uint32_t key = 0;
  if (bpf_map_update_elem(fd, &key, v->data(), BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing the icmp_budget map");
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Dataplane::IcmpTooBigLimited() const {
  auto v = ReadPerCpu<ballast_icmp_budget>(map_fd("icmp_budget"), 0, "icmp_budget");
  if (!v.ok()) return v.status();
  uint64_t n = 0;
  for (const ballast_icmp_budget& b : *v) n += b.limited;
  return n;
}

absl::StatusOr<std::vector<VipEntry>> Dataplane::Vips() const {
  const int fd = map_fd("vips");
  std::vector<VipEntry> out;
  ballast_vip_key key = {};
  ballast_vip_key next = {};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    ballast_vip_meta meta = {};
    if (bpf_map_lookup_elem(fd, &key, &meta) != 0) {
      if (errno == ENOENT) continue;
      return ErrnoStatus(errno, "reading the vips map");
    }
    if (key.proto == BALLAST_VIP_ADDR_MARKER) continue;  // address marker, not a VIP
    auto addr = IpAddress::FromAbi(key.addr, key.family);
    if (!addr.ok()) return addr.status();
    out.push_back(VipEntry{VipKey{*addr, ntohs(key.port), key.proto}, meta});
  }
  if (errno != ENOENT) return ErrnoStatus(errno, "walking the vips map");
  return out;
}

namespace {

uint32_t VipFilterBit(const IpAddress& addr) {
  uint32_t w[4];
  std::memcpy(w, addr.bytes().data(), sizeof(w));
  return ballast_vip_filter_bit(w[0], w[1], w[2], w[3], addr.family());
}

}  // namespace

absl::Status Dataplane::SetVipFilterWord(const IpAddress& addr, bool include_addr) {
  const uint32_t bit = VipFilterBit(addr);
  const uint32_t word = bit / 64;
  // Recompute the whole word from the VIPs that remain, so a bit shared by
  // two addresses stays set while either exists.
  uint64_t bits = include_addr ? (uint64_t{1} << (bit % 64)) : 0;
  auto vips = Vips();
  if (!vips.ok()) return vips.status();
  for (const VipEntry& e : *vips) {
    const uint32_t b = VipFilterBit(e.key.addr);
    if (b / 64 == word) bits |= uint64_t{1} << (b % 64);
  }
  if (bpf_map_update_elem(map_fd("vip_filter"), &word, &bits, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing word ", word, " of the VIP address filter"));
  }
  return absl::OkStatus();
}

absl::Status Dataplane::UpsertVip(const VipKey& key, uint32_t vip_id, const VipOptions& options) {
  std::lock_guard<std::mutex> lock(vip_mu_);
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  if (key.proto != IPPROTO_TCP && key.proto != IPPROTO_UDP) {
    return absl::InvalidArgumentError(
        Cat("VIP ", VipKeyString(key), ": protocol ", key.proto, " is not TCP (6) or UDP (17)"));
  }
  if (key.addr.is_unspecified()) {
    return absl::InvalidArgumentError(
        Cat("VIP ", VipKeyString(key), ": the address is unspecified"));
  }
  auto vips = Vips();
  if (!vips.ok()) return vips.status();
  for (const VipEntry& e : *vips) {
    if (e.meta.vip_id == vip_id && e.key != key) {
      return absl::AlreadyExistsError(
          Cat("vip id ", vip_id, " is already used by VIP ", VipKeyString(e.key)));
    }
  }
  const ballast_vip_key k = ToAbi(key);
  ballast_vip_meta prev = {};
  bool existed = false;
  for (const VipEntry& e : *vips) {
    if (e.key == key) {
      existed = true;
      prev = e.meta;
    }
  }
  // An existing VIP keeps its ownership: the owner's deadline is written
  // only by SetVipOwnerDeadline (under vip_mu_, like this update), so
  // re-programming a VIP never resets, extends or clears it.
  ballast_vip_meta meta = {};
  meta.vip_id = vip_id;
  if (existed) {
    meta.flags = prev.flags;
    meta.owner_deadline_ns = prev.owner_deadline_ns;
  } else if (options.owner_deadline_if_new.has_value()) {
    meta.flags = BALLAST_VIP_F_OWNED;
    meta.owner_deadline_ns = *options.owner_deadline_if_new;
  }
  // The filter bit and the address marker first: from the moment the VIP
  // exists, its packets, fragments and ICMP errors are seen as VIP traffic.
  if (absl::Status st = SetVipFilterWord(key.addr, true); !st.ok()) return st;
  ballast_vip_key marker = k;
  marker.port = 0;
  marker.proto = BALLAST_VIP_ADDR_MARKER;
  const ballast_vip_meta marker_meta = {};
  if (bpf_map_update_elem(map_fd("vips"), &marker, &marker_meta, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing the address marker of VIP ", VipKeyString(key)));
  }
  // The shortcut entry before the VIP itself, so no flow can record the
  // VIP before its entry exists.
  const int refs = map_fd("vip_refs");
  if (absl::Status st = PublishVipRef(refs, k, meta); !st.ok()) return st;
  if (bpf_map_update_elem(map_fd("vips"), &k, &meta, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing VIP ", VipKeyString(key)));
  }
  // The key's previous id no longer covers it.
  if (existed && prev.vip_id != vip_id && prev.vip_id < BALLAST_MAX_VIPS) {
    if (absl::Status st = BumpVipRef(refs, prev.vip_id, /*retire=*/true); !st.ok()) return st;
  }
  // A new one-port VIP takes some flows from the port-0 VIP of its address.
  if (!existed && key.port != 0) {
    for (const VipEntry& e : *vips) {
      if (e.key.port == 0 && e.key.addr == key.addr && e.key.proto == key.proto &&
          e.meta.vip_id < BALLAST_MAX_VIPS) {
        if (absl::Status st = BumpVipRef(refs, e.meta.vip_id, /*retire=*/false); !st.ok()) {
          return st;
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Dataplane::DeleteVip(const VipKey& key) {
  std::lock_guard<std::mutex> lock(vip_mu_);
  const ballast_vip_key k = ToAbi(key);
  ballast_vip_meta meta = {};
  if (bpf_map_lookup_elem(map_fd("vips"), &k, &meta) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(Cat("VIP ", VipKeyString(key), " does not exist"));
    }
    return ErrnoStatus(errno, Cat("reading VIP ", VipKeyString(key)));
  }
  if (bpf_map_delete_elem(map_fd("vips"), &k) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, Cat("deleting VIP ", VipKeyString(key)));
  }
  if (meta.vip_id != BALLAST_INVALID_ID && meta.vip_id < BALLAST_MAX_VIPS) {
    if (absl::Status st = BumpVipRef(map_fd("vip_refs"), meta.vip_id, /*retire=*/true); !st.ok()) {
      return st;
    }
  }
  {
    auto rest = Vips();
    if (!rest.ok()) return rest.status();
    bool address_in_use = false;
    for (const VipEntry& e : *rest) address_in_use |= e.key.addr == key.addr;
    if (!address_in_use) {
      ballast_vip_key marker = k;
      marker.port = 0;
      marker.proto = BALLAST_VIP_ADDR_MARKER;
      if (bpf_map_delete_elem(map_fd("vips"), &marker) != 0 && errno != ENOENT) {
        return ErrnoStatus(errno, Cat("deleting the address marker of VIP ", VipKeyString(key)));
      }
      if (absl::Status st = SetVipFilterWord(key.addr, false); !st.ok()) return st;
    }
  }
  if (meta.vip_id != BALLAST_INVALID_ID && meta.vip_id < BALLAST_MAX_VIPS) {
    if (bpf_map_delete_elem(map_fd("maglev_tables"), &meta.vip_id) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, Cat("deleting the Maglev table of vip id ", meta.vip_id));
    }
    return ZeroPerCpu(map_fd("vip_stats"), meta.vip_id, sizeof(ballast_vip_stats), "vip_stats");
  }
  return absl::OkStatus();
}

namespace {
// The `vips` entry of a VIP: NOT_FOUND when there is none (address markers,
// which share the map, are not VIPs).
absl::StatusOr<ballast_vip_meta> ReadVipMeta(int vips_fd, const VipKey& key) {
  const ballast_vip_key k = ToAbi(key);
  ballast_vip_meta meta = {};
  if (key.proto == BALLAST_VIP_ADDR_MARKER || bpf_map_lookup_elem(vips_fd, &k, &meta) != 0) {
    if (key.proto == BALLAST_VIP_ADDR_MARKER || errno == ENOENT) {
      return absl::NotFoundError(Cat("VIP ", VipKeyString(key), " does not exist"));
    }
    return ErrnoStatus(errno, Cat("reading VIP ", VipKeyString(key)));
  }
  return meta;
}
}  // namespace

absl::Status Dataplane::SetVipOwnerDeadline(const VipKey& key,
                                            std::optional<uint64_t> monotonic_ns) {
  std::lock_guard<std::mutex> lock(vip_mu_);
  const ballast_vip_key k = ToAbi(key);
  absl::StatusOr<ballast_vip_meta> found = ReadVipMeta(map_fd("vips"), key);
  if (!found.ok()) return found.status();
  ballast_vip_meta meta = *found;
  if (meta.vip_id == BALLAST_INVALID_ID || meta.vip_id >= BALLAST_MAX_VIPS) {
    return absl::DataLossError(
        Cat("VIP ", VipKeyString(key), " has vip id ", meta.vip_id, ", out of range"));
  }
  // vip_refs is an array, updated in place: a packet racing with the update
  // could read some words of the old value and some of the new. So the
  // flag and the deadline never change in the same write: a VIP becoming
  // owned gets its deadline first (ignored while the flag is clear), one
  // leaving owned mode loses the flag first, then the deadline is zeroed.
  // Each intermediate state is one the caller asked for or a harmless
  // equivalent of the old one. (`vips` is a hash: its updates replace the
  // whole element.)
  std::vector<ballast_vip_meta> steps;
  const bool owned = (meta.flags & BALLAST_VIP_F_OWNED) != 0;
  if (monotonic_ns.has_value()) {
    if (!owned) {
      meta.owner_deadline_ns = *monotonic_ns;
      steps.push_back(meta);
    }
    meta.flags |= BALLAST_VIP_F_OWNED;
    meta.owner_deadline_ns = *monotonic_ns;
    steps.push_back(meta);
  } else {
    meta.flags &= ~BALLAST_VIP_F_OWNED;
    steps.push_back(meta);
    meta.owner_deadline_ns = 0;
    steps.push_back(meta);
  }
  for (const ballast_vip_meta& m : steps) {
    // The shortcut copy (same key, same id: the generation stays, so known
    // flows keep their shortcut and see the new deadline on their next
    // packet), then the `vips` entry that new flows read.
    if (absl::Status st = PublishVipRef(map_fd("vip_refs"), k, m); !st.ok()) return st;
    if (bpf_map_update_elem(map_fd("vips"), &k, &m, BPF_EXIST) != 0) {
      return ErrnoStatus(errno, Cat("writing the owner deadline of VIP ", VipKeyString(key)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<VipOwner> Dataplane::GetVipOwner(const VipKey& key) const {
  absl::StatusOr<ballast_vip_meta> found = ReadVipMeta(map_fd("vips"), key);
  if (!found.ok()) return found.status();
  const ballast_vip_meta& meta = *found;
  VipOwner out;
  if ((meta.flags & BALLAST_VIP_F_OWNED) != 0) out.deadline_ns = meta.owner_deadline_ns;
  auto st = VipStats(meta.vip_id);
  if (!st.ok()) return st.status();
  out.fenced = st->fenced;
  return out;
}

absl::Status Dataplane::ZeroPerCpu(int fd, uint32_t key, size_t value_size, std::string_view what) {
  auto ncpus = PossibleCpus();
  if (!ncpus.ok()) return ncpus.status();
  const size_t stride = (value_size + 7) / 8 * 8;
  std::vector<uint8_t> zeros(stride * static_cast<size_t>(*ncpus), 0);
  if (bpf_map_update_elem(fd, &key, zeros.data(), BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("clearing ", what, "[", key, "]"));
  }
  return absl::OkStatus();
}

absl::Status Dataplane::SetBackend(uint32_t id, const IpAddress& addr, ballast_backend_state state,
                                   uint64_t drain_deadline_ns) {
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  if (state != BALLAST_BACKEND_UNUSED && state != BALLAST_BACKEND_ACTIVE &&
      state != BALLAST_BACKEND_DRAINING && state != BALLAST_BACKEND_EVICTED) {
    return absl::InvalidArgumentError(
        Cat("backend ", id, ": state ", static_cast<int>(state), " is not valid"));
  }
  if (drain_deadline_ns != 0 && state != BALLAST_BACKEND_DRAINING) {
    return absl::InvalidArgumentError(Cat("backend ", addr.ToString(),
                                          ": a drain deadline needs state draining, not ",
                                          BackendStateName(state)));
  }
  if (state != BALLAST_BACKEND_UNUSED && addr.is_unspecified()) {
    return absl::InvalidArgumentError(
        Cat("backend ", id, ": address ", addr.ToString(), " is unspecified"));
  }
  const int fd = map_fd("backends");
  ballast_backend old = {};
  if (bpf_map_lookup_elem(fd, &id, &old) != 0) {
    return ErrnoStatus(errno, Cat("reading backend ", id));
  }
  ballast_backend v = {};
  std::memcpy(v.addr, addr.bytes().data(), sizeof(v.addr));
  v.family = addr.family();
  v.state = static_cast<uint8_t>(state);
  v.drain_deadline_ns = drain_deadline_ns;
  if (bpf_map_update_elem(fd, &id, &v, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("writing backend ", id, " (", addr.ToString(), ")"));
  }
  if (old.family != v.family || std::memcmp(old.addr, v.addr, sizeof(v.addr)) != 0) {
    return ZeroPerCpu(map_fd("nexthops"), id, sizeof(ballast_nexthop), "nexthops");
  }
  return absl::OkStatus();
}

absl::Status Dataplane::ClearBackend(uint32_t id) {
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  const ballast_backend v = {};
  if (bpf_map_update_elem(map_fd("backends"), &id, &v, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("clearing backend ", id));
  }
  if (absl::Status s = ZeroPerCpu(map_fd("nexthops"), id, sizeof(ballast_nexthop), "nexthops");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ZeroPerCpu(map_fd("backend_stats"), id, sizeof(ballast_backend_stats), "backend_stats");
      !s.ok()) {
    return s;
  }
  return ZeroPerCpu(map_fd("backend_bounces"), id, sizeof(ballast_backend_bounces),
                    "backend_bounces");
}

absl::StatusOr<std::vector<BackendEntry>> Dataplane::Backends() const {
  const int fd = map_fd("backends");
  std::vector<BackendEntry> out;
  for (uint32_t id = 1; id < BALLAST_MAX_BACKENDS; ++id) {
    ballast_backend v = {};
    if (bpf_map_lookup_elem(fd, &id, &v) != 0) {
      return ErrnoStatus(errno, Cat("reading backend ", id));
    }
    if (v.state == BALLAST_BACKEND_UNUSED) continue;
    auto addr = IpAddress::FromAbi(v.addr, v.family);
    if (!addr.ok()) {
      return absl::DataLossError(Cat("backend ", id, ": ", addr.status().message()));
    }
    out.push_back(
        BackendEntry{id, *addr, static_cast<ballast_backend_state>(v.state), v.drain_deadline_ns});
  }
  return out;
}

// Bytes per value in an array map's memory (kernel: round_up(value_size, 8)).
constexpr size_t kArraySlotStride = 8;

absl::Status Dataplane::SetTable(uint32_t vip_id, std::span<const uint32_t> table) {
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  const size_t m = table.size();
  if (m == 0 || m > BALLAST_MAX_TABLE_SIZE || !IsPrime(m)) {
    return absl::InvalidArgumentError(Cat("vip id ", vip_id, ": Maglev table size ", m,
                                          " must be a prime in 2..", BALLAST_MAX_TABLE_SIZE));
  }
  for (size_t i = 0; i < m; ++i) {
    if (table[i] >= BALLAST_MAX_BACKENDS) {
      return absl::InvalidArgumentError(Cat("vip id ", vip_id, ": slot ", i, " holds backend id ",
                                            table[i], ", out of range 0..",
                                            BALLAST_MAX_BACKENDS - 1));
    }
  }
  const uint32_t entries = static_cast<uint32_t>(m) + 1;
  // The inner map must match the program's template (type, key/value size,
  // flags); BPF_F_INNER_MAP in the template lets the size differ.
  LIBBPF_OPTS(bpf_map_create_opts, create_opts, .map_flags = inner_flags_);
  char name[BPF_OBJ_NAME_LEN];
  snprintf(name, sizeof(name), "maglev_%u", vip_id);
  UniqueFd inner(bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(uint32_t), sizeof(uint32_t),
                                entries, &create_opts));
  if (!inner) {
    return ErrnoStatus(errno, Cat("creating a Maglev table of ", m, " slots for vip id ", vip_id));
  }
  std::vector<uint32_t> values(entries);
  values[0] = static_cast<uint32_t>(m);
  std::copy(table.begin(), table.end(), values.begin() + 1);
  if ((inner_flags_ & BPF_F_MMAPABLE) != 0) {
    // Written straight into the map's memory instead of a syscall path per
    // slot. An array map stores each value in round_up(value_size, 8) bytes,
    // so slot i of the table lives at byte i * kArraySlotStride.
    const size_t len = entries * kArraySlotStride;
    void* mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, inner.get(), 0);
    if (mem == MAP_FAILED) {
      return ErrnoStatus(errno, Cat("mapping the new table of vip id ", vip_id));
    }
    auto* bytes = static_cast<uint8_t*>(mem);
    for (uint32_t i = 0; i < entries; ++i) {
      std::memcpy(bytes + static_cast<size_t>(i) * kArraySlotStride, &values[i], sizeof(uint32_t));
    }
    munmap(mem, len);  // before freezing: a frozen map has no writable mappings
  } else {
    std::vector<uint32_t> keys(entries);
    for (uint32_t i = 0; i < entries; ++i) keys[i] = i;
    uint32_t count = entries;
    LIBBPF_OPTS(bpf_map_batch_opts, batch_opts);
    if (bpf_map_update_batch(inner.get(), keys.data(), values.data(), &count, &batch_opts) != 0) {
      // Kernels without batch ops for arrays: one update per slot.
      for (uint32_t i = 0; i < entries; ++i) {
        if (bpf_map_update_elem(inner.get(), &keys[i], &values[i], BPF_ANY) != 0) {
          return ErrnoStatus(errno,
                             Cat("filling slot ", i, " of the new table of vip id ", vip_id));
        }
      }
    }
  }
  // Published tables are immutable: only a swap changes what a VIP uses.
  if (bpf_map_freeze(inner.get()) != 0) {
    return ErrnoStatus(errno, Cat("freezing the new table of vip id ", vip_id));
  }
  const int inner_fd = inner.get();
  if (bpf_map_update_elem(map_fd("maglev_tables"), &vip_id, &inner_fd, BPF_ANY) != 0) {
    return ErrnoStatus(errno, Cat("swapping in the new table of vip id ", vip_id));
  }
  return absl::OkStatus();  // `inner` closes our fd; the outer map holds the table
}

absl::StatusOr<std::vector<uint32_t>> Dataplane::GetTable(uint32_t vip_id) const {
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  uint32_t inner_id = 0;
  if (bpf_map_lookup_elem(map_fd("maglev_tables"), &vip_id, &inner_id) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(Cat("vip id ", vip_id, " has no Maglev table"));
    }
    return ErrnoStatus(errno, Cat("reading the table slot of vip id ", vip_id));
  }
  UniqueFd inner(bpf_map_get_fd_by_id(inner_id));
  if (!inner) {
    return ErrnoStatus(errno, Cat("opening table map id ", inner_id, " of vip id ", vip_id));
  }
  auto info = GetMapInfo(inner.get());
  if (!info.ok()) return info.status();
  const uint32_t key0 = 0;
  uint32_t m = 0;
  if (bpf_map_lookup_elem(inner.get(), &key0, &m) != 0) {
    return ErrnoStatus(errno, Cat("reading the size of the table of vip id ", vip_id));
  }
  if (m == 0 || static_cast<uint64_t>(m) + 1 != info->max_entries) {
    return absl::DataLossError(Cat("table of vip id ", vip_id, " says M = ", m, " but has ",
                                   info->max_entries, " entries"));
  }
  if ((info->map_flags & BPF_F_MMAPABLE) != 0) {
    const size_t len = (static_cast<size_t>(m) + 1) * kArraySlotStride;
    void* mem = mmap(nullptr, len, PROT_READ, MAP_SHARED, inner.get(), 0);
    if (mem == MAP_FAILED) {
      return ErrnoStatus(errno, Cat("mapping the table of vip id ", vip_id));
    }
    const auto* bytes = static_cast<const uint8_t*>(mem);
    std::vector<uint32_t> out(m);
    for (uint32_t i = 0; i < m; ++i) {
      std::memcpy(&out[i], bytes + (static_cast<size_t>(i) + 1) * kArraySlotStride,
                  sizeof(uint32_t));
    }
    munmap(mem, len);
    return out;
  }
  std::vector<uint32_t> keys(m + 1);
  std::vector<uint32_t> values(m + 1);
  uint32_t done = 0;
  uint32_t out_batch = 0;
  bool first = true;
  LIBBPF_OPTS(bpf_map_batch_opts, batch_opts);
  bool batch_ok = true;
  while (done < m + 1) {
    uint32_t count = m + 1 - done;
    const int err =
        bpf_map_lookup_batch(inner.get(), first ? nullptr : &out_batch, &out_batch,
                             keys.data() + done, values.data() + done, &count, &batch_opts);
    first = false;
    done += count;
    if (err != 0) {
      if (errno == ENOENT) break;
      batch_ok = false;
      break;
    }
  }
  if (!batch_ok || done != m + 1) {
    for (uint32_t i = 0; i <= m; ++i) {
      keys[i] = i;
      if (bpf_map_lookup_elem(inner.get(), &i, &values[i]) != 0) {
        return ErrnoStatus(errno, Cat("reading slot ", i, " of vip id ", vip_id));
      }
    }
  }
  std::vector<uint32_t> out(m);
  for (uint32_t i = 0; i <= m; ++i) {
    if (keys[i] >= 1 && keys[i] <= m) out[keys[i] - 1] = values[i];
  }
  return out;
}

template <typename T>
absl::StatusOr<std::vector<T>> Dataplane::ReadPerCpu(int fd, uint32_t key,
                                                     std::string_view what) const {
  static_assert(sizeof(T) % 8 == 0, "per-CPU values are 8-byte aligned");
  auto ncpus = PossibleCpus();
  if (!ncpus.ok()) return ncpus.status();
  std::vector<T> v(static_cast<size_t>(*ncpus));
  if (bpf_map_lookup_elem(fd, &key, v.data()) != 0) {
    return ErrnoStatus(errno, Cat("reading ", what, "[", key, "]"));
  }
  return v;
}

absl::StatusOr<ballast_backend_stats> Dataplane::BackendStats(uint32_t id) const {
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  auto v = ReadPerCpu<ballast_backend_stats>(map_fd("backend_stats"), id, "backend_stats");
  if (!v.ok()) return v.status();
  return SumU64Fields(*v);
}

absl::StatusOr<ballast_backend_bounces> Dataplane::BackendBounces(uint32_t id) const {
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  auto v = ReadPerCpu<ballast_backend_bounces>(map_fd("backend_bounces"), id, "backend_bounces");
  if (!v.ok()) return v.status();
  return SumU64Fields(*v);
}

absl::StatusOr<ballast_vip_stats> Dataplane::VipStats(uint32_t vip_id) const {
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  auto v = ReadPerCpu<ballast_vip_stats>(map_fd("vip_stats"), vip_id, "vip_stats");
  if (!v.ok()) return v.status();
  return SumU64Fields(*v);
}

absl::StatusOr<std::array<uint64_t, BALLAST_V_MAX>> Dataplane::Verdicts() const {
  std::array<uint64_t, BALLAST_V_MAX> out{};
  const int fd = map_fd("verdicts");
  for (uint32_t k = 0; k < BALLAST_V_MAX; ++k) {
    auto v = ReadPerCpu<uint64_t>(fd, k, "verdicts");
    if (!v.ok()) return v.status();
    for (uint64_t x : *v) out[k] += x;
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<ballast_flow_key, ballast_flow>>> Dataplane::Flows(
    size_t max) const {
  std::vector<std::pair<ballast_flow_key, ballast_flow>> out;
  auto seen = ForEachFlow(
      max, [&out](const ballast_flow_key& k, const ballast_flow& f) { out.emplace_back(k, f); });
  if (!seen.ok()) return seen.status();
  return out;
}

absl::StatusOr<size_t> Dataplane::ForEachFlow(
    size_t max, const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
    size_t batch) const {
  size_t seen = 0;
  for (const char* name : kFlowMaps) {
    auto n = ForEachFlowIn(name, max - seen, fn, batch);
    if (!n.ok()) return n.status();
    seen += *n;
    if (seen >= max) break;
  }
  return seen;
}

absl::StatusOr<uint32_t> Dataplane::MapCapacity(const char* map) const {
  const int fd = map_fd(map);
  if (fd < 0) return absl::NotFoundError(Cat("no map ", map));
  auto info = GetMapInfo(fd);
  if (!info.ok()) return info.status();
  return info->max_entries;
}

absl::StatusOr<size_t> Dataplane::ForEachFlowIn(
    const char* map, size_t max,
    const std::function<void(const ballast_flow_key&, const ballast_flow&)>& fn,
    size_t batch) const {
  const int fd = map_fd(map);
  size_t seen = 0;
  // Batches end at bucket boundaries: a batch needs room for a whole bucket
  // (ENOSPC with nothing read otherwise; the batch then grows).
  size_t chunk = std::clamp<size_t>(batch, 1, size_t{1} << 20);
  std::vector<ballast_flow_key> keys(chunk);
  std::vector<ballast_flow> values(chunk);
  uint32_t token = 0;  // where the next batch starts (a bucket index, for hash maps)
  bool first = true;
  while (seen < max) {
    auto count = static_cast<uint32_t>(chunk);
    const int rc = bpf_map_lookup_batch(fd, first ? nullptr : &token, &token, keys.data(),
                                        values.data(), &count, nullptr);
    const int err = rc != 0 ? errno : 0;
    if (rc != 0 && err == ENOSPC && count == 0 && chunk < (size_t{1} << 20)) {
      chunk *= 2;
      keys.resize(chunk);
      values.resize(chunk);
      continue;
    }
    // ENOENT: this batch reached the end of the map (count holds what it read).
    if (rc != 0 && err != ENOENT) return ErrnoStatus(err, Cat("reading the ", map, " map"));
    for (uint32_t i = 0; i < count && seen < max; ++i, ++seen) fn(keys[i], values[i]);
    if (rc != 0) break;
    first = false;
  }
  return seen;
}

absl::StatusOr<uint64_t> Dataplane::ExpireHandshakes() {
  auto settings = GetSettings();
  if (!settings.ok()) return settings.status();
  const uint32_t idle =
      static_cast<uint32_t>(settings->syn_idle_ns >> BALLAST_HANDSHAKE_TIME_SHIFT);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes =
      (static_cast<size_t>(handshake_sets_) * sizeof(ballast_handshake_set) + page - 1) / page *
      page;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd("handshakes"), 0);
  if (mem == MAP_FAILED) return ErrnoStatus(errno, "mapping handshakes");
  auto* sets = static_cast<ballast_handshake_set*>(mem);
  const auto now = static_cast<uint32_t>(MonotonicNowNs() >> BALLAST_HANDSHAKE_TIME_SHIFT);
  uint64_t cleared = 0;
  for (uint32_t i = 0; i < handshake_sets_; ++i) {
    for (ballast_handshake& h : sets[i].way) {
      // {hash, backend_id, bounces, reserved}: the word the program writes
      // last (handshake_write), and clears to free a slot.
      auto* word = reinterpret_cast<uint64_t*>(&h.hash);
      uint64_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
      if (((seen >> 32) & 0xffff) == BALLAST_INVALID_ID) continue;
      const uint32_t t = __atomic_load_n(&h.syn_time, __ATOMIC_RELAXED);
      if (now - t <= idle) continue;  // live (the age modulo 2^32, as the program takes it)
      if (__atomic_compare_exchange_n(word, &seen, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        ++cleared;
      }
    }
  }
  munmap(mem, bytes);
  return cleared;
}

absl::StatusOr<Dataplane::HandshakeSlots> Dataplane::Handshakes() const {
  auto settings = GetSettings();
  if (!settings.ok()) return settings.status();
  const uint32_t idle =
      static_cast<uint32_t>(settings->syn_idle_ns >> BALLAST_HANDSHAKE_TIME_SHIFT);
  const auto now = static_cast<uint32_t>(MonotonicNowNs() >> BALLAST_HANDSHAKE_TIME_SHIFT);
  const int fd = map_fd("handshakes");
  HandshakeSlots out;
  // In batches (one syscall per 1024 sets instead of one per set: 16 instead
  // of 16,384 for the default map).
  constexpr uint32_t kBatch = 1024;
  const uint32_t total = handshake_sets_;
  std::vector<uint32_t> keys(kBatch);
  std::vector<ballast_handshake_set> sets(kBatch);
  uint32_t next = 0;
  uint32_t done = 0;
  while (done < total) {
    uint32_t count = std::min(kBatch, total - done);
    const int rc = bpf_map_lookup_batch(fd, done == 0 ? nullptr : &next, &next, keys.data(),
                                        sets.data(), &count, nullptr);
    // ENOENT: this batch reached the end of the map (count holds what it read).
    if (rc != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, Cat("reading handshakes[", done, "...]"));
    }
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t live = 0;
      for (const ballast_handshake& h : sets[i].way) {
        // syn_time wraps: the age is taken modulo 2^32, as the program does.
        if (h.backend_id == BALLAST_INVALID_ID || now - h.syn_time > idle) continue;
        out.live.push_back(h);
        ++live;
      }
      if (live == BALLAST_HANDSHAKE_WAYS) ++out.full_sets;
    }
    done += count;
    if (rc != 0 || count == 0) break;
  }
  if (done != total) {
    return absl::InternalError(
        Cat("reading handshakes: the map gave ", done, " sets, not ", total));
  }
  return out;
}

uint64_t Dataplane::MonotonicNowNs() {
  timespec ts = {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ballast::dataplane
