#!/usr/bin/env bash
# e2e cluster: replicated configuration (docs/cluster.md).
#  (1) three nodes, one etcd of three members: every node runs the same state
#      (equal config hashes and Maglev table hashes, `lbctl config diff`
#      shows no difference, ballast_config_differences 0 on every node);
#  (2) a weight changed with lbctl on node a appears on b and c (timed);
#  (3) two operators on two nodes at once: neither update is lost (the
#      loser's transaction is retried on top of the winner's);
#  (4) a hand-edited local cache never becomes effective: restarted while
#      etcd is reachable, the node runs etcd's state; restarted while etcd is
#      unreachable, it refuses to start and says why.
source "$(dirname "$0")/cluster_lib.sh"
VIP=198.18.0.10:80/tcp

cluster_up 3 3
check "all nodes run the same state" wait_for 15 hashes_equal
check "a leader is elected" wait_for 10 has_leader a
log "leader: $(leader_of a)"

# ---- (1) no differences -----------------------------------------------------------------------
no_diff() { lbctl "$1" config diff | grep -q '^differences: none'; }
# Each node publishes its record on its coordination tick: a may not have
# seen all three yet when the leader is elected.
diff_nodes() { lbctl "$1" --json config diff | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["nodes"]))'; }
sees_nodes() { [[ $(diff_nodes "$1") == "$2" ]]; }
check "config diff on a shows 3 nodes" wait_for 10 sees_nodes a 3
for n in a b c; do
  check "config diff on $n: no differences" wait_for 5 no_diff "$n"
  check "ballast_config_differences 0 on $n" test "$(metric "$n" ballast_config_differences)" = 0
done
lbctl a config diff

# ---- (2) propagation --------------------------------------------------------------------------
t0=$(now)
lbctl a backend weight "$VIP" 198.18.12.2 30 >/dev/null || fail "lbctl backend weight on a"
weight_is() { [[ $(field "$1" 198.18.12.2 nominalWeight) == "$2" ]]; }
weight_of_is() { [[ $(field "$1" "$2" nominalWeight) == "$3" ]]; }
check "weight 30 on b" wait_for 5 weight_is b 30
check "weight 30 on c" wait_for 5 weight_is c 30
PROPAGATION=$(since "$t0")
log "figure: propagation a -> b and c (lbctl returned + polled status): ${PROPAGATION} s"
# The same from the nodes' own records (one clock): lbctl's start on a (t0)
# -> the replicated_state audit record on b and c that applied the
# generation of a's set_weight commit. (Measured from a's own log line of
# the commit it could come out negative: a writes that line after it has
# programmed its own data plane, and b may apply the change first.)
# applied_ms NODE: that figure for NODE ("?" while its record is not in
# audit.jsonl yet: the audit log's writer thread writes it a few ms later).
applied_ms() {
  python3 - "$t0" "$WORK/a/lbagent.log" "$WORK/$1/audit.jsonl" <<'PY'
import json, sys
t_start = int(float(sys.argv[1]) * 1000)
commit = None
for line in open(sys.argv[2]):
    if '"msg":"set_weight"' in line:
        commit = json.loads(line)
gen = int(commit["fields"]["generation"])
for line in open(sys.argv[3]):
    r = json.loads(line)
    if r["action"] == "replicated_state" and json.loads(r["inputs_json"])["generation"] >= gen:
        print(int(r["unix_ms"]) - t_start)
        break
else:
    print("?")
PY
}
for n in b c; do
  for ((try = 0; try < 40; try++)); do
    ms=$(applied_ms "$n")
    [[ $ms != "?" ]] && break
    sleep 0.05
  done
  log "figure: propagation a -> $n (lbctl started on a -> $n applied that generation): $ms ms"
done
check "hashes equal after the change" wait_for 5 hashes_equal
for n in a b c; do check "no differences on $n after the change" wait_for 5 no_diff "$n"; done

# ---- (3) concurrent writers ---------------------------------------------------------------------
for k in 1 2 3 4 5; do
  lbctl a backend weight "$VIP" 198.18.11.2 $((10 + k)) >"$WORK/w-a.out" 2>&1 &
  pa=$!
  lbctl b backend weight "$VIP" 198.18.13.2 $((20 + k)) >"$WORK/w-b.out" 2>&1 &
  pb=$!
  wait "$pa" || fail "concurrent write on a: $(cat "$WORK/w-a.out")"
  wait "$pb" || fail "concurrent write on b: $(cat "$WORK/w-b.out")"
done
check "both concurrent updates survive (c sees be1=15)" wait_for 5 weight_of_is c 198.18.11.2 15
check "both concurrent updates survive (c sees be3=25)" wait_for 5 weight_of_is c 198.18.13.2 25
# grep -c exits 1 when neither log has the line (no conflict this time):
# under `set -e -o pipefail` that would end the test without a word.
conflicts=$({ grep -h -c 'another writer changed the replicated state first' \
  "$WORK/a/lbagent.log" "$WORK/b/lbagent.log" || true; } | awk '{ n += $1 } END { print n + 0 }')
log "figure: concurrent writes retried after a conflict: $conflicts (of 10 writes)"
check "hashes equal after concurrent writes" wait_for 5 hashes_equal

leader=$(leader_of a)
log "automated writes by the leader ($leader) so far, by action: $(lbctl "$leader" --json audit --since 10m | python3 -c '
import json, sys, collections
c = collections.Counter(r["action"] for r in json.load(sys.stdin).get("records", []) if r["actor"] == "automation")
print(dict(c))')"

# ---- (4) hand-edited cache ---------------------------------------------------------------------
agent_stop c TERM
grep -q 'weight: 30' "$WORK/c/state.cache" || fail "the cache of c does not hold weight 30"
sed -i 's/weight: 30/weight: 99/' "$WORK/c/state.cache"
agent_start c
check "restarted with an edited cache, etcd reachable: etcd's weight 30 runs" wait_for 5 weight_is c 30
check "and the cache was rewritten from etcd" wait_for 5 grep -q 'weight: 30' "$WORK/c/state.cache"
check "hashes equal after the restart" wait_for 10 hashes_equal
agent_stop c TERM
sed -i 's/weight: 30/weight: 99/' "$WORK/c/state.cache"
for m in "${!MEMBER[@]}"; do kill -STOP "${MEMBER[$m]}"; done
st=/run/ballast-lab/$(labp c)
rc=0
timeout 30 ip netns exec "$(labp c)-router" sh -c 'mount --bind "$0" /sys/fs/bpf && exec "$@"' \
  "$st/bpffs/router" "$LBAGENT" --config "$WORK/c/lbagent.conf" >"$WORK/c/refused.log" 2>&1 || rc=$?
for m in "${!MEMBER[@]}"; do kill -CONT "${MEMBER[$m]}"; done
check "edited cache, etcd unreachable: lbagent refuses to start (exit $rc)" test "$rc" = 2
check "and says the cache was modified" grep -q 'was modified after ballast wrote it' "$WORK/c/refused.log"
check "node c still forwards on its pinned data plane" test "$(answered c 6)" -ge 4
cluster_finish
