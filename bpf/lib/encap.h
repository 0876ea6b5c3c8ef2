/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Encapsulation to the backend.
 *
 *   IPv4 client, IPv4 backend: IPv4-in-IPv4   (outer protocol 4, DF copied)
 *   IPv6 client, IPv6 backend: IPv6-in-IPv6   (outer next header 41)
 *   IPv4 client, IPv6 backend: IPv4-in-IPv6   (outer next header 4)
 *   IPv6 client, IPv4 backend: not supported  (the agent refuses it)
 *
 * The frame is rebuilt as Ethernet (no VLAN tag) + outer IP + the original
 * IP packet, untouched. Outer source is the router's address of the outer
 * family; an IPv6 outer header carries the flow hash in its flow label so
 * backends can spread flows over receive queues.
 */
#ifndef BALLAST_ENCAP_H
#define BALLAST_ENCAP_H

#include "common.h"
#include "csum.h"
#include "parse.h"

#define ENCAP_TTL 64

static __always_inline __u32 encap_overhead(const struct ballast_backend *be)
{
	return be->family == BALLAST_FAMILY_V4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);
}

/* Prepends the outer header. MACs are written by the caller (they depend
 * on the next hop). Returns 0, or -1 if the headroom could not be grown (the
 * packet is then unchanged apart from its headroom and must be dropped). */
static __always_inline int encap_push(struct xdp_md *ctx, const struct pkt *p,
				      const struct ballast_backend *be,
				      const struct ballast_settings *s)
{
	int grow = (int)encap_overhead(be) - (int)(p->l3_off - sizeof(struct ethhdr));
	void *data, *data_end;
	struct ethhdr *eth;

	if (bpf_xdp_adjust_head(ctx, -grow))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;

	if (be->family == BALLAST_FAMILY_V4) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return -1;
		eth->h_proto = bpf_htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->tos = p->tos;
		ip->tot_len = bpf_htons(p->ip_len + sizeof(*ip));
		ip->id = 0;
		ip->frag_off = p->df ? bpf_htons(IP_DF) : 0; /* RFC 2003: DF copied */
		ip->ttl = ENCAP_TTL;
		ip->protocol = IPPROTO_IPIP;
		__builtin_memcpy(&ip->saddr, s->src4, 4);
		__builtin_memcpy(&ip->daddr, be->addr, 4);
		ip->check = 0;
		ip->check = ip4_header_csum(ip);
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		__u32 label = p->hash & 0xFFFFF;

		if ((void *)(ip6 + 1) > data_end)
			return -1;
		eth->h_proto = bpf_htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->priority = p->tos >> 4;
		ip6->flow_lbl[0] = ((p->tos & 0xF) << 4) | (label >> 16);
		ip6->flow_lbl[1] = label >> 8;
		ip6->flow_lbl[2] = label;
		ip6->payload_len = bpf_htons(p->ip_len);
		ip6->nexthdr = p->key.family == BALLAST_FAMILY_V4 ? IPPROTO_IPIP : IPPROTO_IPV6;
		ip6->hop_limit = ENCAP_TTL;
		__builtin_memcpy(&ip6->saddr, s->src6, 16);
		__builtin_memcpy(&ip6->daddr, be->addr, 16);
	}
	return 0;
}

/* Writes the Ethernet addresses of the (already encapsulated) frame. */
static __always_inline int set_macs(struct xdp_md *ctx, const __u8 *smac, const __u8 *dmac)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return -1;
	__builtin_memcpy(eth->h_source, smac, 6);
	__builtin_memcpy(eth->h_dest, dmac, 6);
	return 0;
}

#endif /* BALLAST_ENCAP_H */
