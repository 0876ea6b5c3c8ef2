/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Established second chance, the adoption half: a TCP flow started from the
 * table mid-stream (ECMP moved it here, or its entry expired) lands on the
 * table's pick, which is the backend that holds the connection only while
 * the flow's slot has not changed since the connection began. When the
 * slot's history (maglev_history) names other backends, the flow is marked
 * (BALLAST_FLOW_F_HISTORY) and, for adopted_bounce_ms, its packets carry the
 * probe mark: a backend with no socket for one sends it back, and the
 * router walks the slot's history (bounce.h, bounce_take_est). Everything
 * here is on the adoption path or behind one flag test on the established
 * path.
 */
#ifndef BALLAST_ESC_H
#define BALLAST_ESC_H

#include "common.h"
#include "maps.h"
#include "parse.h"

#define ESC_TIME_MASK 0xffffffu

static __always_inline struct ballast_esc_stats *esc_stats_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&esc_stats, &zero);
}

/* The probe window (handshake_settings.adopted_bounce_ms), 0 = off. */
static __always_inline __u32 esc_window_ms(void)
{
	struct ballast_handshake_settings *hs;
	__u32 zero = 0;

	hs = bpf_map_lookup_elem(&handshake_settings, &zero);
	return hs ? hs->adopted_bounce_ms : 0;
}

static __always_inline __u32 esc_time(__u64 now)
{
	return (__u32)(now >> BALLAST_ESC_TIME_SHIFT) & ESC_TIME_MASK;
}

/* The i-th previous backend of a slot history word (0 = none). */
static __always_inline __u32 esc_hist_at(__u64 hist, int i)
{
	return (__u32)(hist >> (i * BALLAST_HISTORY_ID_BITS)) & BALLAST_HISTORY_ID_MASK;
}

/* Whether a slot history word names a backend other than `id`. */
static __always_inline int esc_history_differs(__u64 hist, __u32 id)
{
	int i;

#pragma unroll
	for (i = 0; i < BALLAST_HISTORY_DEPTH; i++) {
		__u32 h = esc_hist_at(hist, i);

		if (h != 0 && h != id)
			return 1;
	}
	return 0;
}

/* A TCP flow `f` being started from the table on backend `id`, whose slot
 * history is `hist`: counted as adopted, and marked for established second
 * chance when the history names another backend and the window is on (its
 * adoption time in f->reserved, and this packet gets the probe mark).
 * Returns 1 when it is so marked. */
static __always_inline int esc_adopt(struct ballast_flow *f, struct pkt *p, __u32 id, __u64 hist,
				     __u64 now)
{
	struct ballast_esc_stats *es = esc_stats_get();

	if (es)
		es->adopted += 1;
	if (!hist || !esc_history_differs(hist, id) || !esc_window_ms())
		return 0;
	if (es)
		es->adopted_changed += 1;
	f->flags |= BALLAST_FLOW_F_HISTORY;
	f->reserved = esc_time(now) << 8;
	p->outer_id = BALLAST_ENCAP_ID_PROBE;
	return 1;
}

/* Puts flow `f` on probation (probation.h) with this packet as its probe
 * (the probe mark, its time in f->reserved). */
static __always_inline void probation_begin(struct ballast_flow *f, struct pkt *p, __u64 now)
{
	f->flags |= BALLAST_FLOW_F_PROBATION;
	f->reserved = 1 | esc_time(now) << 8;
	p->outer_id = BALLAST_ENCAP_ID_PROBE;
}

/* A packet of flow `f` (BALLAST_FLOW_F_HISTORY) that stays on its backend:
 * within the probe window it carries the probe mark; past it, the flag goes
 * and the flow is on probation. `now` is the coarse clock. */
static __always_inline void esc_mark(struct ballast_flow *f, struct pkt *p, __u64 now)
{
	__u64 window = (__u64)esc_window_ms() * 1000000ull >> BALLAST_ESC_TIME_SHIFT;
	__u32 age = (esc_time(now) - (f->reserved >> 8)) & ESC_TIME_MASK;

	if (window && age <= window) {
		p->outer_id = BALLAST_ENCAP_ID_PROBE;
		return;
	}
	/* The backend held it through the window: on to probation, with
	 * this packet as its probe (probation.h). */
	f->flags &= ~BALLAST_FLOW_F_HISTORY;
	probation_begin(f, p, now);
}

#endif /* BALLAST_ESC_H */
