// Dataplane: loading the program, its maps and their pins, attaching and
// tearing down (dataplane.h). Map programming is in dataplane_maps.cc,
// counters and the connection table in dataplane_counters.cc.
#include "agent/dataplane/dataplane.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <net/if.h>
#include <sys/mman.h>
#include <sys/random.h>
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
#include "agent/dataplane/adopted_carry.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/dataplane_internal.h"
#include "xdp_lb.skel.h"

namespace ballast::dataplane {

using base::Cat;
using namespace internal;  // NOLINT: this library's own helpers

namespace {

constexpr char kProgPinName[] = "prog_xdp_lb";

// Whether this kernel lets XDP programs call bpf_xdp_adjust_meta: loads
// "r0 = adjust_meta(ctx, 0); r0 = XDP_PASS; exit". (libbpf's helper probe
// takes the verifier's "program of this type cannot use helper" for a yes.)
bool XdpCanWriteMetadata() {
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_JMP | BPF_CALL,
       .dst_reg = 0,
       .src_reg = 0,
       .off = 0,
       .imm = BPF_FUNC_xdp_adjust_meta},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K,
       .dst_reg = BPF_REG_0,
       .src_reg = 0,
       .off = 0,
       .imm = XDP_PASS},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  const int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "ballast_probe", "Dual BSD/GPL", insns,
                               sizeof(insns) / sizeof(insns[0]), nullptr);
  if (fd < 0) return false;
  close(fd);
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

}  // namespace

// The bounce tags' key (ballast_abi.h, struct ballast_bounce_key): drawn
// once, when the map is new (all zero), and kept in the pins from then on,
// so that bounces of packets sent before a restart still match.
absl::Status EnsureBounceKey(int fd) {
  const uint32_t zero = 0;
  ballast_bounce_key key = {};
  if (bpf_map_lookup_elem(fd, &zero, &key) != 0) {
    return ErrnoStatus(errno, "reading the bounce_key map");
  }
  if ((key.k[0] | key.k[1]) != 0) return absl::OkStatus();
  if (getrandom(&key, sizeof(key), 0) != static_cast<ssize_t>(sizeof(key))) {
    return ErrnoStatus(errno, "drawing the bounce key (getrandom)");
  }
  if (bpf_map_update_elem(fd, &zero, &key, BPF_ANY) != 0) {
    return ErrnoStatus(errno, "writing the bounce_key map");
  }
  return absl::OkStatus();
}

uint32_t AdoptedSetsFor(uint32_t flow_capacity) {
  const uint64_t sets =
      std::bit_ceil((uint64_t{flow_capacity} + kFlowsPerAdoptedSet - 1) / kFlowsPerAdoptedSet);
  return static_cast<uint32_t>(std::max<uint64_t>(16, sets));
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
  // configured capacity, so that no class can evict another's flows. The
  // adopted flows' sets are indexed with the mask the program is loaded
  // with (a constant to the verifier).
  for (bpf_map* flows : {dp->skel_->maps.flows, dp->skel_->maps.flows_udp}) {
    if (int err = bpf_map__set_max_entries(flows, options.flow_capacity); err != 0) {
      return ErrnoStatus(err, Cat("setting the capacity of ", bpf_map__name(flows)));
    }
  }
  dp->adopted_sets_ = AdoptedSetsFor(options.flow_capacity);
  if (int err = bpf_map__set_max_entries(dp->skel_->maps.adopted_flows, dp->adopted_sets_);
      err != 0) {
    return ErrnoStatus(err, "setting the capacity of adopted_flows");
  }
  dp->skel_->rodata->adopted_set_mask = dp->adopted_sets_ - 1;
  // The handshake slots grow with the flow table; the program indexes them
  // with the mask it is loaded with (a constant to the verifier).
  dp->handshake_sets_ = options.handshake_sets != 0 ? options.handshake_sets
                                                    : HandshakeSetsFor(options.flow_capacity);
  if (int err = bpf_map__set_max_entries(dp->skel_->maps.handshakes, dp->handshake_sets_);
      err != 0) {
    return ErrnoStatus(err, "setting the handshake table's size");
  }
  dp->skel_->rodata->handshake_set_mask = dp->handshake_sets_ - 1;
  // The neighbour hand-off goes in XDP metadata where XDP programs may
  // write it; some kernels refuse bpf_xdp_adjust_meta to them (the program
  // would not load), and there it goes through `neigh_handoff` instead.
  dp->skel_->rodata->xdp_meta_ok = XdpCanWriteMetadata() ? 1 : 0;
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
  if (absl::Status s = EnsureBounceKey(dp->map_fd("bounce_key")); !s.ok()) return s;
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
    // Builds before adopted_flows kept adopted flows in an LRU hash of this
    // name (adopted_carry.h). The program that uses it keeps it until
    // Attach() replaces that program: its flows are carried into the sets
    // now, while no program uses them, and again after each Attach() for
    // the flows it adopted in between.
    const std::string old_adopted = Cat(dp->pin_dir_, "/flows_adopted");
    if (PathExists(old_adopted)) {
      dp->old_adopted_fd_ = bpf_obj_get(old_adopted.c_str());
      if (dp->old_adopted_fd_ < 0) {
        fprintf(stderr, "warning: opening %s: %s; its flows are adopted again\n",
                old_adopted.c_str(), strerror(errno));
      } else {
        dp->CarryOldAdoptedFlows(/*exclusive=*/true);
      }
      if (unlink(old_adopted.c_str()) != 0) {
        return ErrnoStatus(errno, Cat("unpinning ", old_adopted));
      }
    }
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
    if (info.ok() && (m == spec->maps.flows || m == spec->maps.flows_udp)) {
      bpf_map__set_max_entries(m, info->max_entries);
    }
    if (info.ok() && m == spec->maps.adopted_flows) {
      bpf_map__set_max_entries(m, info->max_entries);
      dp->adopted_sets_ = info->max_entries;
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
  if (old_adopted_fd_ >= 0) close(old_adopted_fd_);
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
    auto h = NeighHandoff::Open(map_fd("neigh_handoff"));
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
    CarryOldAdoptedFlows(/*exclusive=*/false);
    return absl::OkStatus();
  }
  auto used = AttachXdp(prog_fd_, *ifindex, ifname, mode);
  if (!used.ok()) return used.status();
  if (!pin_dir_.empty() && stale_fd_ >= 0) {
    if (absl::Status s = PinAtomically(prog_fd_, prog_pin); !s.ok()) return s;
  }
  attached_[std::string(ifname)] = *used;
  CarryOldAdoptedFlows(/*exclusive=*/false);
  return absl::OkStatus();
}

void Dataplane::CarryOldAdoptedFlows(bool exclusive) {
  if (old_adopted_fd_ < 0) return;
  auto seed = CurrentHashSeed();
  auto n = seed.ok() ? CarryAdoptedFlows(old_adopted_fd_, map_fd(kAdoptedFlowsMap), adopted_sets_,
                                         *seed, exclusive)
                     : absl::StatusOr<CarryCount>(seed.status());
  if (!n.ok()) {
    fprintf(stderr, "warning: carrying flows_adopted into %s: %s; those flows are adopted again\n",
            kAdoptedFlowsMap, std::string(n.status().message()).c_str());
    return;
  }
  if (n->carried == 0 && n->full == 0) return;
  fprintf(stderr,
          "note: carried %zu of the %zu flows of an older build's flows_adopted into %s (%zu "
          "already there, %zu found their set full and will be adopted again)\n",
          n->carried, n->read, kAdoptedFlowsMap, n->present, n->full);
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

}  // namespace ballast::dataplane
