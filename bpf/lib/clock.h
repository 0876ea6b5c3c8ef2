/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The program's two readings of CLOCK_MONOTONIC.
 *
 *  - clock_coarse(): bpf_ktime_get_coarse_ns(), the time of the last
 *    timekeeping tick (1/CONFIG_HZ, 4 ms at HZ=250), read without touching
 *    the TSC. It is never ahead of the precise clock and at most one tick
 *    behind it. Used for everything measured in seconds: idle timeouts,
 *    linger, the last_seen_ns touch, the next-hop cache's expiry.
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

static __always_inline __u64 clock_coarse(void)
{
	return bpf_ktime_get_coarse_ns();
}

static __always_inline __u64 clock_precise(void)
{
	return bpf_ktime_get_ns();
}

#endif /* BALLAST_CLOCK_H */
