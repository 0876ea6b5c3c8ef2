/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Internet checksum helpers (RFC 1071). */
#ifndef BALLAST_CSUM_H
#define BALLAST_CSUM_H

#include "common.h"

static __always_inline __u16 csum_fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* Checksum of a 20-byte IPv4 header without options, whose check field is
 * zero. Adds the ten 16-bit words directly: cheaper than a helper call. */
static __always_inline __u16 ip4_header_csum(const struct iphdr *ip)
{
	const __u16 *w = (const __u16 *)ip;
	__u64 sum = 0;

#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	return csum_fold(sum);
}

#endif /* BALLAST_CSUM_H */
