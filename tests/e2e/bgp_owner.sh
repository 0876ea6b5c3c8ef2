#!/bin/bash
# Active/standby VIP and BGP (docs/bgp.md): the ECMP lab in cluster mode
# (tools/lab/ecmp --active-standby: one etcd member in the tor, lease TTL 3 s,
# the IPv4 VIP ACTIVE_STANDBY, the IPv6 VIP on every router). Checks:
#   - only the owner announces the IPv4 VIP (the tor's route has exactly the
#     owner as nexthop), the standby shows it withdrawn ("not its owner");
#     the IPv6 VIP has both routers;
#   - the owner loses its lease (its route to etcd blackholed, so it cannot
#     renew): it withdraws once its data-plane deadline passes (before the
#     lease can expire), the standby acquires the lease and announces; the
#     tor never has both routers for the IPv4 VIP during the hand-over
#     (sampled every ~20 ms); the old owner's audit says why;
#   - etcd reachable again: the old owner stays standby and does not announce.
source "$(dirname "$0")/bgp_lib.sh"
require_tools "Debian: etcd-server etcd-client" etcd etcdctl

ecmp up --routers 2 --active-standby | sed "s/^/$T_NAME: /"
ETCD_ADDR=198.18.2.1
declare -A ADDR=([r1]=198.18.21.2 [r2]=198.18.22.2)

owner_of() {  # the router whose lbctl status says it owns the IPv4 VIP
  local r
  for r in r1 r2; do
    if ecmp lbctl "$r" status | grep -q '^OWNERSHIP: vip 198.18.0.10:80/tcp active/standby: owner'; then
      echo "$r"
    fi
  done
  return 0
}
v4_route() { ecmp exec tor ip -4 route show "$VIP4/32"; }

check "tor: IPv4 VIP route has exactly 1 nexthop" test "$(nexthops 4)" = 1
check "tor: IPv6 VIP route has 2 nexthops" test "$(nexthops 6)" = 2
owner=$(owner_of)
[[ $owner == r1 || $owner == r2 ]] || die "no single owner of the IPv4 VIP (got '$owner')"
standby=$([[ $owner == r1 ]] && echo r2 || echo r1)
log "owner $owner, standby $standby; tor: $(v4_route | tr -s ' \n' ' ')"
check "tor: the IPv4 nexthop is the owner $owner" grep -q "^$VIP4 via ${ADDR[$owner]} " <<<"$(v4_route)"
check "$owner status: IPv4 VIP announced" \
  grep -q "^ANNOUNCE: $VIP4/32 announced (.*this node owns" <<<"$(ecmp lbctl "$owner" status)"
check "$standby status: IPv4 VIP withdrawn, not the owner" \
  grep -q "^ANNOUNCE: $VIP4/32 withdrawn (.*not its owner" <<<"$(ecmp lbctl "$standby" status)"
check "$standby status: IPv6 VIP announced" \
  grep -q "^ANNOUNCE: $VIP6/128 announced" <<<"$(ecmp lbctl "$standby" status)"

# /metrics in cluster mode with a bgp section: promtool accepts it, and the
# Grafana dashboard's every query (the BGP and cluster panels included)
# names only metrics and labels the two routers export.
for r in r1 r2; do
  ecmp exec "$r" curl -s --max-time 5 http://127.0.0.1:9580/metrics >"$STATE/$r/metrics.txt"
  check "$r: promtool check metrics passes in cluster mode" \
    sh -c "promtool check metrics <'$STATE/$r/metrics.txt' >'$STATE/$r/promtool.out' 2>&1"
  [[ -s $STATE/$r/promtool.out ]] && sed "s/^/  promtool $r: /" "$STATE/$r/promtool.out"
done
check "the Grafana dashboard names only exported metrics and labels (every panel)" \
  python3 "$repo/deploy/tests/dashboard_check.py" "$repo/deploy/grafana-dashboard.json" \
  "$STATE/r1/metrics.txt" "$STATE/r2/metrics.txt"

# The owner loses etcd: it cannot renew its lease.
ecmp exec "$owner" ip route add blackhole "$ETCD_ADDR/32"
t0=$(ms_now)
both=0 gone_ms=-1 new_ms=-1
while (($(ms_now) - t0 < 15000)); do
  r=$(v4_route)
  n=$(grep -c 'nexthop via' <<<"$r" || true)
  ((n >= 2)) && both=1
  if ((gone_ms < 0)) && ! grep -q "via ${ADDR[$owner]}" <<<"$r"; then gone_ms=$(($(ms_now) - t0)); fi
  if ((gone_ms >= 0)) && grep -q "^$VIP4 via ${ADDR[$standby]} " <<<"$r"; then
    new_ms=$(($(ms_now) - t0))
    break
  fi
  sleep 0.02
done
log "figure: etcd cut from $owner -> its IPv4 route withdrawn after ${gone_ms} ms; $standby's route in after ${new_ms} ms (lease TTL 3 s)"
check "$owner withdrew the IPv4 VIP" test "$gone_ms" -ge 0
check "$owner withdrew within the lease TTL (3 s)" test "$gone_ms" -lt 3000
check "$standby took over and announces the IPv4 VIP" test "$new_ms" -ge 0
check "the tor never had both routers for the active/standby VIP" test "$both" = 0
check "$owner: audit: vip_withdraw for $VIP4/32 with the ownership reason" \
  grep_soon -E "\"action\":\"vip_withdraw\".*$VIP4/32.*(owner deadline passed|not its owner)" "$STATE/$owner/audit.jsonl"
check "$owner: still announces the IPv6 VIP" test "$(nexthops 6)" = 2
# (The old owner, cut from etcd, may still call itself owner until it learns
# of the loss; its data-plane deadline has passed, which is what withdrew it.)
# The OWNERSHIP line follows the coordination tick (500 ms): give it 3 s.
for ((n = 0; n < 30; n++)); do
  owners=$(owner_of | tr '\n' ' ')
  grep -qw "$standby" <<<"$owners" && break
  sleep 0.1
done
log "routers whose status says owner: $owners"
check "$standby status: now the owner" grep -qw "$standby" <<<"$owners"
check "$standby status: IPv4 VIP announced as owner" \
  grep -q "^ANNOUNCE: $VIP4/32 announced (.*this node owns" <<<"$(ecmp lbctl "$standby" status)"

# etcd reachable again: the old owner is the standby now.
ecmp exec "$owner" ip route del blackhole "$ETCD_ADDR/32"
sleep 3
check "tor: IPv4 route still only $standby after $owner is back" \
  grep -q "^$VIP4 via ${ADDR[$standby]} " <<<"$(v4_route)"
check "$owner status: IPv4 VIP withdrawn, not the owner" \
  grep -q "^ANNOUNCE: $VIP4/32 withdrawn (.*not its owner" <<<"$(ecmp lbctl "$owner" status)"
