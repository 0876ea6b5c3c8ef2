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

/* ballast_flow_hash() as a global function: the verifier checks its
 * hundred-odd instructions once, not again on every path of the program
 * that reaches a new flow (they were a fifth of xdp_lb's processed
 * instructions). Not on the established path, which needs no flow hash. */
__noinline int flow_hash_global(const struct ballast_flow_key *k)
{
	if (!k)
		return 0;
	return (int)ballast_flow_hash(k);
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
 * history was built for a table of another size. Global: checked once by
 * the verifier, not at each adoption site. */
__noinline __u64 maglev_history_at(__u32 vip_id, __u32 idx, __u32 m)
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

/* maglev_pick(), and the slot's history word in *hist (0 = none). */
static __always_inline __u32 maglev_pick_history(__u32 vip_id, struct pkt *p, __u64 *hist)
{
	__u32 idx = 0, m = 0, id = maglev_slot(vip_id, p, &idx, &m);

	*hist = id == BALLAST_INVALID_ID ? 0 : maglev_history_at(vip_id, idx, m);
	return id;
}

#endif /* BALLAST_MAGLEV_H */
