#!/bin/bash
# e2e health: probes follow a GUE VIP's path. The lab's IPv6 VIP is
# `mode: GUE`; its probes must reach the backends as GUE, as its clients'
# packets do, so that a backend that takes IP-in-IP but not GUE fails that
# VIP's probes. (When probes went IP-in-IP to every VIP, such a backend
# passed them while every client packet of the GUE VIP was lost.)
#
# With no client traffic (so the data plane's passive signal has nothing to
# see): the backends count GUE packets from the probes alone; then backend-1's
# decap program is loaded again with another GUE port, and backend-1 is
# demoted on the GUE VIP only: it stays healthy on the IPv4 (IP-in-IP) VIP,
# backends 2 and 3 stay healthy, nothing freezes. With the port back,
# backend-1 is promoted again. Needs root.
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

health_lab_up "eval_interval_ms: 100 ramp_hold: 3 cooldown_base_s: 1"
wait_state "$VIP6_KEY" "$BE1_ADDR6" healthy 10 || die "backend-1 not healthy on the IPv6 VIP 10 s after start"

gue_count() { # gue_count I: GUE packets backend I's decap program took off
  lab exec "be$1" "$LBDP" decap stats --dev to-router | awk '$1 == "decapped_gue" { print $2 }'
}
# decap attach on backend-1, GUE on port $1 (any outer source: only the GUE
# port matters here)
decap_be1() {
  lab exec be1 "$LBDP" decap attach --dev to-router --addr "$BE1_ADDR4" --addr "$BE1_ADDR6" \
    --from any --vip "$VIP4" --vip "$VIP6" --gue-port "$1" >>"$WORK/decap.log" 2>&1 ||
    die "decap attach (GUE port $1) failed on backend-1: $(tail -n 5 "$WORK/decap.log")"
}

# Only probes are sent: every GUE packet a backend counts is one. HTTP
# probes every 200 ms, several packets each: wait (at most 5 s) until each
# backend has counted 10 more.
for i in 1 2 3; do
  a=$(gue_count "$i") t0=$(now)
  b=$a
  while ((${b:-0} - ${a:-0} < 10)) && awk -v a="$t0" -v n="$(now)" 'BEGIN { exit !(n - a < 5) }'; do
    sleep 0.1
    b=$(gue_count "$i")
  done
  check "backend-$i: the GUE VIP's probes arrive as GUE (${a:-?} -> ${b:-?} in $(since "$t0") s)" \
    test "$((${b:-0} - ${a:-0}))" -ge 10
done

t_break=$(now)
decap_be1 6081
wait_weight_at_most "$VIP6_KEY" "$BE1_ADDR6" 0 8 ||
  fail "backend-1 still in the GUE VIP's table 8 s after it stopped taking GUE (health $(field "$VIP6_KEY" "$BE1_ADDR6" health))"
log "backend-1 out of the GUE VIP's table $(since "$t_break") s after it stopped taking GUE"

# For 3 s: backend-1 on the IP-in-IP VIP and the other backends on both stay
# healthy; nothing freezes.
hold_healthy 3 "$BE1_ADDR4" "$BE2_ADDR4" "$BE3_ADDR4" "$BE2_ADDR6" "$BE3_ADDR6"
check "backend-1 on the IP-in-IP VIP, backends 2 and 3 on both stayed healthy and unfrozen ($HOLD_SAMPLES samples over 3 s)" \
  test "$HOLD_BAD" = 0
h=$(field "$VIP6_KEY" "$BE1_ADDR6" health)
check "backend-1 not healthy on the GUE VIP ($h)" test "$h" != healthy

decap_be1 6080
wait_state "$VIP6_KEY" "$BE1_ADDR6" healthy 15 ||
  fail "backend-1 not healthy on the GUE VIP 15 s after it took GUE again ($(field "$VIP6_KEY" "$BE1_ADDR6" health))"
log "backend-1 healthy on the GUE VIP again"
health_finish
