/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Second chance, the router's half: a SYN a backend bounced back.
 *
 * A backend's decap program that finds no socket for a client's SYN (the
 * server died, the host still runs) sends the encapsulated packet back with
 * its outer addresses swapped: outer source the backend, outer destination
 * this router's source_v4/source_v6, or for IPv4 the address of the
 * router's source prefix that the flow's packets came from (encap.h). Here
 * it is taken only when
 *   - the inner packet is a well-formed pure TCP SYN to a served VIP,
 *   - a handshake of that tuple is under way in the `handshakes` slots, and
 *     the backend its SYN went to is the bounce's outer source,
 *   - and the handshake took fewer than BALLAST_BOUNCES_MAX bounces;
 * then the SYN goes to the flow's next choice (maglev_next_choice: the same
 * on every router, never the backend that refused unless it is the only
 * one), an ACTIVE backend, and the slot is rewritten so the client's
 * completing ACK follows. The SYN after the last bounce carries the
 * last-hop mark: its backend's kernel answers it, with a RST if nothing
 * listens there either. Everything else encapsulated to this router is
 * dropped and counted. A GUE packet (a VIP with BALLAST_VIP_F_GUE) comes
 * back as GUE, its UDP ports as they were: to the router's GUE port. A
 * bounce rewrites a handshake slot; the one flow it can end is its own
 * tuple's on the backend that bounced (a SYN forwarded on an established
 * flow, syn_reuse_idle_ns), which by its decap program's socket lookup has
 * no connection of that tuple left.
 *
 * Established second chance (bounce_take_est, esc.h): any other TCP packet
 * but a SYN, bounced by a backend that holds no socket of it, is a packet
 * of a flow adopted on a slot whose backend changed; it walks the slot's
 * history (maglev_history) to the backend that holds the connection.
 */
#ifndef BALLAST_BOUNCE_H
#define BALLAST_BOUNCE_H

#include "common.h"
#include "clock.h"
#include "conntrack.h"
#include "encap.h"
#include "esc.h"
#include "maglev.h"
#include "maps.h"
#include "parse.h"
#include "stats.h"
#include "vip.h"

/* Is `p` addressed to this router's own outer source (IPv4: or to its
 * source prefix)? */
static __always_inline int to_router(const struct pkt *p, const struct ballast_settings *s)
{
	const __u32 *dst = (const __u32 *)p->key.dst;

	if (p->key.family == BALLAST_FAMILY_V4) {
		const struct ballast_handshake_settings *hs;
		__u32 src = *(const __u32 *)s->src4, zero = 0;

		if (src != 0 && dst[0] == src)
			return 1;
		hs = bpf_map_lookup_elem(&handshake_settings, &zero);
		return hs && hs->src4_spread_mask &&
		       (dst[0] & ~bpf_htonl(hs->src4_spread_mask)) ==
			       *(const __u32 *)hs->src4_spread_base;
	}
	const __u32 *src6 = (const __u32 *)s->src6;

	return (src6[0] | src6[1] | src6[2] | src6[3]) != 0 && dst[0] == src6[0] &&
	       dst[1] == src6[1] && dst[2] == src6[2] && dst[3] == src6[3];
}

/* Is `p` (parsed as far as its outer header: PARSE_OTHER_L4, or
 * PARSE_IP6_EXT for IPv6) an IP-in-IP or IPv6-in-IP packet addressed to
 * this router? */
static __always_inline int tunnel_to_router(const struct pkt *p, const struct ballast_settings *s)
{
	if (!s || (p->key.proto != IPPROTO_IPIP && p->key.proto != IPPROTO_IPV6))
		return 0;
	return to_router(p, s);
}

/* Is `p` (PARSE_OK, UDP) a GUE packet addressed to this router: to its GUE
 * port (encap.h) and one of its outer source addresses? A backend bounces
 * a GUE packet with its UDP ports as they were. */
static __always_inline int gue_to_router(struct xdp_md *ctx, const struct pkt *p,
					 const struct ballast_settings *s)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	const struct ballast_handshake_settings *hs;
	struct udphdr *uh = data + (p->l4_off & L4_MASK);
	__u32 zero = 0;

	if (!s || !to_router(p, s) || (void *)(uh + 1) > data_end)
		return 0;
	hs = bpf_map_lookup_elem(&handshake_settings, &zero);
	return uh->dest == gue_port_of(hs);
}

/* Is backend `be` at the outer source of `outer`? */
static __always_inline int backend_is_source(const struct ballast_backend *be,
					     const struct pkt *outer)
{
	const __u32 *a = (const __u32 *)be->addr, *b = (const __u32 *)outer->key.src;

	if (be->family != outer->key.family)
		return 0;
	if (be->family == BALLAST_FAMILY_V4)
		return a[0] == b[0];
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

/* Parses the inner packet of `outer` into `in`: a well-formed TCP packet
 * inside the outer packet (the caller judges its flags). Returns 0, or -1. */
static __always_inline int bounce_parse(struct xdp_md *ctx, const struct pkt *outer, struct pkt *in)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 off = outer->l4_off;
	enum parse_result r;
	__u32 *ports;
	__u8 *ver;
	int v4;

	/* The inner packet follows the outer IP header, or its UDP header
	 * (GUE: its first nibble, the IP version, says which). */
	if (outer->key.proto == IPPROTO_UDP)
		off += sizeof(struct udphdr);
	if (off > 0x7F)
		return -1;
	/* Hides the bound just checked from the compiler, which would drop
	 * the parsers' masks that the verifier needs. */
	barrier_var(off);
	in->l3_off = off;
	ver = data + (off & 0x7F);
	if ((void *)(ver + 1) > data_end)
		return -1;
	if (outer->key.proto == IPPROTO_UDP)
		v4 = *ver >> 4 == 4;
	else
		v4 = outer->key.proto == IPPROTO_IPIP;
	/* The router sends IPv4 and IPv6 inside IPv6, and IPv4 inside IPv4. */
	if (outer->key.family == BALLAST_FAMILY_V4 && !v4)
		return -1;
	if (v4)
		r = parse_ip4(data, data_end, in);
	else
		r = parse_ip6(data, data_end, in);
	if (r != PARSE_OK || in->key.proto != IPPROTO_TCP ||
	    in->l3_off + in->ip_len > outer->l3_off + outer->ip_len)
		return -1;
	if (parse_tcp(ctx, in))
		return -1;
	ports = data + (in->l4_off & L4_MASK);
	if ((void *)(ports + 1) > data_end)
		return -1;
	*(__u32 *)&in->key.sport = *ports;
	return 0;
}

static __always_inline struct ballast_backend_bounces *backend_bounces_of(__u32 backend_id)
{
	return bpf_map_lookup_elem(&backend_bounces, &backend_id);
}

/* The TCP VIP a bounced packet `in` is for, or NULL with *v the verdict to
 * drop it with (no such VIP; an owned VIP past its deadline, counted).
 * Reads the precise clock into *now for an owned VIP. */
static __always_inline const struct ballast_vip_meta *bounce_vip(const struct pkt *in, __u64 *now,
								 __u32 *v)
{
	const struct ballast_vip_meta *vip;

	vip = vip_lookup(in->key.dst, in->key.family, in->key.dport, IPPROTO_TCP);
	*v = BALLAST_V_DROP_BOUNCE_BAD;
	if (vip && vip_fenced(vip, now)) {
		vip_account_fenced(vip->vip_id);
		*v = BALLAST_V_DROP_FENCED;
		return 0;
	}
	return vip;
}

/* The outer IPv4 identification, or the outer IPv6 flow label, of
 * `outer` (a backend bounces a packet with its outer header as it came),
 * or ~0. */
static __always_inline __u32 outer_field(struct xdp_md *ctx, const struct pkt *outer)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *h = data + (outer->l3_off & 0x7F);

	if ((void *)(h + 8) > data_end)
		return ~0u;
	if (outer->key.family == BALLAST_FAMILY_V4)
		return (__u32)h[4] << 8 | h[5]; /* identification */
	return (__u32)(h[1] & 0x0f) << 16 | (__u32)h[2] << 8 | h[3];
}

/* Whether the bounce `outer` of `in` echoes the tag that the router put on
 * the packet it sent to the bounce's outer source (mark.h): `probe` for a
 * probe-marked packet, else a SYN that may be bounced. */
static __always_inline int bounce_tag_ok(struct xdp_md *ctx, const struct pkt *outer,
					 struct pkt *in, int probe)
{
	const struct ballast_bounce_key *k = bounce_key_get();
	__u32 tag, got = outer_field(ctx, outer), mark = probe ? MARK_PROBE : MARK_NONE;

	if (!k)
		return 0;
	tag = mark_tag(k, flow_hash_of(in), probe ? 0 : in->seq,
		       mark_addr_word(outer->key.src, outer->key.family));
	if (outer->key.family == BALLAST_FAMILY_V4)
		return got == mark_id(mark, tag, !probe);
	return got == mark_label(mark, tag, !probe, 0);
}

/* The chain of a flow's slot: the table's pick `first`, then the slot's
 * previous backends in `hist` (most recent first). */
static __always_inline __u32 esc_chain_at(__u32 first, __u64 hist, int i)
{
	return i == 0 ? first : esc_hist_at(hist, i - 1);
}

/* The backend after `cur` in the chain of (`first`, `hist`) that can take
 * the flow (usable: ACTIVE, or DRAINING before its deadline), not `cur`
 * itself nor a repeat of `first`; from the chain's start when `cur` is not
 * in it (the table changed since the flow was adopted). BALLAST_INVALID_ID
 * when none is left. Unusable ones passed over are counted. */
static __always_inline __u32 esc_next(__u32 first, __u64 hist, __u32 cur,
				      struct ballast_esc_stats *es)
{
	struct ballast_backend *be;
	int i, pos = -1;
	__u32 c;

#pragma unroll
	for (i = 0; i <= BALLAST_HISTORY_DEPTH; i++)
		if (pos < 0 && esc_chain_at(first, hist, i) == cur)
			pos = i;
#pragma unroll
	for (i = 0; i <= BALLAST_HISTORY_DEPTH; i++) {
		c = esc_chain_at(first, hist, i);
		if (i <= pos || c == BALLAST_INVALID_ID || c == cur || (i > 0 && c == first))
			continue;
		be = bpf_map_lookup_elem(&backends, &c);
		if (backend_usable(be))
			return c;
		if (es)
			es->skipped_unusable += 1;
	}
	return BALLAST_INVALID_ID;
}

/* Whether the outer source of `outer` is a backend that comes before `cur`
 * in the chain of (`first`, `hist`): the flow has moved on from it, and
 * this is one of its packets that was already on the way there. */
static __always_inline int esc_source_before(__u32 first, __u64 hist, __u32 cur,
					     const struct pkt *outer)
{
	struct ballast_backend *be;
	int i, done = 0;
	__u32 c;

#pragma unroll
	for (i = 0; i <= BALLAST_HISTORY_DEPTH; i++) {
		c = esc_chain_at(first, hist, i);
		if (c == cur)
			done = 1;
		if (done || c == BALLAST_INVALID_ID)
			continue;
		be = bpf_map_lookup_elem(&backends, &c);
		if (be && backend_is_source(be, outer))
			return 1;
	}
	return 0;
}

/* Takes a bounced packet of an established flow (`in`, parsed, not a SYN):
 * the backend it was sent to has no socket for it. Taken only when it
 * carries the probe mark, its tuple has a flow marked
 * BALLAST_FLOW_F_HISTORY (adopted on a slot with history, within its probe
 * window), its sequence number is within the flow's window, and its outer
 * source is the flow's backend; the flow then moves to the next backend of
 * its slot's chain that can take it (esc_next), and the packet goes there
 * with the probe mark. With none left, or past BALLAST_ESC_HOPS_MAX, it
 * goes to the table's pick without the mark (its kernel answers, as before
 * this path existed) and the flow stops probing. A bounce from a backend
 * the flow already left (packets in flight) goes to the flow's backend.
 * Anything else is dropped (`stranger`). Returns BALLAST_V_MAX with
 * *vipp, *idp and *bep set, or the verdict to drop with. */
static __always_inline __u32 bounce_take_est(struct xdp_md *ctx, const struct pkt *outer,
					     struct pkt *in, const struct ballast_vip_meta **vipp,
					     __u32 *idp, struct ballast_backend **bep, __u64 *now)
{
	struct ballast_esc_stats *es = esc_stats_get();
	const struct ballast_vip_meta *vip;
	struct ballast_backend *be;
	struct ballast_flow *f;
	__u32 cur, first, next, hops, v;
	__u64 hist = 0;

	vip = bounce_vip(in, now, &v);
	if (!vip)
		return v;
	if (!*now)
		*now = clock_coarse();
	f = bpf_map_lookup_elem(&flows, &in->key);
	if (!f)
		f = adopted_lookup(in);
	if (!f || !(f->flags & (BALLAST_FLOW_F_HISTORY | BALLAST_FLOW_F_PROBATION)) ||
	    !seq_plausible(f, in->seq))
		goto stranger;
	cur = f->backend_id;
	if (f->flags & BALLAST_FLOW_F_PROBATION) {
		/* The backend holds no socket of a handshake the router saw
		 * complete (probation.h): spoofed, or already over. */
		be = bpf_map_lookup_elem(&backends, &cur);
		if (!be || !backend_is_source(be, outer))
			goto stranger;
		if (!bounce_tag_ok(ctx, outer, in, 1))
			goto forged;
		f->flags &= ~(BALLAST_FLOW_F_PROBATION | BALLAST_FLOW_F_HANDSHAKE_SEEN);
		return BALLAST_V_DROP_PROBATION_REFUTED;
	}
	first = maglev_pick_history(vip->vip_id, in, &hist);
	be = bpf_map_lookup_elem(&backends, &cur);
	if (!be || !backend_is_source(be, outer)) {
		if (!esc_source_before(first, hist, cur, outer))
			goto stranger;
		if (!bounce_tag_ok(ctx, outer, in, 1))
			goto forged;
		if (es)
			es->forwarded += 1;
		next = cur;
		in->outer_id = BALLAST_ENCAP_ID_PROBE;
		goto send;
	}
	if (!bounce_tag_ok(ctx, outer, in, 1))
		goto forged;
	hops = f->reserved & 0xff;
	next = BALLAST_INVALID_ID;
	if (hops < BALLAST_ESC_HOPS_MAX)
		next = esc_next(first, hist, cur, es);
	else if (es)
		es->budget += 1;
	if (next != BALLAST_INVALID_ID) {
		if (es)
			es->moved += 1;
		in->outer_id = BALLAST_ENCAP_ID_PROBE;
	} else {
		/* Nobody in the history holds it: as if this path did not
		 * exist, the table's pick answers (a RST for a stray packet). */
		if (es && hops < BALLAST_ESC_HOPS_MAX)
			es->returned += 1;
		next = first;
		in->outer_id = 0;
		f->flags &= ~BALLAST_FLOW_F_HISTORY;
	}
	f->backend_id = next;
	f->reserved = (f->reserved & ~0xffu) | ((hops + 1) & 0xffu);
	be = bpf_map_lookup_elem(&backends, &next);
send:
	if (next == BALLAST_INVALID_ID || !backend_usable(be)) {
		vip_account(vip->vip_id, 0, 1);
		return BALLAST_V_DROP_NO_BACKEND;
	}
	*vipp = vip;
	*idp = next;
	*bep = be;
	return BALLAST_V_MAX;
stranger:
	if (es)
		es->stranger += 1;
	return BALLAST_V_DROP_BOUNCE_STRANGER;
forged:
	/* One guess per flow: it stays where it is, and probes no more (a
	 * flow on probation stays in `adopted_flows`). */
	f->flags &= ~(BALLAST_FLOW_F_HISTORY | BALLAST_FLOW_F_PROBATION);
	return BALLAST_V_DROP_BOUNCE_FORGED;
}

/* Takes the bounce in `outer` (tunnel_to_router() is true): on success
 * fills `in` (the inner SYN, outer_id set for the last hop), *vipp, *idp
 * and *bep (the next choice, ACTIVE), rewrites the handshake slot and
 * returns BALLAST_V_MAX; the caller forwards `in`. Otherwise returns the
 * verdict to drop the packet with (counted on the VIP where one is known).
 * `*now` is 0 or the precise clock; it is the precise clock on return. */
static __always_inline __u32 bounce_take(struct xdp_md *ctx, const struct pkt *outer,
					 const struct ballast_settings *s, struct pkt *in,
					 const struct ballast_vip_meta **vipp, __u32 *idp,
					 struct ballast_backend **bep, __u64 *now, int *est)
{
	struct ballast_backend_bounces *bb;
	struct ballast_handshake_set *set;
	const struct ballast_vip_meta *vip;
	struct ballast_handshake *h;
	struct ballast_backend *be;
	__u32 last, first, next, bounces, v;

	if (bounce_parse(ctx, outer, in))
		return BALLAST_V_DROP_BOUNCE_BAD;
	if (!is_pure_syn(in)) {
		/* any other TCP packet but a SYN: established second chance */
		if (in->tcp_flags & TCP_SYN)
			return BALLAST_V_DROP_BOUNCE_BAD;
		*est = 1;
		return bounce_take_est(ctx, outer, in, vipp, idp, bep, now);
	}
	vip = bounce_vip(in, now, &v);
	if (!vip)
		return v;
	if (!*now)
		*now = clock_precise();

	set = handshake_set_of(in);
	/* The bounce carries the client's SYN as it was sent: its ISN too. */
	h = set ? handshake_find(set, in, s, *now, HS_SEQ_SYN) : 0;
	if (!h)
		return BALLAST_V_DROP_BOUNCE_STRANGER;
	last = h->backend_id;
	be = bpf_map_lookup_elem(&backends, &last);
	if (!be || !backend_is_source(be, outer))
		return BALLAST_V_DROP_BOUNCE_STRANGER;
	if (h->bounces >= BALLAST_BOUNCES_MAX)
		return BALLAST_V_DROP_BOUNCE_BUDGET;
	if (!bounce_tag_ok(ctx, outer, in, 0)) {
		/* One guess per handshake: no more bounces of it are taken
		 * (the client's retransmission starts it afresh). */
		*(__u64 *)&h->hash =
			in->hash | (__u64)(last | (__u32)BALLAST_BOUNCES_MAX << 16) << 32;
		return BALLAST_V_DROP_BOUNCE_FORGED;
	}
	/* A refusal counts against the backend only when another backend
	 * takes the connection, at its completing ACK (refusals_confirm, or
	 * handshake_reopened for a SYN that came on an established flow of
	 * that backend: a reused port, syn_keeps_flow). Nor does the bounce
	 * end such a flow: the client's completing ACK moves it, and a client
	 * that goes on with the old connection keeps it where it is. */

	first = maglev_pick(vip->vip_id, in);
	next = first == BALLAST_INVALID_ID ? first
					   : maglev_next_choice(vip->vip_id, in, first, last);
	be = bpf_map_lookup_elem(&backends, &next);
	if (next == BALLAST_INVALID_ID || !be || be->state != BALLAST_BACKEND_ACTIVE) {
		vip_account(vip->vip_id, 0, 1);
		return BALLAST_V_DROP_NO_BACKEND;
	}
	/* No other choice: back to the one that refused, as its last hop. */
	bounces = next == last ? BALLAST_BOUNCES_MAX : h->bounces + 1u;
	*(__u64 *)&h->hash = in->hash | (__u64)(next | bounces << 16) << 32;
	in->outer_id = bounces >= BALLAST_BOUNCES_MAX ? BALLAST_ENCAP_ID_LAST : 0;
	bb = backend_bounces_of(next);
	if (bb)
		bb->received += 1;
	*vipp = vip;
	*idp = next;
	*bep = be;
	return BALLAST_V_MAX;
}

#endif /* BALLAST_BOUNCE_H */
