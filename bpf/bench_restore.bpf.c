// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_restore: the benchmark's frame-restoring wrapper (tools/bench).
 *
 * BPF_PROG_TEST_RUN with repeat > 1 runs the program again and again on the
 * same buffer: an encapsulating program would see its own output from the
 * second run on. This wrapper runs first on every iteration, makes the
 * buffer the original frame again, and tail-calls the program under test:
 *
 *   1. moves the start of the frame back to where the original began
 *      (bpf_xdp_adjust_head by the length difference: the programs under
 *      test only grow or shrink the frame at its head);
 *   2. copies the saved original frame over it (bpf_xdp_store_bytes);
 *   3. optionally gives the frame a new 5-tuple (client port and the last
 *      16 bits of the client address from a per-CPU counter) and a TCP
 *      sequence number of its own (the counter's low 16 bits as its high
 *      half: clients' ISNs differ, and an ACK stays its SYN's ISN + 1),
 *      with the IPv4 header and L4 checksums fixed incrementally (RFC
 *      1624), so "a new flow on every packet" is a well-formed packet
 *      every time;
 *   4. tail-calls bench_target[0].
 *
 * The benchmark runs the reference program through this same wrapper, so
 * the wrapper's cost is measured on its own (wrapper+reference minus
 * reference alone) and taken out of the comparison. Any failure returns
 * XDP_ABORTED, which the benchmark treats as a failed case.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define BENCH_MAX_FRAME 256

struct bench_frame {
	__u32 len;	   /* bytes of data[] in use, 14..BENCH_MAX_FRAME */
	__u32 vary;	   /* 1: new 5-tuple on every run */
	__u32 port_off;	   /* frame offset of the client (source) port */
	__u32 addr_off;	   /* frame offset of the client address's last 16 bits */
	__u32 ip_csum_off; /* frame offset of the IPv4 header checksum, 0 = none */
	__u32 l4_csum_off; /* frame offset of the TCP/UDP checksum */
	__u32 seq_off;	   /* frame offset of the TCP sequence number's high half, 0 = none */
	__u8 data[BENCH_MAX_FRAME];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_frame);
} bench_frame SEC(".maps");

/* Per-CPU iteration counter for the varying 5-tuple. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_counter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_target SEC(".maps");

/* RFC 1624: checksum after one 16-bit word changes from `from` to `to`
 * (all three in network order). */
static __always_inline __u16 csum_replace2(__u16 check, __u16 from, __u16 to)
{
	__u32 sum = (__u16)~check + (__u16)~from + (__u32)to;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* Writes `to` at frame offset `off` and fixes the checksum at `csum_off`
 * (and the IPv4 header checksum when ip_off != 0). */
static __always_inline int rewrite16(struct xdp_md *ctx, __u32 off, __u16 to, __u32 csum_off,
				     __u32 ip_off)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u16 *word, *l4sum, *ipsum, from;

	off &= 0xff;
	csum_off &= 0xff;
	ip_off &= 0xff;
	word = data + off;
	l4sum = data + csum_off;
	ipsum = data + ip_off;
	if ((void *)(word + 1) > data_end || (void *)(l4sum + 1) > data_end ||
	    (void *)(ipsum + 1) > data_end)
		return -1;
	from = *word;
	*word = to;
	*l4sum = csum_replace2(*l4sum, from, to);
	if (ip_off)
		*ipsum = csum_replace2(*ipsum, from, to);
	return 0;
}

SEC("xdp")
int bench_restore(struct xdp_md *ctx)
{
	__u32 zero = 0, len, *counter;
	struct bench_frame *f;
	int cur;

	f = bpf_map_lookup_elem(&bench_frame, &zero);
	if (!f)
		return XDP_ABORTED;
	len = f->len;
	if (len < 14 || len > BENCH_MAX_FRAME)
		return XDP_ABORTED;

	cur = (int)(ctx->data_end - ctx->data);
	if (cur != (int)len && bpf_xdp_adjust_head(ctx, cur - (int)len))
		return XDP_ABORTED;
	if (bpf_xdp_store_bytes(ctx, 0, f->data, len))
		return XDP_ABORTED;

	if (f->vary) {
		counter = bpf_map_lookup_elem(&bench_counter, &zero);
		if (!counter)
			return XDP_ABORTED;
		*counter += 1;
		/* port = low 16 bits, address word = high 16 bits (network order) */
		if (rewrite16(ctx, f->port_off, __builtin_bswap16((__u16)*counter), f->l4_csum_off,
			      0) ||
		    rewrite16(ctx, f->addr_off, __builtin_bswap16((__u16)(*counter >> 16)),
			      f->l4_csum_off, f->ip_csum_off))
			return XDP_ABORTED;
		if (f->seq_off && rewrite16(ctx, f->seq_off, __builtin_bswap16((__u16)*counter),
					    f->l4_csum_off, 0))
			return XDP_ABORTED;
	}

	bpf_tail_call(ctx, &bench_target, 0);
	return XDP_ABORTED; /* no target installed */
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
