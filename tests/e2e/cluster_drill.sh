#!/usr/bin/env bash
# e2e cluster: `lbctl vip set-ownership` and `lbctl drill` (docs/cluster.md,
# "Drills"). Two nodes, one etcd member, one VIP that every node forwards
# at first:
#  - `lbctl vip set-ownership VIP active-standby` on node a: a's data plane
#    holds the VIP in owned mode as soon as the command returns (stopped in
#    the same programming pass, never forwarded unfenced), b's right after
#    replication; exactly one node acquires the lease and forwards, and its
#    vip_acquired comes after the switch; bad input is refused;
#  - without traffic the drill refuses, changing nothing;
#  - with clients sending new connections through both nodes (bounded):
#    `lbctl drill --mode fence` prints the four numbers, they meet the
#    targets (stable <= 5 s, 0 flaps, 0 differences), the audit log has the
#    drill record and the owner's vip_yielded; traffic is answered through
#    the new owner;
#  - `lbctl drill --mode stop` (SIGSTOP/SIGCONT of the owner's lbagent by
#    pid): the same four numbers and targets; the stopped agent runs again.
source "$(dirname "$0")/cluster_lib.sh"
TTL=3
VIP=198.18.0.10:80/tcp
BG=()
# set +e: under errexit `(exit $rc)` would end the trap before the cleanup.
trap 'rc=$?; set +e; for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done; (exit $rc); cluster_cleanup' EXIT

cluster_up 2 1

# ---- every node forwards the VIP; then active/standby at runtime ----
both_answer() { (($(answered a 3) == 3 && $(answered b 3) == 3)); }
check "both nodes forward the VIP (ownership none)" wait_for 15 both_answer
check "set-ownership refuses an unknown mode (exit 2)" \
  bash -c '"$0" --socket "$1" vip set-ownership "$2" primary >/dev/null 2>&1; test $? = 2' \
  "$LBCTL" "$WORK/a/lbagent.sock" "$VIP"
check "set-ownership refuses an unknown VIP (exit 3)" \
  bash -c '"$0" --socket "$1" vip set-ownership 198.18.0.99:80/tcp active-standby >/dev/null 2>&1; test $? = 3' \
  "$LBCTL" "$WORK/a/lbagent.sock"
lbctl a vip set-ownership "$VIP" active-standby || fail "lbctl vip set-ownership"
A_NOW=$(dp_owner a "$VIP")
log "node a's data plane right after the switch: $A_NOW"
check "node a's data plane holds the VIP in owned mode as soon as the command returns" \
  test "${A_NOW#owned}" != "$A_NOW"
b_owned() { local o; o=$(dp_owner b "$VIP"); [[ ${o#owned} != "$o" ]]; }
check "node b's data plane holds the VIP in owned mode after replication" wait_for 5 b_owned
check "exactly one node acquires the VIP" wait_for 15 one_owner
if [[ $(owner_of a) == true ]]; then OWNER=a STANDBY=b; else OWNER=b STANDBY=a; fi
log "owner $OWNER, standby $STANDBY"
# audit_time NODE ACTION: unix ms of NODE's last ACTION record (0 none).
audit_time() {
  lbctl "$1" --json audit --since 10m 2>/dev/null | python3 -c '
import json, sys
t = [int(r["unixMs"]) for r in json.load(sys.stdin).get("records", []) if r["action"] == sys.argv[1]]
print(max(t) if t else 0)' "$2"
}
T_SWITCH=$(audit_time a set_ownership)
T_ACQ=$(audit_time "$OWNER" vip_acquired)
check "the switch is audited (set_ownership) on node a" test "$T_SWITCH" -gt 0
check "the owner acquired the lease after the switch ($T_SWITCH <= $T_ACQ)" test "$T_ACQ" -ge "$T_SWITCH"
served() { (($(answered "$OWNER" 3) == 3)); }
check "the owner answers" wait_for 10 served
check "the standby answers nothing" test "$(answered "$STANDBY" 3)" = 0
no_differences() { [[ $(coord "$1" differences) == 0 ]]; }
check "no config differences after the switch" wait_for 10 no_differences a

# ---- no traffic: the drill refuses and changes nothing ----
OUT=$WORK/drill-notraffic.out
set +e
lbctl a drill --vip "$VIP" --mode fence >"$OUT" 2>&1
rc=$?
set -e
log "drill without traffic: exit $rc: $(tr '\n' ' ' <"$OUT")"
check "the drill refuses without traffic (exit 4)" test "$rc" = 4
check "it says there is no traffic" grep -q "no traffic through owner" "$OUT"
check "the owner still owns the VIP" test "$(owner_of "$OWNER")" = true

# ---- traffic: clients on both sides, new connections, bounded ----
for n in a b; do
  (end=$((SECONDS + 150))
  while ((SECONDS < end)); do
    ip netns exec "$(labp "$n")-client" curl -s -H 'Connection: close' --connect-timeout 0.3 \
      --max-time 0.5 -o /dev/null http://198.18.0.10/ || true
    sleep 0.03
  done) &
  BG+=($!)
done
sleep 1

# audits NODE ACTION: NODE's audit records of ACTION in the last 10 min
# (lbctl's error shown, "error" printed, when it fails).
audits() {
  local j
  j=$(lbctl "$1" --json audit --since 10m) || { echo error; return 0; }
  python3 -c '
import json, sys
print(sum(1 for r in json.load(sys.stdin).get("records", []) if r["action"] == sys.argv[1]))' "$2" <<<"$j"
}
# run_drill NODE MODE: runs the drill against NODE and checks its output.
run_drill() {
  local n=$1 mode=$2 out=$WORK/drill-$2.out rc before
  before=$(audits "$n" drill)
  log "lbctl drill --vip $VIP --mode $mode (against node $n)"
  set +e
  lbctl "$n" drill --vip "$VIP" --mode "$mode" >"$out" 2>&1
  rc=$?
  set -e
  sed "s/^/    /" "$out"
  check "drill $mode: exit 0 (PASS)" test "$rc" = 0
  check "drill $mode: progress lines on stderr (owner, failing over, traffic moved, stable)" \
    bash -c "grep -q '^lbctl drill: vip .*: owner ' '$out' && grep -q '^lbctl drill: traffic through .*; failing it over' '$out' && grep -q '^lbctl drill: traffic moved to ' '$out' && grep -q '^lbctl drill: the pool on .* is stable from' '$out'"
  check "drill $mode: prints the four numbers" \
    test "$(grep -cE '^  (failover|stable|flaps|differences) ' "$out")" = 4
  check "drill $mode: stable within 5 s" grep -qE '^  stable +[0-4]\.[0-9]+ s .*PASS$|^  stable +5\.00 s .*PASS$' "$out"
  check "drill $mode: zero flaps" grep -qE '^  flaps +0 .*PASS$' "$out"
  check "drill $mode: zero differences" grep -qE '^  differences +0 .*PASS$' "$out"
  check "drill $mode: result PASS" grep -q '^result: PASS' "$out"
  check "drill $mode: recorded in node $n's audit log" test "$(audits "$n" drill)" -gt "$before"
  lbctl "$n" --json audit --since 2m | python3 -c '
import json, sys
recs = [r for r in json.load(sys.stdin).get("records", []) if r["action"] == "drill"]
r = recs[-1]
print("audit:", r["actor"], r["vip"], r["inputsJson"])' || fail "drill $mode: reading the drill record"
}

run_drill a fence
OLD=$OWNER
check "the old owner audited vip_yielded" test "$(audits "$OLD" vip_yielded)" -ge 1
check "the old owner is a standby now" test "$(owner_of "$OLD")" = false
check "the other node owns the VIP now" test "$(owner_of "$STANDBY")" = true
served_new() { (($(answered "$STANDBY" 3) == 3)); }
check "traffic is answered through the new owner" wait_for 5 served_new
check "the old owner answers nothing" test "$(answered "$OLD" 3)" = 0

# ---- stop mode: SIGSTOP the (new) owner's lbagent, on this host ----
OWNER=$STANDBY STANDBY=$OLD
# The yielded node rejoined the contest once the other one held the VIP.
run_drill "$STANDBY" stop
check "the stopped agent runs again (state R/S, not T)" \
  bash -c 'st=$(awk "{print \$3}" /proc/$0/stat); [[ $st != T ]]' "${AGENT[$OWNER]}"
check "the SIGCONTed old owner answers its API" wait_for 5 lbctl "$OWNER" status
check "node $STANDBY owns the VIP after the stop drill" test "$(owner_of "$STANDBY")" = true

for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${BG[@]}" 2>/dev/null || true
BG=()
cluster_finish
