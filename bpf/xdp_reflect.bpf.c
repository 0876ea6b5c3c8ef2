// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * xdp_reflect: the benchmark's reference program.
 *
 * It does the least an XDP forwarder can do: swap the Ethernet source and
 * destination addresses and send the frame back out (XDP_TX). tools/bench
 * runs it beside the lb program in the same BPF_PROG_TEST_RUN setup, so the
 * reported ratio is "lb cost / cost of touching a frame at all". Frames
 * shorter than an Ethernet header are dropped.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_reflect(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	unsigned char tmp[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(tmp, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, tmp, ETH_ALEN);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
