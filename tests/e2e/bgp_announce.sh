#!/bin/bash
# BGP announcement through BIRD: two routers peer with a BIRD tor (eBGP, ECMP);
# each router's announcer (ballast-announce, the agent's Announcer) enables its
# VIPs through its BIRD's control socket. Checks: sessions Established; the tor
# installs one route per VIP with a nexthop per router; only VIP routes are
# exported; a withdrawal on one router leaves one nexthop, re-announcing
# restores two; a BIRD restart withdraws (its VIP protocols start disabled)
# and the announcer reconciles back; the announcer's shutdown withdraws.
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
check "r1: announcer reports both VIPs announced" \
  bash -c "\"$ANNOUNCE\" status --socket $STATE/r1/bird.ctl | grep -c 'announced' | grep -qx 2"

# Withdraw on r1 (the announcer's hold, as on fence/lease loss/unhealthy).
t0=$(ms_now)
ecmp withdraw r1 >/dev/null
ms=$(wait_nexthops 1 15) || fail "withdraw on r1: the tor still has 2 nexthops after 15 s"
log "figure: withdraw on r1 -> tor route at 1 nexthop: ${ms} ms (IPv4 and IPv6)"
check "tor: the remaining nexthop is r2" grep -q 'via 198.18.22.2' <<<"$(ecmp exec tor ip -4 route show "$VIP4/32")"
check "r1: BIRD shows the VIP protocols down" \
  bash -c "\"$ANNOUNCE\" status --socket $STATE/r1/bird.ctl | grep -c withdrawn | grep -qx 2"
sleep 1  # the hold survives the announcer's periodic reconciles
check "tor: still 1 nexthop 1 s after the withdrawal (hold)" test "$(nexthops 4)" = 1

ecmp announce r1 >/dev/null
ms=$(wait_nexthops 2 15) || fail "announce on r1: no 2 nexthops after 15 s"
log "figure: release on r1 -> tor route at 2 nexthops: ${ms} ms"

# BIRD restarts on r2: its VIP protocols come up disabled, the BGP session
# re-establishes, and the announcer enables the VIPs again.
t0=$(ms_now)
ecmp restart-bird r2 >/dev/null
wait_nexthops 2 30 >/dev/null || fail "after r2's BIRD restart: no 2 nexthops within 30 s"
log "figure: r2 BIRD restart -> tor route back at 2 nexthops: $(($(ms_now) - t0)) ms after the restart command"
check "r2: the announcer re-enabled the VIPs after the restart" \
  bash -c "grep -c '\"action\":\"announce\"' $STATE/r2/announce.jsonl | awk '\$1 >= 4 { ok = 1 } END { exit !ok }'"

# Shutdown (SIGTERM) withdraws.
kill -TERM "$(cat "$STATE/r2/announce.pid")"
ms=$(wait_nexthops 1 15) || fail "announcer shutdown on r2: still 2 nexthops after 15 s"
log "figure: r2 announcer shutdown -> tor route at 1 nexthop: ${ms} ms"
check "tor: the remaining nexthop is r1" grep -q 'via 198.18.21.2' <<<"$(ecmp exec tor ip -4 route show "$VIP4/32")"
