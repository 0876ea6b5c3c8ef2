// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ballast probe forwarding: tc (clsact) egress on the router's
 * backend-facing device.
 *
 * A locally generated packet whose skb mark is a probe mark (see
 * ballast_probe_abi.h) is addressed to a VIP; a policy rule routed it out
 * of this device. It is encapsulated to the backend named by its mark, the
 * same way the lb program encapsulates client traffic:
 *
 *   IPv4 probe, IPv4 backend: IPv4-in-IPv4  (outer protocol 4, DF copied)
 *   IPv6 probe, IPv6 backend: IPv6-in-IPv6  (outer next header 41)
 *   IPv4 probe, IPv6 backend: IPv4-in-IPv6  (outer next header 4)
 *   IPv6 probe, IPv4 backend: dropped (drop_family)
 *
 * A target of a VIP with `mode: GUE` (BALLAST_PROBE_F_GUE) gets a UDP header
 * between the two, as the lb program's GUE (docs/dataplane.md): outer
 * protocol / next header 17, destination port the target's gue_port, source
 * port 0xC000 | 14 bits of the probe connection's hash (its socket's
 * transmit hash: one per connection, until a retransmission timeout makes
 * the kernel pick another), checksum 0. A probe then takes the path the
 * VIP's clients take, down to the backend's GUE decapsulation: a backend
 * that takes IP-in-IP but not GUE fails the GUE VIP's probes.
 *
 * The outer source is probe_settings.src4/src6 (the router's configured
 * source); the outer IPv4 header checksum is computed here; the inner packet
 * is untouched (its L4 checksum, complete or left to the device, stays
 * valid: the outer header is inserted in front of it). The mark is cleared,
 * then the next hop towards the backend comes from bpf_fib_lookup() (a
 * forwarding lookup from this device: the router forwards, so IP forwarding
 * is on): same device -> MACs rewritten, TC_ACT_OK; another device ->
 * bpf_redirect(); neighbour unresolved -> bpf_redirect_neigh() lets the
 * kernel resolve it.
 *
 * Probes are marked as the last hop for second chance (BALLAST_ENCAP_ID_LAST
 * in the outer IPv4 identification, BALLAST_FLOW_LABEL_LAST as the outer
 * IPv6 flow label): a probe asks one backend, so a backend with no listener
 * must answer it (RST) rather than bounce it to another.
 *
 * Packets without a probe mark pass untouched. A probe-marked packet whose
 * backend is not programmed is dropped, never sent unencapsulated (it would
 * otherwise reach whatever host the policy route points at and pass there).
 * Only Ethernet devices are supported (the frame starts with an Ethernet
 * header).
 */
#include <linux/pkt_cls.h>

#include "common.h"
#include "counter.h"
#include "csum.h"
#include "ballast_probe_abi.h"

#ifndef IP_DF
#define IP_DF 0x4000
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BALLAST_PROBE_MAX_TARGETS);
	__type(key, __u32); /* skb mark */
	__type(value, struct ballast_probe_target);
} probe_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ballast_probe_settings);
} probe_settings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BALLAST_PROBE_V_MAX);
	__type(key, __u32);
	__type(value, __u64);
} probe_stats SEC(".maps");

static __always_inline int count(__u32 verdict, int action)
{
	return count_verdict(&probe_stats, verdict, action);
}

/* Writes the GUE UDP header at `off` (the outer IP header's end). */
static __always_inline int gue_store(struct __sk_buff *skb, __u32 off,
				     const struct ballast_probe_target *t, __u16 sport)
{
	struct udphdr udp = {};

	udp.source = bpf_htons(sport);
	udp.dest = bpf_htons(t->gue_port);
	udp.len = bpf_htons(skb->len - off);
	udp.check = 0; /* IPv4: none; IPv6: RFC 6935, as the lb program */
	return bpf_skb_store_bytes(skb, off, &udp, sizeof(udp), 0);
}

/* Inserts and fills the outer header(s). Returns 0 or -1. */
static __always_inline int encap(struct __sk_buff *skb, __u16 inner_proto,
				 const struct ballast_probe_target *t,
				 const struct ballast_probe_settings *s)
{
	const int gue = t->flags & BALLAST_PROBE_F_GUE;
	const __u32 udp_len = gue ? sizeof(struct udphdr) : 0;
	const __u64 l4 = gue ? BPF_F_ADJ_ROOM_ENCAP_L4_UDP : 0;
	__u16 sport = 0;
	__u8 tos = 0;
	__u16 df = 0;

	if (gue)
		/* before the room is made: the hash of the probe's own flow */
		sport = 0xC000 | (bpf_get_hash_recalc(skb) & 0x3FFF);

	if (inner_proto == ETH_P_IP) {
		struct iphdr inner;

		if (bpf_skb_load_bytes(skb, sizeof(struct ethhdr), &inner, sizeof(inner)))
			return -1;
		tos = inner.tos;
		df = inner.frag_off & bpf_htons(IP_DF);
	} else {
		struct ipv6hdr inner;

		if (bpf_skb_load_bytes(skb, sizeof(struct ethhdr), &inner, sizeof(inner)))
			return -1;
		tos = (inner.priority << 4) | (inner.flow_lbl[0] >> 4);
	}

	if (t->family == BALLAST_FAMILY_V4) {
		struct iphdr ip = {};
		__u16 proto = bpf_htons(ETH_P_IP);

		if (bpf_skb_adjust_room(skb, sizeof(ip) + udp_len, BPF_ADJ_ROOM_MAC,
					BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 | l4))
			return -1;
		ip.version = 4;
		ip.ihl = 5;
		ip.tos = tos;
		ip.tot_len = bpf_htons(skb->len - sizeof(struct ethhdr));
		ip.id = bpf_htons(BALLAST_ENCAP_ID_LAST); /* a probe: never bounced */
		ip.frag_off = df;                          /* RFC 2003: DF copied */
		ip.ttl = 64;
		ip.protocol = gue ? IPPROTO_UDP : IPPROTO_IPIP;
		__builtin_memcpy(&ip.saddr, s->src4, 4);
		__builtin_memcpy(&ip.daddr, t->addr, 4);
		ip.check = ip4_header_csum(&ip);
		if (bpf_skb_store_bytes(skb, sizeof(struct ethhdr), &ip, sizeof(ip), 0))
			return -1;
		if (gue && gue_store(skb, sizeof(struct ethhdr) + sizeof(ip), t, sport))
			return -1;
		return bpf_skb_store_bytes(skb, offsetof(struct ethhdr, h_proto), &proto,
					   sizeof(proto), 0)
			   ? -1
			   : 0;
	}

	struct ipv6hdr ip6 = {};
	__u16 proto = bpf_htons(ETH_P_IPV6);
	__u32 label = BALLAST_FLOW_LABEL_LAST; /* a probe: never bounced */

	if (bpf_skb_adjust_room(skb, sizeof(ip6) + udp_len, BPF_ADJ_ROOM_MAC,
				BPF_F_ADJ_ROOM_ENCAP_L3_IPV6 | l4))
		return -1;
	ip6.version = 6;
	ip6.priority = tos >> 4;
	ip6.flow_lbl[0] = ((tos & 0xF) << 4) | (label >> 16);
	ip6.flow_lbl[1] = label >> 8;
	ip6.flow_lbl[2] = label;
	ip6.payload_len = bpf_htons(skb->len - sizeof(struct ethhdr) - sizeof(ip6));
	ip6.nexthdr = gue ? IPPROTO_UDP : inner_proto == ETH_P_IP ? IPPROTO_IPIP : IPPROTO_IPV6;
	ip6.hop_limit = 64;
	__builtin_memcpy(&ip6.saddr, s->src6, 16);
	__builtin_memcpy(&ip6.daddr, t->addr, 16);
	if (bpf_skb_store_bytes(skb, sizeof(struct ethhdr), &ip6, sizeof(ip6), 0))
		return -1;
	if (gue && gue_store(skb, sizeof(struct ethhdr) + sizeof(ip6), t, sport))
		return -1;
	return bpf_skb_store_bytes(skb, offsetof(struct ethhdr, h_proto), &proto, sizeof(proto), 0)
		   ? -1
		   : 0;
}

/* Sends the encapsulated packet towards the backend. */
static __always_inline int send(struct __sk_buff *skb, const struct ballast_probe_target *t,
				const struct ballast_probe_settings *s)
{
	struct bpf_fib_lookup fib = {};
	long rc;

	fib.ifindex = skb->ifindex;
	if (t->family == BALLAST_FAMILY_V4) {
		fib.family = AF_INET;
		fib.tot_len = skb->len - sizeof(struct ethhdr);
		__builtin_memcpy(&fib.ipv4_src, s->src4, 4);
		__builtin_memcpy(&fib.ipv4_dst, t->addr, 4);
	} else {
		fib.family = AF_INET6;
		fib.tot_len = skb->len - sizeof(struct ethhdr);
		__builtin_memcpy(fib.ipv6_src, s->src6, 16);
		__builtin_memcpy(fib.ipv6_dst, t->addr, 16);
	}
	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	if (rc == BPF_FIB_LKUP_RET_SUCCESS) {
		if (bpf_skb_store_bytes(skb, 0, fib.dmac, 6, 0) ||
		    bpf_skb_store_bytes(skb, 6, fib.smac, 6, 0))
			return count(BALLAST_PROBE_V_DROP_ENCAP, TC_ACT_SHOT);
		if (fib.ifindex == skb->ifindex)
			return count(BALLAST_PROBE_V_ENCAP_TX, TC_ACT_OK);
		return count(BALLAST_PROBE_V_ENCAP_REDIRECT, bpf_redirect(fib.ifindex, 0));
	}
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		struct bpf_redir_neigh nh = {};

		if (t->family == BALLAST_FAMILY_V4) {
			nh.nh_family = AF_INET;
			nh.ipv4_nh = fib.ipv4_dst; /* the gateway, or the backend itself */
		} else {
			nh.nh_family = AF_INET6;
			__builtin_memcpy(nh.ipv6_nh, fib.ipv6_dst, 16);
		}
		return count(BALLAST_PROBE_V_ENCAP_NEIGH,
			     bpf_redirect_neigh(fib.ifindex, &nh, sizeof(nh), 0));
	}
	return count(BALLAST_PROBE_V_DROP_FIB, TC_ACT_SHOT);
}

SEC("tc")
int tc_probe(struct __sk_buff *skb)
{
	struct ballast_probe_settings *s;
	struct ballast_probe_target *t;
	__u32 mark = skb->mark, zero = 0;
	__u16 proto;

	if (!mark)
		return count(BALLAST_PROBE_V_PASS, TC_ACT_OK);
	s = bpf_map_lookup_elem(&probe_settings, &zero);
	if (!s || (mark & s->mark_mask) != s->mark_base || !s->mark_mask)
		return count(BALLAST_PROBE_V_PASS, TC_ACT_OK);
	t = bpf_map_lookup_elem(&probe_targets, &mark);
	if (!t)
		return count(BALLAST_PROBE_V_DROP_NO_TARGET, TC_ACT_SHOT);

	proto = bpf_ntohs(skb->protocol);
	if (proto != ETH_P_IP && proto != ETH_P_IPV6)
		return count(BALLAST_PROBE_V_DROP_NOT_IP, TC_ACT_SHOT);
	if (proto == ETH_P_IPV6 && t->family == BALLAST_FAMILY_V4)
		return count(BALLAST_PROBE_V_DROP_FAMILY, TC_ACT_SHOT);
	if (t->family == BALLAST_FAMILY_V4 ? s->src4[0] == 0 : s->src6[0] == 0)
		return count(BALLAST_PROBE_V_DROP_NO_SOURCE, TC_ACT_SHOT);

	if (encap(skb, proto, t, s))
		return count(BALLAST_PROBE_V_DROP_ENCAP, TC_ACT_SHOT);
	/* Done with the mark: the encapsulated packet is ordinary traffic, and
	 * must not be encapsulated again if it comes back through this hook. */
	skb->mark = 0;
	return send(skb, t, s);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
