/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The flow hash: which Maglev slot a 5-tuple uses.
 *
 * Shared verbatim by the XDP program and by user space (tests, lbsim), so a
 * test can predict the backend the data plane will pick, and every router
 * host picks the same slot for the same 5-tuple. It is Bob Jenkins' lookup3
 * mix over ten 32-bit words: client address (4), VIP address (4), the two
 * ports, and protocol with family. IPv4 addresses use word 0 and leave the
 * other three zero, exactly as they are stored in struct ballast_flow_key.
 * Its three state words start from the cluster's secret seed (struct
 * ballast_hash_seed, in the `flow_hash_seed` map), so only the routers can
 * tell which slot, handshake slot or adopted-flow set a tuple falls in.
 *
 * Changing anything here changes which backend every existing flow hashes
 * to on every router: treat it as part of the wire format.
 */
#ifndef BALLAST_FLOW_HASH_H
#define BALLAST_FLOW_HASH_H

#include "ballast_abi.h"

#ifdef __BPF__
#define BALLAST_HASH_INLINE static __always_inline
#else
#define BALLAST_HASH_INLINE static inline
#endif

/* The seed of earlier builds, public (BALLAST_FLOW_HASH_SEED in each word):
 * what a router uses until its agent writes the cluster's. */
#define BALLAST_PUBLIC_SEED_INIT                                                                   \
	{                                                                                          \
		{ BALLAST_FLOW_HASH_SEED, BALLAST_FLOW_HASH_SEED, BALLAST_FLOW_HASH_SEED }         \
	}

BALLAST_HASH_INLINE __u32 ballast_rol32(__u32 w, unsigned int s)
{
	return (w << s) | (w >> (32 - s));
}

#define BALLAST_JHASH_MIX(a, b, c)                                                                 \
	do {                                                                                       \
		a -= c;                                                                            \
		a ^= ballast_rol32(c, 4);                                                          \
		c += b;                                                                            \
		b -= a;                                                                            \
		b ^= ballast_rol32(a, 6);                                                          \
		a += c;                                                                            \
		c -= b;                                                                            \
		c ^= ballast_rol32(b, 8);                                                          \
		b += a;                                                                            \
		a -= c;                                                                            \
		a ^= ballast_rol32(c, 16);                                                         \
		c += b;                                                                            \
		b -= a;                                                                            \
		b ^= ballast_rol32(a, 19);                                                         \
		a += c;                                                                            \
		c -= b;                                                                            \
		c ^= ballast_rol32(b, 4);                                                          \
		b += a;                                                                            \
	} while (0)

#define BALLAST_JHASH_FINAL(a, b, c)                                                               \
	do {                                                                                       \
		c ^= b;                                                                            \
		c -= ballast_rol32(b, 14);                                                         \
		a ^= c;                                                                            \
		a -= ballast_rol32(c, 11);                                                         \
		b ^= a;                                                                            \
		b -= ballast_rol32(a, 25);                                                         \
		c ^= b;                                                                            \
		c -= ballast_rol32(b, 16);                                                         \
		a ^= c;                                                                            \
		a -= ballast_rol32(c, 4);                                                          \
		b ^= a;                                                                            \
		b -= ballast_rol32(a, 14);                                                         \
		c ^= b;                                                                            \
		c -= ballast_rol32(b, 24);                                                         \
	} while (0)

/* Reads a 32-bit word from a byte array without alignment assumptions. The
 * bytes are combined little-endian on every host, so the result does not
 * depend on the CPU's byte order. */
BALLAST_HASH_INLINE __u32 ballast_word(const __u8 *p)
{
#if defined(__BPF__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* The program's flow keys sit at 4-byte aligned offsets: one load gives
	 * the same value as the byte-wise little-endian combination below. */
	return *(const __u32 *)__builtin_assume_aligned(p, 4);
#else
	return (__u32)p[0] | ((__u32)p[1] << 8) | ((__u32)p[2] << 16) | ((__u32)p[3] << 24);
#endif
}

/* The slot a flow's choice `seed` (1..BALLAST_CHOICE_SEEDS) looks up in a
 * Maglev table of M entries is ballast_choice_hash(flow hash, seed) % M: a
 * 32-bit finalizer (murmur3's fmix32) of the flow hash and the seed, so
 * every router derives the same choices from the same table. */
BALLAST_HASH_INLINE __u32 ballast_choice_hash(__u32 flow_hash, __u32 seed)
{
	__u32 h = flow_hash + seed * 0x9e3779b9u;

	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* Hash of a flow key under `seed` (the cluster's: struct
 * ballast_flow_hash_seed; BALLAST_PUBLIC_SEED_INIT is earlier builds'). Only
 * src, dst, sport, dport, proto and family count. */
BALLAST_HASH_INLINE __u32 ballast_flow_hash(const struct ballast_flow_key *k,
					     const struct ballast_hash_seed *seed)
{
	__u32 a, b, c;
	const __u8 *ports = (const __u8 *)&k->sport; /* sport, dport: wire order */

	a = 0xdeadbeefu + (10u << 2) + seed->w[0];
	b = 0xdeadbeefu + (10u << 2) + seed->w[1];
	c = 0xdeadbeefu + (10u << 2) + seed->w[2];

	a += ballast_word(&k->src[0]);
	b += ballast_word(&k->src[4]);
	c += ballast_word(&k->src[8]);
	BALLAST_JHASH_MIX(a, b, c);
	a += ballast_word(&k->src[12]);
	b += ballast_word(&k->dst[0]);
	c += ballast_word(&k->dst[4]);
	BALLAST_JHASH_MIX(a, b, c);
	a += ballast_word(&k->dst[8]);
	b += ballast_word(&k->dst[12]);
	c += ballast_word(ports);
	BALLAST_JHASH_MIX(a, b, c);
	a += (__u32)k->proto | ((__u32)k->family << 8);
	BALLAST_JHASH_FINAL(a, b, c);
	return c;
}

/* The outer IPv6 flow label of a flow (20 bits) when it is encapsulated to
 * an IPv6 backend. Backends use the label only to spread flows over receive
 * queues, so any function of the 5-tuple that spreads well will do, as long
 * as every packet of a flow gets the same label. ballast_flow_hash() would
 * do, but BPF has no rotate instruction and its 50 rotations cost about a
 * fifth of an established IPv6 packet's time; this costs five independent
 * multiplications and a finaliser. Unlike the flow hash it is not shared
 * between routers in any way that matters: a flow moved by ECMP to a router
 * running another version may change label (and so, at worst, receive
 * queue on its backend). */
BALLAST_HASH_INLINE __u32 ballast_flow_label(const struct ballast_flow_key *k)
{
	const __u8 *ports = (const __u8 *)&k->sport; /* sport, dport: wire order */
	__u64 h;

	h = (((__u64)ballast_word(&k->src[0]) << 32) | ballast_word(&k->src[4])) *
	    0x9e3779b97f4a7c15ull;
	h ^= (((__u64)ballast_word(&k->src[8]) << 32) | ballast_word(&k->src[12])) *
	     0xc2b2ae3d27d4eb4full;
	h ^= (((__u64)ballast_word(&k->dst[0]) << 32) | ballast_word(&k->dst[4])) *
	     0x165667b19e3779f9ull;
	h ^= (((__u64)ballast_word(&k->dst[8]) << 32) | ballast_word(&k->dst[12])) *
	     0xd6e8feb86659fd93ull;
	h ^= (((__u64)ballast_word(ports) << 32) | k->proto | ((__u32)k->family << 8)) *
	     0xff51afd7ed558ccdull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (__u32)(h >> 12) & 0xfffffu;
}

/* Bit of the VIP address filter for an address given as its four 32-bit
 * words as stored in memory (IPv4: word 0, the rest zero). Both sides of one
 * host read the words with the host's byte order, so the bitmap is only
 * meaningful on the host that wrote it, which is the only place it is used. */
BALLAST_HASH_INLINE __u32 ballast_vip_filter_bit(__u32 w0, __u32 w1, __u32 w2, __u32 w3,
						 __u8 family)
{
	__u32 x =
	    w0 ^ ballast_rol32(w1, 7) ^ ballast_rol32(w2, 13) ^ ballast_rol32(w3, 21) ^ family;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x & (BALLAST_VIP_FILTER_WORDS * 64 - 1);
}

#endif /* BALLAST_FLOW_HASH_H */
