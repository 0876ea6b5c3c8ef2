/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xdp_decap's notes of the SYNs it passes up, and tc_decap_rst, the tc
 * egress program on the same device that mends the kernel's answer to them
 * (bpf/xdp_decap.bpf.c says when and why). Included once, by
 * xdp_decap.bpf.c, after its count(): the map and both programs are one
 * object, so the two programs share the map.
 */
#ifndef BALLAST_DECAP_SYNS_H
#define BALLAST_DECAP_SYNS_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "ballast_abi.h"

/* SYNs passed up whose answer tc_decap_rst is to mend (struct
 * ballast_decap_syn: HOLD, a listener would take it; REFUSE, the last hop
 * in TIME_WAIT), by hash of their tuple. Shared by all CPUs: the kernel's
 * answer normally leaves on the CPU that took the SYN, but RPS may move it.
 * A slot read while another CPU overwrites it can only match an answer if
 * every field compared matches one of the two SYNs, so at worst one answer
 * of that tuple is mended once. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BALLAST_DECAP_SYN_SLOTS);
	__type(key, __u32);
	__type(value, struct ballast_decap_syn);
} decap_syns SEC(".maps");

/* The slot of `s`'s tuple in decap_syns. */
static __always_inline __u32 syn_slot(const struct ballast_decap_syn *s)
{
	const __u32 *c = (const __u32 *)s->client, *v = (const __u32 *)s->vip;
	__u32 h = c[0] ^ c[1] ^ c[2] ^ c[3] ^ v[0] ^ v[1] ^ v[2] ^ v[3];

	h ^= (__u32)s->client_port << 16 | s->vip_port;
	h *= 0x9e3779b1u;
	return h >> 20 & (BALLAST_DECAP_SYN_SLOTS - 1);
}

/* Notes the SYN `s` (tuple and ISN) as passed up now, for tc_decap_rst to
 * mend the kernel's answer as `kind` (BALLAST_DECAP_SYN_*) says. */
static __always_inline void syn_note(struct ballast_decap_syn *s, __u8 kind)
{
	__u32 k = syn_slot(s);
	struct ballast_decap_syn *slot = bpf_map_lookup_elem(&decap_syns, &k);

	if (!slot)
		return;
	s->kind = kind;
	s->time_ns = bpf_ktime_get_coarse_ns(); /* a jiffy is fine against the window */
	*slot = *s;
}

/* Rewrites the pure ACK whose TCP header is at `off` (its words as read:
 * sequence and acknowledgment numbers, data offset and flags, window) into
 * the kernel's refusal of a SYN with ISN `isn`: RST and ACK, sequence 0,
 * acknowledging isn + 1, window 0, and its options (`opt_len` bytes) made
 * NOPs: a timestamp echoing the old connection's would make the client
 * drop the RST (PAWS). The TCP checksum follows each word (an skb whose
 * checksum is left to the device needs nothing: the helper knows). */
static __always_inline int refuse(struct __sk_buff *skb, __u32 off, __be32 seq, __be32 ack,
				  __be16 flags_word, __be16 window, __u32 isn, __u32 opt_len)
{
	__u32 csum = off + offsetof(struct tcphdr, check);
	__be32 new_seq = 0, new_ack = bpf_htonl(isn + 1), nops = 0x01010101;
	__be16 new_window = 0, new_flags = flags_word;

#pragma unroll
	for (__u32 i = 0; i < 10; i++) { /* at most 40 bytes of options */
		__be32 old;

		if (i * 4 >= opt_len)
			break;
		if (bpf_skb_load_bytes(skb, off + sizeof(struct tcphdr) + i * 4, &old, 4) ||
		    bpf_l4_csum_replace(skb, csum, old, nops, 4) ||
		    bpf_skb_store_bytes(skb, off + sizeof(struct tcphdr) + i * 4, &nops, 4, 0))
			return TC_ACT_SHOT; /* cannot happen (see below) */
	}
	((__u8 *)&new_flags)[1] = 0x14; /* RST, ACK; the data offset kept */
	if (bpf_l4_csum_replace(skb, csum, seq, new_seq, 4) ||
	    bpf_l4_csum_replace(skb, csum, ack, new_ack, 4) ||
	    bpf_l4_csum_replace(skb, csum, flags_word, new_flags, 2) ||
	    bpf_l4_csum_replace(skb, csum, window, new_window, 2) ||
	    bpf_skb_store_bytes(skb, off + 4, &new_seq, 4, 0) ||
	    bpf_skb_store_bytes(skb, off + 8, &new_ack, 4, 0) ||
	    bpf_skb_store_bytes(skb, off + 12, &new_flags, 2, 0) ||
	    bpf_skb_store_bytes(skb, off + 14, &new_window, 2, 0))
		/* Cannot happen: the header is in the linear part. Were it to,
		 * a half-rewritten ACK must not leave: dropped, like a held
		 * RST (the client resends its SYN). */
		return TC_ACT_SHOT;
	return count(BALLAST_DECAP_V_TW_REFUSED, TC_ACT_OK);
}

/* tc egress of the decap device: mends the kernel's answer to a SYN noted
 * in decap_syns (see the top of this file); every other packet leaves
 * untouched.
 *  - HOLD: the kernel's RST to it (RST and ACK, no SYN or FIN,
 *    acknowledging the ISN + 1; a SYN with data, TCP Fast Open, is not
 *    matched) is dropped, counted rst_held;
 *  - REFUSE: the TIME_WAIT's answer to it (an ACK alone, no data) becomes
 *    the RST a SYN nobody takes gets, counted tw_refused. */
SEC("tc")
int tc_decap_rst(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct ballast_decap_syn want = {};
	struct ballast_decap_syn *slot;
	const __u32 *a, *b;
	struct tcphdr *th;
	__u32 k, off, l4_len;
	__u8 flags, kind;

	if ((void *)(eth + 1) > data_end)
		return TC_ACT_OK;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_TCP ||
		    (ip->frag_off & bpf_htons(0x3fff)))
			return TC_ACT_OK;
		th = (void *)(ip + 1);
		__builtin_memcpy(want.vip, &ip->saddr, 4);
		__builtin_memcpy(want.client, &ip->daddr, 4);
		want.family = BALLAST_FAMILY_V4;
		l4_len = bpf_ntohs(ip->tot_len) - sizeof(*ip);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_TCP)
			return TC_ACT_OK;
		th = (void *)(ip6 + 1);
		__builtin_memcpy(want.vip, &ip6->saddr, 16);
		__builtin_memcpy(want.client, &ip6->daddr, 16);
		want.family = BALLAST_FAMILY_V6;
		l4_len = bpf_ntohs(ip6->payload_len);
	} else {
		return TC_ACT_OK;
	}
	if ((void *)(th + 1) > data_end)
		return TC_ACT_OK;
	flags = ((__u8 *)th)[13];
	if ((flags & 0x17) == 0x14) /* RST and ACK; not SYN or FIN */
		kind = BALLAST_DECAP_SYN_HOLD;
	else if ((flags & 0x17) == 0x10 && th->doff >= 5 && l4_len == th->doff * 4u) /* an ACK alone */
		kind = BALLAST_DECAP_SYN_REFUSE;
	else
		return TC_ACT_OK;
	want.vip_port = th->source;
	want.client_port = th->dest;
	k = syn_slot(&want);
	slot = bpf_map_lookup_elem(&decap_syns, &k);
	if (!slot || slot->family != want.family || slot->kind != kind ||
	    slot->client_port != want.client_port || slot->vip_port != want.vip_port)
		return TC_ACT_OK;
	if (kind == BALLAST_DECAP_SYN_HOLD && slot->isn + 1 != bpf_ntohl(th->ack_seq))
		return TC_ACT_OK;
	a = (const __u32 *)slot->client;
	b = (const __u32 *)want.client;
#pragma unroll
	for (int i = 0; i < 8; i++) /* client, then vip: 32 contiguous bytes */
		if (a[i] != b[i])
			return TC_ACT_OK;
	if (bpf_ktime_get_coarse_ns() - slot->time_ns > BALLAST_DECAP_RST_WINDOW_NS)
		return TC_ACT_OK;
	slot->family = 0; /* one answer per SYN */
	if (kind == BALLAST_DECAP_SYN_HOLD)
		return count(BALLAST_DECAP_V_RST_HELD, TC_ACT_SHOT);
	off = (__u32)((void *)th - data);
	return refuse(skb, off, th->seq, th->ack_seq, *(__be16 *)((__u8 *)th + 12), th->window,
		      slot->isn, th->doff * 4u - sizeof(*th));
}

#endif /* BALLAST_DECAP_SYNS_H */
