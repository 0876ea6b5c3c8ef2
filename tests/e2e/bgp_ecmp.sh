#!/bin/bash
# Two routers behind a BIRD tor with ECMP: client traffic to the VIP reaches
# both routers (each router's VIP packet counters rise), the two routers'
# Maglev tables are byte-identical, and the same 5-tuple lands on the same
# backend through either router. The 5-tuples are fixed (client source ports
# 40000-40127 for IPv4, 42000-42063 for IPv6); each set is sent three times:
# through ECMP (both routers), through r1 only (r2 withdrawn) and through r2
# only (r1 withdrawn). Every port must name the same backend all three times.
source "$(dirname "$0")/bgp_lib.sh"

ecmp up --routers 2 | sed "s/^/$T_NAME: /"
client4=198.18.2.2
client6=2001:db8:2::2

# Byte-identical Maglev tables: dump each VIP's inner table on each router
# (MAP: maglev_tables, or maglev_history for the slots' previous backends).
table_hash() {  # table_hash ROUTER VIP_ID [MAP]
  local r=$1 id=$2 map=${3:-maglev_tables} inner
  inner=$(ecmp exec "$r" bpftool -j map lookup pinned "/sys/fs/bpf/ballast-$r/$map" \
    key "$id" 0 0 0 | python3 -c '
import json, sys
v = json.load(sys.stdin)["value"]  # the inner map id, as bytes or as a number
print(int.from_bytes(bytes(int(b, 16) for b in v), "little") if isinstance(v, list) else v)')
  ecmp exec "$r" bpftool -j map dump id "$inner" | python3 -c '
import hashlib, json, sys
d = json.load(sys.stdin)
print(len(d), hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16])'
}
for id in 1 2; do
  h1=$(table_hash r1 "$id")
  h2=$(table_hash r2 "$id")
  log "VIP id $id Maglev table: r1 $h1, r2 $h2 (entries, sha256 prefix)"
  check "VIP id $id: r1 and r2 have byte-identical Maglev tables" test "$h1" = "$h2"
done
# The same table change on both routers (as an operator's lbctl, or the
# replicated state in a cluster, makes it): the slot histories of
# established second chance are byte-identical too, so a connection moved
# between the routers is walked to the same previous backend by either.
for r in r1 r2; do
  ecmp lbctl "$r" backend weight "$VIP4:80/tcp" 198.18.31.2 3 >/dev/null ||
    fail "$r: lbctl backend weight"
done
h1=$(table_hash r1 1 maglev_history)
h2=$(table_hash r2 1 maglev_history)
log "VIP id 1 slot history after a weight change: r1 $h1, r2 $h2 (entries, sha256 prefix)"
check "r1 and r2 have byte-identical slot histories" test "$h1" = "$h2" -a -n "$h1"
for r in r1 r2; do ecmp lbctl "$r" backend weight "$VIP4:80/tcp" 198.18.31.2 1 >/dev/null; done

# run_fixed TAG: the fixed 5-tuples, IPv4 and IPv6, into $STATE/fixed-TAG.json.
run_fixed() {
  local tag=$1
  ecmp exec client python3 "$FLOWS" fixed --addr "$VIP4" --src "$client4" --ports 40000-40127 \
    >"$STATE/fixed-$tag-4.json"
  ecmp exec client python3 "$FLOWS" fixed --addr "$VIP6" --src "$client6" --ports 42000-42063 \
    >"$STATE/fixed-$tag-6.json"
}
answered() {  # answered TAG: every port answered by a backend
  python3 - "$STATE/fixed-$1-4.json" "$STATE/fixed-$1-6.json" <<'PY'
import json, sys
bad = {}
for f in sys.argv[1:]:
    for port, b in json.load(open(f)).items():
        if not b.startswith("backend-"):
            bad[port] = b
if bad:
    print("unanswered:", dict(list(bad.items())[:10]), "...", len(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

a1=$(vip_packets r1)
a2=$(vip_packets r2)
run_fixed ecmp
b1=$(vip_packets r1)
b2=$(vip_packets r2)
log "ECMP run: VIP packets through r1 +$((b1 - a1)), through r2 +$((b2 - a2))"
check "ECMP run: every connection answered" answered ecmp
check "ECMP run: traffic reached the VIP through r1" test $((b1 - a1)) -gt 0
check "ECMP run: traffic reached the VIP through r2" test $((b2 - a2)) -gt 0

# Through r1 only.
ecmp withdraw r2 >/dev/null
wait_nexthops 1 15 >/dev/null || fail "withdraw r2: tor still has 2 nexthops"
a2=$(vip_packets r2)
run_fixed r1
b2=$(vip_packets r2)
check "r1-only run: every connection answered" answered r1
check "r1-only run: no VIP packets through r2" test "$a2" = "$b2"

# Through r2 only.
ecmp announce r2 >/dev/null
wait_nexthops 2 15 >/dev/null || fail "announce r2: tor has no 2 nexthops"
ecmp withdraw r1 >/dev/null
wait_nexthops 1 15 >/dev/null || fail "withdraw r1: tor still has 2 nexthops"
a1=$(vip_packets r1)
a2=$(vip_packets r2)
run_fixed r2
b1=$(vip_packets r1)
b2=$(vip_packets r2)
check "r2-only run: every connection answered" answered r2
check "r2-only run: no VIP packets through r1" test "$a1" = "$b1"
check "r2-only run: VIP packets through r2" test $((b2 - a2)) -gt 0

same=$(python3 - "$STATE" <<'PY'
import collections, json, sys
st = sys.argv[1]
same = diff = 0
spread = collections.Counter()
for fam in ("4", "6"):
    runs = [json.load(open("%s/fixed-%s-%s.json" % (st, t, fam))) for t in ("ecmp", "r1", "r2")]
    for port in runs[0]:
        names = {r.get(port) for r in runs}
        if len(names) == 1 and runs[0][port].startswith("backend-"):
            same += 1
            spread[runs[0][port]] += 1
        else:
            diff += 1
            if diff <= 5:
                print("port %s: %s" % (port, [r.get(port) for r in runs]), file=sys.stderr)
print(same, diff, " ".join("%s=%d" % kv for kv in sorted(spread.items())))
PY
)
read -r n_same n_diff spread <<<"$same"
log "figure: same backend through ECMP, r1 only and r2 only: $n_same of $((n_same + n_diff)) 5-tuples ($spread)"
check "the same 5-tuple lands on the same backend through either router" test "$n_diff" = 0
check "the 5-tuples are spread over all 3 backends" test "$(wc -w <<<"$spread")" = 3
