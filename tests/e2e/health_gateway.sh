#!/bin/bash
# e2e health: the link of backend-1 goes down; backend-1 is the backend whose
# device carries the probe forwarding (probe_forwarding { device: "to-be1" }),
# and whose address earlier builds used as the probes' gateway.
#
# Every probe's path must depend on its own backend alone: only backend-1 is
# demoted, backends 2 and 3 stay healthy at their full weight and the pool is
# never frozen. (With the probes routed via backend-1's address, every probe
# failed once its neighbour entry did: the fleet guard froze the VIP and the
# dead backend kept its slots.) Then the link comes back and backend-1 is
# promoted again. Needs root.
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

health_lab_up "eval_interval_ms: 100 ramp_hold: 3 cooldown_base_s: 1"
load_start gw 14 --workers 4 --timeout 1
sleep 2
w2=$(field "$VIP4_KEY" "$BE2_ADDR4" effectiveWeight)
w3=$(field "$VIP4_KEY" "$BE3_ADDR4" effectiveWeight)
log "before: backend-2 weight $w2, backend-3 weight $w3"

# backend-1's own end of its link goes down: the router's to-be1 loses its
# carrier, its neighbour entries towards backend-1 fail.
# (keep_addr_on_down: the backend keeps its IPv6 address across it.)
lab exec be1 sysctl -qw net.ipv6.conf.to-router.keep_addr_on_down=1
t_down=$(now)
lab exec be1 ip link set dev to-router down
wait_weight_at_most "$VIP4_KEY" "$BE1_ADDR4" 0 5 ||
  fail "backend-1 (link down) still has weight 5 s later (health $(field "$VIP4_KEY" "$BE1_ADDR4" health))"
log "backend-1 out of the table $(since "$t_down") s after its link went down"

# For 4 s: the others keep their weights and health, nothing freezes.
hold_healthy 4 "$BE2_ADDR4" "$BE3_ADDR4" "$BE2_ADDR6" "$BE3_ADDR6"
check "backends 2 and 3 stayed healthy (IPv4 and IPv6) and the pool unfrozen in $HOLD_SAMPLES samples over 4 s" \
  test "$HOLD_BAD" = 0
w2b=$(field "$VIP4_KEY" "$BE2_ADDR4" effectiveWeight)
w3b=$(field "$VIP4_KEY" "$BE3_ADDR4" effectiveWeight)
check "backend-2 keeps its weight ($w2 -> $w2b)" test "$w2b" = "$w2"
check "backend-3 keeps its weight ($w3 -> $w3b)" test "$w3b" = "$w3"
h16=$(field "$VIP6_KEY" "$BE1_ADDR6" health)
check "backend-1 demoted on the IPv6 VIP too ($h16)" test "$h16" != healthy
frozen_recs=$(audit_actions freeze | wc -l)
check "no freeze record in the audit log ($frozen_recs)" test "$frozen_recs" = 0

# The link back (with backend-1's default routes, which went with the link):
# backend-1 is promoted again.
lab exec be1 ip link set dev to-router up
lab exec be1 ip route replace default via "${BE1_ADDR4%.*}.1"
lab exec be1 ip -6 route replace default via "${BE1_ADDR6%::*}::1"
wait_state "$VIP4_KEY" "$BE1_ADDR4" healthy 15 ||
  fail "backend-1 not healthy 15 s after its link came back ($(field "$VIP4_KEY" "$BE1_ADDR4" health))"
load_wait gw
log "load: $LOAD_SUMMARY"
health_finish
