/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A flow's choices beyond the table's pick: where a retransmitted or
 * bounced SYN goes next (maglev_next_choice), and, once the connection
 * completed after bounces, which backends refused it (refusals_confirm).
 * The same on every router: they depend only on the table and the flow's
 * hash.
 */
#ifndef BALLAST_CHOICES_H
#define BALLAST_CHOICES_H

#include "common.h"
#include "maglev.h"
#include "maps.h"
#include "parse.h"

/* The flow's second and third choices: the first two ACTIVE backends,
 * over choice seeds 1..BALLAST_CHOICE_SEEDS of the VIP's table, other than
 * `first` (the table's pick), the same on every router; BALLAST_INVALID_ID
 * where there is none. */
static __always_inline void maglev_choices(__u32 vip_id, struct pkt *p, __u32 first,
					   __u32 *second, __u32 *third)
{
	__u32 idx, m = 0, *id, seed;
	void *table = maglev_table_of(vip_id, &m);
	struct ballast_backend *be;

	*second = *third = BALLAST_INVALID_ID;
	if (!table)
		return;
#pragma unroll
	for (seed = 1; seed <= BALLAST_CHOICE_SEEDS; seed++) {
		idx = ballast_choice_hash(flow_hash_of(p), seed) % m + 1;
		id = bpf_map_lookup_elem(table, &idx);
		if (!id || *id == BALLAST_INVALID_ID || *id == first || *id == *second)
			continue;
		be = bpf_map_lookup_elem(&backends, id);
		if (!be || be->state != BALLAST_BACKEND_ACTIVE) /* no new connections when draining */
			continue;
		if (*second == BALLAST_INVALID_ID) {
			*second = *id;
			continue;
		}
		*third = *id;
		break;
	}
}

/* Where a retransmitted SYN goes when its last SYN went to `last` and got
 * no answer, `first` being the table's pick now (maglev_choices: the
 * flow's second and third choices). After `first`, the second; after the
 * second, the third; after anything else (the third, or a backend the
 * table no longer picks), `first`. So the choices go first, second,
 * third, first..., the same on every router; `first` when there is no
 * other. */
static __always_inline __u32 maglev_next_choice(__u32 vip_id, struct pkt *p, __u32 first,
						__u32 last)
{
	__u32 second, third;

	maglev_choices(vip_id, p, first, &second, &third);
	if (last == first)
		return second != BALLAST_INVALID_ID ? second : first;
	if (last == second)
		return third != BALLAST_INVALID_ID ? third : first;
	return first;
}

/* The choice maglev_next_choice() went to `cur` from, or
 * BALLAST_INVALID_ID (`cur` is none of the three: the table changed). */
static __always_inline __u32 choice_before(__u32 cur, __u32 first, __u32 second, __u32 third)
{
	if (cur == BALLAST_INVALID_ID)
		return cur;
	if (cur == second)
		return first;
	if (cur == third)
		return second;
	if (cur == first)
		return third != BALLAST_INVALID_ID ? third : second;
	return BALLAST_INVALID_ID;
}

/* A handshake that `bounces` second-chance bounces took completed on
 * backend `id`: the backends that bounced it, the ones before `id` in the
 * order of maglev_next_choice, had no listener for a connection another
 * backend of the VIP took, and only now is that counted against them
 * (backend_bounces.refused). A port no backend serves (a SYN storm to a
 * closed port of a port-0 VIP) is refused by every backend and completes
 * nowhere: no evidence against any (it was, before 2026-12-07). */
static __always_inline void refusals_confirm(__u32 vip_id, struct pkt *p, __u32 id, __u32 bounces)
{
	__u32 first = maglev_pick(vip_id, p), second, third, one, two;
	struct ballast_backend_bounces *bb;

	if (first == BALLAST_INVALID_ID)
		return;
	maglev_choices(vip_id, p, first, &second, &third);
	one = choice_before(id, first, second, third);
	two = bounces >= 2 ? choice_before(one, first, second, third) : BALLAST_INVALID_ID;
	if (one != BALLAST_INVALID_ID && one != id) {
		bb = bpf_map_lookup_elem(&backend_bounces, &one);
		if (bb)
			bb->refused += 1;
	}
	if (two != BALLAST_INVALID_ID && two != id && two != one) {
		bb = bpf_map_lookup_elem(&backend_bounces, &two);
		if (bb)
			bb->refused += 1;
	}
}

#endif /* BALLAST_CHOICES_H */
