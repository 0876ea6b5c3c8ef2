#!/bin/bash
# e2e health: the probe passes while real traffic fails, under continuous
# new-connection load through the VIP.
#
# Backend-1 resets every real request but answers the probes
# (reset_rate=1 real_only=true). Expected (issue 4, docs/health.md): the
# passive signals complain (unanswered_ratio) while the probe is clean, a
# disagreement: backend-1's score is lowered (<= 60) and its conditions name
# disagreement:probe_passes_traffic_fails; with the default penalty it is not
# demoted. After disagreement_alert_s (2 s here) a `disagreement` audit record
# names the direction (an alert: lbctl digest, metric). When the fault is
# cleared, `disagreement_cleared`. Prints the measured times. Needs root.
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

# One evaluation per probe (200 ms), so that each evaluation has both sides.
# A few ms of probe latency jitter on this loaded 2-core machine is a probe
# penalty of a few points: still "clean" (score.h), so the disagreement
# stands. SETTINGS= overrides the health settings.
health_lab_up "${SETTINGS:-eval_interval_ms: 200 disagreement_alert_s: 2}"
B=$BE1_ADDR4

# ~400 new connections/s, ~100/s on backend-1 (weight 1 of 4): 20 per
# evaluation, above min_samples (10), so the passive side has an opinion.
load_start dis 20 --workers 4 --rate 100 --timeout 1
sleep 2
t_fault=$(now)
t_fault_ms=$(awk -v t="$t_fault" 'BEGIN { printf "%.0f", t * 1000 }')
knob 1 set reset_rate=1 real_only=true
log "backend-1 now resets real requests; probes still pass"

# The score falls and the condition names the direction.
deadline=$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 5 }')
seen=""
while awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }'; do
  if [[ $(field "$VIP4_KEY" "$B" conditions) == *disagreement:probe_passes_traffic_fails* ]]; then
    seen=$(since "$t_fault")
    break
  fi
  sleep 0.05
done
if [[ -n $seen ]]; then
  log "disagreement: condition shown $seen s after the fault"
else
  fail "disagreement: no disagreement condition 5 s after the fault (conditions $(field "$VIP4_KEY" "$B" conditions), score $(field "$VIP4_KEY" "$B" score))"
fi

# The alert after disagreement_alert_s.
deadline=$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 8 }')
alert=""
while awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }'; do
  alert=$(lbctl --json audit --since 10m | python3 -c '
import json, sys
addr, t0 = sys.argv[1], int(sys.argv[2])
for r in json.load(sys.stdin).get("records", []):
    if r["action"] == "disagreement" and r.get("backend") == addr and int(r["unixMs"]) >= t0:
        i = json.loads(r["inputsJson"])
        print(r["unixMs"], i.get("disagreement"), i.get("score"))
        break' "$B" "$t_fault_ms")
  [[ -n $alert ]] && break
  sleep 0.2
done
if [[ -n $alert ]]; then
  read -r alert_ms direction alert_score <<<"$alert"
  after=$(awk -v a="$t_fault_ms" -v b="$alert_ms" 'BEGIN { printf "%.2f", (b - a) / 1000 }')
  log "disagreement: alert record $after s after the fault (direction $direction, score $alert_score)"
  check "disagreement: the alert names probe_passes_traffic_fails ($direction)" test "$direction" = probe_passes_traffic_fails
  check "disagreement: alert after disagreement_alert_s 2 s, within 6 s ($after s)" \
    awk -v s="$after" 'BEGIN { exit !(s >= 2.0 && s <= 6.0) }'
else
  fail "disagreement: no disagreement audit record for backend-1 8 s after the condition"
fi

# Score lowered during the episode (sampled over 2 s), not demoted.
max_score=0 min_score=100 states=""
for _ in $(seq 1 6); do
  sc=$(field "$VIP4_KEY" "$B" score)
  h=$(field "$VIP4_KEY" "$B" health)
  ((sc > max_score)) && max_score=$sc
  ((sc < min_score)) && min_score=$sc
  [[ " $states " == *" $h "* ]] || states="$states $h"
  sleep 0.3
done
log "disagreement: backend-1 score $min_score..$max_score, health:$states, weight $(field "$VIP4_KEY" "$B" effectiveWeight)"
check "disagreement: backend-1's score lowered to <= 60 ($min_score..$max_score)" test "$max_score" -le 60
demotes=$(audit_actions demote "$B" | wc -l)
check "disagreement: backend-1 not demoted (a disagreement alone never demotes): $demotes demote records" test "$demotes" = 0
digest=$(lbctl digest --since 1h)
alerts=$(grep '^alerts:' <<<"$digest" || true)
ndis=$(sed -n 's/.* \([0-9][0-9]*\) disagreement alerts.*/\1/p' <<<"$alerts")
check "disagreement: the alert is in lbctl digest ($alerts)" test "${ndis:-0}" -ge 1
metric=$(lab exec router curl -s 127.0.0.1:9580/metrics | grep '^ballast_health_alerts_total{kind="disagreement"}' || true)
check "disagreement: metric '$metric'" test "${metric##* }" -ge 1

# ---- cleared -------------------------------------------------------------------------------
t_clear=$(now)
t_clear_ms=$(awk -v t="$t_clear" 'BEGIN { printf "%.0f", t * 1000 }')
knob 1 clear
deadline=$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 6 }')
cleared=""
while awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }'; do
  cleared=$(audit_actions disagreement_cleared "$B" | awk -v t="$t_clear_ms" '$1 >= t { print $1; exit }')
  [[ -n $cleared ]] && break
  sleep 0.2
done
if [[ -n $cleared ]]; then
  log "cleared: disagreement_cleared $(awk -v a="$t_clear_ms" -v b="$cleared" 'BEGIN { printf "%.2f", (b - a) / 1000 }') s after the fault was cleared"
else
  fail "cleared: no disagreement_cleared record for backend-1 6 s after the fault was cleared"
fi
deadline=$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 5 }')
until [[ $(field "$VIP4_KEY" "$B" score) -ge 80 ]]; do
  awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }' || break
  sleep 0.1
done
sc=$(field "$VIP4_KEY" "$B" score)
check "cleared: backend-1's score back to >= 80 ($sc)" test "$sc" -ge 80
# One fault, one sustained disagreement: one alert for backend-1 (a jittery
# evaluation in between must not end the episode and start another).
episodes=$(audit_actions disagreement "$B" | awk -v a="$t_fault_ms" -v b="$t_clear_ms" '$1 >= a && $1 < b' | wc -l)
check "disagreement: one alert for the one fault ($episodes)" test "$episodes" = 1
load_wait dis
log "load: $LOAD_SUMMARY"

health_finish
