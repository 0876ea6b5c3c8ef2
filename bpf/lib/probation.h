/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Probation: a connection whose handshake the router saw complete waits in
 * `adopted_flows` until its backend shows it holds it, and only then takes
 * a place in `flows` (BALLAST_FLOW_F_PROBATION in ballast_abi.h).
 *
 * Why: the router never sees a SYN-ACK (the backend answers the client
 * directly), so a SYN followed by an ACK with the SYN's ISN + 1 is all it
 * can check, and a blind spoofer can send those two packets for as many
 * tuples as it likes. Were that enough for `flows`, spoofed pairs would
 * evict real connections from the one class that floods were supposed not
 * to reach. What a spoofer cannot fake is a socket on the backend: it never
 * saw the backend's ISN, so its ACK completes nothing there. The flow's
 * first packet after the handshake carries the probe mark; a backend
 * whose decap program finds no socket for it bounces it (as for
 * established second chance), and the router then ends the probation
 * (bounce.h). A packet BALLAST_PROBATION_WAIT after the probe, with no
 * bounce in between, promotes the flow.
 *
 * A connection shorter than that never leaves `adopted_flows`, which is
 * also what a completed handshake costs: a way of a set, no LRU insert. A
 * flood of spoofed pairs turns over the sets' ways among themselves: a
 * flow it pushes out is adopted again on its next packet, on the table's
 * pick, with the slot's history (established second chance).
 */
#ifndef BALLAST_PROBATION_H
#define BALLAST_PROBATION_H

#include "common.h"
#include "adopted.h"
#include "esc.h"
#include "maps.h"
#include "parse.h"

/* Frees the way of `adopted_flows` that holds the tuple of `p`. */
static __always_inline void adopted_forget(struct pkt *p)
{
	__u32 hash = flow_hash_of(p), idx = hash & adopted_set_mask;
	int i = adopted_way_of(&p->key, hash);
	struct ballast_adopted_set *set;

	if (i < 0)
		return;
	set = bpf_map_lookup_elem(&adopted_flows, &idx);
	if (set)
		set->key[i & (BALLAST_ADOPTED_WAYS - 1)].family = 0;
}

/* A packet of flow `f` (in `adopted_flows`, BALLAST_FLOW_F_PROBATION) that
 * stays on its backend. The first after the handshake carries the probe
 * mark, as does every one until BALLAST_PROBATION_WAIT has passed since it;
 * the next one moves the flow into `flows` (unmarked). `now` is the coarse
 * clock. */
static __always_inline void probation_step(struct ballast_flow *f, struct pkt *p, __u64 now)
{
	__u32 t = esc_time(now);

	if (!(f->reserved & 0xff)) {
		f->reserved = 1 | t << 8;
		p->outer_id = BALLAST_ENCAP_ID_PROBE;
		return;
	}
	if (((t - (f->reserved >> 8)) & ESC_TIME_MASK) < BALLAST_PROBATION_WAIT) {
		p->outer_id = BALLAST_ENCAP_ID_PROBE;
		return;
	}
	f->flags &= ~BALLAST_FLOW_F_PROBATION;
	f->reserved = 0;
	if (bpf_map_update_elem(&flows, &p->key, f, BPF_ANY) == 0)
		adopted_forget(p);
}

#endif /* BALLAST_PROBATION_H */
