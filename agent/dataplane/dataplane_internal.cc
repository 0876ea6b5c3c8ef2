#include "agent/dataplane/dataplane_internal.h"

#include <arpa/inet.h>

namespace ballast::dataplane::internal {
namespace {

using base::Cat;

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

}  // namespace

ballast_vip_key ToAbi(const VipKey& k) {
  ballast_vip_key out = {};
  std::memcpy(out.addr, k.addr.bytes().data(), sizeof(out.addr));
  out.port = htons(k.port);
  out.proto = k.proto;
  out.family = k.addr.family();
  return out;
}

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

absl::Status BumpVipRef(int fd, uint32_t vip_id, bool retire) {
  auto r = ReadVipRef(fd, vip_id);
  if (!r.ok()) return r.status();
  if (r->meta.vip_id != vip_id) return absl::OkStatus();
  ++r->gen;
  if (retire) r->meta = ballast_vip_meta{};
  return WriteVipRef(fd, vip_id, *r);
}

}  // namespace ballast::dataplane::internal
