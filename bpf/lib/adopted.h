/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The adopted flows' table (`adopted_flows`, struct ballast_adopted_set): TCP
 * flows adopted mid-stream, in 4-way sets chosen by flow hash.
 *
 * Why not an LRU hash like `flows`: this class is what a new 5-tuple on
 * every packet fills (a flood of spoofed ACKs, or every connection of a
 * router that ECMP just moved here), and there the LRU's insert, eviction
 * and locks were most of the packet. A set is found with one array lookup,
 * a miss reads only its four keys, and an insert writes one way of it, with
 * no lock. What that gives up: eviction is by set, not over the whole map
 * (a set's oldest flow goes even while other sets have room), and a flow is
 * found by its hash, so `bpftool map lookup` by 5-tuple does not find it
 * (`lbdp flows` and the agent read the sets).
 *
 * Races: ways are written in place without locks, like the LRU's entries
 * (whose nodes the kernel also reuses at once). A packet read on one CPU
 * while another CPU rewrites its flow's way can see that way half written:
 * the flow being displaced may send that one packet by the new flow's entry.
 * A way's key is made unmatchable (family 0) first and its last word
 * (ports, protocol, family) written last, in one store, so no tuple can
 * match a way before its flow and the rest of its key are in place.
 *
 * The two functions that walk a set are global: the verifier checks each
 * once, not at each of the several places the connection table inlines them
 * (docs/dataplane.md, "Requirements on the router host": its budget).
 */
#ifndef BALLAST_ADOPTED_H
#define BALLAST_ADOPTED_H

#include "common.h"
#include "maps.h"
#include "maglev.h"
#include "parse.h"

static __always_inline int adopted_key_eq(const struct ballast_flow_key *a,
					  const struct ballast_flow_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	/* ports, protocol and family first: they differ most often */
	if (x[4] != y[4] || x[0] != y[0])
		return 0;
	return ((x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) == 0;
}

/* The way of set hash & adopted_set_mask that holds `key`, or -1. */
__noinline int adopted_way_of(struct ballast_flow_key *key, __u32 hash)
{
	__u32 idx = hash & adopted_set_mask;
	struct ballast_adopted_set *set = bpf_map_lookup_elem(&adopted_flows, &idx);
	int i, hit = -1;

	if (!set || !key)
		return -1;
#pragma unroll
	for (i = 0; i < BALLAST_ADOPTED_WAYS; i++)
		if (adopted_key_eq(&set->key[i], key))
			hit = i;
	return hit;
}

/* Writes flow `f` of `key` into set hash & adopted_set_mask: into the way
 * that holds `key`, else a free one, else the one seen longest ago, except
 * that a flow on probation whose probe went out (probation.h) goes last,
 * the most recently probed first. The smallest rank wins: 0 for the key's
 * own way, 1 for a free one, else its last_seen_ns + 2, or for such a flow
 * 2^62 minus its probe's time. Why: in a set that more flows share than it
 * has ways, evicting the oldest makes them push each other out in turn,
 * each taken in again (and probed again) on its next packet, so none would
 * ever finish its probation; this way the ones probed first stay until
 * their next packet promotes them, and a flood of new tuples turns over
 * among itself. */
__noinline int adopted_store(struct ballast_flow_key *key, struct ballast_flow *f, __u32 hash)
{
	__u32 idx = hash & adopted_set_mask, v = 0;
	struct ballast_adopted_set *set = bpf_map_lookup_elem(&adopted_flows, &idx);
	__u64 oldest = ~0ull, seen, *dst;
	const __u64 *src;
	int i;

	if (!set || !key || !f)
		return -1;
#pragma unroll
	for (i = 0; i < BALLAST_ADOPTED_WAYS; i++) {
		if (adopted_key_eq(&set->key[i], key))
			seen = 0;
		else if (set->key[i].family == 0)
			seen = 1;
		else if ((set->flow[i].flags & BALLAST_FLOW_F_PROBATION) &&
			 (set->flow[i].reserved & 0xff))
			seen = (1ull << 62) - (set->flow[i].reserved >> 8);
		else
			seen = set->flow[i].last_seen_ns + 2;
		if (seen < oldest) {
			oldest = seen;
			v = i;
		}
	}
	v &= BALLAST_ADOPTED_WAYS - 1;
	src = (const __u64 *)key;
	dst = (__u64 *)&set->key[v];
	set->key[v].family = 0; /* no tuple matches the way while it is written */
	barrier();
	set->flow[v] = *f;
	dst[0] = src[0];
	dst[1] = src[1];
	dst[2] = src[2];
	dst[3] = src[3];
	barrier();
	dst[4] = src[4]; /* ports, protocol and family: one store, last */
	return 0;
}

/* The packet's adopted flow, or NULL. A global function can return only a
 * scalar, so the set is looked up again here for the way's address (an
 * inlined array lookup). */
static __always_inline struct ballast_flow *adopted_lookup(struct pkt *p)
{
	__u32 hash = flow_hash_of(p), idx = hash & adopted_set_mask;
	int i = adopted_way_of(&p->key, hash);
	struct ballast_adopted_set *set;

	if (i < 0)
		return 0;
	set = bpf_map_lookup_elem(&adopted_flows, &idx);
	return set ? &set->flow[i & (BALLAST_ADOPTED_WAYS - 1)] : 0;
}

#endif /* BALLAST_ADOPTED_H */
