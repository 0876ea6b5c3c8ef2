// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* placeholder: backend-side decapsulation */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("xdp") int xdp_decap(struct xdp_md *ctx) { return XDP_PASS; }
char LICENSE[] SEC("license") = "Dual BSD/GPL";
