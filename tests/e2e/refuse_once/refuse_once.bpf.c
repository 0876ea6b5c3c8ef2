// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Test only (tests/e2e/lab_test.sh, through ballast-refuse-once): an
 * sk_lookup program that makes the kernel's TCP listener lookup for local
 * port `port` find nothing the second time it is asked about one client
 * (address and port), and only then. One program (one count) for every
 * backend's namespace: the router sends a retransmitted SYN to the next
 * backend, which must not refuse it again.
 *
 * On a backend, the first lookup of a client's SYN is xdp_decap's
 * (bpf_skc_lookup_tcp), the second TCP's own: so the SYN is passed up for a
 * listener and then refused with a RST, as when a dying server's listener
 * goes between the two. The client's retransmitted SYN finds the listener.
 */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>

#define FAMILY_INET 2
#define FAMILY_INET6 10

const volatile __u32 port = 80; /* host order */

struct client {
	__u32 addr[4];
	__u32 port;
	__u32 family;
};

/* client -> listener lookups for it so far */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct client);
	__type(value, __u32);
} lookups SEC(".maps");

/* [0]: lookups made to fail */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} refused SEC(".maps");

SEC("sk_lookup")
int refuse_once(struct bpf_sk_lookup *ctx)
{
	struct client c = {};
	__u32 first = 1, zero = 0, *n;
	__u64 *r;

	if (ctx->protocol != IPPROTO_TCP || ctx->local_port != port)
		return SK_PASS;
	c.family = ctx->family;
	c.port = ctx->remote_port;
	if (ctx->family == FAMILY_INET) {
		c.addr[0] = ctx->remote_ip4;
	} else if (ctx->family == FAMILY_INET6) {
		c.addr[0] = ctx->remote_ip6[0];
		c.addr[1] = ctx->remote_ip6[1];
		c.addr[2] = ctx->remote_ip6[2];
		c.addr[3] = ctx->remote_ip6[3];
	} else {
		return SK_PASS;
	}
	n = bpf_map_lookup_elem(&lookups, &c);
	if (!n) {
		bpf_map_update_elem(&lookups, &c, &first, BPF_NOEXIST);
		return SK_PASS;
	}
	*n += 1; /* one client's lookups come one after another */
	if (*n != 2)
		return SK_PASS;
	r = bpf_map_lookup_elem(&refused, &zero);
	if (r)
		__sync_fetch_and_add(r, 1);
	return SK_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
