#!/bin/bash
# A VIP deleted while traffic flows does not loop between the routers and
# the tor (issue #41, item 5).
#
# Deleting a VIP removes it from a router's maps at once, but its route
# leaves the tor only once the router's announcer has withdrawn it (a pass,
# interval_ms, then a BGP UPDATE). Meanwhile the tor still sends the VIP's
# packets to the routers. Before, the address was gone from the data plane
# with the VIP, so the lb program passed them to the router's kernel, which
# routed them back out by its default route to the tor, which sent them to a
# router again, until the TTL ran out. Now the address is *retired*: its
# marker stays and the packets are dropped at the router (drop_vip_unserved)
# until BIRD no longer exports the route and the grace (bgp.withdraw_grace_ms,
# 2 s) has passed.
#
# A client sends TCP SYNs to both VIPs (IPv4 and IPv6, 400/s each, TTL 64,
# a raw socket: one packet each, no retransmission) while both routers
# delete both VIPs. A capture on the tor's ports to the routers counts every
# crossing: a SYN's first crossing leaves the tor with TTL 63 (hop limit
# 63); anything lower came back from a router. Checked: no crossing below
# 63, the tor's and the routers' ICMP time-exceeded counters unchanged, the
# routers counted drops as drop_vip_unserved, the tor's routes gone, and each
# router held the retired addresses until at least the grace after the tor's
# routes went, and then released them.
source "$(dirname "$0")/bgp_lib.sh"
require_tools "tools/setup.sh installs tshark" dumpcap tshark

ecmp up --routers 2 | sed "s/^/$T_NAME: /"
client4=198.18.2.2
client6=2001:db8:2::2
GRACE_MS=2000  # the agents' bgp.withdraw_grace_ms (the default)

# time_exceeded ROLE: ICMP and ICMPv6 time-exceeded messages ROLE's kernel
# sent (/proc/net/snmp is per network namespace).
time_exceeded() {
  ip netns exec "$PREFIX-$1" awk '
    $1 == "Icmp:" && !h { for (i = 2; i <= NF; i++) if ($i == "OutTimeExcds") c = i; h = 1; next }
    $1 == "Icmp:" && h { n += $c }
    END { print n + 0 }' /proc/net/snmp
  ip netns exec "$PREFIX-$1" awk '$1 == "Icmp6OutTimeExcds" { print $2 }' /proc/net/snmp6
}
time_exceeded_all() {  # "tor: 4 6, r1: 4 6, r2: 4 6" on one line
  local r out=""
  for r in tor r1 r2; do out+="$r: $(time_exceeded "$r" | paste -sd' ') "; done
  echo "$out"
}
# retired_held ROUTER: 1 while ROUTER's status still shows the IPv4 VIP's
# address (retired: no VIP uses it, its marker held), else 0.
retired_held() {
  ecmp lbctl "$1" --json status | python3 -c '
import json, sys
a = json.load(sys.stdin).get("announcement", {})
print(int(any(v.get("prefix") == "198.18.0.10/32" for v in a.get("vips", []))))'
}

pcap=$STATE/vip-delete.pcapng
filter="(dst host $VIP4 or dst host $VIP6) and tcp dst port 80"
# The filter before the interfaces: dumpcap applies it to every -i after it.
ip netns exec "$PREFIX-tor" dumpcap -q -f "$filter" -i to-r1 -i to-r2 -a duration:60 -w "$pcap" \
  2>"$STATE/dumpcap.err" &
cap_pid=$!
PIDS+=("$cap_pid")
for ((n = 0; n < 50; n++)); do
  [[ -s $pcap ]] && break
  sleep 0.1
done
[[ -s $pcap ]] || die "dumpcap did not start: $(cat "$STATE/dumpcap.err")"

te0=$(time_exceeded_all)
unserved0=$(verdict_sum drop_vip_unserved)

# SYNs, 400/s per family for 8 s, each from its own source port; the
# kernel answers the backends' SYN-ACKs with RSTs (no socket), also to the
# VIP's port 80 and so also in the capture.
ecmp exec client python3 -c '
import socket, struct, sys, time
src4, dst4, src6, dst6, rate, secs = sys.argv[1:7]
rate, secs = int(rate), float(secs)
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def syn(sport, pseudo):
    h = struct.pack("!HHIIBBHHH", sport, 80, sport * 7919, 0, 5 << 4, 0x02, 64240, 0, 0)
    return h[:16] + struct.pack("!H", csum(pseudo + h)) + h[18:]
s4 = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
s4.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 64)
s6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_TCP)
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 64)
p4 = socket.inet_aton(src4) + socket.inet_aton(dst4) + struct.pack("!BBH", 0, 6, 20)
p6 = (socket.inet_pton(socket.AF_INET6, src6) + socket.inet_pton(socket.AF_INET6, dst6)
      + struct.pack("!IxxxB", 20, 6))
n, t0 = 0, time.monotonic()
while time.monotonic() - t0 < secs:
    sport = 20000 + n % 40000
    s4.sendto(syn(sport, p4), (dst4, 0))
    s6.sendto(syn(sport, p6), (dst6, 0))
    n += 1
    time.sleep(max(0, t0 + n / rate - time.monotonic()))
print(n)' "$client4" "$VIP4" "$client6" "$VIP6" 400 8 >"$STATE/sent" &
sender=$!
PIDS+=("$sender")

sleep 2
# Both routers delete both VIPs (as an operator would, one router after the
# other, or all at once through config management).
t_del=$(ms_now)
dels=()
for r in r1 r2; do
  ecmp lbctl "$r" vip del "$VIP4:80/tcp" >/dev/null &
  dels+=($!)
  ecmp lbctl "$r" vip del "[$VIP6]:80/tcp" >/dev/null &
  dels+=($!)
done
deleted=0
for pid in "${dels[@]}"; do wait "$pid" && deleted=$((deleted + 1)); done
check "both routers deleted both VIPs" test "$deleted" = 4
gone_ms=$(wait_nexthops 0 15) || fail "the tor still routes a VIP 15 s after the deletion"
t_gone=$((t_del + gone_ms))
log "figure: VIPs deleted -> the tor's routes gone: ${gone_ms} ms"

# From the tor's routes gone on: each router still holds the retired
# address, and says why, until the grace has passed; then its status no
# longer names it. Both routers polled in turns.
declare -A held_line released_ms
while (($(ms_now) - t_gone < 15000)); do
  for r in r1 r2; do
    [[ -n ${released_ms[$r]:-} ]] && continue
    line=$(ecmp lbctl "$r" status | grep "^ANNOUNCE: $VIP4/32 " || true)
    if [[ -z $line ]]; then
      released_ms[$r]=$(($(ms_now) - t_gone))
    elif [[ $line == *"no VIP uses it; route withdrawn "* ]]; then
      held_line[$r]=$line
    fi
  done
  [[ -n ${released_ms[r1]:-} && -n ${released_ms[r2]:-} ]] && break
  sleep 0.05
done
log "figure: the tor's routes gone -> retired addresses released: r1 ${released_ms[r1]:-never} ms, r2 ${released_ms[r2]:-never} ms (grace ${GRACE_MS} ms)"
for r in r1 r2; do
  log "$r during the grace: ${held_line[$r]:-(not seen)}"
  check "$r's status said why $VIP4 was still held after the tor's route went" \
    grep -q "^ANNOUNCE: $VIP4/32 withdrawn (no VIP uses it; route withdrawn .* dropped here" \
    <<<"${held_line[$r]:-}"
  check "$r held the retired addresses at least the grace after the tor's routes went" \
    test "${released_ms[$r]:-0}" -ge $((GRACE_MS - 300))
  check "$r released the retired addresses within 3 s of the grace" \
    test "${released_ms[$r]:-99999}" -lt $((GRACE_MS + 3000))
  check "$r logged the release" grep -q '"retired VIP address released: its marker is gone"' \
    "$STATE/$r/lbagent.log"
done

wait "$sender" || fail "the SYN sender failed"
sleep 0.5
kill -INT "$cap_pid" 2>/dev/null || true
wait "$cap_pid" 2>/dev/null || true
sent=$(cat "$STATE/sent")

count() { tshark -r "$pcap" -Y "$1" 2>/dev/null | wc -l; }
first4=$(count "ip.dst == $VIP4 && ip.ttl == 63")
loop4=$(count "ip.dst == $VIP4 && ip.ttl < 63")
first6=$(count "ipv6.dst == $VIP6 && ipv6.hlim == 63")
loop6=$(count "ipv6.dst == $VIP6 && ipv6.hlim < 63")
te1=$(time_exceeded_all)
unserved1=$(verdict_sum drop_vip_unserved)
log "SYNs sent per family: $sent; crossings of the tor's ports to the routers (the SYNs and the client's RSTs): IPv4 $first4 first + $loop4 looped, IPv6 $first6 first + $loop6 looped"
log "ICMP time exceeded (IPv4 IPv6) before: $te0"
log "ICMP time exceeded (IPv4 IPv6) after:  $te1"
log "figure: routers' drop_vip_unserved +$((unserved1 - unserved0))"
check "SYNs reached the routers through the tor" test "$first4" -gt 0 -a "$first6" -gt 0
check "no IPv4 packet came back from a router to the tor" test "$loop4" = 0
check "no IPv6 packet came back from a router to the tor" test "$loop6" = 0
check "no time-exceeded message on the tor or the routers" test "$te0" = "$te1"
check "the routers dropped the deleted VIPs' packets as drop_vip_unserved" \
  test $((unserved1 - unserved0)) -gt 0
