/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMP in both directions.
 *
 * Inbound: an ICMP or ICMPv6 error addressed to a VIP quotes a packet the
 * backend sent (source = VIP). icmp_error_flow() turns the quote back into
 * the client→VIP flow key, so the error reaches the backend that owns the
 * flow (path MTU discovery keeps working through the load balancer).
 *
 * Outbound: a client packet that would exceed the next hop's MTU once
 * encapsulated is answered with ICMP "fragmentation needed" or ICMPv6
 * "packet too big", sent from the VIP, quoting the first
 * ICMP_QUOTE_LEN bytes of the client's IP packet. Each CPU answers at
 * most its `icmp_budget` (a rate and a burst, like the kernel's own
 * icmp_msgs_per_sec); past it, oversize packets are dropped and counted, so
 * a flood of them cannot turn the router into an ICMP source at line rate.
 */
#ifndef BALLAST_ICMP_H
#define BALLAST_ICMP_H

#include "common.h"
#include "clock.h"
#include "csum.h"
#include "maps.h"
#include "parse.h"

#define ICMP_QUOTE_LEN 128 /* covers a 60-byte IPv4 header + 8, and IPv6 + TCP */
#define ICMPV6_PKT_TOOBIG_TYPE 2
#define ICMP_TTL 64

static __always_inline int icmp4_is_error(__u8 type)
{
	return type == ICMP_DEST_UNREACH || type == ICMP_TIME_EXCEEDED ||
	       type == ICMP_PARAMETERPROB;
}

static __always_inline int icmp6_is_error(__u8 type)
{
	return type >= 1 && type <= 4; /* unreachable, too big, time exceeded, param */
}

static __always_inline int addr_equal(const __u8 *a, const __u8 *b)
{
	__u32 diff = 0;

#pragma unroll
	for (int i = 0; i < 16; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

/* True when the 8-byte ICMP header is not all there. */
static __always_inline int icmp_header_short(struct xdp_md *ctx, const struct pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ballast_icmphdr *icmp = data + (p->l4_off & L4_MASK);

	return (void *)(icmp + 1) > data_end || p->l4_off + sizeof(*icmp) > p->l3_off + p->ip_len;
}

/* Fills `key` (which must not alias p->key) with the client→VIP flow that the quoted packet belongs
 * to. Returns 0, or -1 when the quote is truncated or not TCP/UDP from the packet's own
 * destination. */
static __always_inline int icmp_error_flow(struct xdp_md *ctx, const struct pkt *p,
					   struct ballast_flow_key *key)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 inner_off = p->l4_off + sizeof(struct ballast_icmphdr);
	__u8 *ports;

	__builtin_memset(key, 0, sizeof(*key));
	key->family = p->key.family;
	if (p->key.family == BALLAST_FAMILY_V4) {
		struct iphdr *in = data + (inner_off & L4_MASK);

		if ((void *)(in + 1) > data_end || in->version != 4 || in->ihl < 5)
			return -1;
		if (in->protocol != IPPROTO_TCP && in->protocol != IPPROTO_UDP)
			return -1;
		ports = (__u8 *)in + ((__u32)in->ihl * 4);
		if ((void *)(ports + 4) > data_end)
			return -1;
		/* The quote is VIP→client: reverse it. */
		__builtin_memcpy(key->src, &in->daddr, 4);
		__builtin_memcpy(key->dst, &in->saddr, 4);
		key->proto = in->protocol;
	} else {
		struct ipv6hdr *in = data + (inner_off & L4_MASK);

		if ((void *)(in + 1) > data_end || in->version != 6)
			return -1;
		if (in->nexthdr != IPPROTO_TCP && in->nexthdr != IPPROTO_UDP)
			return -1;
		ports = (__u8 *)(in + 1);
		if ((void *)(ports + 4) > data_end)
			return -1;
		__builtin_memcpy(key->src, &in->daddr, 16);
		__builtin_memcpy(key->dst, &in->saddr, 16);
		key->proto = in->nexthdr;
	}
	__builtin_memcpy(&key->dport, ports, 2);
	__builtin_memcpy(&key->sport, ports + 2, 2);
	/* The error must be addressed to the quoted packet's source. */
	if (!addr_equal(key->dst, p->key.dst))
		return -1;
	return 0;
}

/* Whether icmp_send_too_big() can answer `p`: the answer quotes
 * ICMP_QUOTE_LEN bytes of it. Checked before a token is taken, so that a
 * packet that cannot be answered does not spend the budget. */
static __always_inline int icmp_can_answer(const struct pkt *p)
{
	return p->ip_len >= ICMP_QUOTE_LEN;
}

/* Takes one answer from this CPU's ICMP too-big budget. Returns 1 when an
 * answer may be sent; otherwise counts the packet in `limited` and returns
 * 0. GCRA: tat_ns is when the bucket is full again; an answer moves it
 * interval_ns on, and is refused if that would put it more than burst_ns
 * ahead of now. Reads the precise clock: only oversize packets come here. */
static __always_inline int icmp_budget_take(void)
{
	struct ballast_icmp_budget *b;
	__u32 zero = 0;
	__u64 now, tat;

	b = bpf_map_lookup_elem(&icmp_budget, &zero);
	if (!b || !b->interval_ns)
		return 1;
	now = clock_precise();
	tat = b->tat_ns > now ? b->tat_ns : now;
	if (tat + b->interval_ns - now > b->burst_ns) {
		b->limited += 1;
		return 0;
	}
	b->tat_ns = tat + b->interval_ns;
	return 1;
}

/* Turns the frame into an ICMP too-big answer to the client, in place.
 * `mtu` is the largest client IP packet that fits once encapsulated.
 * Returns 0 (send with XDP_TX) or -1 (drop). */
static __always_inline int icmp_send_too_big(struct xdp_md *ctx, const struct pkt *p, __u32 mtu)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 ip_hdr_len =
	    p->key.family == BALLAST_FAMILY_V4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);
	__u32 new_hdrs = sizeof(struct ethhdr) + ip_hdr_len + sizeof(struct ballast_icmphdr);
	__u8 smac[6], dmac[6];
	struct ballast_icmphdr *icmp;
	struct ethhdr *eth = data;
	int grow, trim;
	__u64 sum;

	if (!icmp_can_answer(p))
		return -1;
	if ((void *)(eth + 1) > data_end)
		return -1;
	__builtin_memcpy(smac, eth->h_dest, 6);
	__builtin_memcpy(dmac, eth->h_source, 6);

	/* Headers in front of the quote, which starts at the old L3 offset. */
	grow = (int)new_hdrs - (int)p->l3_off;
	if (bpf_xdp_adjust_head(ctx, -grow))
		return -1;
	trim = (int)bpf_xdp_get_buff_len(ctx) - (int)(new_hdrs + ICMP_QUOTE_LEN);
	if (trim > 0 && bpf_xdp_adjust_tail(ctx, -trim))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end)
		return -1;
	__builtin_memcpy(eth->h_source, smac, 6);
	__builtin_memcpy(eth->h_dest, dmac, 6);

	if (p->key.family == BALLAST_FAMILY_V4) {
		struct iphdr *ip = (void *)(eth + 1);

		icmp = (void *)(ip + 1);
		if ((void *)icmp + sizeof(*icmp) + ICMP_QUOTE_LEN > data_end)
			return -1;
		eth->h_proto = bpf_htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->tos = 0;
		ip->tot_len = bpf_htons(sizeof(*ip) + sizeof(*icmp) + ICMP_QUOTE_LEN);
		ip->id = 0;
		ip->frag_off = 0;
		ip->ttl = ICMP_TTL;
		ip->protocol = IPPROTO_ICMP;
		__builtin_memcpy(&ip->saddr, p->key.dst, 4);
		__builtin_memcpy(&ip->daddr, p->key.src, 4);
		ip->check = 0;
		ip->check = ip4_header_csum(ip);

		icmp->type = ICMP_DEST_UNREACH;
		icmp->code = ICMP_FRAG_NEEDED;
		icmp->checksum = 0;
		icmp->rest = bpf_htonl(mtu & 0xFFFF);
		sum = bpf_csum_diff(0, 0, (__be32 *)icmp, sizeof(*icmp) + ICMP_QUOTE_LEN, 0);
		icmp->checksum = csum_fold(sum);
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		__be32 pseudo[2];

		icmp = (void *)(ip6 + 1);
		if ((void *)icmp + sizeof(*icmp) + ICMP_QUOTE_LEN > data_end)
			return -1;
		eth->h_proto = bpf_htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->priority = 0;
		ip6->flow_lbl[0] = 0;
		ip6->flow_lbl[1] = 0;
		ip6->flow_lbl[2] = 0;
		ip6->payload_len = bpf_htons(sizeof(*icmp) + ICMP_QUOTE_LEN);
		ip6->nexthdr = IPPROTO_ICMPV6;
		ip6->hop_limit = 255;
		__builtin_memcpy(&ip6->saddr, p->key.dst, 16);
		__builtin_memcpy(&ip6->daddr, p->key.src, 16);

		icmp->type = ICMPV6_PKT_TOOBIG_TYPE;
		icmp->code = 0;
		icmp->checksum = 0;
		icmp->rest = bpf_htonl(mtu < 1280 ? 1280 : mtu);
		/* Pseudo-header: addresses, upper-layer length, next header. */
		pseudo[0] = bpf_htonl(sizeof(*icmp) + ICMP_QUOTE_LEN);
		pseudo[1] = bpf_htonl(IPPROTO_ICMPV6);
		sum = bpf_csum_diff(0, 0, (__be32 *)&ip6->saddr, 32, 0);
		sum = bpf_csum_diff(0, 0, pseudo, sizeof(pseudo), sum);
		sum = bpf_csum_diff(0, 0, (__be32 *)icmp, sizeof(*icmp) + ICMP_QUOTE_LEN, sum);
		icmp->checksum = csum_fold(sum);
	}
	return 0;
}

#endif /* BALLAST_ICMP_H */
