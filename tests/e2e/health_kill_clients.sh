#!/bin/bash
# e2e second chance with real clients: curl (a fresh connection each) and
# wrk (keep-alive), and keep-alive connections tracked one by one
# (connload --keepalive), through the VIP while backend-2's server is
# killed with SIGKILL.
#
#  - curl: every connection is made (a SYN that reaches the dead server's
#    host is bounced to its next choice); at most one request, the one in
#    flight on backend-2 when it died, is cut;
#  - keep-alive connections on backend-1 and backend-3: not one error;
#    those on backend-2 lose the request in flight and reconnect elsewhere;
#    every reconnection is made; a connection made and cut before its
#    first answer (its handshake completed on backend-2 just before the
#    kill, docs/dataplane.md) is allowed once per worker, and each failure
#    is logged with its time from the kill;
#  - wrk: its errors are those of its connections on backend-2 (reported).
# Needs root.
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

health_lab_up "eval_interval_ms: 100"
tb_pid() { cat "$STATE/be$1/testbackend.pid"; }
require_tools "tools/setup.sh" curl wrk

url="http://$VIP4/"
load_start ka 8 --workers 16 --timeout 2 --keepalive
# curl: fresh connections for 8 s, one line per attempt: HTTP code (000:
# none), curl's exit code, time to connect (0: it never connected).
lab exec client bash -c 'end=$((SECONDS + 8)); while ((SECONDS < end)); do
  curl -s -o /dev/null --max-time 2 -w "%{http_code} %{exitcode} %{time_connect}\n" "$0" || true
  done' "$url" >"$WORK/curl.log" 2>&1 &
PIDS+=("$!")
curl_pid=$!
lab exec client wrk -t1 -c4 -d7s --timeout 2s "$url" >"$WORK/wrk.log" 2>&1 &
PIDS+=("$!")
wrk_pid=$!
sleep 2
t_kill=$(now)
kill -KILL "$(tb_pid 2)"
wait_weight_at_most "$VIP4_KEY" "$BE2_ADDR4" 0 8 ||
  fail "backend-2 still has weight 8 s after SIGKILL"
# The audit record's time, not the poll's: each poll starts a Python
# parser, which takes seconds on 2 loaded cores.
demote_ms=$(audit_actions demote "$BE2_ADDR4" | head -n 1 | awk '{print $1}')
log "backend-2 out of the table $(awk -v a="$t_kill" -v m="$demote_ms" 'BEGIN { printf "%.2f", m / 1000 - a }') s after SIGKILL (audit), seen by lbctl status after $(since "$t_kill") s"
load_wait ka
wait "$curl_pid" || true
wait "$wrk_pid" || true

total=$(wc -l <"$WORK/curl.log")
# Not connected at all: a failed new connection. Connected, then no
# answer: the one connection curl had open on backend-2 when it died.
unconnected=$(awk '$1 != "200" && $3 + 0 == 0' "$WORK/curl.log" | wc -l)
cut=$(awk '$1 != "200" && $3 + 0 > 0' "$WORK/curl.log" | wc -l)
log "curl: $total fresh connections; not answered: $(awk '$1 != "200"' "$WORK/curl.log" | tr '\n' ';')"
check "curl: every fresh connection connected ($unconnected of $total did not)" \
  test "$total" -gt 20 -a "$unconnected" = 0
check "curl: at most the one request in flight at the kill was cut ($cut)" test "$cut" -le 1

log "keep-alive load: $LOAD_SUMMARY"
python3 - "$WORK/ka.log" "$t_kill" >"$WORK/ka.verdict" 2>"$WORK/ka.failures" <<'PY'
import sys
t_kill = float(sys.argv[2])
owner, lines = {}, [l.split() for l in open(sys.argv[1]) if l.strip()]
for t, ok, what, conn in lines:
    if ok == "1":
        owner[conn] = what
fails = [(float(t), what, conn, owner.get(conn)) for t, ok, what, conn in lines if ok == "0"]
for t, what, conn, who in fails:
    print("  %+.3f s after the kill: %s on %s (answered by %s)" % (t - t_kill, what, conn, who or "nobody"),
          file=sys.stderr)
bad = sum(1 for f in fails if f[3] in ("backend-1", "backend-3"))
lost = sum(1 for f in fails if f[3] == "backend-2")
# Made, then cut before its first answer: a handshake completed on backend-2
# (in its accept queue) before the kill, which nothing can save.
cuts = [f[2].split(".")[0] for f in fails if f[3] is None and not f[1].startswith("connect_")]
cut, cut_max = len(cuts), max([cuts.count(w) for w in cuts] or [0])
unmade = sum(1 for f in fails if f[3] is None and f[1].startswith("connect_"))
on = len({c for c, b in owner.items() if b in ("backend-1", "backend-3")})
print(bad, on, lost, cut, cut_max, unmade, len({c for c, b in owner.items() if b == "backend-2"}))
PY
read -r bad on lost cut cut_max unmade on2 <"$WORK/ka.verdict"
log "keep-alive: $on connections on backend-1/3 with $bad errors; $on2 on backend-2, which lost $lost requests; $cut made and cut before their first answer; $unmade never made"
[[ -s $WORK/ka.failures ]] && log "keep-alive failures:" && cat "$WORK/ka.failures" >&2
check "keep-alive: no error on the $on connections of backend-1 and backend-3 ($bad)" \
  test "$bad" = 0 -a "$on" -gt 0
check "keep-alive: every reconnection was made ($unmade were not)" test "$unmade" = 0
check "keep-alive: at most one connection per worker cut before its first answer (most: $cut_max)" \
  test "$cut_max" -le 1

log "wrk: $(grep -E 'requests in|Socket errors|Non-2xx' "$WORK/wrk.log" | tr -s ' ' | tr '\n' ';')"
grep -q 'requests in' "$WORK/wrk.log" || fail "wrk did not run: $(tail -n 3 "$WORK/wrk.log")"

((FAILED)) && log_dataplane_counters
health_finish
