#!/bin/bash
# Withdrawing one router moves its flows to the other without resets. Long-
# lived TCP connections (60: 40 IPv4, 20 IPv6, each sending a line every
# 100 ms and checking the backend's echo) run through the tor's ECMP route
# over both routers; r1's announcer withdraws the VIPs. The connections that
# r1 carried now reach r2, which has no connection-table entry for them but
# the same Maglev table, so they land on the same backend, which still holds
# their TCP state. Counted: resets, timeouts, errors and backend changes (all
# must be 0), connections alive to the end (all), the longest gap between two
# answers, and the time from the withdrawal to the tor's route change.
source "$(dirname "$0")/bgp_lib.sh"

ecmp up --routers 2 | sed "s/^/$T_NAME: /"
client4=198.18.2.2
client6=2001:db8:2::2
SECONDS_RUN=14

flows_on() {  # flows_on ROUTER: connection-table entries of both VIPs
  ecmp lbctl "$1" --json status | python3 -c '
import json, sys
print(sum(int(b.get("flows", 0)) for v in json.load(sys.stdin).get("vips", []) for b in v.get("backends", [])))'
}

ecmp exec client python3 "$FLOWS" hold --addr "$VIP4" --src "$client4" --conns 40 \
  --port-base 41000 --seconds "$SECONDS_RUN" >"$STATE/hold4.json" &
PIDS+=($!)
ecmp exec client python3 "$FLOWS" hold --addr "$VIP6" --src "$client6" --conns 20 \
  --port-base 43000 --seconds "$SECONDS_RUN" >"$STATE/hold6.json" &
PIDS+=($!)

# Fresh connections as well, to see how many handshakes ECMP splits
# between the routers when the route changes (their SYN on r1, their ACK on
# r2, which has no slot for them and adopts them from its table; see
# docs/dataplane.md, "Second chance", for what that costs a bounced one).
handshakes() {  # handshakes: "<new flows> <completed handshakes>" summed over both routers
  local r nf=0 hs=0 a b
  for r in r1 r2; do
    read -r a b < <(ecmp lbctl "$r" --json status | python3 -c '
import json, sys
n = h = 0
for v in json.load(sys.stdin).get("vips", []):
    for b in v.get("backends", []):
        c = b.get("counters", {})
        n += int(c.get("newFlows", 0)); h += int(c.get("handshakeCount", 0))
print(n, h)')
    nf=$((nf + a)) hs=$((hs + b))
  done
  echo "$nf $hs"
}
ecmp exec client python3 "$repo/tests/e2e/connload.py" --addr "$VIP4" --seconds 8 --workers 2 \
  --timeout 2 --rate 100 --log "$STATE/fresh.log" >"$STATE/fresh.json" 2>"$STATE/fresh.err" &
fresh_pid=$!
PIDS+=($fresh_pid)
read -r nf0 hs0 < <(handshakes)

sleep 4
f1=$(flows_on r1)
f2=$(flows_on r2)
p1a=$(vip_packets r1)
p2a=$(vip_packets r2)
sleep 1
p1b=$(vip_packets r1)
p2b=$(vip_packets r2)
log "before the withdrawal: flows r1 $f1, r2 $f2; VIP packets in 1 s: r1 +$((p1b - p1a)), r2 +$((p2b - p2a))"
check "long-lived connections run through r1" test $((p1b - p1a)) -gt 0
check "long-lived connections run through r2" test $((p2b - p2a)) -gt 0

ecmp withdraw r1 >/dev/null
ms=$(wait_nexthops 1 15) || fail "withdraw r1: tor still has 2 nexthops after 15 s"
log "figure: withdraw on r1 -> tor route at 1 nexthop: ${ms} ms"
sleep 1
p1c=$(vip_packets r1)
p2c=$(vip_packets r2)
sleep 2
p1d=$(vip_packets r1)
p2d=$(vip_packets r2)
log "after the withdrawal, VIP packets in 2 s: r1 +$((p1d - p1c)), r2 +$((p2d - p2c))"
check "after the withdrawal nothing reaches the VIP through r1" test "$p1c" = "$p1d"
check "after the withdrawal r2 carries the connections" test $((p2d - p2c)) -gt 0

wait "$fresh_pid" || true
sleep 0.5
read -r nf1 hs1 < <(handshakes)
log "figure: fresh connections across the withdrawal: $(cat "$STATE/fresh.json"); $((nf1 - nf0)) SYNs, $((hs1 - hs0)) handshakes completed on the router of their SYN: $((nf1 - nf0 - hs1 + hs0)) split between the routers (or not completed)"
for pid in "${PIDS[@]}"; do
  [[ $pid == "$fresh_pid" ]] && continue
  wait "$pid" || fail "hold client $pid exited $?"
done
PIDS=()
summary=$(python3 - "$STATE/hold4.json" "$STATE/hold6.json" <<'PY'
import json, sys
t = {"conns": 0, "resets": 0, "timeouts": 0, "errors": 0, "backend_changes": 0,
     "alive_to_end": 0, "max_gap_s": 0.0, "answers": 0}
for f in sys.argv[1:]:
    d = json.load(open(f))
    for k in t:
        t[k] = max(t[k], d["total"][k]) if k == "max_gap_s" else t[k] + d["total"][k]
    for c in d["conns"]:
        if c["errors"] or c["resets"] or c["timeouts"]:
            print("port %d: %s" % (c["port"], c), file=sys.stderr)
print(" ".join("%s=%s" % kv for kv in t.items()))
PY
)
log "figure: $summary"
# Sets conns, resets, timeouts, errors, backend_changes, alive_to_end, ...
eval "$summary"
# shellcheck disable=SC2154
{
  check "all $conns connections alive to the end" test "$alive_to_end" = "$conns"
  check "0 resets" test "$resets" = 0
  check "0 timeouts" test "$timeouts" = 0
  check "0 errors" test "$errors" = 0
  check "0 backend changes" test "$backend_changes" = 0
}
