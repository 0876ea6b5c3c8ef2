// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* placeholder: the benchmark's reference program (swap MACs, XDP_TX) */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("xdp") int xdp_reflect(struct xdp_md *ctx) { return XDP_TX; }
char LICENSE[] SEC("license") = "Dual BSD/GPL";
