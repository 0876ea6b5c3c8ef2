/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Next hop towards a backend: the kernel's routing and neighbour tables via
 * bpf_fib_lookup(), cached per CPU and per backend for settings.fib_ttl_ns
 * so an established flow's packets cost one per-CPU array lookup.
 *
 * The lookup is a forwarding lookup as if the encapsulated packet had
 * arrived on the ingress interface, so the router host must have IP
 * forwarding enabled (a router does). An output lookup
 * (BPF_FIB_LOOKUP_OUTPUT) would take the ifindex as the outgoing interface
 * and find only routes that leave where the packet came in.
 */
#ifndef BALLAST_FIB_H
#define BALLAST_FIB_H

#include "common.h"
#include "maps.h"

enum nexthop_result {
	NEXTHOP_OK = 0,
	NEXTHOP_NO_NEIGH, /* route known, neighbour not resolved yet */
	NEXTHOP_FAIL,	  /* no route, blackhole, unreachable, ... */
};

/* The MTU towards the next hop of a lookup: the route's when the kernel
 * reports one, else the device's (1500 if even that is unknown). */
static __always_inline __u32 nexthop_mtu(struct xdp_md *ctx, const struct bpf_fib_lookup *fib)
{
	__u32 dev_mtu = 0;

	if (fib->mtu_result)
		return fib->mtu_result;
	bpf_check_mtu(ctx, fib->ifindex, &dev_mtu, 0, 0);
	return dev_mtu ? dev_mtu : 1500;
}

/* On NEXTHOP_NO_NEIGH, *unresolved gets the route's device and next hop
 * (struct ballast_neigh_meta without its magic) for tc_neigh, and
 * *unresolved_mtu the MTU towards it (the device's: the kernel reports the
 * route's only for a resolved neighbour), so oversize packets are answered
 * before the neighbour is known too. */
static __always_inline enum nexthop_result nexthop_get(struct xdp_md *ctx, __u32 backend_id,
						       const struct ballast_backend *be,
						       const struct ballast_settings *s, __u64 now,
						       struct ballast_nexthop **out,
						       struct ballast_neigh_meta *unresolved,
						       __u32 *unresolved_mtu)
{
	struct bpf_fib_lookup fib = {};
	struct ballast_nexthop *nh;
	long rc;

	nh = bpf_map_lookup_elem(&nexthops, &backend_id);
	if (!nh)
		return NEXTHOP_FAIL;
	if (nh->expires_ns > now) {
		*out = nh;
		return NEXTHOP_OK;
	}

	fib.ifindex = ctx->ingress_ifindex;
	if (be->family == BALLAST_FAMILY_V4) {
		fib.family = AF_INET;
		__builtin_memcpy(&fib.ipv4_src, s->src4, 4);
		__builtin_memcpy(&fib.ipv4_dst, be->addr, 4);
	} else {
		fib.family = AF_INET6;
		__builtin_memcpy(fib.ipv6_src, s->src6, 16);
		__builtin_memcpy(fib.ipv6_dst, be->addr, 16);
	}
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		/* The kernel filled in the device and the next hop (the
		 * gateway, or the destination on a connected route) before it
		 * looked for the neighbour. */
		__builtin_memset(unresolved, 0, sizeof(*unresolved));
		unresolved->ifindex = fib.ifindex;
		if (fib.family == AF_INET) {
			unresolved->family = BALLAST_FAMILY_V4;
			__builtin_memcpy(unresolved->nh, &fib.ipv4_dst, 4);
		} else {
			unresolved->family = BALLAST_FAMILY_V6;
			__builtin_memcpy(unresolved->nh, fib.ipv6_dst, 16);
		}
		*unresolved_mtu = nexthop_mtu(ctx, &fib);
		return NEXTHOP_NO_NEIGH;
	}
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return NEXTHOP_FAIL;

	__builtin_memcpy(nh->smac, fib.smac, 6);
	__builtin_memcpy(nh->dmac, fib.dmac, 6);
	nh->ifindex = fib.ifindex;
	nh->mtu = nexthop_mtu(ctx, &fib);
	nh->expires_ns = now + s->fib_ttl_ns;
	*out = nh;
	return NEXTHOP_OK;
}

#endif /* BALLAST_FIB_H */
