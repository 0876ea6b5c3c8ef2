/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Includes and small helpers shared by every header of the lb program. */
#ifndef BALLAST_COMMON_H
#define BALLAST_COMMON_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/icmpv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "ballast_abi.h"

/* <linux/icmp.h> drags in libc headers that do not build for -target bpf,
 * so the few ICMP definitions needed are spelled out here. */
struct ballast_icmphdr {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	__be32 rest; /* unused / next-hop MTU (v4: low 16 bits) / MTU (v6) */
};

/* Address families of bpf_fib_lookup() and bpf_redirect_neigh() (the
 * libc headers that define them do not build for -target bpf). */
#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

#define ICMP_ECHOREPLY 0
#define ICMP_DEST_UNREACH 3
#define ICMP_ECHO 8
#define ICMP_TIME_EXCEEDED 11
#define ICMP_PARAMETERPROB 12
#define ICMP_FRAG_NEEDED 4 /* code of ICMP_DEST_UNREACH */

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

/* A helper that may end processing returns BALLAST_CONTINUE to let the
 * caller go on, or an XDP action (XDP_PASS, XDP_DROP, XDP_TX,
 * XDP_REDIRECT) that the caller returns at once. */
#define BALLAST_CONTINUE (-1)

#endif /* BALLAST_COMMON_H */
