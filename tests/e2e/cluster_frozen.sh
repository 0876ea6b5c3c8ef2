#!/usr/bin/env bash
# e2e cluster: etcd unreachable (docs/cluster.md, "Frozen").
#  (0) a short outage with nothing changing: every node freezes, then comes
#      back and re-reads an identical state, which writes no map (its
#      coordination_restored audit record counts the map writes of the
#      re-read: 0), traffic answered;
#  (1) every etcd member SIGSTOPped: every node reports frozen (status line,
#      ballast_coordination_frozen 1, audit "coordination_lost") and keeps
#      forwarding on its last known state;
#  (2) backend-2 SIGKILLed in every lab while frozen: no node changes
#      anything (backend-2 keeps its effective weight, no map update);
#  (3) etcd SIGCONTed: every node is up again (audit
#      "coordination_restored"), then the leader demotes backend-2 with a
#      quorum of observers and
#      every node converges on it (equal hashes), timed.
source "$(dirname "$0")/cluster_lib.sh"
TTL=3

cluster_up 3 3
check "all nodes run the same state" wait_for 15 hashes_equal
check "a leader is elected" wait_for 10 has_leader a
healthy() { [[ $(field "$1" 198.18.12.2 health) == healthy ]]; }
for n in a b c; do check "backend-2 healthy on $n" wait_for 10 healthy "$n"; done

frozen() { [[ $(coord "$1" frozen) == true ]]; }
up() { [[ $(coord "$1" up) == true && $(coord "$1" frozen) != true ]]; }

# ---- (0) a short outage, nothing changes -----------------------------------------------------
for m in "${!MEMBER[@]}"; do kill -STOP "${MEMBER[$m]}"; done
# why_not_frozen NODE: what the node says of its coordination, and how long
# the status call took (for the log of a failure).
why_not_frozen() {
  local t
  t=$(now)
  log "node $1 coordination: $(lbctl "$1" --json status 2>&1 | python3 -c '
import json, sys
try:
    print(json.dumps(json.load(sys.stdin).get("coordination", {})))
except ValueError as e:
    print("no JSON:", e)') (status call $(since "$t") s)"
}
for n in a b c; do
  if wait_for 10 frozen "$n"; then
    log "ok: (0) node $n reports frozen"
  else
    fail "(0) node $n reports frozen"
    why_not_frozen "$n"
  fi
done
t0=$(now)
for m in "${!MEMBER[@]}"; do kill -CONT "${MEMBER[$m]}"; done
for n in a b c; do check "(0) node $n up again" wait_for 15 up "$n"; done
log "figure: etcd back -> all nodes up (no change pending): $(since "$t0") s"
# What the re-read after the outage wrote, from the node's own audit record.
reread_writes() {
  lbctl "$1" --json audit --since 10m | python3 -c '
import json, sys
recs = [r for r in json.load(sys.stdin).get("records", []) if r["action"] == "coordination_restored"]
print(json.loads(recs[-1]["inputsJson"]).get("reread_map_writes", "?") if recs else "none")'
}
for n in a b c; do
  w=$(reread_writes "$n")
  check "(0) node $n: the re-read of the identical state wrote no map ($w map writes)" test "$w" = 0
  check "(0) node $n: traffic answered (12 of 12)" test "$(answered "$n" 12)" = 12
done
check "(0) hashes equal" wait_for 10 hashes_equal

# ---- (1) etcd stopped ---------------------------------------------------------------------------
t0=$(now)
for m in "${!MEMBER[@]}"; do kill -STOP "${MEMBER[$m]}"; done
log "every etcd member SIGSTOPped"
for n in a b c; do check "node $n reports frozen" wait_for 10 frozen "$n"; done
log "figure: etcd stopped -> all nodes frozen: $(since "$t0") s"
for n in a b c; do
  check "node $n: status says COORDINATION: etcd unreachable ..., frozen" \
    bash -c "'$LBCTL' --socket '$WORK/$n/lbagent.sock' status | grep -q '^COORDINATION: etcd unreachable since .*frozen'"
  check "node $n: ballast_coordination_frozen 1" test "$(metric "$n" ballast_coordination_frozen)" = 1
  check "node $n: ballast_coordination_up 0" test "$(metric "$n" ballast_coordination_up)" = 0
  check "node $n: audit coordination_lost" test "$(audit_count "$n" coordination_lost)" -ge 1
  check "node $n: still forwarding (>= 8 of 12 answered)" test "$(answered "$n" 12)" -ge 8
done
lbctl a status | head -3

# ---- (2) a backend dies while frozen ---------------------------------------------------------
weights=()
for n in a b c; do weights+=("$(field "$n" 198.18.12.2 effectiveWeight)"); done
for n in a b c; do
  pid=$(cat "/run/ballast-lab/$(labp "$n")/be2/testbackend.pid")
  kill -KILL "$pid"
done
log "backend-2 SIGKILLed in every lab; effective weights before: ${weights[*]}"
sleep 5
i=0
for n in a b c; do
  check "node $n: no change while frozen (backend-2 effective weight ${weights[$i]})" \
    test "$(field "$n" 198.18.12.2 effectiveWeight)" = "${weights[$i]}"
  check "node $n: its own observation says down" test "$(field "$n" 198.18.12.2 health)" = down
  check "node $n: still forwarding to the others (>= 4 of 12 answered)" test "$(answered "$n" 12)" -ge 4
  i=$((i + 1))
done
rc=0
lbctl a backend weight 198.18.0.10:80/tcp 198.18.11.2 5 >"$WORK/frozen-write.out" 2>&1 || rc=$?
check "an operator write while frozen fails (exit $rc) and says why" grep -q 'etcd unreachable' "$WORK/frozen-write.out"

# ---- (3) etcd back --------------------------------------------------------------------------
t0=$(now)
for m in "${!MEMBER[@]}"; do kill -CONT "${MEMBER[$m]}"; done
log "etcd SIGCONTed"
for n in a b c; do check "node $n up again" wait_for 15 up "$n"; done
log "figure: etcd back -> all nodes up: $(since "$t0") s"
for n in a b c; do
  check "node $n: audit coordination_restored" test "$(audit_count "$n" coordination_restored)" -ge 2
done
demoted() { [[ $(field "$1" 198.18.12.2 effectiveWeight) == 0 ]]; }
for n in a b c; do check "node $n: backend-2 demoted after etcd is back" wait_for 20 demoted "$n"; done
check "hashes equal" wait_for 10 hashes_equal
log "figure: etcd back -> backend-2 demoted on every node, hashes equal: $(since "$t0") s"
cluster_finish
