/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The outer header's mark and bounce tag (ballast_abi.h, "Marks and tags
 * in the outer header"): what the lb program writes into an encapsulated
 * packet's IPv4 identification or IPv6 flow label, what a backend's decap
 * program reads from it, and what the lb program expects back in a bounce.
 *
 * The tag is a keyed mix of the flow's hash, the backend's address and,
 * for a SYN, its ISN. It is no MAC against an observer: whoever can read
 * the router's packets to its backends sees the tags and could learn the
 * key; such a party can also see and forge everything else. Against a blind
 * stranger it is a guess: 16 bits for an IPv4 SYN, 15 for an IPv4 probe,
 * 20 and 19 for IPv6, and one guess per handshake or probed flow.
 */
#ifndef BALLAST_MARK_H
#define BALLAST_MARK_H

#include <linux/types.h>

#include "ballast_abi.h"

/* What the lb program's packet carries (struct pkt's outer_id): */
#define MARK_NONE 0u			  /* nothing: a non-SYN is never bounced */
#define MARK_LAST BALLAST_ENCAP_ID_LAST	  /* the last hop */
#define MARK_PROBE BALLAST_ENCAP_ID_PROBE /* probe mark and tag */

/* The mark a decap program reads: MARK_LAST, MARK_PROBE or MARK_NONE
 * (which for a SYN means "may be bounced"). */
static __always_inline __u32 mark_of_id(__u16 id)
{
	if (id == BALLAST_ENCAP_ID_LAST)
		return MARK_LAST;
	return id ? MARK_PROBE : MARK_NONE;
}

static __always_inline __u32 mark_of_label(__u32 label)
{
	if (label == BALLAST_FLOW_LABEL_LAST)
		return MARK_LAST;
	return label & BALLAST_FLOW_LABEL_PROBE_BIT ? MARK_PROBE : MARK_NONE;
}

/* The keyed tag of a packet of the flow with hash `hash`, sent to the
 * backend whose address folds to `addr` (mark_addr_word), `a` being the
 * SYN's ISN or 0 for a probed packet. */
static __always_inline __u32 mark_tag(const struct ballast_bounce_key *k, __u32 hash, __u32 a,
				      __u32 addr)
{
	__u64 x = ((__u64)hash << 32 | a) ^ k->k[0];

	x *= 0x9e3779b97f4a7c15ull;
	x ^= (x >> 31) ^ ((__u64)addr << 17) ^ k->k[1];
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	x *= 0x94d049bb133111ebull;
	return (__u32)(x >> 32);
}

/* A backend address (4 or 16 bytes) folded to one word for mark_tag. */
static __always_inline __u32 mark_addr_word(const __u8 *addr, __u8 family)
{
	const __u32 *w = (const __u32 *)addr;

	if (family == BALLAST_FAMILY_V4)
		return w[0];
	return w[0] ^ w[1] ^ w[2] ^ w[3];
}

/* The outer IPv4 identification for mark `mark` and tag `tag` of a packet
 * that is a SYN (`syn`) or not. */
static __always_inline __u16 mark_id(__u32 mark, __u32 tag, int syn)
{
	__u16 id;

	if (mark == MARK_LAST)
		return BALLAST_ENCAP_ID_LAST;
	if (mark == MARK_PROBE)
		id = (__u16)tag | 1; /* never 0 */
	else if (syn)
		id = (__u16)tag;
	else
		return 0;
	return id == BALLAST_ENCAP_ID_LAST ? id ^ 2 : id;
}

/* The outer IPv6 flow label, `entropy` being the flow's own label. */
static __always_inline __u32 mark_label(__u32 mark, __u32 tag, int syn, __u32 entropy)
{
	__u32 label;

	if (mark == MARK_LAST)
		return BALLAST_FLOW_LABEL_LAST;
	if (mark == MARK_PROBE)
		label = BALLAST_FLOW_LABEL_PROBE_BIT | (tag & (BALLAST_FLOW_LABEL_PROBE_BIT - 1));
	else if (syn)
		label = tag & BALLAST_FLOW_LABEL_LAST;
	else
		return entropy & (BALLAST_FLOW_LABEL_PROBE_BIT - 1);
	return label == BALLAST_FLOW_LABEL_LAST ? label ^ 2 : label;
}

#endif /* BALLAST_MARK_H */
