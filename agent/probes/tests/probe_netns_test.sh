#!/bin/bash
# Probes through the data plane's encapsulation, in a netns lab
# (tools/lab/lab --no-lb: router, three nginx backends with the VIP on
# loopback and the decap program; nginx answers "backend-<i>").
#
# The router runs the tc probe forwarder on to-be1 (policy route via
# backend 1's address) and probes VIP:80 with a mark per backend:
#   - via backend 1 and 2 (IPv4-in-IPv4; backend 2 is reached by a redirect
#     to another device), via backend 1 over IPv6-in-IPv6, via backend 2 over
#     IPv4-in-IPv6: each answer names the chosen backend;
#   - backend 3 without the VIP on its loopback fails its probe via the VIP,
#     while the direct probe of backend 3 passes;
#   - a probe mark without a programmed target is dropped, not leaked;
#   - gRPC to ballast-testbackend on VIP:50051 via backend 2 names backend-2.
# Usage: probe_netns_test.sh PROBE_TOOL LBDP TESTBACKEND DESCRIPTOR_SET
set -euo pipefail

T_NAME=probe_netns_test
PROBE_TOOL=${1:?probe_tool path}
export LBDP=${2:?lbdp path}
TESTBACKEND=${3:?ballast-testbackend path}
DESC=${4:?testbackend descriptor set path}
PIDS=()
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
PREFIX=pr$$
LAB=("$repo/tools/lab/lab" --prefix "$PREFIX" --no-build)
PIN=/sys/fs/bpf/ballast-probe-test
FAILED=0

log() { printf '%s: %s\n' "$T_NAME" "$*"; }
fail() { printf '%s: FAIL: %s\n' "$T_NAME" "$*" >&2; FAILED=1; }
die() { printf '%s: FAIL: %s\n' "$T_NAME" "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, tc BPF, bpffs); run as root"
[[ -f $DESC ]] || die "descriptor set $DESC does not exist (build ballast_testing_proto)"
for b in "$PROBE_TOOL" "$LBDP" "$TESTBACKEND"; do [[ -x $b ]] || die "$b is not built"; done
for t in ip nginx curl tc; do command -v "$t" >/dev/null || die "$t is not installed (tools/setup.sh)"; done

cleanup() {
  local rc=$? pid
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -n ${SRC4:-} ]]; then pt detach >/dev/null 2>&1 || true; fi
  "${LAB[@]}" down >/dev/null 2>&1 || echo "$T_NAME: warning: lab down failed" >&2
  if ((rc == 0 && FAILED != 0)); then rc=1; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

lab() { "${LAB[@]}" "$@"; }
router() { lab exec router "$@"; }

log "lab $PREFIX up"
lab --no-lb --no-traffic up >/dev/null || die "lab up failed"
eval "$(lab addrs)"
# No plain route to the VIP: only encapsulated probes can reach a backend.
router ip route del "$VIP4/32"
router ip -6 route del "$VIP6/128"

SRC4=198.18.0.1
SRC6=2001:db8::1
pt() { router "$PROBE_TOOL" "$@" --dev to-be1 --src4 $SRC4 --src6 $SRC6 --pin-dir $PIN; }

pt attach || die "forwarder attach failed"
grep -q tc_probe <<<"$(router tc filter show dev to-be1 egress)" || die "tc_probe is not on to-be1 egress"
grep -q "fwmark 0x6c620000/0xffff0000 lookup 27746" <<<"$(router ip rule show)" || die "IPv4 fwmark rule missing"
grep -q "fwmark 0x6c620000/0xffff0000 lookup 27746" <<<"$(router ip -6 rule show)" || die "IPv6 fwmark rule missing"
# Probes leave through a pseudo next hop with a permanent neighbour entry,
# never through a real host (whose failure would fail every probe).
grep -q "default via 169.254.108.98 dev to-be1 .*onlink" <<<"$(router ip route show table 27746)" ||
  die "IPv4 probe route missing: $(router ip route show table 27746)"
grep -q "default via fe80::6c62 dev to-be1" <<<"$(router ip -6 route show table 27746)" ||
  die "IPv6 probe route missing: $(router ip -6 route show table 27746)"
mac=$(router cat /sys/class/net/to-be1/address 2>/dev/null || router ip -o link show to-be1 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
grep -q "169.254.108.98 lladdr $mac PERMANENT" <<<"$(router ip neigh show dev to-be1)" ||
  die "IPv4 pseudo next hop is not a permanent neighbour with to-be1's MAC ($mac): $(router ip neigh show dev to-be1)"
grep -q "fe80::6c62 lladdr $mac PERMANENT" <<<"$(router ip -6 neigh show dev to-be1)" ||
  die "IPv6 pseudo next hop is not a permanent neighbour: $(router ip -6 neigh show dev to-be1)"

pt target --id 1 --addr "$BE1_ADDR4"
pt target --id 2 --addr "$BE2_ADDR4"
pt target --id 3 --addr "$BE3_ADDR4"
pt target --id 11 --addr "$BE1_ADDR6"
pt target --id 22 --addr "$BE2_ADDR6"  # IPv4 VIP, IPv6 backend: IPv4-in-IPv6

probe() { # probe EXPECT(ok|fail) DESCRIPTION probe_tool-run-args...
  local want=$1 what=$2 out rc=0
  shift 2
  out=$(router "$PROBE_TOOL" run "$@" 2>&1) || rc=$?
  if [[ $want == ok && $rc -eq 0 ]] || [[ $want == fail && $rc -eq 1 ]]; then
    log "ok: $what: $out"
  else
    fail "$what (want $want, exit $rc): $out"
  fi
}
http() { printf 'kind: HTTP timeout_ms: 1000 interval_ms: 2000 body_contains: "%s"' "$1"; }

probe ok "IPv4 VIP via backend 1 (IPv4-in-IPv4, same device)" \
  --vip "$VIP4" --port 80 --backend "$BE1_ADDR4" --id 1 --spec "$(http backend-1)"
probe ok "IPv4 VIP via backend 2 (IPv4-in-IPv4, redirected to to-be2)" \
  --vip "$VIP4" --port 80 --backend "$BE2_ADDR4" --id 2 --spec "$(http backend-2)"
probe ok "IPv6 VIP via backend 1 (IPv6-in-IPv6)" \
  --vip "$VIP6" --port 80 --backend "$BE1_ADDR6" --id 11 --spec "$(http backend-1)"
probe ok "IPv4 VIP via backend 2 over IPv6 (IPv4-in-IPv6)" \
  --vip "$VIP4" --port 80 --backend "$BE2_ADDR6" --id 22 --spec "$(http backend-2)"
probe ok "TCP connect to the VIP via backend 3" \
  --vip "$VIP4" --port 80 --backend "$BE3_ADDR4" --id 3 --spec 'kind: TCP timeout_ms: 1000'
probe fail "a mark without a programmed target is dropped" \
  --vip "$VIP4" --port 80 --backend "$BE1_ADDR4" --id 9 --spec 'kind: TCP timeout_ms: 300'

log "gRPC: ballast-testbackend on [::]:50051 in backends 1 and 2"
for i in 1 2; do
  ip netns exec "$PREFIX-be$i" "$TESTBACKEND" --name "backend-$i" --http off --control off \
    --grpc '[::]:50051' 2>"$STATE/tb$i.err" &
  PIDS+=("$!")
done
for i in 1 2; do
  for ((n = 0; n < 50; n++)); do grep -q ready "$STATE/tb$i.err" 2>/dev/null && break; sleep 0.1; done
  grep -q ready "$STATE/tb$i.err" || die "testbackend $i did not start: $(cat "$STATE/tb$i.err")"
done
grpc() { # grpc NAME: a GRPC spec asserting the reply's name
  cat <<SPEC
kind: GRPC timeout_ms: 1000 interval_ms: 2000
grpc_method: "/ballast.testing.v1.TestBackend/Hello" grpc_descriptor_set: "$DESC"
grpc_request_text: "from: 'probe'"
grpc_expect: 'name == "$1"' grpc_expect: 'healthy == true'
SPEC
}
probe ok "gRPC to the VIP via backend 2 answers as backend-2" \
  --vip "$VIP4" --port 50051 --backend "$BE2_ADDR4" --id 2 --spec "$(grpc backend-2)"
probe ok "gRPC over IPv6 to the VIP via backend 1 answers as backend-1" \
  --vip "$VIP6" --port 50051 --backend "$BE1_ADDR6" --id 11 --spec "$(grpc backend-1)"
probe fail "gRPC via backend 1 expecting backend-2 fails its assertion" \
  --vip "$VIP4" --port 50051 --backend "$BE1_ADDR4" --id 1 --spec "$(grpc backend-2)"

log "backend 3 stops serving the VIP (VIP removed from its loopback)"
lab exec be3 ip addr del "$VIP4/32" dev lo
probe fail "probe via the VIP to backend 3 without the VIP" \
  --vip "$VIP4" --port 80 --backend "$BE3_ADDR4" --id 3 --spec 'kind: TCP timeout_ms: 500'
probe ok "the same probe in direct mode passes" \
  --vip "$VIP4" --port 80 --backend "$BE3_ADDR4" --id 3 --spec 'kind: TCP timeout_ms: 1000' --direct
probe ok "backend 1 still passes via the VIP" \
  --vip "$VIP4" --port 80 --backend "$BE1_ADDR4" --id 1 --spec "$(http backend-1)"

# Each HTTP probe reached the backend it named, from the router's source
# address (the policy route's preferred source).
for i in 1 2; do
  log=BE${i}_LOG
  n=$(grep -cE " ($SRC4|$SRC6) " "${!log}" || true)
  ((n >= 2)) || fail "backend $i logged $n requests from $SRC4/$SRC6 (want >= 2)"
done
n=$(grep -c . "$BE3_LOG" || true)
((n == 0)) || fail "backend 3 logged $n HTTP requests (want 0: it only got TCP probes)"

log "scheduler: backends 1 and 2 via the VIP, backend 3 (no VIP) too, 100 ms interval for 1 s"
sched=$(router "$PROBE_TOOL" schedule --vip "$VIP4" --port 80 --ms 1000 \
  --targets "1=$BE1_ADDR4,2=$BE2_ADDR4,3=$BE3_ADDR4" \
  --spec 'kind: TCP interval_ms: 100 timeout_ms: 80 jitter_ms: 10') || fail "probe_tool schedule failed"
printf '%s\n' "$sched" | sed "s/^/$T_NAME:   /"
grep -qE '^1 ok=([6-9]|1[0-9]) fail=0 ' <<<"$sched" || fail "scheduler: backend 1 should pass 6..19 times, never fail"
grep -qE '^2 ok=([6-9]|1[0-9]) fail=0 ' <<<"$sched" || fail "scheduler: backend 2 should pass 6..19 times, never fail"
grep -qE '^3 ok=0 fail=([6-9]|1[0-9]) ' <<<"$sched" || fail "scheduler: backend 3 (no VIP) should fail every probe"

log "restart: a new forwarder (fresh program, pinned maps) replaces the running one"
filter_id() { local f; f=$(router tc filter show dev to-be1 egress); grep -o 'tc_probe.* id [0-9]*' <<<"$f" | awk '{print $NF}'; }
old_id=$(filter_id)
pt attach || fail "second attach failed"
new_id=$(filter_id)
[[ -n $new_id && $new_id != "$old_id" ]] || fail "program not replaced on restart (id $old_id -> $new_id)"
log "program id $old_id -> $new_id"
n=$(grep -c 'tc_probe' <<<"$(router tc filter show dev to-be1 egress)" || true)
((n == 1)) || fail "$n tc_probe filters on to-be1 after the restart (want 1)"
probe ok "targets survive the restart (backend 2 via the VIP, not re-programmed)" \
  --vip "$VIP4" --port 80 --backend "$BE2_ADDR4" --id 2 --spec "$(http backend-2)"

stats=$(pt stats)
log "forwarder counters: $(echo $stats)"
grep -q '^drop_no_target=[1-9]' <<<"$stats" || fail "drop_no_target did not count the unknown mark"
grep -q '^encap_redirect=[1-9]' <<<"$stats" || fail "no probe was redirected to another device"

pt detach || fail "detach failed"
grep -q tc_probe <<<"$(router tc filter show dev to-be1 egress)" && fail "tc_probe still attached after detach"
grep -q "lookup 27746" <<<"$(router ip rule show; router ip -6 rule show)" && fail "fwmark rule left after detach"
grep -q . <<<"$(router ip route show table 27746 2>/dev/null; router ip -6 route show table 27746 2>/dev/null)" && fail "probe routes left after detach"
grep -q "169.254.108.98\|fe80::6c62" <<<"$(router ip neigh show dev to-be1; router ip -6 neigh show dev to-be1)" &&
  fail "pseudo next hop neighbours left after detach"
router test -e "$PIN/probe_targets" && fail "maps still pinned after detach"
SRC4=""
((FAILED == 0)) && log "PASS"
