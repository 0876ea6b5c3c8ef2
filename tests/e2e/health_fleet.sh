#!/bin/bash
# e2e health: every backend slowed at once, under continuous new-connection
# load through the VIP.
#
# Every backend answers after a base delay (BASE ms), learned as normal; then
# all three become 3x slower at the same moment. Expected (issue 4): the
# fleet guard freezes the pool (freeze record, alert in `lbctl digest`,
# `frozen` in `lbctl --json status`, metric ballast_vip_frozen 1) and no
# weight changes while frozen (effective weights and table slots identical,
# no health_weight / demote / promote / ramp record). Then the delays are
# cleared and the pool unfreezes. Then all are slowed again and the operator
# accepts it as the new normal (`lbctl vip relearn`): the pool unfreezes and
# no weight moves. Prints the measured times. Needs root.
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

BASE=${BASE:-20}
SLOW=$((3 * BASE))
# latency_floor_ms 1: see health_brownout.sh.
SETTINGS=${SETTINGS:-"eval_interval_ms: 200 ramp_hold: 5 cooldown_base_s: 1 latency_floor_ms: 1"}
health_lab_up "$SETTINGS"
BES=("$BE1_ADDR4" "$BE2_ADDR4" "$BE3_ADDR4")

for i in 1 2 3; do knob "$i" set delay_ms="$BASE"; done
load_start fleet 26 --workers 8 --rate 40 --timeout 2
health_relearn "s/weight: [0-9]*/weight: 100/"
sleep 3
# knobs_all ARGS...: the same knob change on the three backends at once.
knobs_all() {
  local i pids=()
  for i in 1 2 3; do
    knob "$i" "$@" &
    pids+=("$!")
  done
  for i in "${pids[@]}"; do wait "$i" || die "knob change '$*' failed"; done
}
# weights_slots: "frozen w/slots w/slots w/slots" of the IPv4 VIP (one status call).
weights_slots() {
  lbctl --json status | python3 -c '
import json, sys
vip, addrs = sys.argv[1], sys.argv[2:]
for v in json.load(sys.stdin).get("vips", []):
    k = v["key"]
    if "%s:%s/%s" % (k["address"], k.get("port", 0), k["protocol"].lower()) != vip:
        continue
    by = {b["address"]: b for b in v.get("backends", [])}
    print(str(v.get("frozen", False)).lower(),
          " ".join("%s/%s" % (by[a].get("effectiveWeight"), by[a].get("tableSlots")) for a in addrs))
' "$VIP4_KEY" "${BES[@]}"
}
# frozen_within WANT SECONDS SINCE: waits for the IPv4 VIP's frozen flag to
# read WANT (true/false); prints the seconds from SINCE, or nothing on time out.
frozen_within() {
  local deadline
  deadline=$(awk -v n="$(now)" -v s="$2" 'BEGIN { printf "%.3f", n + s }')
  while awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }'; do
    if [[ $(field "$VIP4_KEY" "$BE1_ADDR4" frozen) == "$1" ]]; then since "$3"; return; fi
    sleep 0.05
  done
}
before=$(weights_slots)
[[ $before == false* ]] || die "the pool is frozen before any fault ($before)"
before=${before#false }
log "before: every backend at ${BASE} ms; weight/slots: $before"

# ---- all slowed at once ----------------------------------------------------------------------
t_slow=$(now)
t_slow_ms=$(awk -v t="$t_slow" 'BEGIN { printf "%.0f", t * 1000 }')
knobs_all set delay_ms="$SLOW"
log "every backend now at ${SLOW} ms (3x)"
froze=$(frozen_within true 5 "$t_slow")
[[ -n $froze ]] || die "the pool did not freeze within 5 s of slowing every backend ($(lbctl status | head -n 12))"
log "freeze: the pool is frozen $froze s after every backend slowed"
freeze_rec=$(audit_actions freeze | awk -v v="$VIP4_KEY" -v t="$t_slow_ms" '$2 == v && $1 >= t' | head -n 1)
check "freeze: a freeze record for $VIP4_KEY in the audit log ($freeze_rec)" test -n "$freeze_rec"

# Hold the fleet-wide slowdown for 4 s: nothing moves.
changes=0 samples=0 t_hold=$(now)
while awk -v a="$t_hold" -v n="$(now)" 'BEGIN { exit !(n - a < 4) }'; do
  now_ws=$(weights_slots)
  samples=$((samples + 1))
  [[ $now_ws == "true $before" ]] || { changes=$((changes + 1)); log "freeze: changed: $now_ws"; }
  sleep 0.1
done
check "freeze: frozen, effective weights and table slots unchanged in $samples samples over 4 s" test "$changes" = 0
conds=$(field "$VIP4_KEY" "$BE2_ADDR4" conditions)
check "freeze: backends show the condition frozen ($conds)" grep -q frozen <<<"$conds"
# The slowdown reaches the backends milliseconds apart: a weight cut in the
# evaluation before the freeze is undone by the freeze itself (its record
# lists weights_restored), so only records after the freeze count.
freeze_ms=${freeze_rec%% *}
moves=$(lbctl --json audit --since 10m | python3 -c '
import json, sys
vip, t0 = sys.argv[1], int(sys.argv[2])
n = 0
for r in json.load(sys.stdin).get("records", []):
    if r.get("vip") == vip and int(r["unixMs"]) > t0 and r["action"] in (
            "health_weight", "demote", "promote", "ramp_step", "ramp_back", "pin"):
        n += 1
        print(r["action"], r.get("backend"), file=sys.stderr)
print(n)' "$VIP4_KEY" "${freeze_ms:-$t_slow_ms}")
check "freeze: no weight-changing audit record while frozen ($moves)" test "$moves" = 0
metric=$(lab exec router curl -s 127.0.0.1:9580/metrics | grep "^ballast_vip_frozen{vip=\"$VIP4_KEY\"}" || true)
check "freeze: metric '$metric'" test "${metric##* }" = 1
digest=$(lbctl digest --since 1h)
alerts=$(grep '^alerts:' <<<"$digest" || true)
nfreeze=$(sed -n 's/.* \([0-9][0-9]*\) freezes.*/\1/p' <<<"$alerts")
check "freeze: the alert is in lbctl digest ($alerts)" test "${nfreeze:-0}" -ge 1
if freeze_json=$(lbctl --json audit --since 10m | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("records", []):
    if r["action"] == "freeze" and r.get("vip") == sys.argv[1]:
        print(r["inputsJson"][:300]); break' "$VIP4_KEY"); then
  log "freeze: audit inputs: $freeze_json"
fi

# ---- cleared -------------------------------------------------------------------------------
t_clear=$(now)
knobs_all clear
thawed=$(frozen_within false 10 "$t_clear")
if [[ -n $thawed ]]; then
  log "unfreeze: the pool unfroze $thawed s after the delays were cleared"
else
  fail "unfreeze: still frozen 10 s after the delays were cleared"
fi
nfreeze4=$(audit_actions freeze | awk -v v="$VIP4_KEY" -v t="$t_slow_ms" '$2 == v && $1 >= t' | wc -l)
check "freeze: one freeze of $VIP4_KEY for the episode ($nfreeze4)" test "$nfreeze4" = 1
unfreeze_rec=$(audit_actions unfreeze | awk -v v="$VIP4_KEY" -v t="$t_slow_ms" '$2 == v && $1 >= t' | head -n 1)
check "unfreeze: an unfreeze record in the audit log ($unfreeze_rec)" test -n "$unfreeze_rec"
lbctl --json audit --since 10m | python3 -c '
import json, sys
vip, t0 = sys.argv[1], int(sys.argv[2])
for r in json.load(sys.stdin).get("records", []):
    if r["action"] == "unfreeze" and r.get("vip") == vip and int(r["unixMs"]) >= t0:
        print("unfreeze %.2f s after the clear: %s" % ((int(r["unixMs"]) - t0) / 1000.0, r["inputsJson"][:300]))
        break' "$VIP4_KEY" "$(awk -v t="$t_clear" 'BEGIN { printf "%.0f", t * 1000 }')" | while read -r l; do log "$l"; done
metric=$(lab exec router curl -s 127.0.0.1:9580/metrics | grep "^ballast_vip_frozen{vip=\"$VIP4_KEY\"}" || true)
check "unfreeze: metric '$metric'" test "${metric##* }" = 0
sleep 1
after=$(weights_slots)
check "unfreeze: weights and slots as before ($after)" test "$after" = "false $before"

# ---- a shift that stays, accepted: lbctl vip relearn ---------------------------------------
# Slowed again, and this time it is the new normal: the operator relearns
# the pool while it is frozen. It stays frozen, weights held, while the
# baselines are learned again; nothing drifts from them, so the guard then
# unfreezes by its own rule, and no backend is taken out.
t_slow2=$(now)
knobs_all set delay_ms="$SLOW"
[[ -n $(frozen_within true 5 "$t_slow2") ]] || die "relearn: the pool did not freeze again within 5 s"
# An operator relearns a pool that has been frozen for a while, not in the
# second the shift arrives (the probes' latency median and the traffic
# samples straddle the shift for a few evaluations).
sleep 2
[[ $(field "$VIP4_KEY" "$BE1_ADDR4" frozen) == true ]] || die "relearn: the pool unfroze by itself"
t_re=$(now)
t_re_ms=$(awk -v t="$t_re" 'BEGIN { printf "%.0f", t * 1000 }')
out=$(lbctl vip relearn "$VIP4_KEY")
log "relearn: $out"
# Frozen while the baselines are learned again (baseline_min_intervals
# evaluations), then unfrozen by the guard's rule: the weights the freeze
# held stay until then.
held=0 samples=0 relearned=""
while awk -v a="$t_re" -v n="$(now)" 'BEGIN { exit !(n - a < 5) }'; do
  now_ws=$(weights_slots)
  samples=$((samples + 1))
  if [[ $now_ws == false* ]]; then relearned=$(since "$t_re"); break; fi
  [[ $now_ws == "true $before" ]] || { held=$((held + 1)); log "relearn: changed while frozen: $now_ws"; }
  sleep 0.05
done
check "relearn: the pool unfroze ${relearned:-never} s after lbctl vip relearn, still slow" test -n "$relearned"
check "relearn: weights and slots held until then ($samples samples, $held changed)" test "$held" = 0
unf=$(audit_actions unfreeze | awk -v v="$VIP4_KEY" -v t="$t_re_ms" '$2 == v && $1 >= t' | head -n 1)
check "relearn: by the guard's rule (an unfreeze record: $unf)" test -n "$unf"
# Then 3 s of the slow normal: no backend is taken out or pinned. (The lab's
# light load, a few new flows per backend per 200 ms evaluation, makes the
# scores at 3x flap between bands, frozen or not: a weight may be trimmed
# for a moment; such trims are logged, not counted.)
t_hold=$(now) trims=0
while awk -v a="$t_hold" -v n="$(now)" 'BEGIN { exit !(n - a < 3) }'; do
  now_ws=$(weights_slots)
  [[ $now_ws == false* ]] || fail "relearn: frozen again: $now_ws"
  [[ $now_ws == "false $before" ]] || trims=$((trims + 1))
  sleep 0.1
done
log "relearn: samples with a weight trimmed over 3 s: $trims"
outs=$(lbctl --json audit --since 10m | python3 -c '
import json, sys
n = 0
for r in json.load(sys.stdin).get("records", []):
    if r.get("vip") == sys.argv[1] and int(r["unixMs"]) >= int(sys.argv[2]) and r["action"] in ("demote", "pin"):
        n += 1
        print(r["action"], r.get("backend"), file=sys.stderr)
print(n)' "$VIP4_KEY" "$t_re_ms")
check "relearn: no backend demoted or pinned in the slow normal ($outs)" test "$outs" = 0
req=$(audit_actions relearn_health | awk -v v="$VIP4_KEY" -v t="$t_re_ms" '$2 == v && $1 >= t' | head -n 1)
check "relearn: the operator's request is audited ($req)" test -n "$req"
applied=$(lbctl --json audit --since 10m | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("records", []):
    if r["action"] == "relearn" and r.get("vip") == sys.argv[1] and int(r["unixMs"]) >= int(sys.argv[2]):
        print(r["actor"], r["inputsJson"]); break' "$VIP4_KEY" "$t_re_ms")
check "relearn: applied by health checking, the pool was frozen ($applied)" grep -q '^automation .*"was_frozen":true' <<<"$applied"
knobs_all clear
load_wait fleet
log "load: $LOAD_SUMMARY"
failed=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["failed"])' "$LOAD_SUMMARY")
check "load: no failed connection ($failed)" test "$failed" = 0

health_finish
