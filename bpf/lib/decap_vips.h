/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xdp_decap's inner check: is a tunnelled packet something the routers send
 * to a VIP served here? The map `decap_vips` (struct ballast_decap_vip,
 * ballast_abi.h) holds each VIP address and its served protocols and ports;
 * inner_served() reads the inner packet as the router's parser does (IPv4
 * options, up to BALLAST_DECAP_IP6_MAX_EXT IPv6 hop-by-hop, routing and
 * destination options headers) and looks it up. What the routers send
 * through the tunnel:
 *  - a client's TCP or UDP packet to a served VIP:port (a port-0 VIP: any
 *    port of its protocol); second-chance SYNs, probe-marked packets of
 *    adopted flows and synthetic probes (tc_probe: to the VIP's port or
 *    the probe's own port) are such packets too;
 *  - an ICMP(v6) error about a VIP flow (bpf/lib/icmp.h): addressed to the
 *    VIP, quoting the VIP's reply (TCP or UDP, from the VIP, source port
 *    the VIP's);
 * never an inner fragment, ICMP echo, other ICMP or another protocol.
 * Included once, by xdp_decap.bpf.c.
 */
#ifndef BALLAST_DECAP_VIPS_H
#define BALLAST_DECAP_VIPS_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>

#include "ballast_abi.h"

/* As the router's parser (parse.h): extension headers walked, and how far
 * into the inner packet its L4 header may start. */
#define BALLAST_DECAP_IP6_MAX_EXT 4
#define BALLAST_DECAP_MAX_L4_OFF 2048
#define DECAP_OFF_MASK 0xFFF /* > off + BALLAST_DECAP_MAX_L4_OFF + an ICMP quote */

/* The same types as icmp.h's icmp4_is_error / icmp6_is_error: the only ICMP
 * the router steers to a backend. */
#define DECAP_ICMP_UNREACH 3
#define DECAP_ICMP_TIME_EXCEEDED 11
#define DECAP_ICMP_PARAMPROB 12
#define DECAP_ICMP_HDR_LEN 8

/* Inner destinations served here: the VIP addresses and their ports. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BALLAST_DECAP_MAX_VIPS);
	__type(key, struct ballast_decap_vip);
	__type(value, __u32);
} decap_vips SEC(".maps");

/* The inner packet's L4, as inner_l4() finds it. */
struct decap_l4 {
	__u32 off;  /* frame offset of the L4 header */
	__u8 proto; /* IPPROTO_*, or 0: a fragment or a header not walked */
};

/* Finds the L4 header of the inner packet at data + off (header checked by
 * inner_ok) and fills `key` with its destination. Returns 0, or -1 when the
 * inner IPv6 extension headers are truncated (bad_inner). */
static __always_inline int inner_l4(void *data, void *data_end, __u32 off, __u16 inner_proto,
				    struct ballast_decap_vip *key, struct decap_l4 *l4)
{
	l4->proto = 0;
	if (inner_proto == ETH_P_IP) {
		struct iphdr *ip = data + (off & 0x7F);

		if ((void *)(ip + 1) > data_end)
			return -1;
		__builtin_memcpy(key->addr, &ip->daddr, 4);
		key->family = BALLAST_FAMILY_V4;
		l4->off = off + ip->ihl * 4;
		if (!(ip->frag_off & bpf_htons(0x3fff)))
			l4->proto = ip->protocol;
		return 0;
	}
	struct ipv6hdr *ip6 = data + (off & 0x7F);
	__u32 rel = sizeof(*ip6);
	__u8 next;

	if ((void *)(ip6 + 1) > data_end)
		return -1;
	__builtin_memcpy(key->addr, &ip6->daddr, 16);
	key->family = BALLAST_FAMILY_V6;
	next = ip6->nexthdr;
#pragma unroll
	for (int i = 0; i < BALLAST_DECAP_IP6_MAX_EXT; i++) {
		__u8 *ext;

		if (next != IPPROTO_HOPOPTS && next != IPPROTO_ROUTING && next != IPPROTO_DSTOPTS)
			break;
		barrier_var(rel);
		ext = data + ((off + rel) & DECAP_OFF_MASK);
		if ((void *)(ext + 2) > data_end)
			return -1;
		next = ext[0];
		rel += ((__u32)ext[1] + 1) * 8;
		if (rel > BALLAST_DECAP_MAX_L4_OFF)
			return 0; /* deeper than the router looks: not its */
	}
	l4->off = off + rel;
	/* a fragment header, AH, ESP, a fifth extension header: not the router's */
	if (next == IPPROTO_TCP || next == IPPROTO_UDP || next == IPPROTO_ICMPV6)
		l4->proto = next;
	return 0;
}

/* Are the `len` (4 or 16) bytes at `pkt` the address `addr`? */
static __always_inline int decap_addr_equal(const __u8 *pkt, const __u8 *addr, __u32 len)
{
	__u8 diff = 0;

#pragma unroll
	for (__u32 i = 0; i < 16; i++)
		if (i < len)
			diff |= pkt[i] ^ addr[i];
	return diff == 0;
}

/* Is VIP key->addr served on `proto` port `port` (network order), by its
 * own entry or the protocol's port-0 entry? */
static __always_inline int port_served(struct ballast_decap_vip *key, __u8 proto, __be16 port)
{
	key->proto = proto;
	key->port = port;
	if (bpf_map_lookup_elem(&decap_vips, key))
		return 1;
	key->port = 0;
	return bpf_map_lookup_elem(&decap_vips, key) != NULL;
}

/* The ICMP(v6) error at data + l4->off, addressed to key->addr: the port
 * and protocol of the VIP reply it quotes, looked up. BALLAST_DECAP_V_MAX
 * when served, else the verdict to drop it with. */
static __always_inline __u32 icmp_error_served(void *data, void *data_end,
					       const struct decap_l4 *l4,
					       struct ballast_decap_vip *key)
{
	__u8 *icmp = data + (l4->off & DECAP_OFF_MASK);
	__u32 quote = l4->off + DECAP_ICMP_HDR_LEN;
	__u8 *ports, proto;

	if ((void *)(icmp + DECAP_ICMP_HDR_LEN) > data_end)
		return BALLAST_DECAP_V_BAD_INNER;
	if (key->family == BALLAST_FAMILY_V4) {
		struct iphdr *in = data + (quote & DECAP_OFF_MASK);

		if (icmp[0] != DECAP_ICMP_UNREACH && icmp[0] != DECAP_ICMP_TIME_EXCEEDED &&
		    icmp[0] != DECAP_ICMP_PARAMPROB)
			return BALLAST_DECAP_V_UNSERVED;
		if ((void *)(in + 1) > data_end)
			return BALLAST_DECAP_V_BAD_INNER;
		if (in->version != 4 || in->ihl < 5 ||
		    !decap_addr_equal((__u8 *)&in->saddr, key->addr, 4))
			return BALLAST_DECAP_V_UNSERVED;
		proto = in->protocol;
		ports = data + ((quote + in->ihl * 4) & DECAP_OFF_MASK);
	} else {
		struct ipv6hdr *in = data + (quote & DECAP_OFF_MASK);

		if (icmp[0] < 1 || icmp[0] > 4) /* unreachable, too big, time exceeded, param */
			return BALLAST_DECAP_V_UNSERVED;
		if ((void *)(in + 1) > data_end)
			return BALLAST_DECAP_V_BAD_INNER;
		if (in->version != 6 || !decap_addr_equal((__u8 *)&in->saddr, key->addr, 16))
			return BALLAST_DECAP_V_UNSERVED;
		proto = in->nexthdr;
		ports = data + ((quote + sizeof(*in)) & DECAP_OFF_MASK);
	}
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return BALLAST_DECAP_V_UNSERVED;
	if ((void *)(ports + 4) > data_end)
		return BALLAST_DECAP_V_BAD_INNER;
	/* the quote is the VIP's reply: its source port is the VIP's */
	return port_served(key, proto, *(__be16 *)ports) ? BALLAST_DECAP_V_MAX
							 : BALLAST_DECAP_V_UNSERVED;
}

/* Is the inner packet at data + off (header checked by inner_ok) one the
 * routers send to a VIP served here? BALLAST_DECAP_V_MAX to go on, else the
 * verdict to drop it with: not_vip (no VIP address), unserved (not a
 * protocol, port or ICMP error the routers send to it), bad_inner (the
 * headers the check reads are cut short). */
static __always_inline __u32 inner_served(void *data, void *data_end, __u32 off, __u16 inner_proto,
					  __u32 flags)
{
	struct ballast_decap_vip key = {};
	struct decap_l4 l4 = {};
	__u32 *addr_entry;
	__u8 *ports;

	if (!(flags & BALLAST_DECAP_CHECK_VIP))
		return BALLAST_DECAP_V_MAX;
	if (inner_l4(data, data_end, off, inner_proto, &key, &l4))
		return BALLAST_DECAP_V_BAD_INNER;
	addr_entry = bpf_map_lookup_elem(&decap_vips, &key);
	if (!addr_entry)
		return BALLAST_DECAP_V_NOT_VIP;
	if (*addr_entry == BALLAST_DECAP_VIP_ANY)
		return BALLAST_DECAP_V_MAX;
	if (l4.proto == IPPROTO_TCP || l4.proto == IPPROTO_UDP) {
		ports = data + (l4.off & DECAP_OFF_MASK);
		if ((void *)(ports + 4) > data_end)
			return BALLAST_DECAP_V_BAD_INNER;
		return port_served(&key, l4.proto, *(__be16 *)(ports + 2))
			   ? BALLAST_DECAP_V_MAX
			   : BALLAST_DECAP_V_UNSERVED;
	}
	if ((l4.proto == IPPROTO_ICMP && key.family == BALLAST_FAMILY_V4) ||
	    (l4.proto == IPPROTO_ICMPV6 && key.family == BALLAST_FAMILY_V6))
		return icmp_error_served(data, data_end, &l4, &key);
	return BALLAST_DECAP_V_UNSERVED;
}

#endif /* BALLAST_DECAP_VIPS_H */
