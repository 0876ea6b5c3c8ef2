#!/bin/bash
# BGP announcement through BIRD: two routers peer with a BIRD tor (eBGP, ECMP);
# each router's lbagent (agent config `bgp`) enables its VIPs through its
# BIRD's control socket. Checks: sessions Established; the tor installs one
# route per VIP with a nexthop per router; only VIP routes are exported; an
# operator hold (the hold file) on one router leaves one nexthop, removing it
# restores two; a BIRD restart withdraws (its VIP protocols start disabled)
# and the agent reconciles back; the agent's shutdown withdraws.
# Prints the time from each action to the tor's route change.
source "$(dirname "$0")/bgp_lib.sh"

ecmp up --routers 2 | sed "s/^/$T_NAME: /"

established() {  # established ROLE PROTOCOL
  ecmp birdc "$1" show protocols "$2" | grep -q 'Established'
}
for p in tor4 tor6; do
  for r in r1 r2; do check "$r: BGP session $p Established" established "$r" "$p"; done
done
for p in r1_4 r1_6 r2_4 r2_6; do check "tor: BGP session $p Established" established tor "$p"; done

check "tor: IPv4 VIP route has 2 nexthops" test "$(nexthops 4)" = 2
check "tor: IPv6 VIP route has 2 nexthops" test "$(nexthops 6)" = 2
route4=$(ecmp exec tor ip -4 route show "$VIP4/32")
log "tor: $(tr '\n' ' ' <<<"$route4")"
check "tor: nexthops are r1 and r2" grep -q 'via 198.18.21.2.*' <<<"$route4"
check "tor: nexthops are r1 and r2 (r2)" grep -q 'via 198.18.22.2' <<<"$route4"
# Only the VIP host routes leave a router.
exported=$(ecmp birdc tor show route protocol r1_4 | grep -cE '^[0-9]' || true)
check "tor: r1 exports exactly one IPv4 route (the VIP)" test "$exported" = 1
check "r1: lbctl status shows both VIPs announced" test "$(announced_count r1)" = 2

# Withdraw on r1 (the operator hold file).
t0=$(ms_now)
ecmp withdraw r1 >/dev/null
ms=$(wait_nexthops 1 15) || fail "withdraw on r1: the tor still has 2 nexthops after 15 s"
log "figure: withdraw on r1 -> tor route at 1 nexthop: ${ms} ms (IPv4 and IPv6)"
check "tor: the remaining nexthop is r2" grep -q 'via 198.18.22.2' <<<"$(ecmp exec tor ip -4 route show "$VIP4/32")"
check "r1: BIRD shows the VIP protocols down" test "$(bird_vip_down r1)" = 2
sleep 1  # the hold survives the agent's periodic reconciles
check "tor: still 1 nexthop 1 s after the withdrawal (hold)" test "$(nexthops 4)" = 1

ecmp announce r1 >/dev/null
ms=$(wait_nexthops 2 15) || fail "announce on r1: no 2 nexthops after 15 s"
log "figure: release on r1 -> tor route at 2 nexthops: ${ms} ms"

# BIRD restarts on r2: its VIP protocols come up disabled, the BGP session
# re-establishes, and the agent enables the VIPs again.
enables_before=$(grep -c '"bgp: BIRD enable"' "$STATE/r2/lbagent.log" || true)
t0=$(ms_now)
ecmp restart-bird r2 >/dev/null
wait_nexthops 2 30 >/dev/null || fail "after r2's BIRD restart: no 2 nexthops within 30 s"
log "figure: r2 BIRD restart -> tor route back at 2 nexthops: $(($(ms_now) - t0)) ms after the restart command"
enables_after=$(grep -c '"bgp: BIRD enable"' "$STATE/r2/lbagent.log" || true)
log "r2: BIRD enable commands logged: $enables_before before the restart, $enables_after after"
check "r2: lbagent re-enabled both VIPs after the restart" test $((enables_after - enables_before)) -ge 2

# Shutdown (SIGTERM) withdraws.
kill -TERM "$(cat "$STATE/r2/lbagent.pid")"
ms=$(wait_nexthops 1 15) || fail "lbagent shutdown on r2: still 2 nexthops after 15 s"
log "figure: r2 lbagent SIGTERM -> tor route at 1 nexthop: ${ms} ms"
check "tor: the remaining nexthop is r1" grep -q 'via 198.18.21.2' <<<"$(ecmp exec tor ip -4 route show "$VIP4/32")"
