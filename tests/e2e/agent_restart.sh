#!/bin/bash
# e2e: restarting lbagent does not interrupt forwarding.
# Under a wrk keep-alive load through the VIP, the agent is killed with
# SIGKILL and restarted, then stopped with SIGTERM and restarted. Expected:
#   - wrk: zero socket errors and zero non-2xx answers;
#   - no TCP reset from the VIP reached the client (captured with dumpcap);
#   - the same XDP program stays attached (same id) the whole time;
#   - each restart adopts the pinned program and maps: the reconciliation
#     writes nothing, the state (generation, ids) is unchanged.
source "$(dirname "$0")/agent_lib.sh"

agent_lab_up
agent_start
prog0=$(prog_id)
[[ -n $prog0 ]] || die "no XDP program on router/to-client after the agent started"
gen0=$(status_json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("configGeneration", 0))')
rst_capture_start
served0=0
for ((i = 1; i <= NBACKENDS; i++)); do
  f=BE${i}_LOG
  served0=$((served0 + $(lines "${!f}")))
done

log "wrk: 2 threads, 16 keep-alive connections, 14 s through $VIP4:$VIP_PORT"
ns_bg WRK client wrk -t 2 -c 16 -d 14s --timeout 2s "http://$VIP4:$VIP_PORT/" >"$AGENT_DIR/wrk.out" 2>&1
sleep 3
log "SIGKILL lbagent (pid $AGENT_PID), 1 s without an agent, restart"
agent_stop KILL
check "program still attached with no agent running" test "$(prog_id)" = "$prog0"
sleep 1
agent_start
sleep 3
log "SIGTERM lbagent (pid $AGENT_PID), restart"
agent_stop TERM
check "SIGTERM exit logged with the data plane left attached" \
  grep -q '"msg":"stopping".*left attached and pinned' "$AGENT_DIR/agent.log"
agent_start
wait "$WRK" || true
sed 's/^/  wrk: /' "$AGENT_DIR/wrk.out"

reqs=$(awk '/requests in/ {print $1}' "$AGENT_DIR/wrk.out")
check "wrk completed requests (got ${reqs:-0})" test "${reqs:-0}" -gt 1000
check "wrk reports no socket errors" bash -c "! grep -q 'Socket errors' '$AGENT_DIR/wrk.out'"
check "wrk reports no non-2xx answers" bash -c "! grep -q 'Non-2xx' '$AGENT_DIR/wrk.out'"
rsts=$(rst_capture_stop)
check "no TCP reset from the VIP reached the client (captured $rsts)" test "$rsts" -eq 0
check "the same XDP program (id $prog0) stayed attached" test "$(prog_id)" = "$prog0"
adopt=$(grep -c '"msg":"data plane reconciled with the state","fields":{"adopted_program":true,"settings":0,"backends_set":0,"backends_cleared":0,"vips_upserted":0,"vips_deleted":0,"tables_set":0,' "$AGENT_DIR/agent.log" || true)
check "both restarts adopted the program and maps and rewrote nothing (got $adopt of 2)" test "$adopt" -eq 2
gen1=$(status_json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("configGeneration", 0))')
check "state generation unchanged across restarts ($gen0 -> $gen1)" test "$gen1" = "$gen0"
served1=0
for ((i = 1; i <= NBACKENDS; i++)); do
  f=BE${i}_LOG
  served1=$((served1 + $(lines "${!f}")))
done
check "backends served the wrk requests ($((served1 - served0)) logged)" test $((served1 - served0)) -ge "${reqs:-1}"
out=$(curl_fresh 6 30)
check "IPv6 VIP answers fresh connections after the restarts" test "$(grep -c '^backend-' <<<"$out")" -eq 30

((FAILED == 0)) && log "PASS"
