/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * QUIC-LB: the backend a QUIC packet's destination connection ID names
 * (draft-ietf-quic-load-balancers; ballast_abi.h, "QUIC-LB"; written
 * policy in docs/dataplane.md, "QUIC").
 *
 * quic_route() is a global function, so the verifier checks it once, not
 * once per path of xdp_lb that reaches it. It reads the packet and the
 * maps and writes only the VIP's `quic_stats` and this CPU's
 * `quic_scratch`. Per packet of a QUIC VIP it costs one `quic_vips` read,
 * then at most one AES-128 block decryption, one `quic_servers` lookup and
 * one `backends` read: a flood of random connection IDs costs no more, and
 * reaches no backend that is not in the VIP's server table.
 */
#ifndef BALLAST_QUIC_H
#define BALLAST_QUIC_H

#include "common.h"
#include "aes128.h"
#include "clock.h"
#include "conntrack.h"
#include "maps.h"
#include "parse.h"

#define QUIC_V1 0x00000001u
#define QUIC_V2 0x6b3343cfu /* RFC 9369 */
#define QUIC_LONG_HDR 0x80
#define QUIC_LONG_PREFIX 6 /* first octet, version, DCID length */
#define QUIC_CID_READ 17   /* first CID octet + 16: every config reads at most these */

/* Counts one packet of QUIC VIP w->key.vip_id under `reason` (the offset
 * of a field of struct ballast_quic_stats) and in tuple_routed. Returns
 * BALLAST_INVALID_ID: the packet goes by the 4-tuple. The counters are
 * looked up here, not held across the decryption: quic_route()'s stack
 * shares 512 bytes with xdp_lb's. */
static __always_inline __u32 quic_tuple(struct quic_scratch *w, __u32 reason)
{
	struct ballast_quic_stats *st = bpf_map_lookup_elem(&quic_stats, &w->key.vip_id);

	if (st) {
		st->tuple_routed += 1;
		*(__u64 *)((void *)st + reason) += 1;
	}
	return BALLAST_INVALID_ID;
}

#define QUIC_TUPLE(w, field) quic_tuple((w), __builtin_offsetof(struct ballast_quic_stats, field))

/* Whether a long header of `version` with first octet b0 carries a DCID
 * the client chose: Initial or 0-RTT (their type bits differ in v2).
 * Only called for v1 and v2. */
static __always_inline int quic_client_cid(__u32 version, __u8 b0)
{
	__u8 type = (b0 >> 4) & 3;

	if (version == QUIC_V1)
		return type == 0 || type == 1; /* Initial, 0-RTT */
	return type == 1 || type == 2;	       /* v2: Initial 0b01, 0-RTT 0b10 */
}

/* The backend a UDP packet of VIP vip_id goes to by its DCID, or
 * BALLAST_INVALID_ID: not a QUIC VIP, a DCID the client chose, or an
 * unroutable one; then it goes by the 4-tuple. The backend returned was
 * ACTIVE, or DRAINING before its deadline, when looked at. `l4_off` is
 * the UDP header's offset (struct pkt; parse_udp() checked its length). */
__noinline int quic_route(struct xdp_md *ctx, __u32 l4_off, __u32 vip_id)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	const struct ballast_quic_config *cfg;
	struct ballast_quic_stats *st;
	struct ballast_quic_vip *qv;
	struct ballast_backend *be;
	struct quic_scratch *w;
	struct udphdr *uh;
	__u32 avail, off = 1, dlen = 0, version, *idp, zero = 0;
	__u8 *q, *c, b0, cr;
	int i;

	w = bpf_map_lookup_elem(&quic_scratch, &zero);
	if (!w)
		return BALLAST_INVALID_ID; /* cannot happen: array */
	w->key.vip_id = vip_id; /* map memory: every key below is read from w */
	qv = bpf_map_lookup_elem(&quic_vips, &w->key.vip_id);
	if (!qv || (qv->config[0].mode == BALLAST_QUIC_MODE_OFF &&
		    qv->config[1].mode == BALLAST_QUIC_MODE_OFF))
		return BALLAST_INVALID_ID; /* not a QUIC VIP: nothing counted */

	uh = data + (l4_off & L4_MASK);
	if ((void *)(uh + 1) > data_end)
		return QUIC_TUPLE(w, not_quic);
	/* the datagram's own length: a frame's padding is not a CID */
	avail = bpf_ntohs(uh->len);
	avail = avail > sizeof(*uh) ? avail - sizeof(*uh) : 0;
	q = (__u8 *)(uh + 1);
	if ((void *)(q + QUIC_LONG_PREFIX) > data_end || avail < 1)
		return QUIC_TUPLE(w, not_quic);
	b0 = q[0];
	if (b0 & QUIC_LONG_HDR) {
		if (avail < QUIC_LONG_PREFIX)
			return QUIC_TUPLE(w, not_quic);
		version = (__u32)q[1] << 24 | (__u32)q[2] << 16 | (__u32)q[3] << 8 | q[4];
		if (version != QUIC_V1 && version != QUIC_V2)
			return QUIC_TUPLE(w, other_version);
		if (quic_client_cid(version, b0))
			return QUIC_TUPLE(w, client_cid);
		dlen = q[5];
		off = QUIC_LONG_PREFIX;
	}
	/* A protected QUIC packet holds at least 20 octets after its DCID
	 * (packet number and header protection sample), so reading 17 from
	 * the DCID's start never refuses a real one. */
	c = q + (off == 1 ? 1 : QUIC_LONG_PREFIX);
	if (avail < off + QUIC_CID_READ || (void *)(c + QUIC_CID_READ) > data_end)
		return QUIC_TUPLE(w, short_cid);

	cr = c[0] >> 5;
	if (cr == BALLAST_QUIC_CR_UNROUTABLE)
		return QUIC_TUPLE(w, unroutable_cr);
	if (qv->config[0].mode != BALLAST_QUIC_MODE_OFF && qv->config[0].config_id == cr)
		cfg = &qv->config[0];
	else if (qv->config[1].mode != BALLAST_QUIC_MODE_OFF && qv->config[1].config_id == cr)
		cfg = &qv->config[1];
	else
		return QUIC_TUPLE(w, unknown_config);
	/* a long header says how long its DCID is */
	if (off != 1 && dlen < 1u + cfg->sid_len + cfg->nonce_len)
		return QUIC_TUPLE(w, short_cid);
	if (cfg->sid_len == 0 || cfg->sid_len > BALLAST_QUIC_SID_MAX)
		return QUIC_TUPLE(w, unknown_config); /* the agent never writes one */

	w->key.config_id = cr;
	w->key.sid_len = cfg->sid_len;
	w->key.pad[0] = 0;
	w->key.pad[1] = 0;
	__builtin_memcpy(w->key.sid, c + 1, sizeof(w->key.sid));
	if (cfg->mode == BALLAST_QUIC_MODE_AES_SINGLE)
		aes128_decrypt(w->key.sid, cfg->dec_rk, w->s, w->t);
	for (i = 1; i < (int)sizeof(w->key.sid); i++)
		if (i >= w->key.sid_len)
			w->key.sid[i] = 0; /* the nonce is not part of the key */
	idp = bpf_map_lookup_elem(&quic_servers, &w->key);
	if (!idp)
		return QUIC_TUPLE(w, unknown_server);
	be = bpf_map_lookup_elem(&backends, idp);
	if (*idp == BALLAST_INVALID_ID || !backend_usable(be))
		return QUIC_TUPLE(w, backend_unusable);
	st = bpf_map_lookup_elem(&quic_stats, &w->key.vip_id);
	if (st)
		st->cid_routed += 1;
	return *idp;
}

#endif /* BALLAST_QUIC_H */
