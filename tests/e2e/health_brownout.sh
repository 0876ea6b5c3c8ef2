#!/bin/bash
# e2e health: brownout under continuous new-connection load through the VIP.
#
# Every backend answers after a base delay (BASE ms) and the health logic
# learns that as normal; then backend-1 becomes 3x slower. Expected (issue 4):
# its score falls and at least 30% of its weight moves off within 5 s
# (effective weight <= 70 of its nominal 100), without a flap: it stays in
# service (no demote, no pin) for the whole brownout. Then it is restored and
# gets its full weight back. Prints the measured times. Needs root.
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

BASE=${BASE:-20}
SLOW=$((3 * BASE))
# latency_floor_ms 1 (default 10) so that 20 -> 60 ms is a 3x slowdown for the
# score rather than 2.3x. Probes and passive signals both judge.
SETTINGS=${SETTINGS:-"eval_interval_ms: 200 ramp_hold: 5 cooldown_base_s: 1 latency_floor_ms: 1"}
health_lab_up "$SETTINGS"

# The normal: BASE ms on every backend, nominal weight 100 each; then the
# health logic starts over so that its baselines are learned at BASE ms.
for i in 1 2 3; do knob "$i" set delay_ms="$BASE"; done
load_start brown 45 --workers 8 --timeout 2
# Baselines are learned in the first 5 evaluations (1 s) after the relearn:
# learned while the load generator was still starting (an idle machine, a
# few milliseconds faster), the steady load that follows is a fleet-wide
# slowdown against them, which freezes both pools until the baselines catch
# up (hours: baseline_alpha_anomalous), and the test failed at "still
# frozen". So the load runs steadily (its Python started, 8 workers busy)
# before health checking starts over.
sleep 3
health_relearn "s/weight: [0-9]*/weight: 100/"
# A settled start: every backend at its full weight. Under load on a small
# machine the first evaluations can see the whole pool drift (the fleet
# guard then freezes it, holding a weight below 100 until it clears), so
# wait for the pool to settle, for up to 15 s, rather than a fixed 4 s (the
# load runs 35 s so that it still covers the restore after such a wait).
sleep 4
all_full() {
  local a
  for a in "$BE1_ADDR4" "$BE2_ADDR4" "$BE3_ADDR4"; do
    [[ $(field "$VIP4_KEY" "$a" effectiveWeight) == 100 ]] || return 1
  done
  # A frozen pool can hold every weight at 100 and then not move for the
  # brownout either.
  [[ $(field "$VIP4_KEY" "" frozen) == false ]]
}
settle_by=$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 11 }')
until all_full || ! awk -v d="$settle_by" -v n="$(now)" 'BEGIN { exit !(n < d) }'; do sleep 0.2; done
for a in "$BE1_ADDR4" "$BE2_ADDR4" "$BE3_ADDR4"; do
  w=$(field "$VIP4_KEY" "$a" effectiveWeight)
  [[ $w == 100 ]] || die "before the brownout: backend $a has effective weight $w, not 100 (score $(field "$VIP4_KEY" "$a" score), $(field "$VIP4_KEY" "$a" conditions))"
done
f=$(field "$VIP4_KEY" "" frozen)
[[ $f == false ]] || die "before the brownout: the pool is still frozen (frozen=$f) 15 s after relearning"
log "baseline: every backend at ${BASE} ms, weight 100, score $(field "$VIP4_KEY" "$BE1_ADDR4" score), pool not frozen"

# ---- brownout ------------------------------------------------------------------------------
t_slow=$(now)
t_slow_ms=$(awk -v t="$t_slow" 'BEGIN { printf "%.0f", t * 1000 }')
knob 1 set delay_ms="$SLOW"
log "backend-1 now at ${SLOW} ms (3x)"
if wait_weight_at_most "$VIP4_KEY" "$BE1_ADDR4" 99 5; then
  first=$(since "$t_slow")
  log "brownout: first weight change of backend-1 $first s after the slowdown"
else
  fail "brownout: backend-1's weight did not change within 5 s (score $(field "$VIP4_KEY" "$BE1_ADDR4" score))"
fi
if wait_weight_at_most "$VIP4_KEY" "$BE1_ADDR4" 70 5; then
  moved=$(since "$t_slow")
  log "brownout: backend-1 at <= 70% of its weight $moved s after the slowdown"
  check "brownout: >= 30% of the weight moved off within 5 s ($moved s)" \
    awk -v s="$moved" 'BEGIN { exit !(s <= 5.0) }'
else
  fail "brownout: backend-1 still above 70% of its weight 5 s after the slowdown (weight $(field "$VIP4_KEY" "$BE1_ADDR4" effectiveWeight), score $(field "$VIP4_KEY" "$BE1_ADDR4" score), $(field "$VIP4_KEY" "$BE1_ADDR4" conditions))"
fi
# Hold the brownout: backend-1 must stay in service (degraded, weight > 0).
min_w=100 max_w=0 sum_w=0 states=""
for _ in $(seq 1 20); do
  w=$(field "$VIP4_KEY" "$BE1_ADDR4" effectiveWeight)
  s=$(field "$VIP4_KEY" "$BE1_ADDR4" health)
  sum_w=$((sum_w + w))
  ((w < min_w)) && min_w=$w
  ((w > max_w)) && max_w=$w
  [[ " $states " == *" $s "* ]] || states="$states $s"
  sleep 0.2
done
score=$(field "$VIP4_KEY" "$BE1_ADDR4" score)
log "brownout: over 4 s of the brownout backend-1 had weight $min_w..$max_w (mean $((sum_w / 20))), health:$states, score now $score"
check "brownout: backend-1's score fell ($score)" test "$score" -lt 80
check "brownout: backend-1 stayed in service (weight $min_w..$max_w, health$states)" \
  test "$min_w" -gt 0 -a "$states" = " degraded"
check "brownout: backend-1 kept >= 30% of its weight off (mean $((sum_w / 20)))" test $((sum_w / 20)) -le 70
demotes=$(audit_actions demote "$BE1_ADDR4" | wc -l)
pins=$(audit_actions pin "$BE1_ADDR4" | wc -l)
check "brownout: no flap: $demotes demote and $pins pin records for backend-1" test "$demotes$pins" = 00
frozen=$(field "$VIP4_KEY" "$BE1_ADDR4" frozen)
check "brownout: one slow backend does not freeze the pool (frozen $frozen)" test "$frozen" = false
# When it did: the freeze records, with their time from the slowdown and
# what the guard counted (for the next look at a failure).
lbctl --json audit --since 10m | python3 -c '
import json, sys
t = float(sys.argv[1])
for r in json.load(sys.stdin).get("records", []):
    if r["action"] in ("freeze", "unfreeze"):
        print("  %s %+.2f s from the slowdown: %s" % (r["action"], int(r["unixMs"]) / 1000 - t,
                                                     r.get("inputsJson", "")))' "$t_slow" >&2 || true
for a in "$BE2_ADDR4" "$BE3_ADDR4"; do
  w=$(field "$VIP4_KEY" "$a" effectiveWeight)
  check "brownout: peer $a keeps its weight ($w)" test "$w" = 100
done

# ---- the status page, in a browser, during the brownout ------------------------------------
# Headless Chromium in the router's namespace loads lbagent's /status: the DOM
# must mark backend-1 (degraded, weight cut) and only it, and its weight
# timeline must fall; the screenshot is kept as the test's artefact.
shots=${BALLAST_ARTIFACT_DIR:-$repo/build/Testing/artifacts}
mkdir -p "$shots"
browse() {
  lab exec router env HOME="$WORK" chromium --headless=new --no-sandbox --disable-gpu \
    --user-data-dir="$WORK/chromium" --window-size=1400,900 "$@" \
    http://127.0.0.1:9580/status 2>>"$WORK/chromium.err"
}
# read_page: loads /status in Chromium and reads its DOM into slow_* and
# peers_marked.
read_page() {
  browse --dump-dom >"$WORK/status.html" || fail "status page: chromium failed: $(tail -n 3 "$WORK/chromium.err")"
  local page
  page=$(python3 - "$WORK/status.html" "$VIP4_KEY" "$BE1_ADDR4" "$BE2_ADDR4" "$BE3_ADDR4" <<'PY'
import sys
from html.parser import HTMLParser
path, vip, slow, *peers = sys.argv[1:]
rows, cur_vip, cur_row = {}, None, None
class P(HTMLParser):
    def handle_starttag(self, tag, attrs):
        global cur_vip, cur_row
        a = dict(attrs)
        if tag == "section" and "data-vip" in a:
            cur_vip = a["data-vip"]
        elif tag == "tr" and "data-backend" in a and cur_vip == vip:
            cur_row = a["data-backend"]
            rows[cur_row] = {"class": a.get("class", "").split(), "weight": []}
        elif tag == "polyline" and cur_row and "weight" in a.get("class", "").split():
            rows[cur_row]["weight"] = [int(v) for v in a.get("data-values", "").split(",") if v]
    def handle_endtag(self, tag):
        global cur_row
        if tag == "tr":
            cur_row = None
P().feed(open(path).read())
s = rows.get(slow, {"class": [], "weight": []})
w = s["weight"]
print("slow_classes=%s" % ",".join(s["class"]))
print("slow_weights=%s" % (",".join(map(str, w[:3] + ["..."] + w[-3:])) if len(w) > 6 else ",".join(map(str, w))))
print("slow_marked=%d" % ("impaired" in s["class"] and "health-degraded" in s["class"]))
print("slow_falls=%d" % (len(w) >= 2 and max(w) >= 100 and w[-1] <= 70))
print("peers_marked=%d" % sum("impaired" in rows.get(p, {"class": ["missing"]})["class"] or p not in rows for p in peers))
PY
)
  eval "$page"
}
# A peer can dip for one evaluation while Chromium starts on these two CPUs
# (its probes wait): the page is loaded again, at most three times, for the
# steady brownout in which only backend-1 is marked.
for attempt in 1 2 3; do
  read_page
  [[ $peers_marked == 0 ]] && break
  log "status page: load $attempt marked $peers_marked peer(s) (a transient dip); loading again"
  sleep 1
done
browse --screenshot="$shots/status-brownout.png" >/dev/null ||
  fail "status page: the screenshot failed: $(tail -n 3 "$WORK/chromium.err")"
log "status page: backend-1 row class '$slow_classes', weight timeline $slow_weights; screenshot $shots/status-brownout.png"
check "status page: backend-1 is marked degraded and impaired in the DOM" test "$slow_marked" = 1
check "status page: backend-1's weight timeline falls from 100 to <= 70" test "$slow_falls" = 1
check "status page: its peers are not marked ($peers_marked marked or missing)" test "$peers_marked" = 0

# ---- restore -------------------------------------------------------------------------------
t_fix=$(now)
knob 1 set delay_ms="$BASE"
deadline=$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 10 }')
back=""
while awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }'; do
  if [[ $(field "$VIP4_KEY" "$BE1_ADDR4" effectiveWeight) == 100 ]]; then back=$(since "$t_fix"); break; fi
  sleep 0.05
done
if [[ -n $back ]]; then
  log "restore: backend-1 back at weight 100 $back s after its delay returned to ${BASE} ms"
else
  fail "restore: backend-1 not back at weight 100 10 s after the restore (weight $(field "$VIP4_KEY" "$BE1_ADDR4" effectiveWeight), score $(field "$VIP4_KEY" "$BE1_ADDR4" score))"
fi
# Polled (one status read per try) for up to 5 s. It used to be one check
# that read status twice, for its label and for its condition: in one CI run
# the label's read said healthy and the condition's did not, so the failure
# could not say what the agent reported.
if wait_state "$VIP4_KEY" "$BE1_ADDR4" healthy 5; then
  log "ok: restore: backend-1 healthy ($(since "$t_fix") s after the restore)"
else
  fail "restore: backend-1 not healthy 5 s after its weight came back (now: $(field "$VIP4_KEY" "$BE1_ADDR4" health), score $(field "$VIP4_KEY" "$BE1_ADDR4" score))"
fi
load_wait brown
log "load: $LOAD_SUMMARY"
# Evidence: the inputs of backend-1's first weight change in the brownout.
lbctl --json audit --since 10m | python3 -c '
import json, sys
addr, t0 = sys.argv[1], int(sys.argv[2])
n = 0
for r in json.load(sys.stdin).get("records", []):
    if r.get("backend") == addr and int(r["unixMs"]) >= t0 and r["action"] in ("health_weight", "score_band"):
        n += 1
        if n > 4: break
        i = json.loads(r["inputsJson"])
        sig = {k: round(v.get("penalty", 0), 1) for k, v in i.get("passive", {}).get("signals", {}).items()}
        print("%s score %s weight %s probe penalty %.1f passive %s" % (r["action"], i.get("score"),
              i.get("effective_weight"), i.get("probe", {}).get("penalty", 0), sig))
' "$BE1_ADDR4" "$t_slow_ms" | while read -r l; do log "audit: $l"; done

health_finish
