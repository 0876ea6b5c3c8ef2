/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The program's two readings of CLOCK_MONOTONIC.
 *
 *  - clock_coarse(): the precise clock as this CPU read it at its first
 *    call within the current jiffy (1/CONFIG_HZ, 4 ms at HZ=250), cached
 *    per CPU in `clock_cache`. bpf_jiffies64() is inlined by the verifier
 *    (one load) and the per-CPU lookup too, so a call costs no helper call
 *    and no TSC read, except the first on each CPU in each jiffy. It is
 *    never ahead of the precise clock and about one tick behind it at
 *    most. Used for everything measured in seconds: idle timeouts, linger,
 *    the last_seen_ns touch, the next-hop cache's expiry.
 *    (bpf_ktime_get_coarse_ns() has the same bounds but is a helper call,
 *    which was about 5% of an established packet.)
 *  - clock_precise(): bpf_ktime_get_ns(). Costs a serialising TSC read
 *    (about a tenth of an established flow's cost on the development VM),
 *    so it is read only where precision or safety needs it: deadlines
 *    (owner fence, drain deadline: a tick late would forward past the
 *    instant the agent promised) and the handshake / first-response
 *    samples (microseconds apart).
 *
 * Both are CLOCK_MONOTONIC nanoseconds, so values of the two can be
 * compared; code that subtracts a coarse reading from a precise one must
 * allow for the coarse one being up to one tick behind.
 */
#ifndef BALLAST_CLOCK_H
#define BALLAST_CLOCK_H

#include "common.h"
#include "maps.h"

static __always_inline __u64 clock_precise(void)
{
	return bpf_ktime_get_ns();
}

static __always_inline __u64 clock_coarse(void)
{
	struct clock_cache *c;
	__u32 zero = 0;
	__u64 j;

	c = bpf_map_lookup_elem(&clock_cache, &zero);
	if (!c)
		return bpf_ktime_get_coarse_ns(); /* cannot happen: array */
	j = bpf_jiffies64();
	if (c->jiffies != j) {
		c->jiffies = j;
		c->ns = clock_precise();
	}
	return c->ns;
}

#endif /* BALLAST_CLOCK_H */
