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

static __always_inline struct ballast_vip_meta *vip_lookup(const __u8 *addr, __u8 family,
							   __be16 port, __u8 proto)
{
	struct ballast_vip_key k = {};
	struct ballast_vip_meta *m;

	__builtin_memcpy(k.addr, addr, 16);
	k.family = family;
	k.proto = proto;
	k.port = port;
	m = bpf_map_lookup_elem(&vips, &k);
	if (m || port == 0)
		return m;
	k.port = 0;
	return bpf_map_lookup_elem(&vips, &k);
}

/* True if `addr` is the address of any VIP. */
static __always_inline int is_vip_addr(const __u8 *addr, __u8 family)
{
	struct ballast_vip_key k = {};

	__builtin_memcpy(k.addr, addr, 16);
	k.family = family;
	k.proto = BALLAST_VIP_ADDR_MARKER;
	return bpf_map_lookup_elem(&vips, &k) != 0;
}

/* An owned VIP stops forwarding at its owner's deadline, which the owner
 * keeps strictly inside its lease: a frozen owner stops on its own. */
static __always_inline int vip_fenced(const struct ballast_vip_meta *vip, __u64 now)
{
	return (vip->flags & BALLAST_VIP_F_OWNED) && now >= vip->owner_deadline_ns;
}

#endif /* BALLAST_VIP_H */
