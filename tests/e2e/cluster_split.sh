#!/usr/bin/env bash
# e2e cluster: observers disagree (docs/cluster.md, "Quorum").
# Each node has its own copy of backend-2 (one lab per node). A non-leader
# node's copy answers every request with an error (its testbackend's
# error_rate knob), so that node's probes fail while the others' pass: one
# observer of three votes backend-2 out, two are needed. Expected: no demotion anywhere (every node
# keeps backend-2 in service: no demote record, weight above 0; the weight
# may still follow the score's band), a split_view alert (audit record, metric
# ballast_split_views 1, an ALERT line in `lbctl status`). Then node a's copy
# fails too: two of three vote it out, and the leader demotes it everywhere.
source "$(dirname "$0")/cluster_lib.sh"

cluster_up 3 3
check "all nodes run the same state" wait_for 15 hashes_equal
check "a leader is elected" wait_for 10 has_leader a
healthy() { [[ $(field "$1" 198.18.12.2 health) == healthy ]]; }
for n in a b c; do check "backend-2 healthy on $n" wait_for 10 healthy "$n"; done
w0=$(field a 198.18.12.2 effectiveWeight)
demotes() { # demotes NODE: demote records of backend-2 in NODE's audit
  lbctl "$1" --json audit --since 10m | python3 -c '
import json, sys
print(sum(1 for r in json.load(sys.stdin).get("records", [])
          if r["action"] in ("demote", "pin") and r.get("backend") == "198.18.12.2"))'
}

L=$(leader_of a)
others=()
for n in a b c; do [[ $n == "$L" ]] || others+=("$n"); done
X=${others[0]}
Y=${others[1]}
lab "$X" exec be2 "$TESTBACKEND" ctl set error_rate=1 >/dev/null
log "node $X's backend-2 now fails every request (leader: $L)"
down_on() { [[ $(field "$1" 198.18.12.2 health) == down ]]; }
check "node $X observes backend-2 down" wait_for 10 down_on "$X"
split() { [[ $(coord "$1" splitViews) == 1 ]]; }
for n in a b c; do check "node $n reports one split view" wait_for 5 split "$n"; done
sleep 3
for n in a b c; do
  w=$(field "$n" 198.18.12.2 effectiveWeight)
  check "node $n: backend-2 not demoted (effective weight $w, was $w0)" test "$w" -gt 0
  check "node $n: no demote record for backend-2" test "$(demotes "$n")" = 0
  check "node $n: ballast_split_views 1" test "$(metric "$n" ballast_split_views)" = 1
  check "node $n: audit split_view" test "$(audit_count "$n" split_view)" -ge 1
done
lbctl "$X" status | grep '^ALERT' || fail "no ALERT line in node $X's status"
check "hashes equal (nothing changed)" wait_for 5 hashes_equal

t0=$(now)
lab "$Y" exec be2 "$TESTBACKEND" ctl set error_rate=1 >/dev/null
log "node $Y's backend-2 fails too: two of three observers vote it out; the leader $L still sees it healthy"
demoted() { [[ $(field "$1" 198.18.12.2 effectiveWeight) == 0 ]]; }
for n in a b c; do check "node $n: backend-2 demoted by quorum" wait_for 15 demoted "$n"; done
log "figure: second observer fails -> demoted on every node: $(since "$t0") s"
check "the leader's own verdict is still healthy" test "$(field "$L" 198.18.12.2 health)" = healthy
quorum_demotes() {
  lbctl "$L" --json audit --since 10m | python3 -c '
import json, sys
print(sum(1 for r in json.load(sys.stdin).get("records", [])
          if r["action"] == "demote" and "quorum" in r.get("inputsJson", "")))'
}
check "the leader audited a demotion by observer quorum" test "$(quorum_demotes)" = 1
check "hashes equal" wait_for 10 hashes_equal
cluster_finish
