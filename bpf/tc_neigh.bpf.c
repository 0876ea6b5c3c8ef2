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
 * this. Where the kernel refuses bpf_xdp_adjust_meta to XDP programs, the
 * lb program leaves the next hop in this CPU's slot of `neigh_handoff`
 * (struct ballast_neigh_handoff) with the outer IP header it wrote, and a
 * frame is taken only when its outer header is that one, byte for byte
 * (the slot is emptied then): a frame from the wire would have to copy a
 * frame the lb program passed a moment before on the same CPU. Every other
 * frame passes untouched.
 */
#include <linux/pkt_cls.h>

#include "common.h"

/* The lb program's map (the loader reuses its fd), not one of this object. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ballast_neigh_handoff);
} neigh_handoff SEC(".maps");

/* The next hop of the frame in this CPU's hand-off slot, copied into *m
 * (and the slot emptied), when the frame's outer header is the one there.
 * Returns 0, or -1. */
static __always_inline int handoff_take(struct __sk_buff *skb, struct ballast_neigh_meta *m)
{
	struct ballast_neigh_handoff *slot;
	__u64 outer[5] = {};
	__u32 zero = 0, len;
	__u64 *want;
	int i;

	slot = bpf_map_lookup_elem(&neigh_handoff, &zero);
	if (!slot || slot->meta.magic != BALLAST_NEIGH_META_MAGIC)
		return -1;
	len = slot->outer_len;
	if (len != 20 && len != 40)
		return -1;
	if (bpf_skb_load_bytes(skb, sizeof(struct ethhdr), outer, len == 20 ? 20 : 40))
		return -1;
	want = (__u64 *)slot->outer;
#pragma unroll
	for (i = 0; i < 5; i++)
		if (outer[i] != want[i])
			return -1;
	*m = slot->meta;
	slot->meta.magic = 0;
	return 0;
}

SEC("tc")
int tc_neigh(struct __sk_buff *skb)
{
	void *meta = (void *)(long)skb->data_meta;
	void *data = (void *)(long)skb->data;
	struct ballast_neigh_meta held, *m = meta;
	struct bpf_redir_neigh nh = {};

	if ((void *)(m + 1) > data || m->magic != BALLAST_NEIGH_META_MAGIC) {
		if (handoff_take(skb, &held))
			return TC_ACT_OK;
		m = &held;
	}
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
