#!/bin/bash
# A packet to a VIP address that no VIP serves crosses the router once.
#
# The routers do not own the VIP addresses: what a router's lb program passed
# to its kernel for one (an ICMP echo, a SYN to a port without a VIP) went
# back out by the router's default route to the tor, which routed it to a
# router again, until the TTL ran out: one `ping -t 64` of the VIP crossed the
# tor 64 times. Now the lb program drops such packets and counts them. This
# test sends one ping and one SYN to an unused port of each VIP (IPv4, IPv6)
# and checks, with a capture on the tor's links to the routers, that each
# crossed to a router exactly once, that the routers counted exactly those
# drops (drop_icmp_not_err, drop_vip_unserved), and that the VIPs' real port
# still answers.
source "$(dirname "$0")/bgp_lib.sh"
require_tools "tools/setup.sh installs tshark" dumpcap tshark

ecmp up --routers 2 | sed "s/^/$T_NAME: /"
client4=198.18.2.2
client6=2001:db8:2::2

pcap=$STATE/vip-loop.pcapng
filter="(dst host $VIP4 or dst host $VIP6) and (icmp or (icmp6 and ip6[40] == 128) or (tcp dst port 81))"
ip netns exec "$PREFIX-tor" dumpcap -q -i to-r1 -i to-r2 -f "$filter" -a duration:20 -w "$pcap" \
  2>"$STATE/dumpcap.err" &
cap_pid=$!
PIDS+=("$cap_pid")
for ((n = 0; n < 50; n++)); do
  [[ -s $pcap ]] && break
  sleep 0.1
done
[[ -s $pcap ]] || die "dumpcap did not start: $(cat "$STATE/dumpcap.err")"

echo0=$(verdict_sum drop_icmp_not_err)
unserved0=$(verdict_sum drop_vip_unserved)

# One echo request each, TTL 64, no answer expected (nobody answers for a
# VIP at the routers); one SYN each to port 81 (no VIP there), 0.5 s, well
# before the client's first retransmission (1 s).
ecmp exec client ping -c 1 -W 1 -t 64 -q "$VIP4" >/dev/null 2>&1 || true
ecmp exec client ping -6 -c 1 -W 1 -t 64 -q "$VIP6" >/dev/null 2>&1 || true
for a in "$VIP4" "$VIP6"; do
  ecmp exec client python3 -c '
import socket, sys
a = sys.argv[1]
s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(0.5)
print(s.connect_ex((a, 81)))' "$a" >/dev/null
done
sleep 0.5
kill -INT "$cap_pid" 2>/dev/null || true
wait "$cap_pid" 2>/dev/null || true

count() { tshark -r "$pcap" -Y "$1" 2>/dev/null | wc -l; }
e4=$(count "icmp.type == 8 && ip.dst == $VIP4")
e6=$(count "icmpv6.type == 128 && ipv6.dst == $VIP6")
s4=$(count "tcp.dstport == 81 && tcp.flags.syn == 1 && ip.dst == $VIP4")
s6=$(count "tcp.dstport == 81 && tcp.flags.syn == 1 && ipv6.dst == $VIP6")
log "crossings of the tor's links to the routers: echo IPv4 $e4, IPv6 $e6; SYN to port 81 IPv4 $s4, IPv6 $s6"
check "IPv4 echo to the VIP crossed to a router exactly once (was 64)" test "$e4" = 1
check "IPv6 echo to the VIP crossed to a router exactly once" test "$e6" = 1
check "IPv4 SYN to an unused VIP port crossed to a router exactly once" test "$s4" = 1
check "IPv6 SYN to an unused VIP port crossed to a router exactly once" test "$s6" = 1

echo1=$(verdict_sum drop_icmp_not_err)
unserved1=$(verdict_sum drop_vip_unserved)
log "router counters: drop_icmp_not_err +$((echo1 - echo0)), drop_vip_unserved +$((unserved1 - unserved0))"
check "routers counted the two echoes as drop_icmp_not_err" test $((echo1 - echo0)) = 2
check "routers counted the two SYNs as drop_vip_unserved" test $((unserved1 - unserved0)) = 2

# The VIPs' real port keeps working.
ecmp exec client python3 "$FLOWS" fixed --addr "$VIP4" --src "$client4" --ports 40000-40031 >"$STATE/ok4.json"
ecmp exec client python3 "$FLOWS" fixed --addr "$VIP6" --src "$client6" --ports 42000-42031 >"$STATE/ok6.json"
answered() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if d and all(v.startswith("backend-") for v in d.values()) else 1)' "$1"
}
check "IPv4 VIP port 80: 32 connections answered by backends" answered "$STATE/ok4.json"
check "IPv6 VIP port 80: 32 connections answered by backends" answered "$STATE/ok6.json"
