#!/bin/bash
# e2e: lbagent stopped and continued, again and again, under load.
#
# An independent lab saw lbagent crash once on SIGCONT after a 5 s SIGSTOP
# under load (1 in 9 cycles; the instruction pointer in stack memory). This
# keeps that loop: CYCLES (default 25; 50 to hunt) times SIGSTOP for STOP_S seconds
# (default 1; the lab's 5 with STOP_S=5), SIGCONT, then the agent must still
# run, answer lbctl within 2 s, and keep forwarding. Throughout: new
# connections through the VIP (connload), a /metrics scrape loop and an
# lbctl status loop, with health checking on (probes every 200 ms), so every
# thread of the agent has work when it wakes. To look deeper, point LBAGENT
# at a sanitizer build of the agent, e.g.
#   cmake -S . -B /tmp/build-asan -DCMAKE_CXX_FLAGS=-fsanitize=address \
#     -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address && make -C /tmp/build-asan lbagent
#   ASAN_OPTIONS=detect_leaks=0 LBAGENT=/tmp/build-asan/tools/lbagent/lbagent \
#     CYCLES=50 STOP_S=5 tests/e2e/health_stopcont.sh
# (-fsanitize=thread the same way; KEEP_AGENT_LOG=FILE keeps the agent's
# whole log). ThreadSanitizer reports races inside Debian's libgrpc, which
# is not built with it and so hides its own synchronisation from it. Needs
# root.
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

CYCLES=${CYCLES:-25}
STOP_S=${STOP_S:-1}
health_lab_up "eval_interval_ms: 100"
pid=$(cat "$STATE/agent/lbagent.pid")
kill -0 "$pid" || die "no lbagent at pid $pid"

secs=$(awk -v c="$CYCLES" -v s="$STOP_S" 'BEGIN { printf "%d", c * (s + 1.5) + 10 }')
load_start stopcont "$secs" --workers 4 --timeout 2
# Readers that hit the agent right as it wakes: metrics and status.
(
  end=$(($(date +%s) + secs))
  while (($(date +%s) < end)); do
    lab exec router curl -s --max-time 3 http://127.0.0.1:9580/metrics >/dev/null 2>&1 || true
    "$LBCTL" --socket "$SOCK" status >/dev/null 2>&1 || true
  done
) &
PIDS+=("$!")

bad=0
for ((c = 1; c <= CYCLES; c++)); do
  kill -STOP "$pid"
  sleep "$STOP_S"
  kill -CONT "$pid"
  sleep 0.3
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" 2>/dev/null
    fail "cycle $c: lbagent is gone after SIGCONT (exit $?); log: $(tail -n 5 "$STATE/agent/lbagent.log")"
    bad=1
    break
  fi
  t0=$(now)
  ok=0
  while awk -v a="$t0" -v n="$(now)" 'BEGIN { exit !(n - a < 2) }'; do
    if "$LBCTL" --socket "$SOCK" status >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.05
  done
  if ((ok == 0)); then
    fail "cycle $c: lbagent does not answer lbctl status 2 s after SIGCONT"
    bad=1
    break
  fi
  sleep 0.5
done
((bad)) || log "$CYCLES cycles of SIGSTOP ${STOP_S}s / SIGCONT: lbagent alive and answering after each"
grep -q "AddressSanitizer\|ThreadSanitizer\|runtime error" "$STATE/agent/lbagent.log" &&
  fail "the agent's log has a sanitizer report: $(grep -m1 -A8 'Sanitizer' "$STATE/agent/lbagent.log")"

# Every backend was healthy throughout: waking up must not look like an
# outage (probes that were in flight when the agent stopped time out, and
# the counters cover a long interval) nor like a pool-wide slowdown (the
# probes that fell due in the stop, run side by side on waking, were slow
# together: CI once saw the fleet guard freeze both pools so).
for action in demote freeze health_weight; do
  n=$(audit_actions "$action" | wc -l)
  check "no $action record during the cycles ($n)" test "$n" = 0
  if [[ $n != 0 ]]; then audit_inputs "$action" | head -n 4 | sed "s/^/  $action: /" >&2; fi
done

load_wait stopcont
log "load: $LOAD_SUMMARY"
ok=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["ok"])' "$LOAD_SUMMARY")
check "connections went through the VIP during the cycles ($ok ok)" test "$ok" -gt 0
health_finish
