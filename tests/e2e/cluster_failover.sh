#!/usr/bin/env bash
# e2e cluster: leadership with fencing, and etcd membership (docs/cluster.md).
#  (1) one etcd member of three SIGKILLed: no interruption (every node stays
#      up, none freezes, a change made through lbctl still reaches every node);
#  (2) the leader SIGSTOPped beyond its lease TTL: another node is elected;
#      the old leader SIGCONTed: its fenced write is rejected by etcd and it
#      steps down (audit record "fenced"); one leader afterwards.
source "$(dirname "$0")/cluster_lib.sh"
VIP=198.18.0.10:80/tcp
TTL=3

cluster_up 3 3
check "all nodes run the same state" wait_for 15 hashes_equal
check "a leader is elected" wait_for 10 has_leader a
weight_is() { [[ $(field "$1" 198.18.12.2 nominalWeight) == "$2" ]]; }

# ---- (1) one etcd member killed ------------------------------------------------------------------
lost_before=0
for n in a b c; do lost_before=$((lost_before + $(audit_count "$n" coordination_lost))); done
kill -KILL "${MEMBER[1]}"
wait "${MEMBER[1]}" 2>/dev/null || true
MEMBER[1]=""
log "etcd member m1 killed"
sleep 3
t0=$(now)
lbctl b backend weight "$VIP" 198.18.12.2 7 >/dev/null || fail "lbctl write with one member down"
check "the change reaches a" wait_for 5 weight_is a 7
check "the change reaches c" wait_for 5 weight_is c 7
log "figure: propagation with one member down: $(since "$t0") s"
lost_after=0
for n in a b c; do
  check "node $n up (ballast_coordination_up 1)" test "$(metric "$n" ballast_coordination_up)" = 1
  lost_after=$((lost_after + $(audit_count "$n" coordination_lost)))
done
check "no node lost coordination ($lost_before -> $lost_after records)" test "$lost_after" = "$lost_before"
check "hashes equal" wait_for 5 hashes_equal

# ---- (2) leader frozen beyond its TTL ------------------------------------------------------------
old=$(leader_of a)
[[ -n $old ]] || die "no leader"
others=()
for n in a b c; do [[ $n == "$old" ]] || others+=("$n"); done
log "leader $old: SIGSTOP for $((TTL + 3)) s"
t0=$(now)
kill -STOP "${AGENT[$old]}"
new_leader() { local l; l=$(leader_of "${others[0]}"); [[ -n $l && $l != "$old" && $l != error ]]; }
check "a new leader is elected" wait_for $((TTL + 10)) new_leader
FAILOVER=$(since "$t0")
new=$(leader_of "${others[0]}")
log "figure: leader failover (SIGSTOP -> new leader seen): ${FAILOVER} s (TTL $TTL s); new leader $new"
sleep 2
kill -CONT "${AGENT[$old]}"
fenced() { (($(audit_count "$old" fenced) >= 1)); }
check "the old leader's write is rejected by the fence and it steps down (audit 'fenced')" wait_for 10 fenced
lbctl "$old" --json audit --since 10m | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("records", []):
    if r["action"] in ("fenced", "leader_elected", "step_down"): print("   ", r["action"], r.get("inputsJson", ""))'
not_leader() { [[ $(coord "$old" isLeader) != true ]]; }
check "the old leader is no longer leader" wait_for 5 not_leader
one_leader() {
  local n c=0
  for n in a b c; do [[ $(coord "$n" isLeader) == true ]] && c=$((c + 1)); done
  ((c == 1))
}
check "exactly one leader" wait_for 10 one_leader
same_leader() { [[ $(leader_of a) == "$(leader_of b)" && $(leader_of b) == "$(leader_of c)" ]]; }
check "every node names the same leader" wait_for 10 same_leader
check "hashes equal" wait_for 10 hashes_equal
cluster_finish
