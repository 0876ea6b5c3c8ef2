/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Encapsulation to the backend.
 *
 *   IPv4 client, IPv4 backend: IPv4-in-IPv4   (outer protocol 4, DF copied)
 *   IPv6 client, IPv6 backend: IPv6-in-IPv6   (outer next header 41)
 *   IPv4 client, IPv6 backend: IPv4-in-IPv6   (outer next header 4)
 *   IPv6 client, IPv4 backend: not supported  (the agent refuses it)
 *
 * A VIP with BALLAST_VIP_F_GUE puts a UDP header between the two (outer
 * protocol / next header 17): destination port handshake_settings.gue_port,
 * source port 0xC000 | 14 bits of the flow's hash, checksum 0 (RFC 6935
 * allows it for tunnels over IPv6; the kernel's fou sockets accept it), the
 * client's packet right after it (GUE version 1: no GUE header).
 *
 * The frame is rebuilt as Ethernet (no VLAN tag) + outer IP + the original
 * IP packet, untouched. Outer source is the router's address of the outer
 * family, or for IPv4, when a source prefix is configured, an address of
 * that prefix chosen by the 5-tuple's hash (ballast_flow_label()); an IPv6
 * outer header carries that hash in its flow label. Either way a backend's
 * RSS can spread one router's flows over its receive queues.
 */
#ifndef BALLAST_ENCAP_H
#define BALLAST_ENCAP_H

#include "common.h"
#include "ballast_flow_hash.h"
#include "csum.h"
#include "maglev.h"
#include "maps.h"
#include "mark.h"
#include "parse.h"

#define ENCAP_TTL 64

/* Copies a 6-byte MAC address as a 4-byte and a 2-byte word. The BPF
 * target assumes byte alignment for __u8 arrays and would otherwise move
 * it byte by byte; unaligned word access to packets and map values is fine
 * on the architectures the agent loads on (the verifier enforces
 * alignment only with BPF_F_STRICT_ALIGNMENT). */
static __always_inline void mac_copy(__u8 *dst, const __u8 *src)
{
	*(__u32 *)dst = *(const __u32 *)src;
	*(__u16 *)(dst + 4) = *(const __u16 *)(src + 4);
}

static __always_inline __u32 encap_overhead(const struct ballast_backend *be, __u32 vip_flags)
{
	__u32 udp = vip_flags & BALLAST_VIP_F_GUE ? sizeof(struct udphdr) : 0;

	return (be->family == BALLAST_FAMILY_V4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr)) +
	       udp;
}

/* The GUE destination port, network order. */
static __always_inline __u16 gue_port_of(const struct ballast_handshake_settings *hs)
{
	return bpf_htons(hs && hs->gue_port ? hs->gue_port : BALLAST_GUE_PORT_DEFAULT);
}

/* Writes the UDP header of a GUE packet at `udp` (bounds checked by the
 * caller) for an inner packet of `ip_len` bytes. */
static __always_inline void gue_write(struct udphdr *udp, const struct pkt *p, __u32 ip_len)
{
	const struct ballast_handshake_settings *hs;
	__u32 zero = 0;

	hs = bpf_map_lookup_elem(&handshake_settings, &zero);
	udp->source = bpf_htons(0xC000 | (ballast_flow_label(&p->key) & 0x3FFF));
	udp->dest = gue_port_of(hs);
	udp->len = bpf_htons(ip_len + sizeof(*udp));
	udp->check = 0;
}

/* The IPv4 outer source of `p`'s flow: the same for every packet of it. */
static __always_inline __u32 encap_source4(const struct pkt *p, const struct ballast_settings *s)
{
	const struct ballast_handshake_settings *hs;
	__u32 zero = 0;

	hs = bpf_map_lookup_elem(&handshake_settings, &zero);
	if (hs && hs->src4_spread_mask)
		return *(const __u32 *)hs->src4_spread_base |
		       bpf_htonl(ballast_flow_label(&p->key) & hs->src4_spread_mask);
	return *(const __u32 *)s->src4;
}

/* The bounce key (struct ballast_bounce_key), or NULL. */
static __always_inline const struct ballast_bounce_key *bounce_key_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&bounce_key, &zero);
}

/* Whether `p` is a pure TCP SYN, which a backend may bounce (mark.h). */
static __always_inline int mark_syn(const struct pkt *p)
{
	return p->key.proto == IPPROTO_TCP &&
	       (p->tcp_flags & (TCP_SYN | TCP_ACK | TCP_RST | TCP_FIN)) == TCP_SYN;
}

/* The bounce tag of `p` sent to backend `be` (mark.h): for a packet that
 * may be bounced (a pure TCP SYN not marked as the last hop, or a
 * probe-marked one), else 0. */
static __always_inline __u32 mark_prepare(struct pkt *p, const struct ballast_backend *be)
{
	const struct ballast_bounce_key *k;
	int syn = mark_syn(p);

	if (p->outer_id == MARK_LAST || (!syn && p->outer_id != MARK_PROBE))
		return 0;
	k = bounce_key_get();
	if (!k)
		return 0;
	return mark_tag(k, flow_hash_of(p), syn ? p->seq : 0, mark_addr_word(be->addr, be->family));
}

/* encap_push() for IP-in-IP (gue 0) or GUE (gue 1): called with a
 * constant, so each is compiled on its own and IP-in-IP runs no GUE test. */
static __always_inline int encap_build(struct xdp_md *ctx, const struct pkt *p,
				       const struct ballast_backend *be,
				       const struct ballast_settings *s, __u32 tag, const int gue)
{
	const __u32 udp_len = gue ? sizeof(struct udphdr) : 0;
	int grow = (int)encap_overhead(be, gue ? BALLAST_VIP_F_GUE : 0) -
		   (int)(p->l3_off - sizeof(struct ethhdr));
	void *data, *data_end;
	struct ethhdr *eth;

	if (bpf_xdp_adjust_head(ctx, -grow))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;

	if (be->family == BALLAST_FAMILY_V4) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 *w = (__u32 *)ip;
		__u32 w0, w1, saddr, daddr;
		__u16 ttl_proto;

		/* room for a UDP header too (with IP-in-IP: the inner IP
		 * header's first bytes): one constant bound for the verifier */
		if ((void *)(ip + 1) + sizeof(struct udphdr) > data_end)
			return -1;
		eth->h_proto = bpf_htons(ETH_P_IP);
		/* The header is built in registers as the words it consists of
		 * (in memory order), and its checksum is the sum of those same
		 * words: reading the header back would stall on the narrow
		 * stores just made to it. */
		w0 = bpf_htonl((0x45u << 24) | ((__u32)p->tos << 16) |
			       (p->ip_len + sizeof(*ip) + udp_len));
		/* id 0, or the mark and tag (mark.h); RFC 2003: DF copied */
		w1 = bpf_htonl((__u32)mark_id(p->outer_id, tag, mark_syn(p)) << 16 |
			       (p->df ? IP_DF : 0));
		ttl_proto = bpf_htons((ENCAP_TTL << 8) | (gue ? IPPROTO_UDP : IPPROTO_IPIP));
		saddr = encap_source4(p, s);
		daddr = *(const __u32 *)be->addr;
		w[0] = w0;
		w[1] = w1;
		*(__u16 *)&ip->ttl = ttl_proto;
		ip->check = csum_fold((__u64)w0 + w1 + ttl_proto + saddr + daddr);
		w[3] = saddr;
		w[4] = daddr;
		if (gue)
			gue_write((void *)(ip + 1), p, p->ip_len);
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		/* the flow's label, or the mark and tag (mark.h) */
		__u32 label = mark_label(p->outer_id, tag, mark_syn(p), ballast_flow_label(&p->key));
		__u32 *w = (__u32 *)ip6;
		__u32 next = gue ? IPPROTO_UDP
				 : p->key.family == BALLAST_FAMILY_V4 ? IPPROTO_IPIP : IPPROTO_IPV6;
		const __u32 *src = (const __u32 *)s->src6, *dst = (const __u32 *)be->addr;

		if ((void *)(ip6 + 1) + sizeof(struct udphdr) > data_end)
			return -1;
		eth->h_proto = bpf_htons(ETH_P_IPV6);
		/* version, traffic class, flow label; payload length, next
		 * header, hop limit: two words. Addresses word by word. */
		w[0] = bpf_htonl((6u << 28) | ((__u32)p->tos << 20) | label);
		w[1] = bpf_htonl(((p->ip_len + udp_len) << 16) | (next << 8) | ENCAP_TTL);
		w[2] = src[0];
		w[3] = src[1];
		w[4] = src[2];
		w[5] = src[3];
		w[6] = dst[0];
		w[7] = dst[1];
		w[8] = dst[2];
		w[9] = dst[3];
		if (gue)
			gue_write((void *)(ip6 + 1), p, p->ip_len);
	}
	return 0;
}

/* Prepends the outer header (GUE when `vip_flags` has BALLAST_VIP_F_GUE),
 * carrying `p`'s mark and bounce tag `tag` (mark_prepare()).
 * MACs are written by the caller (they depend on the next hop). Returns 0,
 * or -1 if the headroom could not be grown (the packet is then unchanged
 * apart from its headroom and must be dropped). */
static __always_inline int encap_push(struct xdp_md *ctx, const struct pkt *p,
				      const struct ballast_backend *be,
				      const struct ballast_settings *s, __u32 vip_flags, __u32 tag)
{
	if (unlikely(vip_flags & BALLAST_VIP_F_GUE))
		return encap_build(ctx, p, be, s, tag, 1);
	return encap_build(ctx, p, be, s, tag, 0);
}

/* Writes the Ethernet addresses of the (already encapsulated) frame. */
static __always_inline int set_macs(struct xdp_md *ctx, const __u8 *smac, const __u8 *dmac)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return -1;
	mac_copy(eth->h_source, smac);
	mac_copy(eth->h_dest, dmac);
	return 0;
}

/* Leaves `m` (with its magic) and the frame's outer IP header (`outer_len`
 * bytes after the Ethernet header) in this CPU's `neigh_handoff` slot, for
 * tc_neigh. Returns 0, or -1. */
static __always_inline int neigh_handoff_put(struct xdp_md *ctx, struct ballast_neigh_meta *m,
					     __u32 outer_len)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ballast_neigh_handoff *slot;
	__u64 *src = data + sizeof(struct ethhdr), *dst;
	__u32 zero = 0;
	int i;

	slot = bpf_map_lookup_elem(&neigh_handoff, &zero);
	if (!slot || (void *)src + 40 > data_end)
		return -1;
	slot->meta.magic = 0; /* matches nothing while it is written */
	dst = (__u64 *)slot->outer;
#pragma unroll
	for (i = 0; i < 5; i++)
		dst[i] = i * 8 < outer_len ? src[i] : 0;
	slot->outer_len = outer_len;
	slot->meta.ifindex = m->ifindex;
	slot->meta.family = m->family;
	__builtin_memcpy(slot->meta.nh, m->nh, 16);
	slot->meta.magic = BALLAST_NEIGH_META_MAGIC;
	return 0;
}

/* Puts `m` (with its magic) in the XDP metadata area in front of the
 * frame, for tc_neigh. Returns 0, or -1 when the device cannot carry
 * metadata. */
static __always_inline int neigh_meta_put(struct xdp_md *ctx, struct ballast_neigh_meta *m)
{
	struct ballast_neigh_meta *dst;
	void *data;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		return -1;
	dst = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(dst + 1) > data)
		return -1;
	m->magic = BALLAST_NEIGH_META_MAGIC;
	__builtin_memcpy(dst, m, sizeof(*m));
	return 0;
}

#endif /* BALLAST_ENCAP_H */
