/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * QUIC-LB routing by connection ID: the maps xdp_lb reads for a UDP VIP
 * with QUIC-LB configurations (bpf/lib/quic.h, agent/dataplane/quic.h).
 * Part of the kernel/user ABI: included by ballast_abi.h, never alone.
 */
#ifndef BALLAST_ABI_QUIC_H
#define BALLAST_ABI_QUIC_H

/* ---- QUIC-LB: routing by connection ID ---------------------------------- */
/* A UDP VIP in QUIC mode routes a packet whose destination connection ID
 * (DCID) the backends chose by the server ID inside it
 * (draft-ietf-quic-load-balancers): short-header packets, and long-header
 * packets of QUIC v1/v2 other than Initial and 0-RTT (whose DCID the
 * client chose). Those, long headers of other versions and every DCID
 * that does not decode to a usable backend of the VIP ("unroutable") go by
 * the 4-tuple (`flows_udp`, else the table), as any UDP packet.
 *
 * DCID = first octet (config rotation: the 3 high bits; the 5 low ones
 * are the length or random), then 16 octets of server ID + nonce: in the
 * clear (plaintext), or one AES-128-ECB block (sid_len + nonce_len == 16,
 * the draft's single pass). Config rotation 0b111 is never routable. */
#define BALLAST_QUIC_CONFIGS 2u       /* live configurations per VIP (a rotation) */
#define BALLAST_QUIC_CR_UNROUTABLE 7u /* config rotation bits of "no config" */
#define BALLAST_QUIC_SID_MAX 15u      /* server ID octets (nonce >= 4, sum <= 19) */
#define BALLAST_QUIC_NONCE_MIN 4u
#define BALLAST_QUIC_CID_MAX 20u      /* QUIC v1: 1 + sid_len + nonce_len <= 20 */
#define BALLAST_QUIC_AES_ROUND_WORDS 44u /* AES-128: 11 round keys of 4 words */

enum ballast_quic_mode {
	BALLAST_QUIC_MODE_OFF = 0,	 /* slot unused */
	BALLAST_QUIC_MODE_PLAINTEXT = 1, /* server ID in the clear after the first octet */
	/* server ID + nonce == 16 octets, one AES-128-ECB block: decrypted with
	 * dec_rk (single pass) */
	BALLAST_QUIC_MODE_AES_SINGLE = 2,
};

/* One configuration of a VIP. */
struct ballast_quic_config {
	__u8 mode;	/* enum ballast_quic_mode */
	__u8 config_id; /* config rotation bits, 0..6 */
	__u8 sid_len;	/* 1..BALLAST_QUIC_SID_MAX */
	__u8 nonce_len; /* >= BALLAST_QUIC_NONCE_MIN; 1 + sid_len + nonce_len <= 20 */
	__u32 pad;
	/* AES_SINGLE: the key's decryption schedule for the equivalent inverse
	 * cipher (FIPS-197 5.3.5): the last encryption round key first, the
	 * middle ones through InvMixColumns, the key itself last; each word
	 * big-endian as FIPS-197 writes it, stored in host order. The agent
	 * derives it from the 16-octet key (agent/dataplane/quic.h). Zero
	 * otherwise. */
	__u32 dec_rk[BALLAST_QUIC_AES_ROUND_WORDS];
};

/* Value of the `quic_vips` array, indexed by vip_id: the VIP's live
 * configurations (a slot with mode OFF is unused; both OFF: not a QUIC
 * VIP). Two slots carry a rotation: the new config ID beside the old one
 * until the old one's connections are gone. Each slot is rewritten whole
 * by one map update of the entry. */
struct ballast_quic_vip {
	struct ballast_quic_config config[BALLAST_QUIC_CONFIGS];
};

/* Key of the `quic_servers` hash: a server ID of one configuration of one
 * VIP. Value: __u32 backend_id. A server ID reaches only the backend its
 * entry names, and only while that backend is ACTIVE, or DRAINING before
 * its deadline; the agent removes a backend's entries when the backend
 * leaves the VIP. The octets past sid_len are zero. */
struct ballast_quic_sid_key {
	__u32 vip_id;
	__u8 config_id;
	__u8 sid_len;
	__u8 pad[2];
	__u8 sid[16];
};
#define BALLAST_QUIC_MAX_SERVERS 65536u /* entries of `quic_servers` */

/* Per-VIP QUIC counters (per-CPU array `quic_stats`, by vip_id), for QUIC
 * VIPs only. Every UDP packet of such a VIP counts once in cid_routed or
 * tuple_routed, and a 4-tuple one also under its reason. */
struct ballast_quic_stats {
	__u64 cid_routed;   /* to the backend its DCID's server ID names */
	__u64 tuple_routed; /* by the 4-tuple, for one of the reasons below */
	__u64 client_cid;   /* Initial or 0-RTT (v1/v2): the client chose the DCID */
	__u64 other_version; /* long header of a version other than QUIC v1/v2 */
	__u64 unroutable_cr; /* config rotation 0b111 */
	__u64 unknown_config; /* config rotation bits of no live configuration */
	__u64 short_cid;    /* DCID (long header's length) or packet too short for it */
	__u64 unknown_server; /* no entry for the decoded server ID */
	__u64 backend_unusable; /* its backend is evicted, unused, or draining past its deadline */
	__u64 not_quic;     /* too short for a QUIC header */
};

#endif /* BALLAST_ABI_QUIC_H */
