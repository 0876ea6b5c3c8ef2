/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ballast probe-forwarding ABI: shared by bpf/tc_probe.bpf.c and the agent
 * (agent/probes/forwarder.h). Plain fixed-width types, explicit padding.
 * Addresses are in network byte order, every other integer in host order.
 *
 * A synthetic probe "via the VIP" is an ordinary socket connected to
 * VIP:port whose SO_MARK is BALLAST_PROBE_MARK_BASE | backend_id. A policy
 * rule sends packets with such marks out of the router's backend-facing
 * device, where the tc egress program finds the mark in `probe_targets`,
 * encapsulates the packet to that backend exactly as the lb program does
 * (IPv4-in-IPv4, IPv6-in-IPv6, IPv4-in-IPv6, or the same in GUE for a VIP
 * with `mode: GUE`; outer source from `probe_settings`), and sends it to the
 * backend's next hop.
 */
#ifndef BALLAST_PROBE_ABI_H
#define BALLAST_PROBE_ABI_H

#include <linux/types.h>

/* Marks: high 16 bits identify ballast probes, low 16 bits carry the
 * backend id (ids are below BALLAST_MAX_BACKENDS = 16384). */
#define BALLAST_PROBE_MARK_BASE 0x6c620000u /* "lb" */
#define BALLAST_PROBE_MARK_MASK 0xffff0000u
#define BALLAST_PROBE_MAX_TARGETS 16384u

/* Value of `probe_targets` (hash, key: __u32 mark). The backend id is the
 * data plane's, one per (VIP, backend), so a target follows its VIP's
 * forwarding mode. Builds before GUE probes wrote zeros where flags and
 * gue_port are: IP-in-IP, as they sent. */
struct ballast_probe_target {
	__u8 addr[16];	  /* backend address: encapsulation destination */
	__u8 family;	  /* BALLAST_FAMILY_V4 / _V6 */
	__u8 flags;	  /* BALLAST_PROBE_F_* */
	__u16 gue_port;	  /* with BALLAST_PROBE_F_GUE: UDP destination port */
};

/* The VIP is `mode: GUE`: outer IP, then UDP to gue_port (source port
 * 0xC000 | 14 bits of the probe connection's hash, checksum 0), then the
 * probe's IP packet, as the lb program sends the VIP's clients' packets. */
#define BALLAST_PROBE_F_GUE 0x1

/* Value of the single-entry `probe_settings` array (key 0). */
struct ballast_probe_settings {
	__u8 src4[4];	 /* outer source of IPv4 encapsulation; 0 = none */
	__u8 src6[16];	 /* outer source of IPv6 encapsulation; :: = none */
	__u32 mark_base; /* a marked packet with (mark & mark_mask) == mark_base */
	__u32 mark_mask; /* and no target is dropped, never sent unencapsulated */
};

/* Counters (per-CPU array `probe_stats`, one __u64 per reason). */
enum ballast_probe_verdict {
	BALLAST_PROBE_V_PASS = 0,	/* not a probe packet: untouched */
	BALLAST_PROBE_V_ENCAP_TX,	/* encapsulated, leaves on this device */
	BALLAST_PROBE_V_ENCAP_REDIRECT, /* encapsulated, redirected to another device */
	BALLAST_PROBE_V_ENCAP_NEIGH,	/* encapsulated, next hop resolved by the kernel */
	BALLAST_PROBE_V_DROP_NO_TARGET, /* probe mark without a programmed target */
	BALLAST_PROBE_V_DROP_NOT_IP,	/* probe mark on a non-IP packet */
	BALLAST_PROBE_V_DROP_FAMILY,	/* IPv6 probe to an IPv4 backend */
	BALLAST_PROBE_V_DROP_NO_SOURCE, /* outer source of that family not set */
	BALLAST_PROBE_V_DROP_ENCAP,	/* adjusting the packet failed */
	BALLAST_PROBE_V_DROP_FIB,	/* no route to the backend */
	BALLAST_PROBE_V_MAX
};

#endif /* BALLAST_PROBE_ABI_H */
