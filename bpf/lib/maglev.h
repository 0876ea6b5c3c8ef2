/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Maglev lookup: slot = flow hash mod M in the VIP's current table. The
 * table is one inner map reached through maglev_tables[vip_id]; entry 0 of
 * the inner map holds M, so size and contents always come from the same
 * table even while the agent swaps in a new one.
 */
#ifndef BALLAST_MAGLEV_H
#define BALLAST_MAGLEV_H

#include "common.h"
#include "maps.h"
#include "ballast_flow_hash.h"
#include "parse.h"

/* The cluster's flow hash seed (`flow_hash_seed`), or NULL. */
static __always_inline struct ballast_flow_hash_seed *flow_seed(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&flow_hash_seed, &zero);
}

/* ballast_flow_hash() under the cluster's seed, as a global function: the
 * verifier checks its hundred-odd instructions once, not again on every
 * path of the program that reaches a new flow (they were a fifth of
 * xdp_lb's processed instructions). Not on the established path, which
 * needs no flow hash. */
__noinline int flow_hash_global(const struct ballast_flow_key *k)
{
	struct ballast_flow_hash_seed *s = flow_seed();
	struct ballast_hash_seed seed = BALLAST_PUBLIC_SEED_INIT;

	if (!k)
		return 0;
	if (s && (s->flags & BALLAST_SEED_F_SET))
		seed = s->current;
	return (int)ballast_flow_hash(k, &seed);
}

static __always_inline __u32 flow_hash_of(struct pkt *p)
{
	if (!p->has_hash) {
		p->hash = (__u32)flow_hash_global(&p->key);
		p->has_hash = 1;
	}
	return p->hash;
}

/* The VIP's current table and its size M (entry 0), or NULL when it has
 * none or it is empty. */
static __always_inline void *maglev_table_of(__u32 vip_id, __u32 *size)
{
	__u32 zero = 0, *m;
	void *table;

	table = bpf_map_lookup_elem(&maglev_tables, &vip_id);
	if (!table)
		return 0;
	m = bpf_map_lookup_elem(table, &zero);
	if (!m || *m == 0)
		return 0;
	*size = *m;
	return table;
}

/* The backend_id the VIP's table gives this flow, with the slot (*idx,
 * 1..M) and the table's size (*m); BALLAST_INVALID_ID when the VIP has no
 * table or the slot is empty. */
static __always_inline __u32 maglev_slot(__u32 vip_id, struct pkt *p, __u32 *idx, __u32 *m)
{
	void *table = maglev_table_of(vip_id, m);
	__u32 *id;

	if (!table)
		return BALLAST_INVALID_ID;
	*idx = flow_hash_of(p) % *m + 1;
	id = bpf_map_lookup_elem(table, idx);
	return id ? *id : BALLAST_INVALID_ID;
}

/* Returns the backend_id the VIP's table gives this flow, or
 * BALLAST_INVALID_ID when the VIP has no table or the slot is empty. */
static __always_inline __u32 maglev_pick(__u32 vip_id, struct pkt *p)
{
	__u32 idx = 0, m = 0;

	return maglev_slot(vip_id, p, &idx, &m);
}

/* The history word of slot `idx` (1..m) of the VIP's table of size `m`
 * (maglev_history): its previous backends, or 0 when it has none or its
 * history was built for a table of another size. */
static __always_inline __u64 maglev_history_at(__u32 vip_id, __u32 idx, __u32 m)
{
	void *hist = bpf_map_lookup_elem(&maglev_history, &vip_id);
	__u32 zero = 0;
	__u64 *e;

	if (!hist)
		return 0;
	e = bpf_map_lookup_elem(hist, &zero);
	if (!e || *e != m)
		return 0;
	e = bpf_map_lookup_elem(hist, &idx);
	return e ? *e : 0;
}

/* The previous backends of flow `k`, which the VIP's table of size `m`
 * gives backend `id` from slot `idx`: the slot's history word, led by the
 * flow's pick under the seed before the last rotation (ballast_abi.h,
 * BALLAST_SEED_F_PREVIOUS) when that pick is another backend. The
 * history's oldest entry makes room for it. Global: checked once by the
 * verifier, not at each adoption site. */
__noinline __u64 maglev_history_of(const struct ballast_flow_key *k, __u32 vip_id, __u32 idx,
				   __u32 m, __u32 id)
{
	struct ballast_flow_hash_seed *s = flow_seed();
	__u64 hist = maglev_history_at(vip_id, idx, m);
	__u32 old_idx, *old, i;
	void *table;

	if (!k || !s || !(s->flags & BALLAST_SEED_F_PREVIOUS) || m == 0)
		return hist;
	table = bpf_map_lookup_elem(&maglev_tables, &vip_id);
	if (!table)
		return hist;
	old_idx = ballast_flow_hash(k, &s->previous) % m + 1;
	old = bpf_map_lookup_elem(table, &old_idx);
	if (!old || *old == id || *old == BALLAST_INVALID_ID || *old > BALLAST_HISTORY_ID_MASK)
		return hist;
#pragma unroll
	for (i = 0; i < BALLAST_HISTORY_DEPTH; i++)
		if (((hist >> (i * BALLAST_HISTORY_ID_BITS)) & BALLAST_HISTORY_ID_MASK) == *old)
			return hist;
	hist = hist << BALLAST_HISTORY_ID_BITS | *old;
	return hist & ((1ull << (BALLAST_HISTORY_DEPTH * BALLAST_HISTORY_ID_BITS)) - 1);
}

/* maglev_pick(), and the flow's history word in *hist (0 = none:
 * maglev_history_of). */
static __always_inline __u32 maglev_pick_history(__u32 vip_id, struct pkt *p, __u64 *hist)
{
	__u32 idx = 0, m = 0, id = maglev_slot(vip_id, p, &idx, &m);

	*hist = id == BALLAST_INVALID_ID ? 0 : maglev_history_of(&p->key, vip_id, idx, m, id);
	return id;
}

#endif /* BALLAST_MAGLEV_H */
