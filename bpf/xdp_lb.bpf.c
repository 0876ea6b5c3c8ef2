// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* ballast lb: placeholder entry while the real program is written */
#include "common.h"
#include "maps.h"
SEC("xdp") int xdp_lb(struct xdp_md *ctx)
{
	__u32 k = BALLAST_V_PASS_NOT_IP;
	__u64 *c = bpf_map_lookup_elem(&verdicts, &k);
	if (c)
		*c += 1;
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "Dual BSD/GPL";
