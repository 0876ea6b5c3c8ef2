/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Counters. All are per-CPU: a packet only ever touches its own CPU's
 * copy, so plain increments are safe and no atomics are needed. User space
 * sums the copies.
 */
#ifndef BALLAST_STATS_H
#define BALLAST_STATS_H

#include "common.h"
#include "counter.h"
#include "maps.h"

/* Counts the packet under `v` and returns `action`, so a verdict reads as
 * `return verdict(BALLAST_V_PASS_NOT_VIP, XDP_PASS);`. */
static __always_inline int verdict(__u32 v, int action)
{
	return count_verdict(&verdicts, v, action);
}

/* Malformed or unsupported input: passed to the kernel (which drops or
 * handles it and counts it in its own statistics) unless the operator chose
 * BALLAST_POLICY_DROP_MALFORMED. Never forwarded. */
static __always_inline int malformed(__u32 v, const struct ballast_settings *s)
{
	if (s && (s->policy & BALLAST_POLICY_DROP_MALFORMED))
		return verdict(v, XDP_DROP);
	return verdict(v, XDP_PASS);
}

static __always_inline struct ballast_backend_stats *backend_stats_of(__u32 backend_id)
{
	return bpf_map_lookup_elem(&backend_stats, &backend_id);
}

static __always_inline void vip_account(__u32 vip_id, __u32 bytes, int dropped)
{
	struct ballast_vip_stats *vs = bpf_map_lookup_elem(&vip_stats, &vip_id);

	if (!vs)
		return;
	if (dropped) {
		vs->dropped += 1;
		return;
	}
	vs->packets += 1;
	vs->bytes += bytes;
}

/* An owned VIP's packet stopped at its owner deadline: counted as dropped
 * and, of those, as fenced. */
static __always_inline void vip_account_fenced(__u32 vip_id)
{
	struct ballast_vip_stats *vs = bpf_map_lookup_elem(&vip_stats, &vip_id);

	if (!vs)
		return;
	vs->dropped += 1;
	vs->fenced += 1;
}

#endif /* BALLAST_STATS_H */
