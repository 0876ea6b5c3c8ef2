# shellcheck shell=bash disable=SC2034
# Shared by tests/e2e/bgp_*.sh: the ECMP lab (tools/lab/ecmp, used as a black
# box) under a prefix of this test's own, removed on any exit.
#
# Environment: BUILD (default <repo>/build), or LBAGENT, LBCTL, LBDP one by
# one. The routers' lbagents announce the VIPs themselves (agent config
# `bgp`). Root, bird2 and python3 are required (bgp_owner.sh: etcd too):
# without them the test fails, it never skips.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export LBAGENT=${LBAGENT:-$BUILD/tools/lbagent/lbagent}
export LBCTL=${LBCTL:-$BUILD/tools/lbctl/lbctl}
export LBDP=${LBDP:-$BUILD/tools/lbdp/lbdp}
FLOWS=$repo/tests/e2e/bgp_flows.py

PREFIX=${PREFIX:-bgp$$}
ECMP=("$repo/tools/lab/ecmp" --prefix "$PREFIX")
PIDS=()  # background processes this test started (killed by PID)
WORK=""  # a test's own scratch directory, if it makes one (removed on exit)

require_root "network namespaces, XDP, bpffs"
require_tools "tools/setup.sh installs bird2 and the rest" bird birdc python3 ip curl bpftool
BUILT_HINT="LBAGENT=/LBCTL=/LBDP=" require_built "$LBAGENT" "$LBCTL" "$LBDP"

cleanup() {
  local rc=$? pid
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((rc != 0 || FAILED != 0)) && [[ -d /run/ballast-lab/$PREFIX ]]; then
    local f
    for f in /run/ballast-lab/"$PREFIX"/r*/lbagent.log; do
      [[ -f $f ]] && { echo "---- $f (last 15 lines) ----" >&2; tail -n 15 "$f" >&2; }
    done
  fi
  "${ECMP[@]}" down >/dev/null 2>&1 || echo "$T_NAME: lab teardown failed" >&2
  [[ -n $WORK && -d $WORK ]] && rm -rf "$WORK"
  if ((rc == 0 && FAILED != 0)); then rc=1; fi
  log "$( ((rc == 0)) && echo PASS || echo FAIL)"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ecmp() { "${ECMP[@]}" "$@"; }
STATE=/run/ballast-lab/$PREFIX
VIP4=198.18.0.10
VIP6=2001:db8:10::10

ms_now() { date +%s%3N; }

# tor_route FAMILY: the tor's kernel route to that VIP. `ip -n` rather than
# `ecmp exec`: the routing table needs no bpffs, and a poll then costs a few
# ms instead of a lab script start.
tor_route() {
  if [[ $1 == 4 ]]; then ip -n "$PREFIX-tor" -4 route show "$VIP4/32"; else
    ip -n "$PREFIX-tor" -6 route show "$VIP6/128"; fi
}
# nexthops FAMILY: nexthops of the tor's route to the VIP (0: no route).
nexthops() {
  local out n
  out=$(tor_route "$1")
  [[ -n $out ]] || { echo 0; return; }
  n=$(grep -c 'nexthop via' <<<"$out" || true)
  ((n > 0)) && echo "$n" || echo 1
}
# route_via FAMILY ROUTER: the tor's route to that VIP has a path to ROUTER
# (r<i>: out of the tor's port to-r<i>).
route_via() { [[ $(tor_route "$1") =~ dev\ to-$2([[:space:]]|$) ]]; }
# wait_nexthops N SECONDS: both VIP routes at N nexthops; prints the ms it took.
wait_nexthops() {
  local want=$1 secs=$2 t0
  t0=$(ms_now)
  while (($(ms_now) - t0 < secs * 1000)); do
    if [[ $(nexthops 4) == "$want" && $(nexthops 6) == "$want" ]]; then
      echo $(($(ms_now) - t0))
      return 0
    fi
    sleep 0.02
  done
  echo -1
  return 1
}
# vip_packets R: the VIP packet counters (IPv4 + IPv6) of router R's data plane.
vip_packets() {
  ecmp exec "$1" curl -s --max-time 2 http://127.0.0.1:9580/metrics |
    awk '/^ballast_vip_packets_total/ { s += $NF } END { printf "%d\n", s }'
}
# verdict_sum NAME: the lb programs' verdict counter NAME (drop_vip_unserved,
# ...), summed over the routers r1 and r2.
verdict_sum() {
  local r sum=0 n
  for r in r1 r2; do
    n=$(ecmp exec "$r" curl -s --max-time 2 http://127.0.0.1:9580/metrics |
      awk -v v="verdict=\"$1\"" 'index($0, "ballast_verdict_packets_total{") == 1 && index($0, v) { print $NF }')
    sum=$((sum + ${n:-0}))
  done
  echo "$sum"
}
# announced_count ROUTER: VIP addresses lbagent wants announced and BIRD
# shows announced (lbctl status ANNOUNCE lines).
announced_count() {
  ecmp lbctl "$1" status | grep -c '^ANNOUNCE: .* announced (.*), BIRD announced' || true
}
# bird_vip_down ROUTER: ballast_vip_* protocols BIRD shows down.
bird_vip_down() {
  ecmp birdc "$1" show protocols | grep -c '^ballast_vip_.* down ' || true
}
