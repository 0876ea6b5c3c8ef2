/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * VIP lookup and the ownership fence.
 *
 * A VIP is (address, port, protocol); port 0 matches every port. The agent
 * also writes one marker entry per VIP address with port 0 and protocol 0
 * (BALLAST_VIP_ADDR_MARKER), so packets that carry no usable port (fragments,
 * ICMP, truncated L4) can be told apart: addressed to a VIP address, or not.
 */
#ifndef BALLAST_VIP_H
#define BALLAST_VIP_H

#include "common.h"
#include "maps.h"
#include "ballast_flow_hash.h"
#include "clock.h"

/* Copies an address held in a flow key (4-byte aligned) word by word. */
static __always_inline void addr_copy(__u8 *dst, const __u8 *src)
{
	__u32 *d = (__u32 *)dst;
	const __u32 *s = (const __u32 *)src;

	d[0] = s[0];
	d[1] = s[1];
	d[2] = s[2];
	d[3] = s[3];
}

/* False when `addr` is certainly not a VIP address: one array read. */
static __always_inline int vip_filter_may_match(const __u8 *addr, __u8 family)
{
	const __u32 *w = (const __u32 *)addr;
	__u32 bit = ballast_vip_filter_bit(w[0], w[1], w[2], w[3], family);
	__u32 word = bit / 64;
	__u64 *bits = bpf_map_lookup_elem(&vip_filter, &word);

	return bits && (*bits & (1ull << (bit % 64)));
}

/* `addr` must be 4-byte aligned (a field of struct ballast_flow_key). */
static __always_inline struct ballast_vip_meta *vip_lookup(const __u8 *addr, __u8 family,
							   __be16 port, __u8 proto)
{
	struct ballast_vip_key k;
	struct ballast_vip_meta *m;

	addr_copy(k.addr, addr);
	k.family = family;
	k.proto = proto;
	k.port = port;
	m = bpf_map_lookup_elem(&vips, &k);
	if (m || port == 0)
		return m;
	k.port = 0;
	return bpf_map_lookup_elem(&vips, &k);
}

/* The VIP a known flow was resolved under, from vip_refs instead of the
 * `vips` hash (see struct ballast_vip_ref), or NULL when the shortcut does
 * not hold and the caller must look the VIP up. */
static __always_inline const struct ballast_vip_meta *vip_of_flow(const struct ballast_flow *f,
								  const struct ballast_flow_key *k)
{
	const __u32 *a, *b;
	struct ballast_vip_ref *r;
	__u32 id = f->vip_id;

	if (id == BALLAST_INVALID_ID)
		return 0;
	r = bpf_map_lookup_elem(&vip_refs, &id);
	if (!r || r->meta.vip_id != id || r->gen != f->vip_gen)
		return 0;
	a = (const __u32 *)r->key.addr;
	b = (const __u32 *)k->dst;
	if ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]))
		return 0;
	if (r->key.family != k->family || r->key.proto != k->proto ||
	    (r->key.port != 0 && r->key.port != k->dport))
		return 0;
	return &r->meta;
}

/* True if `addr` is the address of any VIP. */
static __always_inline int is_vip_addr(const __u8 *addr, __u8 family)
{
	struct ballast_vip_key k;

	if (!vip_filter_may_match(addr, family))
		return 0;
	addr_copy(k.addr, addr);
	k.port = 0;
	k.family = family;
	k.proto = BALLAST_VIP_ADDR_MARKER;
	return bpf_map_lookup_elem(&vips, &k) != 0;
}

/* The ownership fence. An owned VIP (BALLAST_VIP_F_OWNED) stops forwarding
 * at its owner's deadline, which the owner keeps strictly inside its lease:
 * a frozen owner stops on its own, before another node can hold the lease.
 *
 * The comparison must never let a packet through at or after the deadline,
 * so it reads the precise clock (bpf_ktime_get_ns(), the clock the deadline
 * is written in). The coarse clock is up to a tick behind (4 ms at HZ=250,
 * more while timekeeping updates are late, e.g. on a nohz_full CPU), so
 * comparing it would forward past the deadline. Only owned VIPs pay for the
 * read; *now gets it (0 for a VIP that is not owned) so the caller can use
 * it as its `now` instead of reading a clock again.
 *
 * Returns 1 when the VIP's packets must stop. */
static __always_inline int vip_fenced(const struct ballast_vip_meta *vip, __u64 *now)
{
	__u64 t;

	*now = 0;
	if (!(vip->flags & BALLAST_VIP_F_OWNED))
		return 0;
	t = clock_precise();
	*now = t;
	return t >= vip->owner_deadline_ns;
}

#endif /* BALLAST_VIP_H */
