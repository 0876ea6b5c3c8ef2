// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ballast neighbour hand-off: tc (clsact) ingress on every device that runs
 * the lb program.
 *
 * When the lb program's next hop towards a backend has no resolved
 * neighbour entry, it encapsulates the packet anyway, puts a struct
 * ballast_neigh_meta in front of the frame (XDP metadata) and passes it.
 * This program, the first to see the frame as an skb, sends it with
 * bpf_redirect_neigh() to the next hop the lb program's FIB lookup named:
 * the kernel queues it on the neighbour entry, resolves it (ARP / ND) and
 * transmits it, and the lb program's later packets find the neighbour and
 * take the fast path. The kernel's forwarding path cannot do this: the
 * outer source is the router's own address, so ip_rcv would drop the frame
 * as a martian, and nothing else would ever resolve the neighbour.
 *
 * Only XDP programs write metadata, so a frame from the wire cannot ask for
 * this. Every other frame passes untouched.
 */
#include <linux/pkt_cls.h>

#include "common.h"

SEC("tc")
int tc_neigh(struct __sk_buff *skb)
{
	void *meta = (void *)(long)skb->data_meta;
	void *data = (void *)(long)skb->data;
	struct ballast_neigh_meta *m = meta;
	struct bpf_redir_neigh nh = {};

	if ((void *)(m + 1) > data || m->magic != BALLAST_NEIGH_META_MAGIC)
		return TC_ACT_OK;
	if (m->family == BALLAST_FAMILY_V4) {
		nh.nh_family = AF_INET;
		__builtin_memcpy(&nh.ipv4_nh, m->nh, 4);
	} else {
		nh.nh_family = AF_INET6;
		__builtin_memcpy(nh.ipv6_nh, m->nh, 16);
	}
	return bpf_redirect_neigh(m->ifindex, &nh, sizeof(nh), 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
