/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The backends' decap program (bpf/xdp_decap.bpf.c): its maps, verdicts
 * and limits (agent/dataplane/decap.h).
 * Part of the kernel/user ABI: included by ballast_abi.h, never alone.
 */
#ifndef BALLAST_ABI_DECAP_H
#define BALLAST_ABI_DECAP_H

/* ---- decap program ------------------------------------------------------ */

/* Key of the decap program's `decap_addrs` hash: a local address that
 * encapsulated traffic may be addressed to. Value: __u32, unused (1). */
struct ballast_decap_addr {
	__u8 addr[16];
	__u8 family;
	__u8 pad[3];
};

/* Key of the decap program's `decap_sources` LPM trie: who may send
 * encapsulated packets to this host (the routers' outer sources), as
 * prefixes. prefixlen counts the family byte too: 8 + the address prefix
 * length. Value: __u32, unused (1). */
struct ballast_decap_prefix {
	__u32 prefixlen;
	__u8 family;
	__u8 addr[16];
	__u8 pad[3];
};

/* Key of the decap program's `decap_vips` hash: what the routers send
 * through the tunnel to a VIP served here. Every VIP address has its
 * address entry (proto 0, port 0), whose value says how its packets are
 * checked (BALLAST_DECAP_VIP_*); beside it, one entry per served protocol
 * and port (port 0 = every port of that protocol). An inner TCP or UDP
 * packet passes with an entry of its destination port or port 0; an
 * ICMP(v6) error with one of the port and protocol of the packet it quotes
 * (the VIP's reply: its source port), as the router steers only those;
 * anything else to the address is `unserved`. */
struct ballast_decap_vip {
	__u8 addr[16]; /* network order; IPv4 in the first 4 bytes, the rest zero */
	__u8 family;   /* BALLAST_FAMILY_V4 / _V6 */
	__u8 proto;    /* IPPROTO_TCP / IPPROTO_UDP; 0 in the address entry */
	__be16 port;   /* network order; 0 = every port of proto (and the address entry) */
};
/* Value of an address entry: its listed ports only (BALLAST_DECAP_VIP_PORTS),
 * or every packet to the address (BALLAST_DECAP_VIP_ANY: a config naming
 * the address alone, as before ports could be given). Other entries: 1. */
#define BALLAST_DECAP_VIP_PORTS 0u
#define BALLAST_DECAP_VIP_ANY 1u
/* Entries of `decap_vips`, address entries included. */
#define BALLAST_DECAP_MAX_VIPS 4096u

/* decap_policy[0]: which checks are on. A set that was never given (its bit
 * clear) allows anything: outer sources, inner destinations. */
#define BALLAST_DECAP_CHECK_SOURCE 0x1u /* outer source in decap_sources */
#define BALLAST_DECAP_CHECK_VIP 0x2u    /* inner destination and port in decap_vips */
/* Second chance off: a pure TCP SYN for which no socket here would take it
 * is passed up (the kernel answers RST) instead of bounced to its router. */
#define BALLAST_DECAP_NO_BOUNCE 0x4u

/* Decap counters (per-CPU array `decap_stats`, one __u64 per reason). */
enum ballast_decap_verdict {
	BALLAST_DECAP_V_DECAPPED = 0, /* outer header stripped, inner passed up */
	BALLAST_DECAP_V_PASS,	      /* not encapsulated, or not for us: untouched */
	BALLAST_DECAP_V_BAD_INNER,    /* encapsulated but the inner header is truncated: dropped */
	BALLAST_DECAP_V_BAD_OUTER,    /* for us, but the outer IPv4 checksum or length is wrong:
					 dropped (the decap maps are not pinned: no layout to keep) */
	BALLAST_DECAP_V_BAD_SOURCE,   /* for us, from a source that is no router: dropped */
	BALLAST_DECAP_V_NOT_VIP,      /* for us, inner destination not a VIP here: dropped */
	/* A pure SYN no socket here would take (no listener, no request socket;
	 * a tuple in TIME_WAIT without a listener): sent back to the router,
	 * outer addresses swapped (XDP_TX). */
	BALLAST_DECAP_V_BOUNCED,
	/* Same, but the router marked it as the last hop (or BALLAST_DECAP_NO_BOUNCE):
	 * stripped and passed up; the kernel answers RST. */
	BALLAST_DECAP_V_REFUSED,
	/* A GUE packet (outer IP + UDP to the GUE port): outer IP and UDP headers
	 * stripped, inner passed up (`decapped` counts IP-in-IP). */
	BALLAST_DECAP_V_DECAPPED_GUE,
	/* Counted by tc_decap_rst (egress): the kernel's RST to a SYN that
	 * xdp_decap passed up because a listener would take it, and that no
	 * socket took after all (the listener went in between): dropped, so
	 * the client's retransmitted SYN gets its second chance. */
	BALLAST_DECAP_V_RST_HELD,
	/* Counted by tc_decap_rst (egress): the kernel's ACK of an old
	 * connection in TIME_WAIT answering a last-hop SYN that no listener
	 * takes, rewritten into the RST the router meant the client to get
	 * (it would otherwise resend its SYN to the same TIME_WAIT). */
	BALLAST_DECAP_V_TW_REFUSED,
	/* A packet other than a SYN with the router's probe mark (an adopted
	 * flow, established second chance) that no socket here holds: sent back
	 * to the router, outer addresses swapped (XDP_TX). */
	BALLAST_DECAP_V_BOUNCED_EST,
	/* An outer fragment of a tunnelled packet (IP-in-IP, IPv6-in-IP, the
	 * first fragment of GUE) to this host: the routers never send one (DF
	 * is kept, oversize packets are answered with ICMP too-big), and the
	 * kernel would reassemble and decapsulate it past the source and VIP
	 * checks: dropped. */
	BALLAST_DECAP_V_FRAG,
	/* For us, from a router, to a VIP address here, but not what the
	 * routers send there: a protocol or port no VIP of the address serves,
	 * an ICMP(v6) error quoting none, other ICMP, an inner fragment, an
	 * IPv6 extension header the router does not walk: dropped. */
	BALLAST_DECAP_V_UNSERVED,
	BALLAST_DECAP_V_MAX
};

/* Value of the decap program's `decap_syns` array: a pure SYN that
 * xdp_decap passed up (second chance on), in slot hash(tuple) &
 * (BALLAST_DECAP_SYN_SLOTS - 1), the newest overwriting, for tc_decap_rst
 * to mend the kernel's answer to it within BALLAST_DECAP_RST_WINDOW_NS:
 *  - BALLAST_DECAP_SYN_HOLD: a listener would take it (not the last hop):
 *    the kernel's RST to it (ack = isn + 1) is dropped;
 *  - BALLAST_DECAP_SYN_REFUSE: the last hop, the tuple in TIME_WAIT and no
 *    listener: the kernel's ACK of the old connection is rewritten into a
 *    RST (seq 0, ack = isn + 1).
 * Either clears the slot. Addresses in network order, IPv4 in the first 4
 * bytes. */
#define BALLAST_DECAP_SYN_HOLD 1
#define BALLAST_DECAP_SYN_REFUSE 2
struct ballast_decap_syn {
	__u8 client[16];
	__u8 vip[16];
	__be16 client_port;
	__be16 vip_port;
	__u8 family; /* BALLAST_FAMILY_V4 / _V6; 0 = free */
	__u8 kind;   /* BALLAST_DECAP_SYN_HOLD / _REFUSE */
	__u8 pad[2];
	__u32 isn; /* the SYN's sequence number, host order */
	__u64 time_ns; /* bpf_ktime_get_coarse_ns() when it was passed up */
};
#define BALLAST_DECAP_SYN_SLOTS 4096u
#define BALLAST_DECAP_RST_WINDOW_NS 100000000ull /* 100 ms */

#endif /* BALLAST_ABI_DECAP_H */
