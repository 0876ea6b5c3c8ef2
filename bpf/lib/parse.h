/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Header parsing: Ethernet (at most one 802.1Q/802.1ad tag), IPv4 with
 * options, IPv6 with a bounded walk over extension headers, and the first
 * bytes of TCP/UDP/ICMP. Parsing only records offsets and a few fields in
 * struct pkt; it never writes the packet.
 *
 * Offsets are kept small and masked when turned back into pointers so the
 * verifier can bound every access.
 */
#ifndef BALLAST_PARSE_H
#define BALLAST_PARSE_H

#include "common.h"

#define BALLAST_IP6_MAX_EXT 4	/* extension headers walked before giving up */
#define BALLAST_MAX_L4_OFF 2048 /* deeper L4 headers count as unsupported */
#define L4_MASK 0xFFF		/* >= BALLAST_MAX_L4_OFF: bounds offsets for the verifier */

#ifndef ETH_P_8021Q
#define ETH_P_8021Q 0x8100
#endif
#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif

#define IP_MF 0x2000
#define IP_DF 0x4000
#define IP_OFFMASK 0x1FFF

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10

/* Outcome of parsing, before any VIP decision. */
enum parse_result {
	PARSE_OK = 0,	/* L3 and the first 4 bytes of L4 (ports / ICMP type) present */
	PARSE_NOT_IP,	/* ARP, LLDP, ...: pass untouched */
	PARSE_BAD_ETH,	/* truncated Ethernet header */
	PARSE_BAD_VLAN, /* truncated tag or a second tag */
	PARSE_BAD_IP4,	/* malformed IPv4 header */
	PARSE_BAD_IP6,	/* malformed IPv6 header */
	PARSE_IP6_EXT,	/* unsupported or too many IPv6 extension headers */
	PARSE_FRAG,	/* IPv4 or IPv6 fragment (no reliable L4) */
	PARSE_SHORT_L4, /* L3 fine, fewer than 4 bytes of L4 */
	PARSE_OTHER_L4, /* L4 protocol ballast does not balance (GRE, SCTP, ...) */
};

struct pkt {
	struct ballast_flow_key key; /* src/dst/ports/proto/family as on the wire */
	__u32 l3_off;		     /* offset of the IP header (14 or 18) */
	__u32 l4_off;		     /* offset of the L4 header */
	__u32 ip_len;		     /* L3 length: IPv4 total length / 40 + IPv6 payload length */
	__u32 hash;		     /* flow hash, valid once has_hash */
	__u32 seq;		     /* TCP sequence number, host order */
	__u32 ack_seq;		     /* TCP acknowledgement number, host order */
	__u32 payload_len;	     /* TCP payload bytes */
	__u8 tcp_flags;
	__u8 ttl; /* IPv4 TTL / IPv6 hop limit */
	__u8 tos; /* IPv4 TOS / IPv6 traffic class */
	__u8 df;  /* IPv4 don't-fragment bit set */
	__u8 has_hash;
	__u8 icmp_type;
	/* The encapsulated packet's mark (bpf/lib/mark.h): MARK_NONE,
	 * MARK_LAST or MARK_PROBE */
	__u16 outer_id;
	__u8 guarded; /* set by conntrack_select: a SYN/RST/FIN that left its flow alone */
};

static __always_inline enum parse_result parse_ip4(void *data, void *data_end, struct pkt *p)
{
	struct iphdr *ip = data + (p->l3_off & 0x7F);
	__u32 ihl_bytes, tot_len;

	if ((void *)(ip + 1) > data_end)
		return PARSE_BAD_IP4;
	if (ip->version != 4 || ip->ihl < 5)
		return PARSE_BAD_IP4;
	ihl_bytes = (__u32)ip->ihl * 4;
	if ((void *)ip + ihl_bytes > data_end)
		return PARSE_BAD_IP4;
	tot_len = bpf_ntohs(ip->tot_len);
	if (tot_len < ihl_bytes || (void *)ip + tot_len > data_end)
		return PARSE_BAD_IP4;

	p->key.family = BALLAST_FAMILY_V4;
	p->key.proto = ip->protocol;
	__builtin_memcpy(p->key.src, &ip->saddr, 4);
	__builtin_memcpy(p->key.dst, &ip->daddr, 4);
	p->ip_len = tot_len;
	p->ttl = ip->ttl;
	p->tos = ip->tos;
	p->df = !!(ip->frag_off & bpf_htons(IP_DF));
	p->l4_off = p->l3_off + ihl_bytes;
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFMASK))
		return PARSE_FRAG;
	return PARSE_OK;
}

static __always_inline enum parse_result parse_ip6(void *data, void *data_end, struct pkt *p)
{
	struct ipv6hdr *ip6 = data + (p->l3_off & 0x7F);
	__u32 off;
	__u8 nexthdr;

	if ((void *)(ip6 + 1) > data_end)
		return PARSE_BAD_IP6;
	if (ip6->version != 6)
		return PARSE_BAD_IP6;
	p->ip_len = sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
	if ((void *)ip6 + p->ip_len > data_end)
		return PARSE_BAD_IP6;

	p->key.family = BALLAST_FAMILY_V6;
	__builtin_memcpy(p->key.src, &ip6->saddr, 16);
	__builtin_memcpy(p->key.dst, &ip6->daddr, 16);
	p->ttl = ip6->hop_limit;
	p->tos = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
	p->df = 1; /* IPv6 routers never fragment */

	nexthdr = ip6->nexthdr;
	off = p->l3_off + sizeof(*ip6);
#pragma unroll
	for (int i = 0; i < BALLAST_IP6_MAX_EXT; i++) {
		__u8 *ext;

		switch (nexthdr) {
		case IPPROTO_TCP:
		case IPPROTO_UDP:
		case IPPROTO_ICMPV6:
			goto done;
		case IPPROTO_FRAGMENT:
			p->key.proto = nexthdr;
			p->l4_off = off;
			return PARSE_FRAG;
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
			/* The compiler may know off is below the mask and drop
			 * it; the verifier needs it. */
			barrier_var(off);
			ext = data + (off & 0xFFF);
			if ((void *)(ext + 2) > data_end)
				return PARSE_BAD_IP6;
			nexthdr = ext[0];
			off += ((__u32)ext[1] + 1) * 8;
			if (off > BALLAST_MAX_L4_OFF)
				return PARSE_IP6_EXT;
			break;
		default:
			/* AH, ESP, no-next-header, mobility, ...: not balanced */
			p->key.proto = nexthdr;
			p->l4_off = off;
			return PARSE_IP6_EXT;
		}
	}
	if (nexthdr != IPPROTO_TCP && nexthdr != IPPROTO_UDP && nexthdr != IPPROTO_ICMPV6) {
		p->key.proto = nexthdr;
		p->l4_off = off;
		return PARSE_IP6_EXT;
	}
done:
	if (off > p->l3_off + p->ip_len)
		return PARSE_BAD_IP6;
	p->key.proto = nexthdr;
	p->l4_off = off;
	return PARSE_OK;
}

/* Parses L2 and L3, and reads the ports (TCP/UDP) or type (ICMP) when at
 * least 4 bytes of L4 are present. */
static __always_inline enum parse_result parse_packet(struct xdp_md *ctx, struct pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	enum parse_result r;
	__u16 proto;
	__u8 *l4;

	if ((void *)(eth + 1) > data_end)
		return PARSE_BAD_ETH;
	proto = eth->h_proto;
	p->l3_off = sizeof(*eth);
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		__be16 *tag = (void *)(eth + 1);

		if ((void *)(tag + 2) > data_end)
			return PARSE_BAD_VLAN;
		proto = tag[1];
		p->l3_off += 4;
		if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD))
			return PARSE_BAD_VLAN;
	}

	if (proto == bpf_htons(ETH_P_IP))
		r = parse_ip4(data, data_end, p);
	else if (proto == bpf_htons(ETH_P_IPV6))
		r = parse_ip6(data, data_end, p);
	else
		return PARSE_NOT_IP;
	if (r != PARSE_OK)
		return r;

	if (p->key.proto != IPPROTO_TCP && p->key.proto != IPPROTO_UDP &&
	    p->key.proto != IPPROTO_ICMP && p->key.proto != IPPROTO_ICMPV6)
		return PARSE_OTHER_L4;
	if ((p->key.proto == IPPROTO_ICMP && p->key.family != BALLAST_FAMILY_V4) ||
	    (p->key.proto == IPPROTO_ICMPV6 && p->key.family != BALLAST_FAMILY_V6))
		return PARSE_OTHER_L4; /* ICMPv6 in IPv4 or ICMPv4 in IPv6 */

	l4 = data + (p->l4_off & L4_MASK);
	if ((void *)(l4 + 4) > data_end || p->l4_off + 4 > p->l3_off + p->ip_len)
		return PARSE_SHORT_L4;
	if (p->key.proto == IPPROTO_TCP || p->key.proto == IPPROTO_UDP) {
		/* both ports in one load (sport, dport are adjacent in the key) */
		*(__u32 *)&p->key.sport = *(const __u32 *)l4;
	} else {
		p->icmp_type = l4[0];
	}
	return PARSE_OK;
}

/* Reads the rest of the TCP header (flags, sequence numbers, payload
 * length). Returns 0 on success, -1 if the header is truncated. */
static __always_inline int parse_tcp(struct xdp_md *ctx, struct pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct tcphdr *th = data + (p->l4_off & L4_MASK);
	__u32 doff, l4_len;

	if ((void *)(th + 1) > data_end)
		return -1;
	doff = (__u32)th->doff * 4;
	l4_len = p->l3_off + p->ip_len - p->l4_off;
	if (doff < sizeof(*th) || doff > l4_len)
		return -1;
	p->tcp_flags = ((__u8 *)th)[13];
	p->seq = bpf_ntohl(th->seq);
	p->ack_seq = bpf_ntohl(th->ack_seq);
	p->payload_len = l4_len - doff;
	return 0;
}

/* UDP: the 8-byte header must be present and its length field sane. */
static __always_inline int parse_udp(struct xdp_md *ctx, struct pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct udphdr *uh = data + (p->l4_off & L4_MASK);
	__u32 l4_len = p->l3_off + p->ip_len - p->l4_off;

	if ((void *)(uh + 1) > data_end)
		return -1;
	if (bpf_ntohs(uh->len) < sizeof(*uh) || bpf_ntohs(uh->len) > l4_len)
		return -1;
	return 0;
}

#endif /* BALLAST_PARSE_H */
