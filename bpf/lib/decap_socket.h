/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xdp_decap's socket lookups: whether a socket on this host would take an
 * inner TCP packet (second chance: a SYN nobody listens for, or a packet of
 * an adopted connection this host does not hold, goes back to the router;
 * bpf/xdp_decap.bpf.c says when). One parser of the inner TCP header for
 * both, with the tuple bpf_skc_lookup_tcp() takes.
 */
#ifndef BALLAST_DECAP_SOCKET_H
#define BALLAST_DECAP_SOCKET_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "ballast_abi.h"

/* An inner TCP packet and the tuple of its socket. */
struct inner_tcp {
	struct bpf_sock_tuple t; /* t.ipv4 or t.ipv6 (tuple_len()) */
	void *iph;		 /* its IP header (iph_len(): no options) */
	struct tcphdr *th;	 /* its TCP header (20 bytes in the frame) */
	__u8 flags;		 /* TCP flags */
};

/* Parses the inner packet at data + off (inner header checked by
 * inner_ok) into *it: 0, or -1 when it is not asked (not TCP, an IPv4
 * header with options, an IPv4 fragment, an IPv6 header with extension
 * headers: rare, and a fixed TCP offset keeps the verifier's work small). */
static __always_inline int inner_tcp_of(void *data, void *data_end, __u32 off, __u16 inner_proto,
					struct inner_tcp *it)
{
	struct tcphdr *th;

	if (inner_proto == ETH_P_IP) {
		struct iphdr *ip = data + (off & 0x7F);

		if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_TCP ||
		    (ip->frag_off & bpf_htons(0x3fff)))
			return -1;
		th = (void *)(ip + 1);
		if ((void *)(th + 1) > data_end)
			return -1;
		it->t.ipv4.saddr = ip->saddr;
		it->t.ipv4.daddr = ip->daddr;
		it->t.ipv4.sport = th->source;
		it->t.ipv4.dport = th->dest;
		it->iph = ip;
	} else {
		struct ipv6hdr *ip6 = data + (off & 0x7F);

		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_TCP)
			return -1;
		th = (void *)(ip6 + 1);
		if ((void *)(th + 1) > data_end)
			return -1;
		__builtin_memcpy(it->t.ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(it->t.ipv6.daddr, &ip6->daddr, 16);
		it->t.ipv6.sport = th->source;
		it->t.ipv6.dport = th->dest;
		it->iph = ip6;
	}
	it->th = th;
	it->flags = ((__u8 *)th)[13];
	return 0;
}

/* The sizes for an inner packet of `inner_proto`: constants, computed
 * where they are used (a length kept on the stack beside the tuple loses
 * its bounds for the verifier). */
#define tuple_len(inner_proto)                                                                     \
	((inner_proto) == ETH_P_IP ? sizeof(((struct bpf_sock_tuple *)0)->ipv4)                    \
				   : sizeof(((struct bpf_sock_tuple *)0)->ipv6))
#define iph_len(inner_proto)                                                                       \
	((inner_proto) == ETH_P_IP ? sizeof(struct iphdr) : sizeof(struct ipv6hdr))

/* The state (BPF_TCP_*) of the socket that `t` finds, or 0 for none. */
static __always_inline __u32 socket_state(struct xdp_md *ctx, struct bpf_sock_tuple *t, __u32 len)
{
	struct bpf_sock *sk = bpf_skc_lookup_tcp(ctx, t, len, BPF_F_CURRENT_NETNS, 0);
	__u32 state;

	if (!sk)
		return 0;
	state = sk->state;
	bpf_sk_release(sk);
	return state;
}

/* Would a socket on this host take the pure TCP SYN at data + off?
 * SYN_LISTENER a listener (the kernel makes a new connection), SYN_OTHER
 * another socket of the tuple (its request socket: a retransmitted SYN), 0
 * none, SYN_TIME_WAIT none but the tuple is in TIME_WAIT, -1 not a pure SYN
 * or not asked (inner_tcp_of). A tuple in TIME_WAIT takes a new SYN only
 * through a listener (the kernel looks one up, else answers with an ACK of
 * the old connection), so then the listener is looked for, with the
 * client's address and port zeroed (no other socket has those). When
 * asked, `syn` gets its tuple and ISN. */
#define SYN_OTHER 1
#define SYN_LISTENER 2
#define SYN_TIME_WAIT 3
static __always_inline int syn_has_socket(struct xdp_md *ctx, void *data, void *data_end, __u32 off,
					  __u16 inner_proto, struct ballast_decap_syn *syn)
{
	struct inner_tcp it;
	__u32 state;

	/* Only a pure SYN (not ACK, RST or FIN) is asked: every other packet
	 * leaves before anything is written. */
	if (inner_tcp_of(data, data_end, off, inner_proto, &it) || (it.flags & 0x17) != 0x02)
		return -1;
	__builtin_memset(syn, 0, sizeof(*syn));
	if (inner_proto == ETH_P_IP) {
		__builtin_memcpy(syn->client, &it.t.ipv4.saddr, 4);
		__builtin_memcpy(syn->vip, &it.t.ipv4.daddr, 4);
		syn->family = BALLAST_FAMILY_V4;
	} else {
		__builtin_memcpy(syn->client, it.t.ipv6.saddr, 16);
		__builtin_memcpy(syn->vip, it.t.ipv6.daddr, 16);
		syn->family = BALLAST_FAMILY_V6;
	}
	syn->client_port = it.th->source;
	syn->vip_port = it.th->dest;
	syn->isn = bpf_ntohl(it.th->seq);
	state = socket_state(ctx, &it.t, tuple_len(inner_proto));
	if (state == BPF_TCP_TIME_WAIT) {
		if (inner_proto == ETH_P_IP) {
			it.t.ipv4.saddr = 0;
			it.t.ipv4.sport = 0;
		} else {
			__builtin_memset(it.t.ipv6.saddr, 0, 16);
			it.t.ipv6.sport = 0;
		}
		state = socket_state(ctx, &it.t, tuple_len(inner_proto));
		if (state != BPF_TCP_LISTEN)
			return SYN_TIME_WAIT;
	}
	if (!state)
		return 0;
	return state == BPF_TCP_LISTEN ? SYN_LISTENER : SYN_OTHER;
}

/* The part of the kernel's struct tcp_request_sock read here, relocated
 * by libbpf against the running kernel's BTF (CO-RE). */
struct tcp_request_sock___ballast {
	__u32 snt_isn; /* the ISN of this host's SYN-ACK */
} __attribute__((preserve_access_index));

/* Whether the request socket `sk` (BPF_TCP_NEW_SYN_RECV) is the one the
 * packet's sender is completing: it acknowledges this host's SYN-ACK, ISN
 * + 1 (this host sends nothing else before the handshake completes). A
 * blind spoofer, whose own SYN made the request socket, never saw that
 * ISN. */
static __always_inline int request_acked(struct bpf_sock *sk, const struct inner_tcp *it)
{
	struct tcp_request_sock___ballast *req =
		(struct tcp_request_sock___ballast *)bpf_skc_to_tcp_request_sock(sk);

	if (!req || !(it->flags & 0x10))
		return 0;
	return bpf_ntohl(it->th->ack_seq) == req->snt_isn + 1;
}

/* Does a connection on this host hold the TCP packet other than a SYN at
 * data + off? 1 a socket of its tuple (established, or a request socket
 * whose SYN-ACK the packet acknowledges), or a listener whose SYN cookie it
 * carries; 0 none: no socket (the kernel would answer with a RST), a
 * request socket the packet does not complete (a spoofed SYN's: the
 * kernel would drop it), or only a TIME_WAIT of the tuple, a connection
 * that ended here (the client reused the port; its live connection is
 * elsewhere, and TIME_WAIT would answer it with an ACK of the old one); -1
 * a SYN, or not asked (inner_tcp_of): passed up as before. */
static __always_inline int est_has_socket(struct xdp_md *ctx, void *data, void *data_end, __u32 off,
					  __u16 inner_proto)
{
	struct inner_tcp it;
	struct bpf_sock *sk;
	int has;

	if (inner_tcp_of(data, data_end, off, inner_proto, &it) || (it.flags & 0x02))
		return -1;
	sk = bpf_skc_lookup_tcp(ctx, &it.t, tuple_len(inner_proto), BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	if (sk->state != BPF_TCP_LISTEN) {
		if (sk->state == BPF_TCP_NEW_SYN_RECV)
			has = request_acked(sk, &it);
		else
			has = sk->state != BPF_TCP_TIME_WAIT;
		bpf_sk_release(sk);
		return has;
	}
	/* Only a listener: the ACK of a handshake made with a SYN cookie is
	 * the one packet it takes. */
	has = bpf_tcp_check_syncookie(sk, it.iph, iph_len(inner_proto), it.th, sizeof(*it.th)) == 0;
	bpf_sk_release(sk);
	return has;
}

#endif /* BALLAST_DECAP_SOCKET_H */
