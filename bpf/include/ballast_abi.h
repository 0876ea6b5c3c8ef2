/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ballast kernel/user ABI.
 *
 * The only header shared by the XDP programs and the C++ agent. It holds
 * plain fixed-width types and constants: no kernel-only or libc-only types,
 * no functions. Every struct is laid out with explicit padding so that the
 * BPF side (clang -target bpf) and the host side (g++/clang x86_64) agree
 * byte for byte; tests/bpf checks the sizes with static_assert.
 *
 * Byte order: addresses and ports are in network byte order (as they appear
 * on the wire); every other integer is in host byte order.
 *
 * Time: every *_ns field is CLOCK_MONOTONIC nanoseconds, the clock that
 * bpf_ktime_get_ns() reads. User space uses clock_gettime(CLOCK_MONOTONIC).
 * The data plane stamps last_seen_ns and next-hop expiries with a coarse
 * reading of that clock (up to one tick behind); deadlines are compared with
 * the precise one (bpf/lib/clock.h).
 */
#ifndef BALLAST_ABI_H
#define BALLAST_ABI_H

#include <linux/types.h>

/* ---- limits ------------------------------------------------------------ */

#define BALLAST_MAX_VIPS 1024u     /* vip_id is 1..BALLAST_MAX_VIPS-1 */
#define BALLAST_MAX_BACKENDS 16384u /* backend_id is 1..BALLAST_MAX_BACKENDS-1 */
#define BALLAST_DEFAULT_FLOWS 262144u
#define BALLAST_HANDSHAKE_WAYS 4u     /* slots per `handshakes` set (one 64-byte line) */
#define BALLAST_HANDSHAKE_SETS 16384u /* `handshakes` entries at least (a power of two; more
                                         with a larger flow table: Options) */
#define BALLAST_ADOPTED_WAYS 4u       /* flows per `adopted_flows` set */
#define BALLAST_FLOWS_PER_ADOPTED_SET 2u /* `adopted_flows` has one set per 2 flows of
                                         flow_capacity: room for twice it */
#define BALLAST_DEFAULT_TABLE_SIZE 65537u /* Maglev M, prime */
#define BALLAST_MAX_TABLE_SIZE 1048573u   /* largest accepted M, prime */
#define BALLAST_INVALID_ID 0u

/* Pin directory (bpffs). Maps and the lb program live directly below it. */
#define BALLAST_PIN_DIR "/sys/fs/bpf/ballast"

/* ---- address families (our own, not AF_*: fixed across platforms) ------ */

#define BALLAST_FAMILY_V4 4
#define BALLAST_FAMILY_V6 6

/* ---- VIPs -------------------------------------------------------------- */

/* Key of the `vips` hash map. An IPv4 address is stored in addr[0..3] and
 * the rest is zero. port == 0 matches every port of (addr, proto). */
struct ballast_vip_key {
	__u8 addr[16];
	__be16 port;
	__u8 proto;  /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 family; /* BALLAST_FAMILY_V4 / _V6 */
};

/* A `vips` entry with port 0 and this protocol marks its address as a VIP
 * address; its value is ignored. The agent keeps exactly one per address
 * while any VIP uses the address. The data plane uses it to classify packets
 * without a usable port (fragments, ICMP, truncated L4). */
#define BALLAST_VIP_ADDR_MARKER 0

/* `vip_filter` is an ARRAY of BALLAST_VIP_FILTER_WORDS __u64 words: a
 * bitmap with one bit set for every VIP address, at the index that
 * ballast_vip_filter_bit() gives. A clear bit proves a packet is not for a
 * VIP, so non-VIP traffic costs one array read instead of hash lookups.
 * The agent sets a bit before it adds the VIP and recomputes the word after
 * it deletes one. */
#define BALLAST_VIP_FILTER_WORDS 1024u /* 65536 bits */

/* vip flags */
#define BALLAST_VIP_F_OWNED 0x1u /* owned mode: forward only while now < owner_deadline_ns */
/* GUE: the outer header is IP + UDP (to handshake_settings.gue_port, from a
 * source port taken from the flow's hash) with the client's IP packet right
 * after the UDP header (GUE version 1, "direct IP": no GUE header; the
 * Linux fou module's `gue` type takes it). A backend NIC's RSS then spreads
 * the router's flows by the UDP ports. Without it: IP-in-IP. */
#define BALLAST_VIP_F_GUE 0x2u
#define BALLAST_GUE_PORT_DEFAULT 6080u /* IANA's port for GUE */

/* Value of the `vips` hash map.
 *
 * Ownership (active/standby): a VIP with BALLAST_VIP_F_OWNED is forwarded
 * only while bpf_ktime_get_ns() < owner_deadline_ns. From the deadline on,
 * every packet of the VIP — new and established flows, and ICMP errors about
 * its flows — is dropped and counted (verdict drop_fenced, vip_stats.fenced).
 * The owner keeps the deadline strictly before its lease expires and renews
 * it with the lease, so a frozen owner stops on its own before anyone else
 * can take the VIP over. Without the flag the deadline is ignored (and kept
 * 0 by the agent). */
struct ballast_vip_meta {
	__u32 vip_id; /* index into maglev_tables and vip_stats */
	__u32 flags;  /* BALLAST_VIP_F_* */
	__u64 owner_deadline_ns; /* CLOCK_MONOTONIC; meaningful with BALLAST_VIP_F_OWNED */
};

/* Value of the `vip_refs` array, indexed by vip_id: a VIP as an established
 * flow needs it, so a packet of a known flow skips the `vips` hash lookup.
 * The flow records the vip_id and gen it was resolved under; the shortcut
 * holds while meta.vip_id == that id, gen is unchanged, and key covers the
 * flow's destination (same address, family and protocol; port 0 or the
 * flow's port). Otherwise the packet takes the `vips` lookup and the flow
 * records the result.
 * The agent writes the entry before the `vips` entry when it adds a VIP,
 * rewrites meta (same gen) when only flags or the owner deadline change,
 * clears meta.vip_id and advances gen when the VIP is deleted, and advances
 * the gen of a port-0 VIP when it adds a VIP for one port of the same
 * address and protocol (that VIP now owns some of the port-0 VIP's flows).
 * gen only grows for a given vip_id. */
struct ballast_vip_ref {
	struct ballast_vip_key key;   /* the `vips` key of this VIP */
	__u32 pad0;
	struct ballast_vip_meta meta; /* copy of its `vips` value; vip_id 0 = no VIP */
	__u32 gen;
	__u32 pad1;
};

/* ---- backends ---------------------------------------------------------- */

enum ballast_backend_state {
	BALLAST_BACKEND_UNUSED = 0,   /* slot free: flows on it are re-steered */
	BALLAST_BACKEND_ACTIVE = 1,   /* takes new and existing flows */
	BALLAST_BACKEND_DRAINING = 2, /* existing flows only, until drain_deadline_ns */
	BALLAST_BACKEND_EVICTED = 3,  /* existing flows re-steered on their next packet */
};

/* Value of the `backends` array, indexed by backend_id. */
struct ballast_backend {
	__u8 addr[16]; /* encapsulation destination, network byte order */
	__u8 family;   /* BALLAST_FAMILY_V4 / _V6 */
	__u8 state;    /* enum ballast_backend_state */
	__u16 pad0;
	__u32 pad1;
	/* DRAINING only: past this instant existing flows are re-steered as if
	 * the backend were EVICTED. 0 = no deadline. */
	__u64 drain_deadline_ns;
};

/* ---- Maglev tables ----------------------------------------------------- */
/*
 * `maglev_tables` is an ARRAY_OF_MAPS indexed by vip_id. Each inner map is an
 * ARRAY of __u32 with M + 1 entries: entry 0 holds M (the table size) and
 * entries 1..M hold the backend_id of each slot. Keeping M inside the inner
 * map makes a table self-describing, so swapping the inner map (one
 * bpf_map_update_elem on the outer map) changes size and contents together.
 */

/*
 * `maglev_history` (ARRAY_OF_MAPS by vip_id, like `maglev_tables`) holds,
 * per slot of the VIP's current table, the backends that slot pointed to
 * before, most recent first, without repeats and without the slot's current
 * backend: established second chance (docs/dataplane.md). Each inner map is
 * an ARRAY of __u64 with M + 1 entries: entry 0 holds M (history of a table
 * of another size is ignored), entry i the slot's previous backend ids in
 * 16-bit fields (bits 0-15 the most recent, then 16-31, 32-47; bits 48-63
 * zero), 0 = none. The agent derives it from the replicated state (the last
 * table versions of the VIP), so every router holds the same history. A VIP
 * without one has no inner map.
 */
#define BALLAST_HISTORY_DEPTH 3
#define BALLAST_HISTORY_ID_BITS 16
#define BALLAST_HISTORY_ID_MASK 0xffffu

/* ---- connection table -------------------------------------------------- */

/* Key of the `flows` LRU hash: the client→VIP 5-tuple. */
struct ballast_flow_key {
	__u8 src[16]; /* client address */
	__u8 dst[16]; /* VIP address */
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 family;
	__u16 pad;
};

enum ballast_flow_state {
	/* SYN seen, handshake not complete: follows the table. Written only by
	 * builds before the `handshakes` array; still understood, so flows of
	 * an older program adopted from the pins finish their handshake. */
	BALLAST_FLOW_SYN_SENT = 1,
	BALLAST_FLOW_ESTABLISHED = 2, /* handshake complete (or adopted mid-stream): pinned */
	BALLAST_FLOW_CLOSING = 3,     /* FIN or RST seen: pinned until the linger expires */
	BALLAST_FLOW_UDP = 4,         /* UDP: pinned until idle timeout */
};

/* flow flags */
#define BALLAST_FLOW_F_PAYLOAD_SEEN 0x1u  /* first client payload recorded */
#define BALLAST_FLOW_F_RESPONSE_SEEN 0x2u /* first response time recorded */
/* The router saw the flow's handshake (it came from a `handshakes` slot, not
 * adopted mid-stream): only such a flow's first client RST is counted
 * (client_rsts), so spoofed RSTs cannot forge the passive signal. */
#define BALLAST_FLOW_F_HANDSHAKE_SEEN 0x4u
/* seq_next holds the client's next sequence number (flows of older builds
 * start without it and take it from their next packet). */
#define BALLAST_FLOW_F_SEQ_KNOWN 0x8u
/* A SYN kept this active flow (syn_keeps_flow): a new connection on the
 * tuple, typically after a backend's RST that the router does not see, may
 * be under way on the flow's backend. Its handshake sample is taken from the
 * slot at the next client packet, and its first payload starts a new
 * first-response sample; the sequence window stays the flow's. */
#define BALLAST_FLOW_F_REOPENED 0x10u
/* Established second chance: the flow was adopted mid-stream on a slot whose
 * history holds other backends (maglev_history), and the router may still
 * move it along that history when the backend it went to has no socket for
 * it and bounces its packet back (bpf/lib/bounce.h). `reserved` then holds
 * the hops taken (bits 0-7) and the adoption time (bits 8-31: the coarse
 * clock >> BALLAST_ESC_TIME_SHIFT, modulo 2^24). Until the adoption is
 * older than handshake_settings.adopted_bounce_ms, the flow's packets carry
 * the probe mark (BALLAST_ENCAP_ID_PROBE), which asks the backend's decap
 * program to look for their socket; then the flag goes. */
#define BALLAST_FLOW_F_HISTORY 0x20u
#define BALLAST_ESC_TIME_SHIFT 20 /* 1.05 ms units; 2^24 of them wrap after 4.9 h */
/* Probation: the router saw this flow's handshake complete (its SYN, then an
 * ACK that follows the SYN's ISN), which a blind spoofer can forge with two
 * packets, or adopted it mid-stream (one packet). Such a flow lives in
 * `adopted_flows` (whose sets a flood only turns over among themselves)
 * until it shows it is a connection the backend holds: its first packet
 * after the handshake (an adopted flow's first packet; a flow that walked
 * its slot's history, the first one after that window) carries the probe
 * mark, and the backend's decap program bounces it if no socket there holds
 * it (a spoofer cannot complete a handshake it never saw the SYN-ACK of).
 * A packet at least BALLAST_PROBATION_WAIT after that one, with no bounce
 * in between, moves the flow into `flows`; a bounce ends its probation
 * (it stays an adopted flow, its RSTs are not counted). `reserved` holds
 * 1 in bits 0-7 once the probe is sent, and its time in bits 8-31 (as
 * BALLAST_FLOW_F_HISTORY's). */
#define BALLAST_FLOW_F_PROBATION 0x40u
#define BALLAST_PROBATION_WAIT 96 /* BALLAST_ESC_TIME_SHIFT units: 100 ms */
/* At most this many bounces of one adopted flow are taken: one per previous
 * backend, and one back to the table's pick as the last hop. */
#define BALLAST_ESC_HOPS_MAX (BALLAST_HISTORY_DEPTH + 1)

/* How far (bytes, either way, modulo 2^32) a client's RST or FIN may be from
 * the next sequence number the router saw it send, and how far one packet
 * may move that number forward, for the router to take it as the client's:
 * anything further is still forwarded to the flow's backend, whose TCP
 * stack judges it (RFC 5961), but leaves the flow as it was. A blind
 * spoofer hits the window once in 2^32 / (2 * window) = 8192 guesses of the
 * sequence number, after guessing the client's address and port. */
#define BALLAST_SEQ_WINDOW 262144u

/* A flow: the value of the `flows` and `flows_udp` LRU hashes, and of an
 * `adopted_flows` way. */
struct ballast_flow {
	__u32 backend_id;
	__u8 state;        /* enum ballast_flow_state */
	__u8 flags;        /* BALLAST_FLOW_F_* */
	__u16 vip_id;      /* VIP the flow was last resolved under (see vip_refs), 0 = none */
	__u32 payload_ack; /* client's ACK number when it sent its first payload (host order) */
	__u32 vip_gen;     /* vip_refs[vip_id].gen at that time */
	union {
		__u64 start_ns; /* SYN_SENT (older builds' flows): SYN time on this backend */
		struct {
			__u32 seq_next; /* the client's next sequence number, host order
					   (BALLAST_FLOW_F_SEQ_KNOWN) */
			__u32 reserved;
		};
	};
	__u64 last_seen_ns; /* refreshed at most every BALLAST_TOUCH_NS */
	__u64 payload_ns;   /* time of the first client payload */
};

/* Value of the `adopted_flows` array: TCP flows adopted mid-stream (a packet
 * other than a SYN with neither a `flows` entry nor a handshake slot), in
 * one of the BALLAST_ADOPTED_WAYS ways of set hash & (number of sets - 1)
 * of their flow hash. A new flow takes the way of its own tuple, else a
 * free one, else the one whose last_seen_ns is oldest (that flow is
 * forgotten: its next packet is adopted again, on the table's pick). The
 * keys come first so that a lookup that finds nothing reads only them. A
 * way is free while its key is all zero (a real key's family is never 0);
 * the program writes a key's family last, after the flow. */
struct ballast_adopted_set {
	struct ballast_flow_key key[BALLAST_ADOPTED_WAYS];
	struct ballast_flow flow[BALLAST_ADOPTED_WAYS];
};

/* Value of the `handshakes` array: a TCP connection whose handshake is
 * under way (the client's SYN seen, its completing ACK not yet), in one of
 * the BALLAST_HANDSHAKE_WAYS slots of set hash & (number of sets - 1)
 * of its flow hash (a free or expired slot, else the set's oldest). The
 * `flows` table gets an entry only when the handshake completes, so a SYN
 * flood cannot push established connections out of it; a flood only
 * overwrites slots here, which costs handshake samples and
 * SYN-retransmission counts, not where an established connection goes.
 *
 * The program writes a slot as two 8-byte words: {ports, syn_time} first,
 * then {hash, backend_id}. A slot is in use while backend_id != 0 and
 * syn_time is at most the settings' syn_idle_ns old. */
struct ballast_handshake {
	__u32 hash;       /* flow hash (ballast_flow_hash) of the 5-tuple */
	__u16 backend_id; /* the backend the SYN went to; 0 = empty */
	/* Second-chance bounces this handshake took since its latest client
	 * SYN (at most BALLAST_BOUNCES_MAX). The two bytes were the high half
	 * of a 32-bit backend_id, always 0: a slot written by an older build
	 * reads as no bounce. */
	__u8 bounces;
	/* BALLAST_HANDSHAKE_F_*: 0 in slots of earlier builds (their SYNs were
	 * counted when sent). */
	__u8 flags;
	/* The client SYN's sequence number (its ISN). The packet that completes
	 * the handshake carries isn + 1 (plus any data of the SYN: TCP Fast
	 * Open), so a packet of another connection on the tuple, e.g. of a flow
	 * adopted mid-stream, does not complete a SYN a blind spoofer sent,
	 * and only a SYN with this ISN is taken for its retransmission
	 * (handshake_find). Earlier builds kept the ports here: their slots'
	 * ACKs are adopted instead, on the same table pick. */
	__u32 isn;
	__u32 syn_time;   /* precise clock >> BALLAST_HANDSHAKE_TIME_SHIFT at the latest
	                     SYN; wraps after 18 minutes */
};

/* The slot's backend has counted this handshake as a new flow
 * (backend_stats.new_flows). A SYN counts once its client shows it is
 * there: when the handshake completes, or at its first retransmission. A
 * SYN followed by nothing (a blind spoofer's, a SYN flood's) is no new flow
 * of any backend, so it cannot raise a backend's incomplete-handshake or
 * retransmission ratios. A write of the slot's backend (a bounce to the
 * next choice) clears it. */
#define BALLAST_HANDSHAKE_F_COUNTED 0x1u

/* Value of the `handshakes` array: one set of slots, one cache line. */
struct ballast_handshake_set {
	struct ballast_handshake way[BALLAST_HANDSHAKE_WAYS];
};

/* syn_time's unit: 256 ns. Handshake times are recorded in these units. */
#define BALLAST_HANDSHAKE_TIME_SHIFT 8

/* last_seen_ns is rewritten only when it is older than this, so that an
 * established flow's packets do not dirty the shared cache line each time. */
#define BALLAST_TOUCH_NS 100000000ull /* 100 ms */

/* ---- settings ---------------------------------------------------------- */

/* policy bits (struct ballast_settings.policy) */
#define BALLAST_POLICY_DROP_MALFORMED 0x1u /* malformed L2/L3 headers: drop instead of pass */
#define BALLAST_POLICY_ICMP_TOO_BIG 0x2u   /* answer oversize packets with ICMP too-big
					      (else drop and count) */

/* Value of the single-entry `settings` array (key 0). */
struct ballast_settings {
	__u8 src4[4];  /* outer source for IPv4 encapsulation */
	__u8 src6[16]; /* outer source for IPv6 encapsulation */
	__u32 policy;  /* BALLAST_POLICY_* */
	__u64 tcp_idle_ns; /* established TCP flow idle timeout */
	__u64 udp_idle_ns; /* UDP flow idle timeout */
	__u64 linger_ns;   /* after FIN/RST */
	__u64 syn_idle_ns; /* handshake under way forgotten this long after its latest SYN */
	__u64 fib_ttl_ns;  /* how long a cached next hop is trusted */
};

/* Value of the single-entry `handshake_settings` array (key 0): settings of
 * the handshake slots added after `settings` was pinned by earlier builds
 * (a separate map keeps that one's layout). `reserved` is zero: room for
 * later settings without another layout change. */
struct ballast_handshake_settings {
	/* A pure SYN whose slot holds an earlier SYN of its connection at least
	 * this old (the client got no SYN-ACK and retransmitted) goes to the
	 * flow's next choice (ballast_choice_hash) instead of the backend that
	 * did not answer. 0 = never. */
	__u64 syn_retry_ns;
	/* A pure SYN on an ESTABLISHED flow whose last packet is younger than
	 * this is forwarded to the flow's backend and leaves the flow as it is
	 * (the backend answers a stray or spoofed SYN with a challenge ACK, and
	 * a client that reuses the port of a connection its backend reset gets
	 * that backend's listener); an older flow's SYN starts a new connection.
	 * 0 = every SYN starts a new connection (older agents). */
	__u64 syn_reuse_idle_ns;
	/* Per-flow IPv4 outer source: when src4_spread_mask is not zero, an
	 * IPv4 outer header's source is src4_spread_base with the bits of the
	 * mask (host byte order: the host part of the router's own prefix)
	 * taken from the flow's hash (ballast_flow_label), so a backend's RSS
	 * spreads one router's flows over its receive queues. A bounce to any
	 * address of the prefix is the router's (bpf/lib/bounce.h). 0 = every
	 * IPv4 outer header has the settings' src4. Not a layout change: these
	 * two words were reserved (zero) in earlier builds. */
	__u8 src4_spread_base[4]; /* network order, host bits zero */
	__u32 src4_spread_mask;
	/* UDP destination port of GUE outer headers (BALLAST_VIP_F_GUE), host
	 * order; 0 = BALLAST_GUE_PORT_DEFAULT. A bounce (second chance) of a GUE
	 * packet arrives with the same ports. Not a layout change either: the
	 * first half of a word reserved (zero) in earlier builds. */
	__u16 gue_port;
	__u16 reserved16;
	/* Established second chance: for this long after a flow is adopted on a
	 * slot with history, its packets carry the probe mark and the router
	 * takes their bounces (bpf/lib/bounce.h). 0 = off (and in earlier
	 * builds, whose word this was: reserved, zero). */
	__u32 adopted_bounce_ms;
};

/* ---- second chance ----------------------------------------------------- */

/* A backend with no listener for a SYN sends it back to the router that
 * sent it (its decap program, "bounce"): the same encapsulated packet with
 * the outer addresses swapped. The router sends it to the flow's next
 * choice, at most this many times per client SYN; the SYN after the last
 * bounce is marked as the last hop, and its backend's kernel answers it
 * (with a RST when nothing listens there either). */
#define BALLAST_BOUNCES_MAX 2
/* Marks and tags in the outer header (bpf/lib/mark.h). The outer IPv4
 * identification, or the outer IPv6 flow label, of an encapsulated packet
 * says how the backend's decap program treats it:
 *  - the last-hop mark (BALLAST_ENCAP_ID_LAST / BALLAST_FLOW_LABEL_LAST):
 *    a SYN that must not be bounced; its backend's kernel answers it;
 *  - the probe mark: a packet other than a SYN that may be bounced (a flow
 *    adopted on a changed slot, established second chance): the decap
 *    program looks for its socket (established, request or TIME_WAIT
 *    socket, or a listener that takes its SYN cookie) and, with none,
 *    sends it back to the router. IPv4: any identification but 0 and the
 *    last-hop mark; IPv6: a label with BALLAST_FLOW_LABEL_PROBE_BIT, other
 *    than the last-hop mark;
 *  - anything else: a SYN may be bounced (no listener), other packets are
 *    never looked up. Unmarked packets other than SYNs carry identification
 *    0 (atomic datagrams, RFC 6864) or a flow label without the probe bit.
 * A SYN that may be bounced, and a probe-marked packet, carry in those bits
 * a tag keyed with this router's secret (`bounce_key`): a bounce is taken
 * only when it echoes the tag of the packet the router sent, so a stranger
 * who forges one from a backend's address must guess 15 to 20 bits, and
 * has one guess per handshake or probed flow (a wrong tag ends that
 * handshake's or flow's second chance; docs/security.md). */
#define BALLAST_ENCAP_ID_LAST 0xba11u
#define BALLAST_FLOW_LABEL_LAST 0xfffffu
#define BALLAST_FLOW_LABEL_PROBE_BIT 0x80000u
/* Inside the lb program (struct pkt's outer_id): this packet gets the probe
 * mark and its tag. Never on the wire as such. */
#define BALLAST_ENCAP_ID_PROBE 0xba12u

/* Value of the single-entry `bounce_key` array: the router's secret for
 * bounce tags. Written once by the agent (random) when it is zero, and kept
 * in the pins across restarts, so that bounces of packets sent before a
 * restart still match. Never leaves the router. */
struct ballast_bounce_key {
	__u64 k[2];
};

/* Per-backend second-chance counters (per-CPU array `backend_bounces`, by
 * backend_id). A map apart from backend_stats, so that a backend_stats map
 * pinned by an older build keeps its layout. */
struct ballast_backend_bounces {
	__u64 refused;  /* SYNs this backend bounced back: no listener there */
	__u64 received; /* bounced SYNs sent to this backend as the next choice */
};

/* Established second chance counters (single-entry per-CPU array
 * `esc_stats`): what happened to flows adopted mid-stream (ECMP moved them
 * here, or their entry expired) and to their bounces. */
struct ballast_esc_stats {
	__u64 adopted;		/* TCP flows adopted mid-stream */
	__u64 adopted_changed;	/* of those, on a slot whose history holds other
				 * backends: their packets carry the probe mark */
	__u64 moved;		/* bounces that sent a flow on to a previous backend */
	__u64 returned;		/* bounces after which no previous backend was left:
				 * the packet went back to the table's pick as the last
				 * hop (no backend in the history held the connection:
				 * a late packet, or history too short) */
	__u64 skipped_unusable; /* previous backends passed over as unusable
				 * (evicted, removed, drain deadline passed) */
	__u64 forwarded;	/* bounces from a backend the flow had already left
				 * (packets in flight): sent to the flow's backend */
	__u64 stranger;		/* established bounces dropped: no adopted flow of
				 * the tuple in its probe window, a source that is not
				 * its backend, a sequence number out of its window,
				 * or no probe mark */
	__u64 budget;		/* established bounces past BALLAST_ESC_HOPS_MAX:
				 * sent to the table's pick as the last hop */
};

/* Per-backend latency histograms (per-CPU array `backend_latency`, by
 * backend_id; a map apart from backend_stats for the same reason). Bucket i
 * counts samples below 2^(BALLAST_LATENCY_SHIFT0 + i) ns (65.5 us, 131 us,
 * ... 1.07 s); the last bucket counts the rest. The same samples as
 * handshake_ns_sum and first_response_ns_sum. 32-bit counters keep the map
 * at 128 bytes per backend and CPU: a CPU's bucket wraps after 2^32 samples,
 * which Prometheus takes as a counter reset. */
#define BALLAST_LATENCY_BUCKETS 16
#define BALLAST_LATENCY_SHIFT0 16
struct ballast_backend_latency {
	__u32 handshake[BALLAST_LATENCY_BUCKETS];      /* SYN → client's completing ACK */
	__u32 first_response[BALLAST_LATENCY_BUCKETS]; /* first payload → first ACK of server bytes */
};

/* The flow's choices after the table's pick: choice seeds 1..this are
 * tried, in order, for a backend that is neither the table's pick nor the
 * one the last SYN went to. */
#define BALLAST_CHOICE_SEEDS 8

/* ---- ICMP too-big rate limit ------------------------------------------- */

/* Value of the per-CPU `icmp_budget` array (key 0): how many ICMP too-big
 * answers each CPU may send, as a token bucket kept in the GCRA form (one
 * timestamp). The agent writes per_s, burst, interval_ns and burst_ns on
 * every CPU (keeping tat_ns and limited); the program keeps tat_ns and
 * limited. A separate map, not fields of `settings`, so a `settings` map
 * pinned by an older build keeps its layout. */
struct ballast_icmp_budget {
	__u64 interval_ns; /* one answer per interval_ns on each CPU; 0 = no limit */
	__u64 burst_ns;    /* burst * interval_ns: how far ahead answers may be sent */
	__u64 tat_ns;      /* the bucket is full again at this CLOCK_MONOTONIC time */
	__u64 limited;     /* oversize packets not answered, budget spent (drop_too_big) */
	__u32 per_s;       /* as configured (interval_ns = 1e9 / per_s) */
	__u32 burst;       /* as configured */
};

/* ---- next-hop cache ---------------------------------------------------- */

/* Value of the per-CPU `nexthops` array, indexed by backend_id. */
struct ballast_nexthop {
	__u8 smac[6];
	__u8 dmac[6];
	__u32 ifindex;
	__u32 mtu; /* route MTU towards the backend */
	__u32 pad;
	__u64 expires_ns; /* 0 = empty */
};

/* XDP metadata in front of a frame that the lb program encapsulated but
 * could not send because the next hop's neighbour entry is not resolved
 * (verdict pass_fib_no_neigh). The program passes the frame to the kernel
 * with this in front; the tc ingress program on the same device
 * (bpf/tc_neigh.bpf.c) sends it with bpf_redirect_neigh() to `nh` on
 * `ifindex`, so the kernel resolves the neighbour and transmits it. The
 * kernel's own forwarding path cannot: the outer source is the router's own
 * address, so it would drop the frame as a martian. Only an XDP program can
 * write metadata, so nothing from the wire can ask for this. */
#define BALLAST_NEIGH_META_MAGIC 0x6c626e68u /* "lbnh" */
struct ballast_neigh_meta {
	__u32 magic;   /* BALLAST_NEIGH_META_MAGIC */
	__u32 ifindex; /* egress device of the FIB lookup */
	__u8 family;   /* of nh: BALLAST_FAMILY_V4 / _V6 (an IPv4 route may have an IPv6 gateway) */
	__u8 pad[3];
	__u8 nh[16]; /* next hop: the route's gateway, or the backend itself */
};

/* The same hand-off on kernels whose XDP programs may not call
 * bpf_xdp_adjust_meta (the loader probes it; xdp_lb's read-only
 * `xdp_meta_ok`): the lb program leaves the next hop in this CPU's slot of
 * the per-CPU `neigh_handoff` array, with the frame's outer IP header as it
 * wrote it, and passes the frame; tc_neigh takes a frame on the same CPU
 * only when its outer header is byte for byte that one, and empties the
 * slot. */
struct ballast_neigh_handoff {
	struct ballast_neigh_meta meta; /* magic set while the slot holds a frame */
	__u32 outer_len;		/* 20 (IPv4) or 40 (IPv6) */
	__u32 pad[2];			/* outer at byte 40: 8-byte words; 80 bytes in all */
	__u8 outer[40];			/* the frame's outer IP header, from byte 14 of the frame */
};

/* ---- counters ---------------------------------------------------------- */

/* Per-backend passive signals (per-CPU array `backend_stats`, by backend_id). */
struct ballast_backend_stats {
	__u64 new_flows;
	__u64 packets;
	__u64 bytes;
	__u64 syn_retransmits; /* a SYN repeated while its flow waited for the handshake */
	__u64 client_rsts;
	__u64 handshake_ns_sum; /* latest SYN → client's completing ACK (256 ns steps) */
	__u64 handshake_count;
	__u64 first_response_ns_sum; /* first client payload → first ACK of server bytes */
	__u64 first_response_count;
	__u64 resteered_away; /* flows moved off this backend (evicted, drain deadline) */
};

/* Per-VIP counters (per-CPU array `vip_stats`, by vip_id). */
struct ballast_vip_stats {
	__u64 packets;
	__u64 bytes;
	__u64 dropped; /* no backend, fenced, too big, ... */
	/* Of `dropped`: stopped because an owned VIP was past its owner
	 * deadline (verdict drop_fenced). This word was padding (always 0)
	 * before, so the map's layout did not change: a vip_stats map pinned by
	 * an older build is adopted as is (its BTF still names the word `pad`
	 * until the next teardown). */
	__u64 fenced;
};

/* Global verdict reasons (per-CPU array `verdicts`, one __u64 per reason).
 * Every packet the lb program sees increments exactly one of these. */
enum ballast_verdict {
	/* forwarded */
	BALLAST_V_TX = 0,	     /* encapsulated, XDP_TX */
	BALLAST_V_REDIRECT,	     /* encapsulated, XDP_REDIRECT */
	BALLAST_V_ICMP_FWD_TX,	     /* ICMP error about a VIP flow, to its backend (TX) */
	BALLAST_V_ICMP_FWD_REDIRECT, /* same, XDP_REDIRECT */
	BALLAST_V_ICMP_TOO_BIG_SENT, /* oversize: ICMP too-big sent back (XDP_TX) */
	/* passed to the kernel */
	BALLAST_V_PASS_NOT_IP,	/* not IPv4/IPv6 (ARP, LLDP, ...) */
	BALLAST_V_PASS_NOT_VIP, /* IP, not addressed to a VIP */
	/* ICMP to a VIP address that is not an error (echo, ...): dropped, as
	 * everything to a VIP address that no VIP serves (see
	 * BALLAST_V_DROP_VIP_UNSERVED). The slot was pass_icmp_not_err. */
	BALLAST_V_DROP_ICMP_NOT_ERR,
	/* ICMP error to a VIP address quoting something that is not a VIP
	 * flow: dropped. The slot was pass_icmp_unmatched. */
	BALLAST_V_DROP_ICMP_UNMATCHED,
	/* next hop unresolved: encapsulated, handed to tc_neigh with a
	 * struct ballast_neigh_meta, which resolves and sends */
	BALLAST_V_PASS_FIB_NO_NEIGH,
	BALLAST_V_PASS_TTL, /* TTL/hop limit <= 1: the kernel sends time-exceeded */
	/* malformed or unsupported: passed, or dropped with BALLAST_POLICY_DROP_MALFORMED */
	BALLAST_V_BAD_ETH,  /* truncated Ethernet header */
	BALLAST_V_BAD_VLAN, /* truncated 802.1Q tag, or a second tag (QinQ) */
	BALLAST_V_BAD_IP4,  /* truncated, IHL < 5, version != 4, total length inconsistent */
	BALLAST_V_BAD_IP6,  /* truncated, version != 6, payload length inconsistent */
	BALLAST_V_IP6_EXT,  /* to a VIP address: extension header chain too long or
			     * unsupported (AH, ESP, ...). Dropped whatever the policy:
			     * passed, the kernel would route it back out */
	/* dropped */
	BALLAST_V_DROP_FRAG4,	   /* IPv4 fragment to a VIP address */
	BALLAST_V_DROP_FRAG6,	   /* IPv6 fragment to a VIP address */
	BALLAST_V_DROP_BAD_L4,	   /* truncated TCP/UDP/ICMP header to a VIP address */
	BALLAST_V_DROP_NO_BACKEND, /* VIP with no table, empty table, or unusable slot */
	BALLAST_V_DROP_FENCED,	   /* owned VIP past its owner deadline */
	BALLAST_V_DROP_FAMILY,	   /* IPv6 client to an IPv4 backend (unsupported) */
	BALLAST_V_DROP_TOO_BIG,	   /* oversize; ICMP too-big disabled, rate-limited or impossible */
	BALLAST_V_DROP_FIB,	   /* no route to the backend */
	BALLAST_V_DROP_ENCAP,	   /* headroom adjustment failed */
	BALLAST_V_DROP_NO_SETTINGS, /* agent has not written settings (no source address) */
	/* Added later: new reasons go at the end, so the slots of a pinned
	 * `verdicts` map keep their meaning (the agent replaces a pinned map
	 * with fewer slots; only the counts restart). */
	BALLAST_V_DROP_VIP_UNSERVED, /* to a VIP address, but no VIP of that port/protocol
				      * (or an L4 protocol ballast does not balance): the
				      * kernel does not own the address and would route it
				      * back out, to the ToR that sent it */
	BALLAST_V_DROP_NO_NEIGH,     /* next hop unresolved and the device cannot carry XDP
				      * metadata to tc_neigh */
	/* Second chance: an encapsulated SYN addressed to this router (the
	 * outer destination is its source_v4/source_v6), bounced by a backend
	 * with no listener. */
	BALLAST_V_BOUNCE_TX,		/* sent to the flow's next choice, XDP_TX */
	BALLAST_V_BOUNCE_REDIRECT,	/* same, XDP_REDIRECT */
	BALLAST_V_DROP_BOUNCE_BAD,	/* encapsulated to this router, but not a well-formed
					 * pure SYN to a served TCP VIP (or an IPv4 fragment):
					 * dropped */
	BALLAST_V_DROP_BOUNCE_STRANGER, /* no handshake of that tuple under way whose backend
					 * is the bounce's outer source: dropped */
	BALLAST_V_DROP_BOUNCE_BUDGET,	/* the handshake was bounced BALLAST_BOUNCES_MAX
					 * times already: dropped */
	/* A SYN, RST or FIN on an established flow that the router did not take
	 * as the client's (a RST/FIN outside BALLAST_SEQ_WINDOW, a SYN on a flow
	 * active within syn_reuse_idle_ns): forwarded to the flow's backend,
	 * whose TCP stack judges it, and the flow left as it was. */
	BALLAST_V_GUARDED_TX,
	BALLAST_V_GUARDED_REDIRECT,
	/* Established second chance: a packet of an adopted flow bounced by a
	 * backend with no socket for it, sent on to a previous backend of its
	 * slot (or back to the table's pick as the last hop). */
	BALLAST_V_ESC_TX,
	BALLAST_V_ESC_REDIRECT,
	/* Encapsulated to this router from a backend's address, but its outer
	 * header does not carry the tag of the packet the router sent there
	 * (a forged bounce): dropped; the handshake's or flow's second chance
	 * ends (one guess each). */
	BALLAST_V_DROP_BOUNCE_FORGED,
	/* A packet of a flow on probation (BALLAST_FLOW_F_PROBATION) bounced
	 * by its backend, which holds no socket for it: a handshake the
	 * backend never completed (spoofed), or a connection already gone.
	 * Dropped; the flow's probation ends without promotion. */
	BALLAST_V_DROP_PROBATION_REFUTED,
	BALLAST_V_MAX
};

/* ---- flow hash seed ----------------------------------------------------- */
/* The flow hash (ballast_flow_hash) is keyed by a seed that every router of
 * a cluster shares: a slot, a choice, a handshake slot and an adopted-flow
 * set all follow from it, so a stranger who knew it could aim crafted
 * tuples at one of them. The agent draws it at random when the state is
 * first made and keeps it in the replicated state; `lbctl flow-hash rotate`
 * draws a new one (docs/security.md). Value of the single-entry
 * `flow_hash_seed` array (key 0). Until the agent writes it (flags 0: a
 * program loaded over pins of an earlier build, or a state made before the
 * seed existed) the hash uses BALLAST_FLOW_HASH_SEED, the public seed of
 * earlier builds. */
#define BALLAST_FLOW_HASH_SEED 0x6c62616cu /* "lbal": the public seed of earlier builds */
/* A seed: 96 bits, one word for each of the hash's three state words
 * (earlier builds: BALLAST_FLOW_HASH_SEED in each). 32 bits would fall to
 * a stranger who tries every seed against picks he observed. */
struct ballast_hash_seed {
	__u32 w[3];
};
#define BALLAST_SEED_F_SET 0x1u /* `current` is the seed */
/* `previous` is the seed before the last rotation: a flow adopted
 * mid-stream (ECMP moved it here after the rotation) whose pick under that
 * seed differs walks there first in its established second chance (the
 * pick under `previous` leads its slot's history), so connections made
 * before a rotation survive a router change after it. */
#define BALLAST_SEED_F_PREVIOUS 0x2u
struct ballast_flow_hash_seed {
	struct ballast_hash_seed current;
	struct ballast_hash_seed previous;
	__u32 flags; /* BALLAST_SEED_F_* */
	__u32 reserved;
};

/* The QUIC-LB and decap programs' parts, in files of their own. */
#include "ballast_abi_quic.h"
#include "ballast_abi_decap.h"

#endif /* BALLAST_ABI_H */
