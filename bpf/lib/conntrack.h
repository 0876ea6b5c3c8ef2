/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The connection table: which backend a client→VIP flow uses, and where the
 * flow is in the TCP handshake.
 *
 * Rules (DESIGN.md, "The path of a packet"):
 *  - A flow whose handshake is complete (ESTABLISHED, CLOSING, or any UDP
 *    flow) stays on its backend until it expires (idle timeout; linger after
 *    FIN/RST) or its backend stops being usable (EVICTED, UNUSED, or
 *    DRAINING past its deadline); then its next packet is re-steered.
 *  - A flow whose handshake is not complete (SYN_SENT) follows the current
 *    table: a repeated SYN goes to the backend the table picks now, and counts
 *    as a SYN retransmission against the backend that did not answer. The
 *    client's ACK that completes the handshake stays with the backend that
 *    answered the SYN.
 *  - A TCP packet other than a SYN with no flow (flow expired or evicted from
 *    the LRU, or moved here from another router by ECMP) picks from the table
 *    and is adopted as ESTABLISHED. Every router computes the same table and
 *    hash, so the adopted flow lands on the backend it already had.
 *
 * Passive signals recorded here (per backend, per CPU): new flows, SYN
 * retransmissions, client RSTs, handshake time (first SYN on this backend →
 * the client's completing ACK) and first-response time (the client's first
 * payload → the first client ACK that acknowledges bytes sent after it).
 *
 * Entries are updated in place without locks. Two CPUs racing on one flow
 * can only lose a timing sample or a touch of last_seen_ns; the backend_id
 * is always a whole value written by one of them.
 */
#ifndef BALLAST_CONNTRACK_H
#define BALLAST_CONNTRACK_H

#include "common.h"
#include "clock.h"
#include "maps.h"
#include "maglev.h"
#include "parse.h"
#include "stats.h"

/* The drain deadline is compared with the precise clock (read only for a
 * draining backend that has one), so no flow outlives it by a tick. */
static __always_inline int backend_usable(const struct ballast_backend *be)
{
	if (!be)
		return 0;
	if (likely(be->state == BALLAST_BACKEND_ACTIVE))
		return 1;
	if (be->state == BALLAST_BACKEND_DRAINING)
		return be->drain_deadline_ns == 0 || clock_precise() < be->drain_deadline_ns;
	return 0; /* EVICTED, UNUSED */
}

static __always_inline int flow_expired(const struct ballast_flow *f,
					const struct ballast_settings *s, __u64 now)
{
	__u64 idle = now > f->last_seen_ns ? now - f->last_seen_ns : 0;

	switch (f->state) {
	case BALLAST_FLOW_SYN_SENT:
		return idle > s->syn_idle_ns;
	case BALLAST_FLOW_ESTABLISHED:
		return idle > s->tcp_idle_ns;
	case BALLAST_FLOW_CLOSING:
		return idle > s->linger_ns;
	case BALLAST_FLOW_UDP:
		return idle > s->udp_idle_ns;
	}
	return 1;
}

static __always_inline int is_pure_syn(const struct pkt *p)
{
	return (p->tcp_flags & (TCP_SYN | TCP_ACK | TCP_RST | TCP_FIN)) == TCP_SYN;
}

/* Records in a flow the VIP it was resolved under and that VIP's current
 * vip_refs generation, so its next packets can skip the `vips` lookup. */
static __always_inline void flow_note_vip(struct ballast_flow *f, __u32 vip_id)
{
	struct ballast_vip_ref *r = bpf_map_lookup_elem(&vip_refs, &vip_id);

	if (r && r->meta.vip_id == vip_id) {
		f->vip_id = vip_id;
		f->vip_gen = r->gen;
	} else {
		f->vip_id = BALLAST_INVALID_ID;
	}
}

/* Creates (or replaces) the flow with a fresh pick from the table.
 * Returns the backend_id, or BALLAST_INVALID_ID when the table has none.
 * start_ns (the handshake's start) needs the precise clock: `now` when
 * `now_precise`, else read here; last_seen_ns takes `now` either way. */
static __always_inline __u32 flow_create(const struct ballast_vip_meta *vip, struct pkt *p,
					 __u64 now, int now_precise)
{
	struct ballast_flow f = {};
	struct ballast_backend_stats *bs;
	__u32 id = maglev_pick(vip->vip_id, p);

	if (id == BALLAST_INVALID_ID)
		return id;
	f.backend_id = id;
	flow_note_vip(&f, vip->vip_id);
	f.start_ns = now_precise ? now : clock_precise();
	f.last_seen_ns = now;
	if (p->key.proto == IPPROTO_UDP) {
		f.state = BALLAST_FLOW_UDP;
	} else if (is_pure_syn(p)) {
		f.state = BALLAST_FLOW_SYN_SENT;
	} else if (p->tcp_flags & (TCP_RST | TCP_FIN)) {
		f.state = BALLAST_FLOW_CLOSING;
	} else {
		f.state = BALLAST_FLOW_ESTABLISHED;
	}
	bpf_map_update_elem(&flows, &p->key, &f, BPF_ANY);

	if (f.state == BALLAST_FLOW_SYN_SENT || f.state == BALLAST_FLOW_UDP) {
		bs = backend_stats_of(id);
		if (bs)
			bs->new_flows += 1;
	}
	return id;
}

/* TCP state transitions and passive signals for a packet of an existing
 * flow that stays on f->backend_id. `now` is the coarse clock; the timing
 * samples read the precise one, once per flow each. */
static __always_inline void flow_tcp_update(struct ballast_flow *f, const struct pkt *p, __u64 now)
{
	struct ballast_backend_stats *bs = backend_stats_of(f->backend_id);
	__u8 flags = p->tcp_flags;

	if (flags & TCP_RST) {
		if (bs)
			bs->client_rsts += 1;
		f->state = BALLAST_FLOW_CLOSING;
		f->last_seen_ns = now;
		return;
	}
	if (f->state == BALLAST_FLOW_SYN_SENT && (flags & TCP_ACK) && !(flags & TCP_SYN)) {
		__u64 t = clock_precise();

		f->state = BALLAST_FLOW_ESTABLISHED;
		if (bs && t > f->start_ns) {
			bs->handshake_ns_sum += t - f->start_ns;
			bs->handshake_count += 1;
		}
	}
	if (f->state == BALLAST_FLOW_ESTABLISHED || f->state == BALLAST_FLOW_CLOSING) {
		if (!(f->flags & BALLAST_FLOW_F_PAYLOAD_SEEN)) {
			if (p->payload_len > 0) {
				f->payload_ns = clock_precise();
				f->payload_ack = p->ack_seq;
				f->flags |= BALLAST_FLOW_F_PAYLOAD_SEEN;
			}
		} else if (!(f->flags & BALLAST_FLOW_F_RESPONSE_SEEN) && (flags & TCP_ACK) &&
			   (__s32)(p->ack_seq - f->payload_ack) > 0) {
			__u64 t = clock_precise();

			f->flags |= BALLAST_FLOW_F_RESPONSE_SEEN;
			if (bs && t > f->payload_ns) {
				bs->first_response_ns_sum += t - f->payload_ns;
				bs->first_response_count += 1;
			}
		}
	}
	if (flags & TCP_FIN) {
		f->state = BALLAST_FLOW_CLOSING;
		f->last_seen_ns = now;
	}
}

/* Chooses the backend for a TCP or UDP packet to a VIP and keeps the
 * connection table up to date. `f` is the packet's flow (the caller looked
 * it up), or NULL. `vip_looked_up`: the VIP came from the `vips` lookup, not
 * from the flow's shortcut, so a kept flow records it (flow_note_vip).
 * Returns the backend_id, or BALLAST_INVALID_ID when the VIP has no usable
 * backend. When the flow keeps its backend, *bep is set to that backend's
 * entry (already checked usable); otherwise (a fresh pick) *bep is left
 * alone and the caller looks the backend up and checks it. `now` is the
 * coarse clock, except with no flow (f NULL): then it is the precise clock,
 * read once for the new flow's handshake start and timestamps. It may also
 * be the precise clock for a known flow (an owned VIP's fence check read it);
 * the precise clock is never behind the coarse one, so the idle and touch
 * comparisons only get more exact. */
static __always_inline __u32 conntrack_select(const struct ballast_vip_meta *vip, struct pkt *p,
					      const struct ballast_settings *s, __u64 now,
					      struct ballast_flow *f, int vip_looked_up,
					      struct ballast_backend **bep)
{
	struct ballast_backend_stats *bs;
	struct ballast_backend *be;
	__u32 id, old;

	if (!f)
		return flow_create(vip, p, now, 1);

	old = f->backend_id;
	be = bpf_map_lookup_elem(&backends, &old);
	if (!backend_usable(be)) {
		bs = backend_stats_of(old);
		if (bs)
			bs->resteered_away += 1;
		return flow_create(vip, p, now, 0);
	}
	if (flow_expired(f, s, now))
		return flow_create(vip, p, now, 0);

	if (p->key.proto == IPPROTO_UDP)
		goto keep;

	if (is_pure_syn(p)) {
		if (f->state != BALLAST_FLOW_SYN_SENT)
			return flow_create(vip, p, now, 0); /* a new connection on a reused tuple */
		/* Retransmitted SYN: the backend did not answer (yet). Follow
		 * the current table. */
		bs = backend_stats_of(old);
		if (bs)
			bs->syn_retransmits += 1;
		id = maglev_pick(vip->vip_id, p);
		if (id == BALLAST_INVALID_ID)
			return id;
		if (vip_looked_up)
			flow_note_vip(f, vip->vip_id);
		if (id != old) {
			f->backend_id = id;
			f->start_ns = clock_precise();
			bs = backend_stats_of(id);
			if (bs)
				bs->new_flows += 1;
		}
		f->last_seen_ns = now;
		return id;
	}
	flow_tcp_update(f, p, now);
keep:
	if (unlikely(vip_looked_up))
		flow_note_vip(f, vip->vip_id);
	/* no underflow should last_seen_ns be ahead of `now` */
	if (now > f->last_seen_ns + BALLAST_TOUCH_NS)
		f->last_seen_ns = now;
	*bep = be;
	return old;
}

/* Backend for an ICMP error about `key`: the flow's backend if the flow is
 * known and its backend usable, else the table's pick (which is what the
 * flow would get on its next packet). Never changes the table. */
static __always_inline __u32 conntrack_peek(const struct ballast_vip_meta *vip, struct pkt *p)
{
	struct ballast_backend *be;
	struct ballast_flow *f;
	__u32 id;

	f = bpf_map_lookup_elem(&flows, &p->key);
	if (f) {
		id = f->backend_id;
		be = bpf_map_lookup_elem(&backends, &id);
		if (backend_usable(be))
			return id;
	}
	return maglev_pick(vip->vip_id, p);
}

#endif /* BALLAST_CONNTRACK_H */
