// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ballast lb: the router-side XDP program.
 *
 *   parse → VIP lookup → connection table / Maglev → encapsulate → next hop
 *
 * The logic lives in lib/, one header per concern; this file only orders the
 * steps. Every packet ends in exactly one verdict counter (enum
 * ballast_verdict). docs/dataplane.md is the written policy for each case.
 */
#include "common.h"
#include "clock.h"
#include "maps.h"
#include "parse.h"
#include "stats.h"
#include "vip.h"
#include "maglev.h"
#include "conntrack.h"
#include "csum.h"
#include "encap.h"
#include "fib.h"
#include "icmp.h"
#include "bounce.h"
#include "quic.h"

/* Encapsulates the packet to `backend_id` (whose entry `be` the caller
 * looked up and found in use) and sends it on its way. The verdicts used
 * are fwd_tx / fwd_redirect, so ICMP errors forwarded to a backend are
 * counted apart from client traffic. `now` is the coarse clock (or the
 * precise one where the caller had read it). */
static __always_inline int forward(struct xdp_md *ctx, struct pkt *p,
				   const struct ballast_vip_meta *vip, __u32 backend_id,
				   const struct ballast_backend *be,
				   const struct ballast_settings *s, __u64 now, __u32 fwd_tx,
				   __u32 fwd_redirect)
{
	/* written by nexthop_get() on NEXTHOP_NO_NEIGH only */
	struct ballast_neigh_meta unresolved;
	struct ballast_backend_stats *bs;
	struct ballast_nexthop *nh = 0;
	enum nexthop_result nr;
	__u8 smac[6], dmac[6];
	__u32 overhead, mtu = 0;

	if (p->key.family == BALLAST_FAMILY_V6 && be->family == BALLAST_FAMILY_V4) {
		vip_account(vip->vip_id, 0, 1);
		return verdict(BALLAST_V_DROP_FAMILY, XDP_DROP);
	}
	if (be->family == BALLAST_FAMILY_V4 ? s->src4[0] == 0 : s->src6[0] == 0) {
		vip_account(vip->vip_id, 0, 1);
		return verdict(BALLAST_V_DROP_NO_SETTINGS, XDP_DROP);
	}

	nr = nexthop_get(ctx, backend_id, be, s, now, &nh, &unresolved, &mtu);
	if (nr == NEXTHOP_FAIL || (nr == NEXTHOP_OK && !nh)) {
		vip_account(vip->vip_id, 0, 1);
		return verdict(BALLAST_V_DROP_FIB, XDP_DROP);
	}

	/* the next hop's MTU; an unresolved one's came with the lookup */
	if (nh)
		mtu = nh->mtu;
	overhead = encap_overhead(be, vip->flags);
	if (mtu && p->ip_len + overhead > mtu) {
		vip_account(vip->vip_id, 0, 1);
		if ((s->policy & BALLAST_POLICY_ICMP_TOO_BIG) && p->df && fwd_tx == BALLAST_V_TX &&
		    mtu > overhead && icmp_can_answer(p) && icmp_budget_take() &&
		    icmp_send_too_big(ctx, p, mtu - overhead) == 0)
			return verdict(BALLAST_V_ICMP_TOO_BIG_SENT, XDP_TX);
		return verdict(BALLAST_V_DROP_TOO_BIG, XDP_DROP);
	}

	bs = backend_stats_of(backend_id);
	if (bs) {
		bs->packets += 1;
		bs->bytes += p->ip_len;
	}
	vip_account(vip->vip_id, p->ip_len, 0);

	if (nr == NEXTHOP_NO_NEIGH) {
		void *data = (void *)(long)ctx->data;
		void *data_end = (void *)(long)ctx->data_end;
		struct ethhdr *eth = data;

		if ((void *)(eth + 1) > data_end)
			return verdict(BALLAST_V_DROP_ENCAP, XDP_DROP);
		__builtin_memcpy(smac, eth->h_source, 6);
		__builtin_memcpy(dmac, eth->h_dest, 6);
	}

	if (encap_push(ctx, p, be, s, vip->flags, mark_prepare(p, be)))
		return verdict(BALLAST_V_DROP_ENCAP, XDP_DROP);

	if (nr == NEXTHOP_NO_NEIGH) {
		/* Hand the encapsulated packet to tc_neigh on this device,
		 * which has the kernel resolve the neighbour and send it;
		 * later packets take the fast path. The frame keeps the
		 * addresses it arrived with. */
		if (set_macs(ctx, smac, dmac))
			return verdict(BALLAST_V_DROP_ENCAP, XDP_DROP);
		if (xdp_meta_ok ? neigh_meta_put(ctx, &unresolved)
				: neigh_handoff_put(ctx, &unresolved,
						    be->family == BALLAST_FAMILY_V4 ? 20 : 40))
			return verdict(BALLAST_V_DROP_NO_NEIGH, XDP_DROP);
		return verdict(BALLAST_V_PASS_FIB_NO_NEIGH, XDP_PASS);
	}
	if (!nh || set_macs(ctx, nh->smac, nh->dmac))
		return verdict(BALLAST_V_DROP_ENCAP, XDP_DROP);
	if (nh->ifindex == ctx->ingress_ifindex)
		return verdict(fwd_tx, XDP_TX);
	return verdict(fwd_redirect, bpf_redirect(nh->ifindex, 0));
}

/* An owned VIP past its owner deadline (vip_fenced): nothing of it is
 * forwarded. Dropped rather than passed: the router does not own the VIP
 * address, so its kernel could only forward the packet by its routes (back
 * towards the clients' side, or into a loop) or answer with ICMP errors;
 * the client retransmits until routing brings it to the new owner. */
static __always_inline int fenced(const struct ballast_vip_meta *vip)
{
	vip_account_fenced(vip->vip_id);
	return verdict(BALLAST_V_DROP_FENCED, XDP_DROP);
}

/* A packet that no VIP serves: the kernel's if its destination is not a
 * VIP address. To a VIP address (another port or protocol) it is dropped:
 * the router does not own the address, so its kernel would route the
 * packet back out by its default route, to the ToR, which sends it to a
 * router again, until the TTL runs out (one packet crossing the ToR 64
 * times). Only the marker lookup is added, on the miss path. */
static __always_inline int unserved(const struct pkt *p)
{
	if (!is_vip_addr(p->key.dst, p->key.family))
		return verdict(BALLAST_V_PASS_NOT_VIP, XDP_PASS);
	return verdict(BALLAST_V_DROP_VIP_UNSERVED, XDP_DROP);
}

/* ICMP/ICMPv6 to a VIP address: errors about a VIP flow go to the flow's
 * backend; anything else is dropped (see unserved()). */
static __always_inline int handle_icmp(struct xdp_md *ctx, struct pkt *p,
				       const struct ballast_settings *s, __u64 now)
{
	struct ballast_flow_key inner;
	struct ballast_vip_meta *vip;
	struct ballast_backend *be;
	int err;
	__u32 id;
	__u64 t;

	if (!is_vip_addr(p->key.dst, p->key.family))
		return verdict(BALLAST_V_PASS_NOT_VIP, XDP_PASS);
	err = p->key.family == BALLAST_FAMILY_V4 ? icmp4_is_error(p->icmp_type)
						 : icmp6_is_error(p->icmp_type);
	if (!err)
		return verdict(BALLAST_V_DROP_ICMP_NOT_ERR, XDP_DROP);
	if (icmp_header_short(ctx, p))
		return verdict(BALLAST_V_DROP_BAD_L4, XDP_DROP);
	if (icmp_error_flow(ctx, p, &inner))
		return verdict(BALLAST_V_DROP_ICMP_UNMATCHED, XDP_DROP);
	p->key = inner; /* from here on, the flow the error is about */
	p->has_hash = 0;
	vip = vip_lookup(p->key.dst, p->key.family, p->key.dport, p->key.proto);
	if (!vip)
		return verdict(BALLAST_V_DROP_ICMP_UNMATCHED, XDP_DROP);
	if (vip_fenced(vip, &t))
		return fenced(vip);
	id = conntrack_peek(vip, p, s);
	be = bpf_map_lookup_elem(&backends, &id);
	if (id == BALLAST_INVALID_ID || !be || be->state == BALLAST_BACKEND_UNUSED) {
		vip_account(vip->vip_id, 0, 1);
		return verdict(BALLAST_V_DROP_NO_BACKEND, XDP_DROP);
	}
	return forward(ctx, p, vip, id, be, s, now, BALLAST_V_ICMP_FWD_TX,
		       BALLAST_V_ICMP_FWD_REDIRECT);
}

/* An encapsulated packet addressed to this router: a backend's second-chance
 * bounce (bpf/lib/bounce.h) is sent on to the flow's next choice (a SYN) or
 * to the previous backend of its slot (a packet of an established flow);
 * anything else is dropped and counted. */
static __always_inline int handle_bounce(struct xdp_md *ctx, const struct pkt *outer,
					 const struct ballast_settings *s)
{
	const struct ballast_vip_meta *vip = 0;
	struct ballast_backend *be = 0;
	struct pkt in = {};
	__u64 now = 0;
	__u32 id = BALLAST_INVALID_ID, v;
	int est = 0;

	v = bounce_take(ctx, outer, s, &in, &vip, &id, &be, &now, &est);
	if (v != BALLAST_V_MAX || !vip || !be)
		return verdict(v, XDP_DROP);
	/* one call of forward() for both: each inlined copy costs the verifier */
	return forward(ctx, &in, vip, id, be, s, now, est ? BALLAST_V_ESC_TX : BALLAST_V_BOUNCE_TX,
		       est ? BALLAST_V_ESC_REDIRECT : BALLAST_V_BOUNCE_REDIRECT);
}

SEC("xdp")
int xdp_lb(struct xdp_md *ctx)
{
	const struct ballast_vip_meta *vip = 0;
	struct ballast_settings *s;
	struct ballast_backend *be = 0;
	struct ballast_flow *f = 0;
	struct pkt p = {};
	enum parse_result r;
	__u32 zero = 0, id;
	enum flow_class cls = FLOW_SEEN;
	int looked_up = 0, l4_bad, syn;
	__u64 now;

	s = bpf_map_lookup_elem(&settings, &zero);
	r = parse_packet(ctx, &p);
	switch (r) {
	case PARSE_OK:
		break;
	case PARSE_NOT_IP:
		return verdict(BALLAST_V_PASS_NOT_IP, XDP_PASS);
	case PARSE_BAD_ETH:
		return malformed(BALLAST_V_BAD_ETH, s);
	case PARSE_BAD_VLAN:
		return malformed(BALLAST_V_BAD_VLAN, s);
	case PARSE_BAD_IP4:
		return malformed(BALLAST_V_BAD_IP4, s);
	case PARSE_BAD_IP6:
		return malformed(BALLAST_V_BAD_IP6, s);
	case PARSE_OTHER_L4:
		if (tunnel_to_router(&p, s))
			return handle_bounce(ctx, &p, s);
		return unserved(&p);
	case PARSE_IP6_EXT:
		if (tunnel_to_router(&p, s))
			return handle_bounce(ctx, &p, s);
		if (!is_vip_addr(p.key.dst, p.key.family))
			return verdict(BALLAST_V_PASS_NOT_VIP, XDP_PASS);
		return verdict(BALLAST_V_IP6_EXT, XDP_DROP); /* never passed: see unserved() */
	case PARSE_FRAG:
		if (tunnel_to_router(&p, s)) /* a fragment cannot be a bounce */
			return verdict(BALLAST_V_DROP_BOUNCE_BAD, XDP_DROP);
		if (!is_vip_addr(p.key.dst, p.key.family))
			return verdict(BALLAST_V_PASS_NOT_VIP, XDP_PASS);
		return verdict(p.key.family == BALLAST_FAMILY_V4 ? BALLAST_V_DROP_FRAG4
								 : BALLAST_V_DROP_FRAG6,
			       XDP_DROP);
	case PARSE_SHORT_L4:
		if (!is_vip_addr(p.key.dst, p.key.family))
			return verdict(BALLAST_V_PASS_NOT_VIP, XDP_PASS);
		return verdict(BALLAST_V_DROP_BAD_L4, XDP_DROP);
	}

	/* A GUE bounce is UDP to the router's own address: UDP pays the check. */
	if (p.key.proto == IPPROTO_UDP && unlikely(gue_to_router(ctx, &p, s)))
		return handle_bounce(ctx, &p, s);
	if (!vip_filter_may_match(p.key.dst, p.key.family))
		return verdict(BALLAST_V_PASS_NOT_VIP, XDP_PASS);
	if (!s)
		return verdict(BALLAST_V_DROP_NO_SETTINGS, XDP_DROP); /* cannot happen: array */

	if (p.key.proto == IPPROTO_ICMP || p.key.proto == IPPROTO_ICMPV6)
		return handle_icmp(ctx, &p, s, clock_coarse());

	l4_bad = p.key.proto == IPPROTO_TCP ? parse_tcp(ctx, &p) : parse_udp(ctx, &p);
	syn = !l4_bad && p.key.proto == IPPROTO_TCP && is_pure_syn(&p);

	/* A known flow names its VIP (vip_of_flow); only other packets pay
	 * for the `vips` hash lookup. A pure SYN needs the flow too: it leaves
	 * an active one alone (syn_keeps_flow), else handshake_syn() deletes
	 * it. A TCP packet without a `flows` entry looks for its handshake slot
	 * and then for an adopted flow (conntrack_select). */
	f = bpf_map_lookup_elem(&flows, &p.key);
	if (!f && p.key.proto == IPPROTO_UDP) {
		/* After the `flows` miss, not instead of it: with two lookups
		 * on either side of one branch the compiler calls one lookup on
		 * a chosen map, which the verifier cannot inline (+10% on every
		 * established TCP packet). A UDP packet pays the miss instead
		 * (an older build's UDP flow in `flows` is used until it
		 * expires). */
		cls = FLOW_UDP;
		f = bpf_map_lookup_elem(&flows_udp, &p.key);
	}
	if (f)
		vip = vip_of_flow(f, &p.key);
	if (!vip) {
		vip = vip_lookup(p.key.dst, p.key.family, p.key.dport, p.key.proto);
		if (!vip)
			return unserved(&p);
		looked_up = 1;
	}

	/* An owned VIP past its deadline stops before anything else is done
	 * with the packet, whatever it is (SYN, established, malformed L4,
	 * TTL expiring). For an owned VIP this reads the precise clock. */
	if (vip_fenced(vip, &now))
		return fenced(vip);

	if (l4_bad) {
		vip_account(vip->vip_id, 0, 1);
		return verdict(BALLAST_V_DROP_BAD_L4, XDP_DROP);
	}
	if (p.ttl <= 1)
		return verdict(BALLAST_V_PASS_TTL, XDP_PASS);

	/* A UDP packet of a QUIC VIP whose DCID names a usable backend of the
	 * VIP goes there, whatever its 4-tuple, and leaves the flows alone
	 * (bpf/lib/quic.h); any other goes by the 4-tuple. */
	id = BALLAST_INVALID_ID;
	if (p.key.proto == IPPROTO_UDP)
		id = quic_route(ctx, p.l4_off, vip->vip_id);
	if (id != BALLAST_INVALID_ID)
		be = bpf_map_lookup_elem(&backends, &id);

	/* A packet without a flow, and a SYN, needs the precise clock for its
	 * handshake slot: read it once, as `now`. Everything else (a packet
	 * routed by its CID too) runs on the coarse clock, unless the fence
	 * check already read the precise one (owned VIP). */
	if (!now)
		now = (f && !syn) || be ? clock_coarse() : clock_precise();
	if (!be) {
		id = conntrack_select(vip, &p, s, now, f, cls, looked_up, &be);
		if (!be) {
			/* a fresh pick from the table */
			be = bpf_map_lookup_elem(&backends, &id);
			if (id == BALLAST_INVALID_ID || !backend_usable(be)) {
				vip_account(vip->vip_id, 0, 1);
				return verdict(BALLAST_V_DROP_NO_BACKEND, XDP_DROP);
			}
		}
	}
	if (unlikely(p.guarded))
		return forward(ctx, &p, vip, id, be, s, now, BALLAST_V_GUARDED_TX,
			       BALLAST_V_GUARDED_REDIRECT);
	return forward(ctx, &p, vip, id, be, s, now, BALLAST_V_TX, BALLAST_V_REDIRECT);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
