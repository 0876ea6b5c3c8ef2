#!/bin/bash
# lbagent's own BGP announcement (agent config `bgp`, docs/bgp.md) in the ECMP
# lab, observed on the tor's routing table. Checks, each with the time from
# the action to the tor's route change:
#   - both routers' routes are present (tor BIRD and kernel ECMP route);
#   - the data plane turns unhealthy on r1 (its XDP program detached with
#     `ip link set dev to-tor xdp off`): r1 withdraws within 3 s; status,
#     metrics and audit say why; re-attaching the pinned program re-announces;
#   - a pinned map of r1 cannot be opened (its pin moved away): withdrawn;
#     pinned again: re-announced;
#   - r1's BIRD stops: the agent keeps running, reports BIRD unreachable and
#     counts errors; BIRD back: the agent re-applies its announcements;
#   - SIGTERM to r2's lbagent: r2 withdraws before exiting, its XDP program
#     stays attached, clients keep being answered; started again, it adopts
#     the program and re-announces.
source "$(dirname "$0")/bgp_lib.sh"

ecmp up --routers 2 | sed "s/^/$T_NAME: /"
BOUND_S=3  # a withdrawal or re-announcement must reach the tor within this

tor_bird_route() { ecmp birdc tor show route for "$VIP4/32"; }
metric() {  # metric ROUTER NAME{LABELS}: the sample's value ("" if absent)
  ecmp exec "$1" curl -s --max-time 2 http://127.0.0.1:9580/metrics |
    awk -v m="$2" '$1 == m { print $2 }'
}
status_of() { ecmp lbctl "$1" status; }
# timed ACTION-DESC WANT-NEXTHOPS: waits for the tor, records the figure.
timed() {
  local what=$1 want=$2 ms
  if ms=$(wait_nexthops "$want" "$BOUND_S"); then
    log "figure: $what -> tor route at $want nexthop(s): ${ms} ms"
  else
    fail "$what: the tor's VIP routes are not at $want nexthop(s) after ${BOUND_S} s (now $(nexthops 4)/$(nexthops 6))"
  fi
}
answered() {  # answered: a client request through the tor is answered by a backend
  [[ $(ecmp exec client curl -s --max-time 2 "http://$VIP4/") == backend-* ]]
}

# ---- both routes present ----------------------------------------------------
check "tor: IPv4 VIP route has 2 nexthops" test "$(nexthops 4)" = 2
check "tor: IPv6 VIP route has 2 nexthops" test "$(nexthops 6)" = 2
route=$(tor_bird_route)
log "tor BIRD: $(tr -s ' \t\n' ' ' <<<"$route")"
check "tor BIRD: route to $VIP4/32 from r1" grep -q 'r1_4' <<<"$route"
check "tor BIRD: route to $VIP4/32 from r2" grep -q 'r2_4' <<<"$route"
check "r1: lbctl status shows both VIPs announced" test "$(announced_count r1)" = 2
check "r1: metric ballast_vip_announced{prefix=\"$VIP4/32\"} = 1" \
  test "$(metric r1 "ballast_vip_announced{prefix=\"$VIP4/32\"}")" = 1
check "r1: metric ballast_bird_up = 1" test "$(metric r1 ballast_bird_up)" = 1
check "r1: audit records the announcements (automation)" \
  grep_soon '"actor":"automation".*"action":"vip_announce"' "$STATE/r1/audit.jsonl"

# ---- unhealthy data plane: XDP program detached -----------------------------
ecmp exec r1 ip link set dev to-tor xdp off
timed "r1 XDP detached (data plane unhealthy)" 1
check "tor: the remaining nexthop is r2" grep -q 'via 198.18.22.2' <<<"$(ecmp exec tor ip -4 route show "$VIP4/32")"
st=$(status_of r1)
grep -E '^(BGP|ANNOUNCE):' <<<"$st" | sed "s/^/$T_NAME: r1 status: /"
check "r1 status: data plane UNHEALTHY, no XDP program" grep -q 'UNHEALTHY: dev to-tor runs no XDP program' <<<"$st"
check "r1 status: both VIPs withdrawn, with the reason" \
  test "$(grep -c '^ANNOUNCE: .* withdrawn (data plane unhealthy' <<<"$st")" = 2
check "r1: metric ballast_dataplane_healthy = 0" test "$(metric r1 ballast_dataplane_healthy)" = 0
check "r1: metric ballast_vip_announced{prefix=\"$VIP4/32\"} = 0" \
  test "$(metric r1 "ballast_vip_announced{prefix=\"$VIP4/32\"}")" = 0
check "r1: audit: vip_withdraw because the data plane is unhealthy" \
  grep_soon '"action":"vip_withdraw".*data plane unhealthy' "$STATE/r1/audit.jsonl"
check "r2: still announcing both VIPs" test "$(announced_count r2)" = 2
check "a client is answered through r2" answered
ecmp exec r1 ip link set dev to-tor xdpdrv pinned /sys/fs/bpf/ballast-r1/prog_xdp_lb
timed "r1 XDP re-attached (pinned program)" 2
check "r1 status: data plane healthy again" grep -q 'data plane healthy' <<<"$(status_of r1)"

# ---- unhealthy data plane: a pinned map cannot be opened ---------------------
pin=/sys/fs/bpf/ballast-r1/vips
map_id=$(ecmp exec r1 bpftool -j map show pinned "$pin" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
ecmp exec r1 rm "$pin"
timed "r1 pinned map vips removed" 1
check "r1 status names the missing pin" grep -q "cannot open the pinned map $pin" <<<"$(status_of r1)"
ecmp exec r1 bpftool map pin id "$map_id" "$pin"
timed "r1 map vips pinned again" 2

# ---- BIRD unreachable ----------------------------------------------------------
errors0=$(metric r1 ballast_bird_errors_total)
ecmp stop-bird r1 >/dev/null
wait_nexthops 1 15 >/dev/null || fail "r1's BIRD stopped: the tor still has 2 nexthops"
sleep 1
st=$(status_of r1)
check "r1 status: BIRD UNREACHABLE" grep -q '^BGP: BIRD .* UNREACHABLE' <<<"$st"
check "r1: metric ballast_bird_up = 0" test "$(metric r1 ballast_bird_up)" = 0
errors1=$(metric r1 ballast_bird_errors_total)
log "r1: ballast_bird_errors_total $errors0 -> $errors1 after 1 s without BIRD"
check "r1: BIRD errors counted" test "${errors1:-0}" -gt "${errors0:-0}"
check "r1: lbagent still running" kill -0 "$(cat "$STATE/r1/lbagent.pid")"
t0=$(ms_now)
ecmp start-bird r1 >/dev/null
wait_nexthops 2 30 >/dev/null || fail "r1's BIRD back: no 2 nexthops within 30 s"
log "figure: r1 BIRD started -> tor route back at 2 nexthops: $(($(ms_now) - t0)) ms (BGP session setup included)"
check "r1: metric ballast_bird_up = 1 again" test "$(metric r1 ballast_bird_up)" = 1

# ---- SIGTERM withdraws; the XDP program stays attached --------------------------
pid=$(cat "$STATE/r2/lbagent.pid")
kill -TERM "$pid"
timed "r2 lbagent SIGTERM" 1
for ((n = 0; n < 50; n++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
check "r2: lbagent exited after SIGTERM" bash -c "! kill -0 $pid 2>/dev/null"
check "r2: lbagent logged the withdrawal for shutdown" \
  grep -q '"bgp: every VIP withdrawn for shutdown"' "$STATE/r2/lbagent.log"
check "r2: audit: vip_withdraw because of SIGTERM" \
  grep -q '"action":"vip_withdraw".*agent shutting down (SIGTERM)' "$STATE/r2/audit.jsonl"
check "r2: BIRD shows both VIP protocols down" test "$(bird_vip_down r2)" = 2
check "r2: the XDP program is still attached to to-tor" \
  grep -q 'prog/xdp' <<<"$(ecmp exec r2 ip -d link show dev to-tor)"
check "tor: the remaining nexthop is r1" grep -q 'via 198.18.21.2' <<<"$(ecmp exec tor ip -4 route show "$VIP4/32")"
check "a client is answered through r1" answered
t0=$(ms_now)
ecmp start-agent r2 >/dev/null
wait_nexthops 2 15 >/dev/null || fail "r2's lbagent started again: no 2 nexthops within 15 s"
log "figure: r2 lbagent start -> tor route back at 2 nexthops: $(($(ms_now) - t0)) ms (agent start-up included)"
check "r2: lbctl status shows both VIPs announced again" test "$(announced_count r2)" = 2
