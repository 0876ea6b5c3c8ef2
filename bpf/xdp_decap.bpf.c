// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ballast backend-side decapsulation.
 *
 * Runs on a backend's NIC. A packet that the lb program encapsulated to this
 * host (IPv4-in-IPv4, IPv6-in-IPv6 or IPv4-in-IPv6; or the same with a UDP
 * header between the two, GUE, to the port decap_policy[1] gives) and whose
 * outer destination is one of the addresses in `decap_addrs` loses its
 * outer IP (and UDP) header here; the Ethernet header (and one 802.1Q tag,
 * if present) is kept with the inner packet's ethertype, and the inner
 * packet goes up the stack as if it had arrived unencapsulated (the VIP is
 * configured on loopback).
 *
 *   encapsulated, for us, inner header present  -> strip, XDP_PASS  (decapped,
 *                                                  GUE: decapped_gue)
 *   encapsulated, for us, inner header missing   -> XDP_DROP         (bad_inner)
 *   IPv4 outer for us, checksum or length wrong  -> XDP_DROP         (bad_outer)
 *   GUE for us, UDP length wrong, inner not IP    -> XDP_DROP         (bad_outer)
 *   for us, outer source not in decap_sources    -> XDP_DROP         (bad_source)
 *   for us, inner destination not in decap_vips  -> XDP_DROP         (not_vip)
 *   for us, to a VIP address, but not a port,
 *     protocol or ICMP error the routers send it -> XDP_DROP         (unserved)
 *   for us, a pure TCP SYN no socket here takes   -> XDP_TX back      (bounced)
 *     ... marked by the router as the last hop    -> strip, XDP_PASS  (refused)
 *   for us, another TCP packet with the probe
 *     mark that no socket here holds              -> XDP_TX back      (bounced_est)
 *   (tc egress) the kernel's RST to a SYN passed
 *     up for a listener that went                 -> TC_ACT_SHOT      (rst_held)
 *   (tc egress) a TIME_WAIT's ACK to a refused SYN -> made its RST    (tw_refused)
 *   anything else                                 -> XDP_PASS as is   (pass)
 *
 * Second chance (bpf/lib/bounce.h is the router's half): a client's SYN
 * that no socket on this host would take (no listener on VIP:port, no
 * request socket of the tuple; bpf_skc_lookup_tcp; a tuple in TIME_WAIT
 * counts only with a listener) would be answered with a RST (or an ACK of
 * the old connection). Unless the router marked it as the last hop
 * (BALLAST_ENCAP_ID_LAST in the outer IPv4 identification,
 * BALLAST_FLOW_LABEL_LAST in the outer IPv6 flow label), it goes back to
 * the router instead, encapsulated as it came with the outer addresses and
 * MACs swapped (GUE: its UDP ports as they were), and the router sends it
 * to the flow's next backend.
 * BALLAST_DECAP_NO_BOUNCE turns this off.
 *
 * Established second chance is the same for a packet of a connection that
 * the router adopted mid-stream onto a slot whose backend changed since the
 * connection began (ECMP moved it from another router): the router marks
 * such packets (the probe mark: any outer IPv4 identification but 0 and
 * the last-hop mark, an outer IPv6 flow label with
 * BALLAST_FLOW_LABEL_PROBE_BIT; mark.h) for a short while, and one that no connection here holds
 * (no established or request socket of its tuple: nothing, or a TIME_WAIT of a connection that
 * ended; no listener taking its SYN cookie) goes back too; the router sends
 * it to the slot's previous backend. Unmarked
 * packets other than SYNs are never looked up.
 *
 * A SYN passed up because a listener would take it may still be refused: a
 * server that dies closes its listener last (after the connections it
 * accepted, whose clients reconnect at once), and if the listener goes
 * between this program's lookup and TCP's, the kernel answers RST. So such
 * a SYN is noted in `decap_syns`, and tc_decap_rst, on the same device's
 * egress, drops the kernel's RST to it (rst_held): the client retransmits
 * its SYN a second later, and that one finds no listener here and is
 * bounced. A last-hop SYN is not noted for this (there is no other backend
 * to try).
 *
 * The last hop's refusal can miss too: when the tuple is in TIME_WAIT here
 * (the client reused a port) and no listener takes the SYN, the kernel
 * answers with an ACK of the old connection, not a RST; the client answers
 * that with a RST (which the router sends to the flow's first choice, not
 * here), sends its SYN again, gets the same ACK, and then waits a second.
 * So such a SYN is noted too, and tc_decap_rst rewrites that ACK into the
 * RST the kernel would send with no socket at all (tw_refused).
 *
 * The source and VIP checks are on once their set has been given (decap_policy):
 * with them, only the routers can send packets through the tunnel, and only
 * what they send to the VIPs this host serves (decap_vips.h: a served
 * protocol and port, an ICMP error about one); without them it is an open
 * tunnel.
 *
 * Outer fragments of tunnelled packets to this host are dropped (frag):
 * the routers never send one. Not handled (passed untouched): outer IPv6
 * extension headers other than a fragment header, QinQ. The outer IPv4 header is checked as the
 * kernel's ip_rcv would (header checksum, total length within the frame): its check is skipped for
 * the packets this program strips. IPv6 has no header checksum.
 *
 * The maps are not pinned: they live as long as the program is attached.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "ballast_abi.h"
#include "counter.h"
#include "csum.h"
#include "mark.h"

#define DECAP_MAX_ADDRS 256

#ifndef ETH_P_8021Q
#define ETH_P_8021Q 0x8100
#endif

struct vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

/* Local addresses that encapsulated traffic may be sent to. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DECAP_MAX_ADDRS);
	__type(key, struct ballast_decap_addr);
	__type(value, __u32);
} decap_addrs SEC(".maps");

/* Outer sources allowed to send encapsulated packets here (prefixes). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, DECAP_MAX_ADDRS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ballast_decap_prefix);
	__type(value, __u32);
} decap_sources SEC(".maps");

/* [0]: BALLAST_DECAP_CHECK_* bits; [1]: the UDP port GUE packets arrive
 * on (host order), 0 = GUE not accepted. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} decap_policy SEC(".maps");

/* enum ballast_decap_verdict -> packets. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BALLAST_DECAP_V_MAX);
	__type(key, __u32);
	__type(value, __u64);
} decap_stats SEC(".maps");

static __always_inline int count(__u32 verdict, int action)
{
	return count_verdict(&decap_stats, verdict, action);
}

#include "decap_syns.h"	  /* decap_syns, syn_note(), tc_decap_rst (uses count()) */
#include "decap_socket.h" /* syn_has_socket(), est_has_socket() */
#include "decap_vips.h"	  /* decap_vips, inner_served() */

static __always_inline int is_local(const void *addr, __u32 len, __u8 family)
{
	struct ballast_decap_addr key = {};

	__builtin_memcpy(key.addr, addr, 16);
	if (len == 4)
		__builtin_memset(key.addr + 4, 0, 12);
	key.family = family;
	return bpf_map_lookup_elem(&decap_addrs, &key) != NULL;
}

static __always_inline __u32 policy_flags(void)
{
	__u32 zero = 0, *f = bpf_map_lookup_elem(&decap_policy, &zero);

	return f ? *f : 0;
}

/* The GUE port in network order, or 0 when GUE is not accepted. */
static __always_inline __u16 gue_port(void)
{
	__u32 one = 1, *p = bpf_map_lookup_elem(&decap_policy, &one);

	return p && *p ? bpf_htons((__u16)*p) : 0;
}

/* The GUE packet whose outer header (`outer_len` bytes, ending in its UDP
 * header) follows the L2 header: the IP version of the inner packet (its
 * first nibble) as an ethertype, or 0 when the UDP length does not match
 * `udp_len` or the inner packet is neither IPv4 nor IPv6. */
static __always_inline __u16 gue_inner(void *data, void *data_end, __u32 l2_len, __u32 outer_len,
				       __u32 udp_len)
{
	struct udphdr *uh = data + ((l2_len + outer_len - sizeof(*uh)) & 0x7F);
	__u8 *ver = data + ((l2_len + outer_len) & 0x7F);

	if ((void *)(uh + 1) > data_end || (void *)(ver + 1) > data_end ||
	    bpf_ntohs(uh->len) != udp_len)
		return 0;
	if (*ver >> 4 == 4)
		return ETH_P_IP;
	if (*ver >> 4 == 6)
		return ETH_P_IPV6;
	return 0;
}

/* May `addr` (outer source) send encapsulated packets here? */
static __always_inline int source_ok(const void *addr, __u32 len, __u8 family, __u32 flags)
{
	struct ballast_decap_prefix key = {};

	if (!(flags & BALLAST_DECAP_CHECK_SOURCE))
		return 1;
	key.family = family;
	if (len == 4) {
		__builtin_memcpy(key.addr, addr, 4);
		key.prefixlen = 8 + 32;
	} else {
		__builtin_memcpy(key.addr, addr, 16);
		key.prefixlen = 8 + 128;
	}
	return bpf_map_lookup_elem(&decap_sources, &key) != NULL;
}

/* Is a complete inner header of `inner_proto` (ETH_P_IP / ETH_P_IPV6) at
 * data + off? */
static __always_inline int inner_ok(void *data, void *data_end, __u32 off, __u16 inner_proto)
{
	if (inner_proto == ETH_P_IP) {
		struct iphdr *ip = data + off;

		if ((void *)(ip + 1) > data_end)
			return 0;
		return ip->version == 4 && ip->ihl >= 5 && (void *)ip + ip->ihl * 4 <= data_end;
	}
	struct ipv6hdr *ip6 = data + off;

	if ((void *)(ip6 + 1) > data_end)
		return 0;
	return ip6->version == 6;
}

/* Does the outer IPv4 header (ihl >= 5 already checked) sum to zero, and does
 * its total length cover its header and fit in the frame? The header is at
 * most 60 bytes: the loop is unrolled with a condition rather than a break
 * (a loop bounded by ihl is turned into pointer arithmetic the verifier
 * refuses). */
static __always_inline int outer4_ok(const struct iphdr *ip, void *data_end)
{
	const __u16 *w = (const __u16 *)ip;
	__u32 words = ip->ihl * 2, tot = bpf_ntohs(ip->tot_len);
	__u64 sum = 0;

	if (tot < words * 2 || tot > (__u32)(data_end - (void *)ip))
		return 0;
#pragma unroll
	for (__u32 i = 0; i < 30; i++) {
		if (i < words) {
			if ((void *)(w + i + 1) > data_end)
				return 0;
			sum += w[i];
		}
	}
	return csum_fold(sum) == 0;
}

#define BOUNCE_TTL 64

/* Sends the frame back where it came from: outer addresses, MACs swapped,
 * a fresh TTL (the IPv4 checksum updated for it; swapping the addresses
 * does not change it). Counted as `v`. */
static __always_inline int bounce(struct xdp_md *ctx, __u32 l2_len, int outer_v4, __u32 v)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 mac[6];

	if ((void *)(eth + 1) > data_end)
		return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);
	__builtin_memcpy(mac, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, mac, 6);
	if (outer_v4) {
		struct iphdr *ip = data + (l2_len & 0x1F);
		__u32 a;
		__u16 old;

		if ((void *)(ip + 1) > data_end)
			return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);
		a = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = a;
		old = *(__u16 *)&ip->ttl;
		ip->ttl = BOUNCE_TTL;
		ip->check = csum_fold((__u64)(__u16)~ip->check + (__u16)~old + *(__u16 *)&ip->ttl);
	} else {
		struct ipv6hdr *ip6 = data + (l2_len & 0x1F);
		struct in6_addr a;

		if ((void *)(ip6 + 1) > data_end)
			return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);
		a = ip6->saddr;
		ip6->saddr = ip6->daddr;
		ip6->daddr = a;
		ip6->hop_limit = BOUNCE_TTL;
	}
	return count(v, XDP_TX);
}

/* Removes `outer_len` bytes of outer IP header that follow the L2 header of
 * `l2_len` bytes (14, or 18 with a VLAN tag) and sets the ethertype of the
 * L2 header to `inner_proto`; counts the packet under `v`. */
static __always_inline int strip_outer(struct xdp_md *ctx, __u32 l2_len, __u32 outer_len,
				       __u16 inner_proto, __u32 v)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr eth;
	struct vlan_hdr vlan = {};

	if (l2_len == sizeof(eth)) {
		if (data + sizeof(eth) > data_end)
			return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);
		__builtin_memcpy(&eth, data, sizeof(eth));
	} else {
		if (data + sizeof(eth) + sizeof(vlan) > data_end)
			return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);
		__builtin_memcpy(&eth, data, sizeof(eth));
		__builtin_memcpy(&vlan, data + sizeof(eth), sizeof(vlan));
	}

	if (bpf_xdp_adjust_head(ctx, (int)outer_len))
		return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (l2_len == sizeof(eth)) {
		struct ethhdr *neth = data;

		if ((void *)(neth + 1) > data_end)
			return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);
		__builtin_memcpy(neth, &eth, sizeof(eth));
		neth->h_proto = bpf_htons(inner_proto);
	} else {
		struct ethhdr *neth = data;
		struct vlan_hdr *nvlan = data + sizeof(*neth);

		if ((void *)(nvlan + 1) > data_end)
			return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);
		__builtin_memcpy(neth, &eth, sizeof(eth));
		nvlan->tci = vlan.tci;
		nvlan->encap_proto = bpf_htons(inner_proto);
	}
	return count(v, XDP_PASS);
}

/* The second-chance step for an encapsulated packet that passed every
 * check: returns -1 to strip it as usual, else the action taken. `mark`:
 * the router's mark (mark.h: MARK_LAST, the last hop; MARK_PROBE, a packet
 * other than a SYN that may be bounced; a SYN is whatever its mark, unless
 * it is the last hop). */
static __always_inline int second_chance(struct xdp_md *ctx, __u32 l2_len, __u32 outer_len,
					 __u16 inner_proto, __u32 flags, int outer_v4, __u32 mark)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ballast_decap_syn syn; /* written by syn_has_socket when it asks */
	int has, last = mark == MARK_LAST;

	if (flags & BALLAST_DECAP_NO_BOUNCE)
		return -1;
	if (mark == MARK_PROBE) {
		/* established second chance: not ours, back to the router */
		has = est_has_socket(ctx, data, data_end, l2_len + outer_len, inner_proto);
		if (has == 0)
			return bounce(ctx, l2_len, outer_v4, BALLAST_DECAP_V_BOUNCED_EST);
		if (has > 0)
			return -1;
	}
	has = syn_has_socket(ctx, data, data_end, l2_len + outer_len, inner_proto, &syn);
	if (has == SYN_LISTENER && !last)
		syn_note(&syn, BALLAST_DECAP_SYN_HOLD);
	if (has != 0 && has != SYN_TIME_WAIT)
		return -1;
	/* no socket here would take it */
	if (!last)
		return bounce(ctx, l2_len, outer_v4, BALLAST_DECAP_V_BOUNCED);
	/* passed up: the kernel answers RST (counted apart from decapped), or,
	 * in TIME_WAIT, an ACK that tc_decap_rst turns into that RST */
	if (has == SYN_TIME_WAIT)
		syn_note(&syn, BALLAST_DECAP_SYN_REFUSE);
	return strip_outer(ctx, l2_len, outer_len, inner_proto, BALLAST_DECAP_V_REFUSED);
}

static __always_inline int decap_ipv4(struct xdp_md *ctx, __u32 l2_len)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + l2_len;
	__u32 outer_len, flags, v;
	int action, gue = 0;

	if ((void *)(ip + 1) > data_end)
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	if (ip->version != 4 || ip->ihl < 5)
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *uh = (void *)ip + ip->ihl * 4;

		__u16 port = gue_port();

		/* GUE: UDP to the GUE port (its checksum is not checked) */
		if ((void *)(uh + 1) > data_end || !port || uh->dest != port)
			return count(BALLAST_DECAP_V_PASS, XDP_PASS);
		gue = 1;
	} else if (ip->protocol != IPPROTO_IPIP) {
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	}
	if (!is_local(&ip->daddr, 4, BALLAST_FAMILY_V4))
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	/* A fragment of a tunnelled packet: never the routers' (see
	 * BALLAST_DECAP_V_FRAG), and not to be left to the kernel's
	 * reassembly and decapsulation past the checks below. */
	if (ip->frag_off & bpf_htons(0x3fff))
		return count(BALLAST_DECAP_V_FRAG, XDP_DROP);
	if (!outer4_ok(ip, data_end))
		return count(BALLAST_DECAP_V_BAD_OUTER, XDP_DROP);
	outer_len = ip->ihl * 4;
	if (gue) {
		/* the router sends IPv4 only inside IPv4 */
		outer_len += sizeof(struct udphdr);
		if (gue_inner(data, data_end, l2_len, outer_len,
			      bpf_ntohs(ip->tot_len) - ip->ihl * 4) != ETH_P_IP)
			return count(BALLAST_DECAP_V_BAD_OUTER, XDP_DROP);
	}
	if (!inner_ok(data, data_end, l2_len + outer_len, ETH_P_IP))
		return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);
	flags = policy_flags();
	if (!source_ok(&ip->saddr, 4, BALLAST_FAMILY_V4, flags))
		return count(BALLAST_DECAP_V_BAD_SOURCE, XDP_DROP);
	v = inner_served(data, data_end, l2_len + outer_len, ETH_P_IP, flags);
	if (v != BALLAST_DECAP_V_MAX)
		return count(v, XDP_DROP);
	action = second_chance(ctx, l2_len, outer_len, ETH_P_IP, flags, 1,
			       mark_of_id(bpf_ntohs(ip->id)));
	if (action >= 0)
		return action;
	return strip_outer(ctx, l2_len, outer_len, ETH_P_IP,
			   gue ? BALLAST_DECAP_V_DECAPPED_GUE : BALLAST_DECAP_V_DECAPPED);
}

/* The IPv6 fragment header (RFC 8200 4.5). */
struct decap_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off; /* offset in 8-byte units (upper 13 bits), M flag (bit 0) */
	__be32 identification;
};

static __always_inline int decap_ipv6(struct xdp_md *ctx, __u32 l2_len)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6 = data + l2_len;
	__u32 flags, label, v, outer_len = sizeof(*ip6);
	__u16 inner_proto;
	int action;

	if ((void *)(ip6 + 1) > data_end)
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	if (ip6->version != 6)
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	if (ip6->nexthdr == IPPROTO_IPV6) {
		inner_proto = ETH_P_IPV6;
	} else if (ip6->nexthdr == IPPROTO_IPIP) {
		inner_proto = ETH_P_IP;
	} else if (ip6->nexthdr == IPPROTO_UDP) {
		struct udphdr *uh = (void *)(ip6 + 1);

		__u16 port = gue_port();

		/* GUE: UDP to the GUE port (its checksum is not checked) */
		if ((void *)(uh + 1) > data_end || !port || uh->dest != port)
			return count(BALLAST_DECAP_V_PASS, XDP_PASS);
		inner_proto = 0;
		outer_len += sizeof(*uh);
	} else if (ip6->nexthdr == IPPROTO_FRAGMENT) {
		/* A fragment of IP-in-IPv6 (any of them) or of GUE (the first:
		 * the later ones carry no port) to this host: see
		 * BALLAST_DECAP_V_FRAG. */
		struct decap_frag_hdr *fh = (void *)(ip6 + 1);
		struct udphdr *uh = (void *)(fh + 1);
		__u16 port = gue_port();

		if ((void *)(fh + 1) > data_end || !is_local(&ip6->daddr, 16, BALLAST_FAMILY_V6))
			return count(BALLAST_DECAP_V_PASS, XDP_PASS);
		if (fh->nexthdr == IPPROTO_IPV6 || fh->nexthdr == IPPROTO_IPIP ||
		    (fh->nexthdr == IPPROTO_UDP && (fh->frag_off & bpf_htons(0xfff8)) == 0 &&
		     (void *)(uh + 1) <= data_end && port && uh->dest == port))
			return count(BALLAST_DECAP_V_FRAG, XDP_DROP);
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	} else {
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	}
	if (!is_local(&ip6->daddr, 16, BALLAST_FAMILY_V6))
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	if (!inner_proto) {
		inner_proto =
		    gue_inner(data, data_end, l2_len, outer_len, bpf_ntohs(ip6->payload_len));
		if (!inner_proto)
			return count(BALLAST_DECAP_V_BAD_OUTER, XDP_DROP);
	}
	if (!inner_ok(data, data_end, l2_len + outer_len, inner_proto))
		return count(BALLAST_DECAP_V_BAD_INNER, XDP_DROP);
	flags = policy_flags();
	if (!source_ok(&ip6->saddr, 16, BALLAST_FAMILY_V6, flags))
		return count(BALLAST_DECAP_V_BAD_SOURCE, XDP_DROP);
	v = inner_served(data, data_end, l2_len + outer_len, inner_proto, flags);
	if (v != BALLAST_DECAP_V_MAX)
		return count(v, XDP_DROP);
	label = (__u32)(ip6->flow_lbl[0] & 0x0f) << 16 | (__u32)ip6->flow_lbl[1] << 8 |
		ip6->flow_lbl[2];
	action = second_chance(ctx, l2_len, outer_len, inner_proto, flags, 0, mark_of_label(label));
	if (action >= 0)
		return action;
	return strip_outer(ctx, l2_len, outer_len, inner_proto,
			   outer_len > sizeof(*ip6) ? BALLAST_DECAP_V_DECAPPED_GUE /* UDP too */
						    : BALLAST_DECAP_V_DECAPPED);
}

SEC("xdp")
int xdp_decap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 l2_len = sizeof(*eth);
	__u16 proto;

	if ((void *)(eth + 1) > data_end)
		return count(BALLAST_DECAP_V_PASS, XDP_PASS);
	proto = bpf_ntohs(eth->h_proto);
	if (proto == ETH_P_8021Q) {
		struct vlan_hdr *vlan = (void *)(eth + 1);

		if ((void *)(vlan + 1) > data_end)
			return count(BALLAST_DECAP_V_PASS, XDP_PASS);
		proto = bpf_ntohs(vlan->encap_proto);
		l2_len += sizeof(*vlan);
	}
	if (proto == ETH_P_IP)
		return decap_ipv4(ctx, l2_len);
	if (proto == ETH_P_IPV6)
		return decap_ipv6(ctx, l2_len);
	return count(BALLAST_DECAP_V_PASS, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
