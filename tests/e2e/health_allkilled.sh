#!/bin/bash
# e2e second chance: every backend's server killed at once, under
# new-connection load. Each SYN is bounced from its first choice to its
# second and third (BALLAST_BOUNCES_MAX = 2), and the third's kernel, told
# that it is the last hop, answers with a RST: clients are refused at once
# (no connection waits for a timeout), the bounces per SYN stay bounded, and
# the refusals everywhere freeze the pool instead of demoting everyone (at
# most the first backend whose probes failed, before any client came, is
# demoted: its evidence came before the others').
# Needs root.
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

health_lab_up "eval_interval_ms: 100"
tb_pid() { cat "$STATE/be$1/testbackend.pid"; }
verdict() { # verdict NAME...: the sum of the lb's verdict counters NAME...
  lbctl --json status | python3 -c '
import json, sys
v = json.load(sys.stdin).get("verdicts", {})
print(sum(int(v.get(n, 0)) for n in sys.argv[1:]))' "$@"
}

load_start before 2 --workers 2 --timeout 1
load_wait before
log "before: $LOAD_SUMMARY"

# last_hops: SYNs the backends passed up as the last hop (their decap
# programs' `refused`; probes included).
last_hops() {
  local i n sum=0
  for i in 1 2 3; do
    n=$(lab exec "be$i" "$LBDP" decap stats --dev to-router | awk '$1 == "refused" { print $2 }')
    sum=$((sum + ${n:-0}))
  done
  echo "$sum"
}
b_tx0=$(verdict bounce_tx bounce_redirect)
last0=$(last_hops)
budget0=$(verdict drop_bounce_budget)
t_kill=$(now)
for i in 1 2 3; do kill -KILL "$(tb_pid "$i")"; done
# Until the kernel has closed the three listeners.
port=${VIP4_KEY##*:}
port=${port%%/*}
listening() { lab exec "be$1" ss -Htln "sport = :$port" | grep -q .; }
for i in 1 2 3; do
  for ((n = 0; n < 50; n++)); do listening "$i" || break; sleep 0.1; done
  ! listening "$i" || die "backend-$i still listens on port $port 5 s after SIGKILL"
done
t_load=$(now)
load_start dead 3 --workers 2 --timeout 1
load_wait dead
log "all killed: load $LOAD_SUMMARY"
read -r attempts refused timeouts other < <(python3 -c '
import json, sys
s = json.loads(sys.argv[1]); e = s.get("errors", {})
print(s["attempts"], e.get("refused", 0), e.get("connect_timeout", 0) + e.get("timeout", 0),
      s["failed"] - e.get("refused", 0) - e.get("connect_timeout", 0) - e.get("timeout", 0))' \
  "$LOAD_SUMMARY")
bounced=$(($(verdict bounce_tx bounce_redirect) - b_tx0))
budget=$(($(verdict drop_bounce_budget) - budget0))
last=$(($(last_hops) - last0))
log "all killed: $attempts attempts, $refused refused, $timeouts timed out, $other other; $bounced bounces re-steered, $last SYNs reached their last hop, $budget over the budget"
check "all killed: clients are refused (RST), none waits for a timeout ($refused of $attempts refused, $timeouts timed out)" \
  test "$refused" -gt 100 -a "$timeouts" = 0 -a "$other" = 0
# Two bounces per SYN (first -> second -> third, marked last): never more.
# Every SYN's way ends at a last hop, so those count the SYNs (probes too):
# a client may send a SYN more than once (a retransmission), and a last hop
# that held the tuple in TIME_WAIT made it (the load reuses client ports):
# the kernel answered with an ACK of the old connection, the client with a
# RST and its SYN again. tc_decap_rst now makes that ACK the RST
# (tw_refused), so the count stays close to the attempts.
check "all killed: at most two bounces per SYN ($bounced for $last SYNs at their last hop, $attempts attempts)" \
  test "$bounced" -le $((2 * last)) -a "$bounced" -ge "$refused"
check "all killed: no bounce past the budget ($budget)" test "$budget" = 0
f=$(field "$VIP4_KEY" "" frozen)
check "all killed: the fleet guard froze the pool (frozen=$f)" test "$f" = true
# Before the load nothing is refused and only the probes see the deaths,
# one backend at a time as their probes come due: the first whose probes
# failed demote_after times can be demoted before the others look unwell
# (its evidence came first); by the second, two of three are unwell and the
# guard freezes the pool. Once clients are refused everywhere, nobody is.
# Its demotion can land a few evaluations after the load starts (the
# listeners closed, its probes' last failures still counting), so the
# check is the count: of the six backend addresses of the two pools, one
# at most is demoted; the reasons are logged.
demotes=$(audit_actions demote)
demoted=$(grep -c . <<<"$demotes" || true)
log "all killed: demotions: ${demotes:-none} (load started at $t_load)"
lbctl --json audit --since 10m | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("records", []):
    if r["action"] == "demote":
        i = json.loads(r.get("inputsJson") or "{}")
        print("all killed: demoted", r["unixMs"], r.get("vip"), r.get("backend"), "refused_syns",
              i.get("passive", {}).get("interval", {}).get("refused_syns", 0),
              "probe", json.dumps(i.get("probe", {}))[:120])' | while read -r l; do log "$l"; done
check "all killed: refusals froze the pools instead of demoting everyone: at most the first dead one demoted ($demoted)" \
  test "$demoted" -le 1
log "all killed: $(since "$t_kill") s"

((FAILED)) && log_dataplane_counters
health_finish
