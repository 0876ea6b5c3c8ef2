/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The connection table: which backend a client→VIP flow uses, and where the
 * flow is in the TCP handshake.
 *
 * The maps (docs/dataplane.md, "The path of a packet"):
 *  - `handshakes`, an array of 4-slot sets (one cache line each) indexed
 *    by flow hash, holds TCP connections whose handshake is under way: the
 *    client's SYN seen, its completing ACK not yet. A SYN writes one slot
 *    and no `flows` entry.
 *  - `flows`, an LRU hash, holds TCP connections that passed probation
 *    (probation.h): their backend did not bounce a probe of them.
 *  - `adopted_flows`, an array of 4-way sets indexed by flow hash
 *    (adopted.h), holds TCP flows adopted mid-stream, and connections whose
 *    handshake completed here, while on probation.
 *  - `flows_udp`, an LRU hash, holds UDP flows.
 *
 * Rules:
 *  - A flow in `flows` (ESTABLISHED, CLOSING, UDP) stays on its backend until
 *    it expires (idle timeout; linger after FIN/RST) or its backend stops
 *    being usable (EVICTED, UNUSED, or DRAINING past its deadline); then its
 *    next packet is re-steered.
 *  - A handshake under way follows the current table: a repeated SYN goes to
 *    the backend the table picks now, and counts as a SYN retransmission
 *    against the backend that did not answer. When the slot's SYN is at
 *    least syn_retry_ns old (the client's retransmission, not a duplicate),
 *    it goes to the flow's next choice instead (maglev_next_choice): a host
 *    that stopped answering costs a connection one retransmission, not one
 *    per retransmission until the health checks catch up. The client's ACK that
 *    completes the handshake stays with the backend the SYN went to (its
 *    slot), and creates the `flows` entry.
 *  - A SYN on a tuple whose `flows` entry is ESTABLISHED on a usable (ACTIVE,
 *    or DRAINING before its deadline)
 *    backend and saw a packet within syn_reuse_idle_ns is forwarded to that
 *    backend and leaves the entry as it is (the backend's TCP stack judges
 *    it: a challenge ACK for a stray or spoofed SYN, RFC 5961; its listener
 *    for a client that reuses the port of a connection the backend reset).
 *    Its slot is written too, so the backend can bounce it (second chance,
 *    which then ends the flow). On any other entry (closing, idle longer,
 *    draining backend) a SYN is a new connection: the entry is deleted and
 *    the SYN handled as above.
 *  - A RST or FIN moves a flow to CLOSING only when its sequence number is
 *    within BALLAST_SEQ_WINDOW of the client's next one (seq_next, which
 *    the client's packets move forward by at most that much each); any
 *    other is forwarded and changes nothing. So a blind spoofer can neither
 *    move nor end an established flow.
 *  - A TCP packet other than a SYN with neither an entry nor a slot (flow
 *    expired or evicted from the LRU, its slot overwritten, or moved here
 *    from another router by ECMP) picks from the table and is adopted as
 *    ESTABLISHED. Every router computes the same table and hash, so the
 *    adopted flow lands on the backend it already had.
 *  - A completed handshake and an adopted flow start on probation in
 *    `adopted_flows` and move into `flows` 100 ms after an unbounced probe
 *    (probation.h), so two spoofed packets (a SYN and its ACK) cannot take
 *    a place there.
 *
 * Why SYNs do not create `flows` entries: inserting into the kernel's LRU
 * hash is most of the cost of a SYN (bucket walk, node pop, locks), and a
 * SYN flood of spoofed sources would evict established connections from
 * the LRU. A slot costs one cache line, and a flood only overwrites other
 * slots (a full set gives up its oldest). What a lost slot costs: that connection's handshake
 * sample and retransmission count, and, if the table changed between its SYN and its ACK, its
 * handshake (the ACK follows the new table; the client retries). A slot is
 * found by its tuple's 32-bit hash and its SYN's sequence number (the ISN;
 * handshake_find): a SYN matches only with that ISN (a retransmission), and
 * the slot completes only with a packet whose sequence number follows it.
 * So a SYN spoofed on the tuple of a handshake under way takes a slot of its
 * own instead of moving that handshake to the next choice, one spoofed on
 * the tuple of a flow adopted mid-stream cannot take that flow's next packet
 * to another backend, and two tuples whose hashes collide are two
 * connections unless their ISNs are equal too (then only counts are wrong:
 * they have the same table pick).
 *
 * Passive signals recorded here (per backend, per CPU): new flows, SYN
 * retransmissions, client RSTs, handshake time (the latest SYN → the
 * client's completing ACK, in 256 ns units: a dropped SYN shows as a
 * retransmission, not as a second of handshake) and first-response time
 * (the client's first payload → the first client ACK that acknowledges
 * bytes sent after it).
 *
 * Entries and slots are updated in place without locks. Two CPUs racing on
 * one flow can only lose or skew a timing sample or a touch of
 * last_seen_ns; a backend_id is always a whole value written by one of them.
 */
#ifndef BALLAST_CONNTRACK_H
#define BALLAST_CONNTRACK_H

#include "common.h"
#include "adopted.h"
#include "choices.h"
#include "clock.h"
#include "esc.h"
#include "maps.h"
#include "maglev.h"
#include "parse.h"
#include "probation.h"
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

static __always_inline void count_new_flow(__u32 backend_id)
{
	struct ballast_backend_stats *bs = backend_stats_of(backend_id);

	if (bs)
		bs->new_flows += 1;
}

/* Creates (or replaces) the flow of `p` on backend `id` in the map of class
 * `cls`, in the state its flags give: UDP, CLOSING after FIN/RST, else
 * ESTABLISHED. `completed`: the packet completes a handshake: the flow is
 * on probation (probation.h), and a payload in this packet starts the
 * first-response sample. `adopted`: a
 * TCP flow started from the table mid-stream, whose slot history is `hist`
 * (esc_adopt). */
static __always_inline void flow_insert(const struct ballast_vip_meta *vip, struct pkt *p, __u32 id,
					__u64 now, enum flow_class cls, int completed,
					int adopted, __u64 hist)
{
	struct ballast_flow f = {};

	f.backend_id = id;
	flow_note_vip(&f, vip->vip_id);
	f.last_seen_ns = now;
	if (p->key.proto == IPPROTO_UDP)
		f.state = BALLAST_FLOW_UDP;
	else if (p->tcp_flags & (TCP_RST | TCP_FIN))
		f.state = BALLAST_FLOW_CLOSING;
	else
		f.state = BALLAST_FLOW_ESTABLISHED;
	if (p->key.proto == IPPROTO_TCP) {
		f.seq_next = p->seq + p->payload_len + !!(p->tcp_flags & TCP_FIN);
		f.flags = BALLAST_FLOW_F_SEQ_KNOWN;
	}
	if (cls == FLOW_SEEN || completed)
		f.flags |= BALLAST_FLOW_F_HANDSHAKE_SEEN;
	if (completed)
		f.flags |= BALLAST_FLOW_F_PROBATION;
	if (completed && p->payload_len > 0) {
		f.payload_ns = now;
		f.payload_ack = p->ack_seq;
		f.flags |= BALLAST_FLOW_F_PAYLOAD_SEEN;
	}
	/* Adopted mid-stream: a flow of the table's pick or one that ECMP moved
	 * here, or a spoofed ACK. Either it walks its slot's history
	 * (established second chance) or its backend is asked (probation). */
	if (adopted && !esc_adopt(&f, p, id, hist, now) && cls == FLOW_ADOPTED)
		probation_begin(&f, p, now);
	if (cls == FLOW_UDP)
		bpf_map_update_elem(&flows_udp, &p->key, &f, BPF_ANY);
	else if (cls == FLOW_ADOPTED)
		adopted_store(&p->key, &f, flow_hash_of(p));
	else
		bpf_map_update_elem(&flows, &p->key, &f, BPF_ANY);
}

static __always_inline __u32 handshake_time(__u64 now)
{
	return (__u32)(now >> BALLAST_HANDSHAKE_TIME_SHIFT);
}

/* The packet's set of `handshakes` slots (one cache line). */
static __always_inline struct ballast_handshake_set *handshake_set_of(struct pkt *p)
{
	__u32 idx = flow_hash_of(p) & handshake_set_mask;

	return bpf_map_lookup_elem(&handshakes, &idx);
}

/* What a slot's SYN sequence number (its ISN) must be to match a packet
 * beside the tuple's 32-bit hash (handshake_find). */
enum handshake_seq {
	HS_SEQ_ANY,     /* not compared (a packet without a client sequence) */
	HS_SEQ_SYN,     /* equal: the client's SYN again (a retransmission carries
			 * its ISN), or that SYN bounced by a backend */
	HS_SEQ_FOLLOWS, /* at most BALLAST_HANDSHAKE_SEQ_SLACK past it: the packet
			 * that completes the handshake (the ACK carries ISN + 1,
			 * plus the SYN's data with TCP Fast Open) */
};
#define BALLAST_HANDSHAKE_SEQ_SLACK 65536u

/* The slot of `set` that holds this packet's tuple's handshake (by its
 * 32-bit hash, in the set its hash chose, and its sequence number as `seq`
 * says), begun at most syn_idle_ns before `now` (a precise reading), or
 * NULL. The sequence check keeps apart two tuples whose hashes collide and
 * two connections on one tuple, and a blind spoofer's SYN on a tuple whose
 * handshake is under way (its ISN is its own) takes a slot of its own
 * instead of passing for the client's retransmission. */
static __always_inline struct ballast_handshake *handshake_find(struct ballast_handshake_set *set,
								const struct pkt *p,
								const struct ballast_settings *s,
								__u64 now, enum handshake_seq seq)
{
	__u32 t = handshake_time(now), idle = s->syn_idle_ns >> BALLAST_HANDSHAKE_TIME_SHIFT;
	struct ballast_handshake *h;
	int i;

#pragma unroll
	for (i = 0; i < BALLAST_HANDSHAKE_WAYS; i++) {
		h = &set->way[i];
		if (h->backend_id == BALLAST_INVALID_ID || h->hash != p->hash ||
		    t - h->syn_time > idle) /* modulo 2^32 */
			continue;
		if (seq == HS_SEQ_SYN && h->isn != p->seq)
			continue;
		if (seq == HS_SEQ_FOLLOWS &&
		    p->seq - h->isn > BALLAST_HANDSHAKE_SEQ_SLACK) /* modulo 2^32 */
			continue;
		return h;
	}
	return 0;
}

/* The slot of `set` a new handshake takes: a free or expired one, else the
 * oldest (whose handshake is then forgotten). */
static __always_inline struct ballast_handshake *
handshake_victim(struct ballast_handshake_set *set, const struct ballast_settings *s, __u64 now)
{
	__u32 t = handshake_time(now), idle = s->syn_idle_ns >> BALLAST_HANDSHAKE_TIME_SHIFT;
	struct ballast_handshake *h, *v = &set->way[0];
	__u32 age, oldest = 0;
	int i;

#pragma unroll
	for (i = 0; i < BALLAST_HANDSHAKE_WAYS; i++) {
		h = &set->way[i];
		age = t - h->syn_time;
		if (h->backend_id == BALLAST_INVALID_ID || age > idle)
			return h;
		if (age >= oldest) {
			oldest = age;
			v = h;
		}
	}
	return v;
}

/* Whether the SYN in slot `h` is old enough (settings' syn_retry_ns) that
 * this repeated SYN is the client's retransmission, not a duplicate. */
static __always_inline int syn_retry_due(const struct ballast_handshake *h, __u64 now)
{
	struct ballast_handshake_settings *hs;
	__u32 zero = 0;

	hs = bpf_map_lookup_elem(&handshake_settings, &zero);
	if (!hs || hs->syn_retry_ns == 0)
		return 0;
	return handshake_time(now) - h->syn_time >=
	       (__u32)(hs->syn_retry_ns >> BALLAST_HANDSHAKE_TIME_SHIFT);
}

/* Fills slot `h` in two 8-byte stores, time first (see struct
 * ballast_handshake): no bounce yet, `flags` (BALLAST_HANDSHAKE_F_*). */
static __always_inline void handshake_write(struct ballast_handshake *h, const struct pkt *p,
					    __u32 id, __u64 now, __u32 flags)
{
	*(__u64 *)&h->isn = p->seq | (__u64)handshake_time(now) << 32;
	*(__u64 *)&h->hash = p->hash | (__u64)(id | flags << 24) << 32;
}

/* A pure SYN: a new connection (`f`, the `flows` entry of its tuple if
 * any, is deleted), or a retransmission of one whose slot still holds it.
 * Follows the current table either way and writes no `flows` entry. `now`
 * is the precise clock. Returns the pick, or BALLAST_INVALID_ID when the
 * table has none. */
static __always_inline __u32 handshake_syn(const struct ballast_vip_meta *vip, struct pkt *p,
					   const struct ballast_settings *s, __u64 now,
					   const struct ballast_flow *f)
{
	struct ballast_handshake_set *set = handshake_set_of(p);
	__u32 id = maglev_pick(vip->vip_id, p), old = BALLAST_INVALID_ID;
	struct ballast_backend_stats *bs;
	struct ballast_handshake *h = 0;

	if (set)
		h = handshake_find(set, p, s, now, HS_SEQ_SYN);
	if (h) {
		/* The backend did not answer (yet): the client is there, so its
		 * connection counts as a new flow of that backend now if it did
		 * not already (BALLAST_HANDSHAKE_F_COUNTED). */
		old = h->backend_id;
		bs = backend_stats_of(old);
		if (bs) {
			bs->syn_retransmits += 1;
			bs->new_flows += !(h->flags & BALLAST_HANDSHAKE_F_COUNTED);
		}
	}
	if (id == BALLAST_INVALID_ID)
		return id;
	if (h && syn_retry_due(h, now))
		/* The client got no SYN-ACK within the retry age: not to the
		 * backend that did not answer again, to the next choice. */
		id = maglev_next_choice(vip->vip_id, p, id, old);
	if (h && id != old)
		count_new_flow(id); /* a retransmission: its client is there */
	if (!h && set)
		h = handshake_victim(set, s, now);
	/* Times from this, the latest SYN. A first SYN counts when its
	 * client shows up (handshake_complete); a retransmission was counted
	 * above. */
	if (h)
		handshake_write(h, p, id, now,
				old != BALLAST_INVALID_ID ? BALLAST_HANDSHAKE_F_COUNTED : 0);
	/* A new connection on a known tuple (or an older program's SYN_SENT
	 * flow): from now on it lives in the slots. Left in place, the flow
	 * would take the new connection's ACK to the old backend
	 * (docs/benchmarks.md, "Tried and dropped"). The caller looked it up
	 * (xdp_lb): an LRU delete takes the bucket lock even when there is
	 * nothing to delete, which is the usual case. */
	if (f)
		bpf_map_delete_elem(&flows, &p->key);
	return id;
}

/* Whether a pure SYN on flow `f` (backend `be`) leaves it in place: the
 * flow's backend is usable (ACTIVE, or DRAINING before its deadline) and
 * the flow is ESTABLISHED and saw a packet less than syn_reuse_idle_ns
 * before `now` (the precise clock), or CLOSING within its linger. A FIN or
 * RST in the flow's window can be guessed (BALLAST_SEQ_WINDOW): were a SYN
 * after it a new connection on the table's pick, two guessed packets would
 * move a live connection. A port reused after a close goes to the backend
 * that had it, whose listener takes it (or which bounces it: second
 * chance). */
static __always_inline int syn_keeps_flow(const struct ballast_flow *f,
					  const struct ballast_backend *be,
					  const struct ballast_settings *s, __u64 now)
{
	struct ballast_handshake_settings *hs;
	__u32 zero = 0;

	/* A draining backend keeps its connections until its deadline: a SYN
	 * (stray, spoofed, or a port reused after the backend's RST) does not
	 * take one away. */
	if (!backend_usable(be))
		return 0;
	hs = bpf_map_lookup_elem(&handshake_settings, &zero);
	if (!hs || hs->syn_reuse_idle_ns == 0)
		return 0;
	if (f->state == BALLAST_FLOW_CLOSING)
		return !flow_expired(f, s, now);
	if (f->state != BALLAST_FLOW_ESTABLISHED)
		return 0;
	return now < f->last_seen_ns + hs->syn_reuse_idle_ns;
}

/* A pure SYN that syn_keeps_flow(): forwarded to the flow's backend `id`;
 * the flow keeps its backend, state and sequence window. Its slot is
 * written so that the backend can bounce it when it has no socket for the
 * tuple; the bounce then ends the flow (bounce_take). The flow is marked
 * BALLAST_FLOW_F_REOPENED. A SYN on a live tuple is what a spoofer who
 * knows the tuple sends to make one backend look bad while its peers do
 * not, so it gives the passive signals nothing, now or later: no new flow,
 * no retransmission, no handshake sample when an ACK "completes" it, and
 * no first-response sample (the flow's is taken, or given up: a client
 * reusing its port after a RST from the backend, which the router does
 * not see, has its new connection's samples lost, rather than the old
 * payload's time measured against the new connection's ACKs). */
static __always_inline void handshake_syn_guarded(struct pkt *p, const struct ballast_settings *s,
						  __u64 now, __u32 id, struct ballast_flow *f)
{
	struct ballast_handshake_set *set = handshake_set_of(p);
	struct ballast_handshake *h;

	/* First: after the slot's write the verifier's work grows by a
	 * tenth (its paths merge less well). */
	f->flags |= BALLAST_FLOW_F_REOPENED | BALLAST_FLOW_F_PAYLOAD_SEEN |
		    BALLAST_FLOW_F_RESPONSE_SEEN;
	if (!set)
		return;
	h = handshake_find(set, p, s, now, HS_SEQ_SYN);
	if (!h)
		h = handshake_victim(set, s, now);
	handshake_write(h, p, id, now, 0);
}

/* The first client packet after a SYN that reopened flow `f`
 * (BALLAST_FLOW_F_REOPENED): when it completes that SYN's handshake (it
 * follows the slot's ISN), the new connection is the flow from now on (no
 * sample: handshake_syn_guarded), a CLOSING flow is ESTABLISHED again
 * with the new connection's sequence, and when the flow's backend bounced
 * that SYN (no socket there: the old connection is gone) and the slot
 * sent it on, the flow moves to where the new connection is. The slot is
 * freed. Any other packet (the old connection going on) leaves the flow as
 * it was. The mark goes either way. Reads the precise clock (the slot's
 * time is precise). Returns the flow's backend. */
static __always_inline __u32 handshake_reopened(struct ballast_flow *f, struct pkt *p,
						const struct ballast_settings *s)
{
	struct ballast_handshake_set *set = handshake_set_of(p);
	__u64 t = clock_precise();
	struct ballast_handshake *h = set ? handshake_find(set, p, s, t, HS_SEQ_FOLLOWS) : 0;
	struct ballast_backend_bounces *bb;

	f->flags &= ~BALLAST_FLOW_F_REOPENED;
	if (!h || (h->backend_id != f->backend_id && !h->bounces))
		return f->backend_id;
	if (h->backend_id != f->backend_id) {
		/* The new connection completed where the bounce sent it: the
		 * flow's backend had no listener for it (refusals_confirm). */
		bb = bpf_map_lookup_elem(&backend_bounces, &f->backend_id);
		if (bb)
			bb->refused += 1;
	}
	if (h->backend_id != f->backend_id || f->state == BALLAST_FLOW_CLOSING) {
		f->backend_id = h->backend_id;
		f->state = BALLAST_FLOW_ESTABLISHED;
		f->seq_next = p->seq + p->payload_len;
		f->flags = BALLAST_FLOW_F_SEQ_KNOWN | BALLAST_FLOW_F_HANDSHAKE_SEEN;
	}
	*(__u64 *)&h->hash = 0; /* free the slot */
	return f->backend_id;
}

/* A TCP packet other than a SYN with no `flows` entry whose slot holds its
 * handshake completes it on the SYN's backend (when that is still usable):
 * the handshake sample is taken (an ACK), refusals of the bounces it took
 * counted, the slot freed, the flow created on probation in
 * `adopted_flows` (probation.h), replacing an older connection of the tuple
 * there (a client reusing its port: a young connection is not guarded
 * against SYNs). Returns 1 with *idp set
 * then, else 0 (the caller looks for an adopted flow). `now` is the
 * precise clock. */
static __always_inline int handshake_complete(const struct ballast_vip_meta *vip, struct pkt *p,
					      const struct ballast_settings *s, __u64 now,
					      __u32 *idp)
{
	struct ballast_handshake_set *set = handshake_set_of(p);
	/* A packet that does not follow the slot's SYN leaves the slot to the
	 * packet that does. */
	struct ballast_handshake *h = set ? handshake_find(set, p, s, now, HS_SEQ_FOLLOWS) : 0;
	struct ballast_backend_stats *bs;
	struct ballast_backend *be;
	__u32 id, age, bounces, counted;

	if (!h)
		return 0;
	id = h->backend_id;
	bounces = h->bounces;
	counted = h->flags & BALLAST_HANDSHAKE_F_COUNTED;
	age = handshake_time(now) - h->syn_time;
	*(__u64 *)&h->hash = 0; /* free the slot */
	be = bpf_map_lookup_elem(&backends, &id);
	if (!backend_usable(be))
		return 0;
	bs = backend_stats_of(id);
	/* A RST that ends a handshake is not counted: a SYN and a RST are two
	 * packets a blind spoofer can send for any tuple (probation.h). */
	if (bs && !(p->tcp_flags & TCP_RST) && (p->tcp_flags & TCP_ACK)) {
		if (!counted)
			bs->new_flows += 1; /* its SYN was not counted (handshake_syn) */
		bs->handshake_ns_sum += (__u64)age << BALLAST_HANDSHAKE_TIME_SHIFT;
		bs->handshake_count += 1;
		latency_sample(id, 0, (__u64)age << BALLAST_HANDSHAKE_TIME_SHIFT);
	}
	if (unlikely(bounces) && (p->tcp_flags & (TCP_ACK | TCP_RST)) == TCP_ACK)
		refusals_confirm(vip->vip_id, p, id, bounces);
	flow_insert(vip, p, id, now, FLOW_ADOPTED, 1, 0, 0);
	*idp = id;
	return 1;
}

/* A flow (re)started from the table in the map of class `cls`: a UDP
 * flow's first packet, a TCP packet adopted mid-stream, or a known flow's
 * packet after it expired or its backend became unusable. A UDP flow
 * counts as a new flow; a TCP one is adopted (its connection was counted
 * at its SYN), with its slot's history (established second chance). */
static __always_inline __u32 flow_restart(const struct ballast_vip_meta *vip, struct pkt *p,
					  __u64 now, enum flow_class cls)
{
	int tcp = p->key.proto == IPPROTO_TCP;
	__u64 hist = 0;
	__u32 id;

	if (tcp)
		id = maglev_pick_history(vip->vip_id, p, &hist);
	else
		id = maglev_pick(vip->vip_id, p);
	if (id == BALLAST_INVALID_ID)
		return id;
	flow_insert(vip, p, id, now, cls, 0, tcp, hist);
	if (cls == FLOW_UDP)
		count_new_flow(id);
	return id;
}

/* Whether `seq` is within BALLAST_SEQ_WINDOW of the flow's seq_next, either
 * way (modulo 2^32). True for a flow without seq_next (an older build's, up
 * to its first packet here). */
static __always_inline int seq_plausible(const struct ballast_flow *f, __u32 seq)
{
	if (!(f->flags & BALLAST_FLOW_F_SEQ_KNOWN))
		return 1;
	return seq - f->seq_next + BALLAST_SEQ_WINDOW <= 2 * BALLAST_SEQ_WINDOW;
}

/* TCP state transitions and passive signals for a packet of an existing
 * flow that stays on f->backend_id. `now` is the coarse clock; the timing
 * samples read the precise one, once per flow each. Returns 0, or 1 when
 * the packet is a RST or FIN outside the window (seq_plausible): it is
 * forwarded and changes nothing. */
static __always_inline int flow_tcp_update(struct ballast_flow *f, const struct pkt *p, __u64 now)
{
	struct ballast_backend_stats *bs;
	__u8 flags = p->tcp_flags;
	__u32 end;

	if ((flags & (TCP_RST | TCP_FIN)) && !seq_plausible(f, p->seq))
		return 1;
	bs = backend_stats_of(f->backend_id);
	if (flags & TCP_RST) {
		/* Once per flow, and only for a flow whose handshake this
		 * router saw and whose backend holds it (past probation): a
		 * thousand RSTs on one flow, or RSTs sent after spoofed ACKs
		 * that adopted flows or spoofed handshakes, are not a thousand
		 * resets. */
		if (bs && f->state != BALLAST_FLOW_CLOSING &&
		    (f->flags & (BALLAST_FLOW_F_HANDSHAKE_SEEN | BALLAST_FLOW_F_PROBATION)) ==
			    BALLAST_FLOW_F_HANDSHAKE_SEEN)
			bs->client_rsts += 1;
		f->state = BALLAST_FLOW_CLOSING;
		f->last_seen_ns = now;
		return 0;
	}
	if (f->state == BALLAST_FLOW_SYN_SENT && (flags & TCP_ACK)) {
		/* an older program's flow (see BALLAST_FLOW_SYN_SENT) */
		__u64 t = clock_precise();

		f->state = BALLAST_FLOW_ESTABLISHED;
		if (bs && t > f->start_ns) {
			bs->handshake_ns_sum += t - f->start_ns;
			bs->handshake_count += 1;
			latency_sample(f->backend_id, 0, t - f->start_ns);
		}
	}
	/* The client's next sequence number moves forward by at most the
	 * window per packet (one word written, only when it moves). An older
	 * build's flow takes it from its first packet here (for a SYN_SENT
	 * one, start_ns is spent by now). */
	end = p->seq + p->payload_len + !!(flags & TCP_FIN);
	if (unlikely(!(f->flags & BALLAST_FLOW_F_SEQ_KNOWN))) {
		if (f->state != BALLAST_FLOW_SYN_SENT) {
			f->seq_next = end;
			f->reserved = 0;
			f->flags |= BALLAST_FLOW_F_SEQ_KNOWN;
		}
	} else if (end - f->seq_next - 1 < BALLAST_SEQ_WINDOW) {
		f->seq_next = end;
	}
	if (f->state == BALLAST_FLOW_SYN_SENT) {
		/* no payload sample before the handshake completes */
	} else if (!(f->flags & BALLAST_FLOW_F_PAYLOAD_SEEN)) {
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
			latency_sample(f->backend_id, 1, t - f->payload_ns);
		}
	}
	if (flags & TCP_FIN) {
		f->state = BALLAST_FLOW_CLOSING;
		f->last_seen_ns = now;
	}
	return 0;
}

/* Chooses the backend for a TCP or UDP packet to a VIP and keeps the
 * connection table up to date. `f` is the packet's flow in the map of class
 * `cls` (the caller looked it up: `flows` for TCP, `flows_udp` for UDP), or
 * NULL; a TCP packet without one looks for its handshake slot, then for an
 * adopted flow. Sets p->guarded when the packet is a SYN, RST or FIN
 * that leaves its established flow as it was (see the rules above).
 * `vip_looked_up`: the VIP came from the `vips` lookup, not from the flow's
 * shortcut, so a kept flow records it (flow_note_vip).
 * Returns the backend_id, or BALLAST_INVALID_ID when the VIP has no usable
 * backend. When the flow keeps its backend, *bep is set to that backend's
 * entry (already checked usable); otherwise (a fresh pick) *bep is left
 * alone and the caller looks the backend up and checks it. `now` is the
 * coarse clock, except with no flow (f NULL): then it is the precise clock,
 * read once for the handshake slot and the new flow's timestamps. It may
 * also be the precise clock for a known flow (an owned VIP's fence check
 * read it); the precise clock is never behind the coarse one, so the idle
 * and touch comparisons only get more exact. */
static __always_inline __u32 conntrack_select(const struct ballast_vip_meta *vip, struct pkt *p,
					      const struct ballast_settings *s, __u64 now,
					      struct ballast_flow *f, enum flow_class cls,
					      int vip_looked_up, struct ballast_backend **bep)
{
	struct ballast_backend_stats *bs;
	struct ballast_backend *be;
	__u32 old;

	if (!f) {
		/* `now` is the precise clock (xdp_lb) */
		if (cls == FLOW_UDP)
			return flow_restart(vip, p, now, FLOW_UDP);
		if (is_pure_syn(p))
			return handshake_syn(vip, p, s, now, 0);
		/* The slot before the adopted flows: a new connection on the
		 * tuple of an adopted flow completes on its SYN's backend. */
		if (handshake_complete(vip, p, s, now, &old))
			return old;
		f = adopted_lookup(p);
		if (!f && (p->tcp_flags & TCP_RST))
			/* A RST starts nothing to keep: it goes by the table and
			 * is not adopted, so a flood of them cannot displace
			 * adopted flows. */
			return maglev_pick(vip->vip_id, p);
		if (!f)
			return flow_restart(vip, p, now, FLOW_ADOPTED);
		cls = FLOW_ADOPTED;
	}

	old = f->backend_id;
	be = bpf_map_lookup_elem(&backends, &old);
	if (cls == FLOW_SEEN && is_pure_syn(p)) {
		/* `now` is the precise clock (xdp_lb) */
		if (!syn_keeps_flow(f, be, s, now))
			return handshake_syn(vip, p, s, now, f);
		handshake_syn_guarded(p, s, now, old, f);
		p->guarded = 1;
		*bep = be;
		return old;
	}
	if (!backend_usable(be)) {
		bs = backend_stats_of(old);
		if (bs)
			bs->resteered_away += 1;
		return flow_restart(vip, p, now, cls);
	}
	if (flow_expired(f, s, now))
		return flow_restart(vip, p, now, cls);

	if (unlikely(f->flags & BALLAST_FLOW_F_REOPENED) && handshake_reopened(f, p, s) != old) {
		/* moved with its new connection, to a backend the bounce found
		 * ACTIVE (the slot's); checked again like any pick */
		old = f->backend_id;
		be = bpf_map_lookup_elem(&backends, &old);
		if (!backend_usable(be))
			return flow_restart(vip, p, now, cls);
	}
	if (p->key.proto == IPPROTO_TCP && flow_tcp_update(f, p, now)) {
		p->guarded = 1; /* a RST or FIN outside the window: the flow stays */
		*bep = be;
		return old;
	}
	if (unlikely(vip_looked_up))
		flow_note_vip(f, vip->vip_id);
	/* no underflow should last_seen_ns be ahead of `now` */
	if (now > f->last_seen_ns + BALLAST_TOUCH_NS)
		f->last_seen_ns = now;
	if (unlikely(f->flags & BALLAST_FLOW_F_HISTORY))
		esc_mark(f, p, now);
	else if (unlikely(f->flags & BALLAST_FLOW_F_PROBATION))
		probation_step(f, p, now);
	*bep = be;
	return old;
}

/* Backend for an ICMP error about `key`: the flow's backend if the flow is
 * known and its backend usable, else the backend of its handshake under
 * way, else the table's pick (which is what the flow would get on its next
 * packet). Changes neither the flows nor the slots. */
static __always_inline __u32 conntrack_peek(const struct ballast_vip_meta *vip, struct pkt *p,
					    const struct ballast_settings *s)
{
	struct ballast_handshake_set *set;
	struct ballast_handshake *h;
	struct ballast_backend *be;
	struct ballast_flow *f;
	__u32 id;

	if (p->key.proto == IPPROTO_UDP) {
		f = bpf_map_lookup_elem(&flows_udp, &p->key);
	} else {
		f = bpf_map_lookup_elem(&flows, &p->key);
		if (!f) {
			set = handshake_set_of(p);
			h = set ? handshake_find(set, p, s, clock_precise(), HS_SEQ_ANY) : 0;
			if (h) {
				id = h->backend_id;
				be = bpf_map_lookup_elem(&backends, &id);
				if (backend_usable(be))
					return id;
			}
			f = adopted_lookup(p);
		}
	}
	if (f) {
		id = f->backend_id;
		be = bpf_map_lookup_elem(&backends, &id);
		if (backend_usable(be))
			return id;
	}
	return maglev_pick(vip->vip_id, p);
}

#endif /* BALLAST_CONNTRACK_H */
