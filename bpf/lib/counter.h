/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The one way ballast's programs count a verdict: a per-CPU array indexed
 * by the verdict (xdp_lb's `verdicts`, xdp_decap's `decap_stats`,
 * tc_probe's `probe_stats`). A packet only touches its own CPU's copy, so
 * a plain increment is safe; user space sums the copies.
 */
#ifndef BALLAST_COUNTER_H
#define BALLAST_COUNTER_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Counts one packet under `v` in `map` and returns `action`, so a verdict
 * reads as `return count_verdict(&verdicts, BALLAST_V_PASS_NOT_VIP, XDP_PASS);`. */
static __always_inline int count_verdict(void *map, __u32 v, int action)
{
	__u64 *c = bpf_map_lookup_elem(map, &v);

	if (c)
		*c += 1;
	return action;
}

#endif /* BALLAST_COUNTER_H */
