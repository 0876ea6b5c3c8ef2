#!/usr/bin/env bash
# e2e cluster: VIP ownership, active/standby (docs/cluster.md).
# Two nodes, one ACTIVE_STANDBY VIP, clients sending new connections through
# both nodes all along, both data planes' per-VIP counters (lbdp stats:
# packets forwarded, fenced) sampled every ~100 ms:
#  - one node owns the VIP and forwards it, the other keeps it stopped;
#  - etcd SIGSTOPped for 0.6 s (< TTL/4): the owner keeps forwarding, its
#    fenced counter does not move;
#  - the owner SIGSTOPped: its data plane stops forwarding the VIP (fenced
#    counter rises) before its lease can have expired (SIGSTOP + TTL); the
#    standby acquires the lease and forwards; the owner's last forwarded
#    packet is sampled before the standby's first (zero overlap);
#  - the owner SIGCONTed: it does not forward again (no forwarded packets,
#    fenced rises), audits vip_lost and shows standby.
source "$(dirname "$0")/cluster_lib.sh"
TTL=3
VIP=198.18.0.10:80/tcp
export VIP_EXTRA="ownership: ACTIVE_STANDBY"
BG=()
# set +e: under errexit `(exit $rc)` would end the trap before the cleanup.
trap 'rc=$?; set +e; for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done; (exit $rc); cluster_cleanup' EXIT

# counters NODE: "packets fenced" of the VIP in NODE's data plane. Read with
# awk, not a Python JSON parser: the sampler below needs ~0.1 s resolution,
# and a Python start-up per sample took 1-2 s on a loaded 2-core machine.
counters() {
  "$LBDP" --pin-dir "$(pins "$1")" stats 2>/dev/null | awk -v vip="$VIP" '
    $1 == vip { for (i = 2; i < NF; i++) { if ($i == "packets") p = $(i + 1); if ($i == "fenced") f = $(i + 1) } }
    END { print (p == "" ? 0 : p), (f == "" ? 0 : f) }'
}
vip_metric() {
  ip netns exec "$(labp "$1")-router" curl -s --max-time 2 http://127.0.0.1:9580/metrics |
    awk '$1 ~ /^ballast_vip_owner\{/ { print $2 }'
}

cluster_up 2 1
check "exactly one node owns the VIP" wait_for 15 one_owner
if [[ $(owner_of a) == true ]]; then OWNER=a STANDBY=b; else OWNER=b STANDBY=a; fi
log "owner $OWNER, standby $STANDBY"
lbctl "$OWNER" status | grep OWNERSHIP || true
lbctl "$STANDBY" status | grep OWNERSHIP || true
check "metric ballast_vip_owner 1 on the owner" test "$(vip_metric "$OWNER")" = 1
check "metric ballast_vip_owner 0 on the standby" test "$(vip_metric "$STANDBY")" = 0
served() { (($(answered "$OWNER" 5) == 5)); }
check "the owner answers" wait_for 10 served
check "the standby answers nothing" test "$(answered "$STANDBY" 3)" = 0

# Clients on both sides, new connections all along; counters sampled.
for n in "$OWNER" "$STANDBY"; do
  (while :; do
    ip netns exec "$(labp "$n")-client" curl -s -H 'Connection: close' --connect-timeout 0.3 \
      --max-time 0.5 -o /dev/null http://198.18.0.10/ || true
    sleep 0.03
  done) &
  BG+=($!)
done
SAMPLES=$WORK/samples
(while :; do
  echo "$(now) $(counters "$OWNER") $(counters "$STANDBY")" >>"$SAMPLES" 2>/dev/null
  sleep 0.08
done) &
BG+=($!)
sleep 2

# etcd stalled for less than TTL/4: a healthy owner must not fence itself
# (its renewals make no etcd call, and nothing holds them back meanwhile).
read -r _ fe0 <<<"$(counters "$OWNER")"
for m in "${!MEMBER[@]}"; do kill -STOP "${MEMBER[$m]}"; done
sleep 0.6
for m in "${!MEMBER[@]}"; do kill -CONT "${MEMBER[$m]}"; done
sleep 1.5
read -r _ fe1 <<<"$(counters "$OWNER")"
check "etcd stalled 0.6 s (< TTL/4): the owner did not fence ($fe0 -> $fe1)" test "$fe0" = "$fe1"
check "etcd stalled 0.6 s: the owner still owns the VIP" test "$(owner_of "$OWNER")" = true
check "etcd stalled 0.6 s: the owner still answers" wait_for 5 served

T_STOP=$(now)
kill -STOP "${AGENT[$OWNER]}"
log "owner $OWNER SIGSTOPped"
standby_owns() { [[ $(owner_of "$STANDBY") == true ]]; }
check "the standby acquires the VIP" wait_for $((TTL + 10)) standby_owns
log "figure: SIGSTOP -> standby owns (lbctl): $(since "$T_STOP") s"
served_standby() { (($(answered "$STANDBY" 3) == 3)); }
check "traffic is answered through the standby" wait_for 5 served_standby
sleep 2
T_CONT=$(now)
kill -CONT "${AGENT[$OWNER]}"
log "owner $OWNER SIGCONTed"
sleep 3
read -r pk1 fe1 <<<"$(counters "$OWNER")"
sleep 3
read -r pk2 fe2 <<<"$(counters "$OWNER")"
for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${BG[@]}" 2>/dev/null || true
BG=()
check "the old owner forwards nothing after SIGCONT (packets $pk1 -> $pk2)" test "$pk1" = "$pk2"
check "the old owner's fenced counter rises after SIGCONT ($fe1 -> $fe2)" test "$fe2" -gt "$fe1"
check "the old owner shows standby" test "$(owner_of "$OWNER")" = false
check "the old owner audited vip_lost" test "$(audit_count "$OWNER" vip_lost)" -ge 1
check "the new owner audited vip_acquired" test "$(audit_count "$STANDBY" vip_acquired)" -ge 1
check "metric ballast_vip_owner 0 on the old owner" test "$(vip_metric "$OWNER")" = 0
check "metric ballast_vip_owner 1 on the new owner" test "$(vip_metric "$STANDBY")" = 1
lbctl "$OWNER" status | grep OWNERSHIP || true
lbctl "$STANDBY" status | grep OWNERSHIP || true

# The timeline, from the samples: "time opk ofe spk sfe".
read -r last_owner first_fenced first_standby < <(awk -v s="$T_STOP" -v c="$T_CONT" '
  NR > 1 && $1 <= c && $2 > po { lo = $1 }
  NR > 1 && $1 >= s && $3 > pf && ff == "" { ff = $1 }
  NR > 1 && $4 > ps && fs == "" { fs = $1 }
  { po = $2; pf = $3; ps = $4 }
  END { print (lo == "" ? 0 : lo), (ff == "" ? 0 : ff), (fs == "" ? 0 : fs) }' "$SAMPLES")
gap=$(awk -v s="$T_STOP" -v c="$T_CONT" '$1 >= s && $1 <= c { if (t != "" && $1 - t > g) g = $1 - t; t = $1 }
  END { printf "%.2f", g }' "$SAMPLES")
log "samples: $(wc -l <"$SAMPLES"), at most $gap s apart between SIGSTOP and SIGCONT"
check "the samples resolve the hand-over (at most 1 s apart, got $gap s)" \
  awk -v g="$gap" 'BEGIN { exit !(g <= 1.0) }'
check "the owner forwarded before the SIGSTOP" awk -v a="$last_owner" 'BEGIN { exit !(a > 0) }'
check "the standby forwarded" awk -v a="$first_standby" 'BEGIN { exit !(a > 0) }'
check "the standby forwarded nothing before the SIGSTOP" awk -v a="$first_standby" -v s="$T_STOP" 'BEGIN { exit !(a > s) }'
check "the owner's data plane stopped (fenced) after the SIGSTOP" awk -v a="$first_fenced" 'BEGIN { exit !(a > 0) }'
check "zero overlap: the owner's last forwarded sample precedes the standby's first" \
  awk -v a="$last_owner" -v b="$first_standby" 'BEGIN { exit !(a < b) }'
check "the owner stopped before its lease could expire (SIGSTOP + TTL)" \
  awk -v a="$first_fenced" -v s="$T_STOP" -v t="$TTL" 'BEGIN { exit !(a < s + t) }'
log "figure: SIGSTOP -> owner's last forwarded sample: $(awk -v a="$last_owner" -v s="$T_STOP" 'BEGIN { printf "%.2f", a - s }') s"
log "figure: SIGSTOP -> owner's data plane fences: $(awk -v a="$first_fenced" -v s="$T_STOP" 'BEGIN { printf "%.2f", a - s }') s"
log "figure: SIGSTOP -> standby forwards: $(awk -v a="$first_standby" -v s="$T_STOP" 'BEGIN { printf "%.2f", a - s }') s (TTL $TTL s)"
cluster_finish
