/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Maps of the lb program. Every map is pinned by name under
 * BALLAST_PIN_DIR (LIBBPF_PIN_BY_NAME), so a restarted agent reuses them and
 * `bpftool map dump pinned /sys/fs/bpf/ballast/<name>` shows named fields.
 */
#ifndef BALLAST_MAPS_H
#define BALLAST_MAPS_H

#include "common.h"

/* (addr, port, proto, family) -> VIP. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BALLAST_MAX_VIPS);
	__type(key, struct ballast_vip_key);
	__type(value, struct ballast_vip_meta);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} vips SEC(".maps");

/* vip_id -> the VIP, for the established-flow shortcut (struct ballast_vip_ref). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BALLAST_MAX_VIPS);
	__type(key, __u32);
	__type(value, struct ballast_vip_ref);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} vip_refs SEC(".maps");

/* Bitmap of VIP addresses (see BALLAST_VIP_FILTER_WORDS). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BALLAST_VIP_FILTER_WORDS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} vip_filter SEC(".maps");

/* backend_id -> backend. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BALLAST_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct ballast_backend);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} backends SEC(".maps");

/* Template of one VIP's Maglev table: entry 0 = M, entries 1..M = backend_id.
 * BPF_F_INNER_MAP lets each VIP's inner map have its own size. */
struct maglev_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BALLAST_DEFAULT_TABLE_SIZE + 1);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE); /* filled through mmap */
	__type(key, __u32);
	__type(value, __u32);
};

/* vip_id -> that VIP's Maglev table (swapped whole by one update). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, BALLAST_MAX_VIPS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct maglev_inner); /* must be the last member */
} maglev_tables SEC(".maps");

/* One VIP's slot history (ballast_abi.h, `maglev_history`): entry 0 = M,
 * entries 1..M = the slot's previous backend ids (BALLAST_HISTORY_DEPTH
 * 16-bit fields). Written whole and swapped in, like a table. */
struct maglev_history_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BALLAST_DEFAULT_TABLE_SIZE + 1);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE); /* filled through mmap */
	__type(key, __u32);
	__type(value, __u64);
};

/* vip_id -> that VIP's slot history (established second chance). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, BALLAST_MAX_VIPS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct maglev_history_inner); /* must be the last member */
} maglev_history SEC(".maps");

/* client->VIP 5-tuple -> backend and TCP state, in three maps, one per
 * class of flow, so that each class can only displace its own (a flood of
 * spoofed ACKs or of UDP tuples cannot push out the connections whose
 * handshake this router saw). All three are sized with the flow table.
 *  - flows: TCP connections whose handshake completed here (LRU hash);
 *  - adopted_flows: TCP flows adopted mid-stream (no flow and no handshake
 *    slot: ECMP moved them here, they expired, their slot was lost), in
 *    4-way sets indexed by flow hash (struct ballast_adopted_set; the loader
 *    sizes it with the flow table and sets adopted_set_mask to match). A
 *    set takes no lock and an insert evicts within its set: a flood of new
 *    tuples, which is what fills this class, costs about half of what the
 *    LRU's insert and eviction cost (docs/benchmarks.md);
 *  - flows_udp: UDP flows (LRU hash). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BALLAST_DEFAULT_FLOWS);
	__type(key, struct ballast_flow_key);
	__type(value, struct ballast_flow);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flows SEC(".maps");

const volatile __u32 adopted_set_mask = BALLAST_DEFAULT_FLOWS / BALLAST_FLOWS_PER_ADOPTED_SET - 1;

/* Mmapable for its page-aligned layout: sets start on cache lines. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BALLAST_DEFAULT_FLOWS / BALLAST_FLOWS_PER_ADOPTED_SET);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ballast_adopted_set);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} adopted_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BALLAST_DEFAULT_FLOWS);
	__type(key, struct ballast_flow_key);
	__type(value, struct ballast_flow);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flows_udp SEC(".maps");

/* Which of the three maps a flow lives in. */
enum flow_class {
	FLOW_SEEN = 0,	  /* flows */
	FLOW_ADOPTED = 1, /* adopted_flows */
	FLOW_UDP = 2,	  /* flows_udp */
};

/* Handshakes under way, by flow hash (struct ballast_handshake_set). Shared
 * by all CPUs: a client's retransmitted SYN may arrive on another one.
 * Mmapable only for its page-aligned layout: each set is one cache line.
 * The loader sizes it with the flow table (a power of two, at least
 * BALLAST_HANDSHAKE_SETS) and sets handshake_set_mask to match. */
const volatile __u32 handshake_set_mask = BALLAST_HANDSHAKE_SETS - 1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BALLAST_HANDSHAKE_SETS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ballast_handshake_set);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} handshakes SEC(".maps");

/* Single entry (key 0): source addresses, timeouts, policy. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ballast_settings);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} settings SEC(".maps");

/* backend_id -> cached next hop (per CPU: no sharing, no torn MACs). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BALLAST_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct ballast_nexthop);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} nexthops SEC(".maps");

/* backend_id -> passive signals. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BALLAST_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct ballast_backend_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} backend_stats SEC(".maps");

/* backend_id -> second-chance counters (struct ballast_backend_bounces). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BALLAST_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct ballast_backend_bounces);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} backend_bounces SEC(".maps");

/* backend_id -> latency histograms (struct ballast_backend_latency). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BALLAST_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct ballast_backend_latency);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} backend_latency SEC(".maps");

/* The neighbour hand-off without XDP metadata (struct
 * ballast_neigh_handoff), key 0; shared with tc_neigh (the loader gives
 * that object this map's fd). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ballast_neigh_handoff);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} neigh_handoff SEC(".maps");

/* 1: XDP metadata can carry the hand-off (bpf_xdp_adjust_meta); 0: this
 * kernel refuses that helper to XDP programs, `neigh_handoff` carries it.
 * Set by the loader; a constant to the verifier, which never sees the other
 * branch. */
const volatile __u32 xdp_meta_ok = 1;

/* Established second chance counters (struct ballast_esc_stats), key 0. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ballast_esc_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} esc_stats SEC(".maps");

/* The router's secret for bounce tags (struct ballast_bounce_key), key 0:
 * written once by the agent, kept in the pins. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ballast_bounce_key);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bounce_key SEC(".maps");

/* The cluster's flow hash seed (struct ballast_flow_hash_seed), key 0:
 * written by the agent from the replicated state. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ballast_flow_hash_seed);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flow_hash_seed SEC(".maps");

/* vip_id -> packets and bytes. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BALLAST_MAX_VIPS);
	__type(key, __u32);
	__type(value, struct ballast_vip_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} vip_stats SEC(".maps");

/* ICMP too-big answers each CPU may still send (struct ballast_icmp_budget). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ballast_icmp_budget);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} icmp_budget SEC(".maps");

/* The coarse clock's per-CPU cache (bpf/lib/clock.h): the jiffy it was
 * read in and the precise time read then. */
struct clock_cache {
	__u64 jiffies;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct clock_cache);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} clock_cache SEC(".maps");

/* Settings added later: handshake slots, the per-flow IPv4 outer source
 * (struct ballast_handshake_settings). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ballast_handshake_settings);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} handshake_settings SEC(".maps");

/* vip_id -> the VIP's QUIC-LB configurations (struct ballast_quic_vip;
 * bpf/lib/quic.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BALLAST_MAX_VIPS);
	__type(key, __u32);
	__type(value, struct ballast_quic_vip);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} quic_vips SEC(".maps");

/* (vip_id, config id, server ID) -> backend_id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BALLAST_QUIC_MAX_SERVERS);
	__type(key, struct ballast_quic_sid_key);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} quic_servers SEC(".maps");

/* quic_route()'s working memory (key 0): a server ID key and the AES
 * state, in map memory rather than on the stack, which xdp_lb's frame and
 * quic_route's share (512 bytes in all). Nothing outlives one packet. */
struct quic_scratch {
	struct ballast_quic_sid_key key;
	__u32 s[4];
	__u32 t[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct quic_scratch);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} quic_scratch SEC(".maps");

/* vip_id -> QUIC routing counters (struct ballast_quic_stats). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BALLAST_MAX_VIPS);
	__type(key, __u32);
	__type(value, struct ballast_quic_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} quic_stats SEC(".maps");

/* enum ballast_verdict -> packets. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BALLAST_V_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} verdicts SEC(".maps");

#endif /* BALLAST_MAPS_H */
