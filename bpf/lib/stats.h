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

/* The latency histogram bucket of `ns` (struct ballast_backend_latency):
 * i for ns below 2^(BALLAST_LATENCY_SHIFT0 + i), the last for the rest. A
 * binary search for the highest set bit: five compares, no loop. */
static __always_inline __u32 latency_bucket(__u64 ns)
{
	__u64 v = ns >> BALLAST_LATENCY_SHIFT0;
	__u32 i = 0;

	if (v >= (1ULL << 16)) {
		v >>= 16;
		i += 16;
	}
	if (v >= (1ULL << 8)) {
		v >>= 8;
		i += 8;
	}
	if (v >= (1ULL << 4)) {
		v >>= 4;
		i += 4;
	}
	if (v >= (1ULL << 2)) {
		v >>= 2;
		i += 2;
	}
	if (v >= (1ULL << 1)) {
		v >>= 1;
		i += 1;
	}
	i += (__u32)v; /* v is 0 (ns below the first bound) or 1 here */
	return i < BALLAST_LATENCY_BUCKETS - 1 ? i : BALLAST_LATENCY_BUCKETS - 1;
}

/* Counts a handshake (first_response = 0) or first-response sample of
 * `ns` in the backend's histogram. A global function: latency_bucket()'s
 * five branches would otherwise multiply the verifier's paths at each of
 * the four places that take a sample (they were a quarter of xdp_lb's
 * processed instructions); once per connection, the call costs nothing
 * measurable. */
__noinline int latency_sample(__u32 backend_id, int first_response, __u64 ns)
{
	struct ballast_backend_latency *l = bpf_map_lookup_elem(&backend_latency, &backend_id);
	__u32 b = latency_bucket(ns);

	if (!l)
		return 0;
	if (first_response)
		l->first_response[b & (BALLAST_LATENCY_BUCKETS - 1)] += 1;
	else
		l->handshake[b & (BALLAST_LATENCY_BUCKETS - 1)] += 1;
	return 0;
}

#endif /* BALLAST_STATS_H */
