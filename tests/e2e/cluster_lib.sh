# Shared by tests/e2e/cluster_*.sh: a cluster of lbagent nodes sharing one
# real etcd (docs/cluster.md).
#
# Topology: one netns lab per node (tools/lab/lab --prefix <P><n>, used as a
# black box with --no-lb: client, router, three ballast-testbackend servers,
# decap programs), so every node has its own router namespace, XDP data
# plane and pin directory, its own client and its own copy of each backend
# (same addresses in every lab). An extra namespace <P>-etcd holds a bridge
# (198.18.200.1/24) and the etcd members (ports 2379<m>/2380<m>); each
# router reaches it over a veth (198.18.200.1<n>/24). lbagent runs in each
# router namespace in cluster mode (cluster { endpoints ... node ... }).
#
# Source it, then: cluster_up NODES MEMBERS; ...; the EXIT trap removes
# everything: processes by PID (agents, etcd members), the labs (namespaces,
# pins, bpffs mounts), the etcd namespace, the temporary directory.
#
# Environment: LBAGENT, LBCTL, LBDP, TESTBACKEND (default: $BUILD, default
# <repo>/build); CLUSTER_KEEP=DIR keeps the agents' logs and audit logs
# there; VIP_EXTRA= adds a line to the IPv4 VIP's config (e.g.
# "ownership: ACTIVE_STANDBY"); etcd and etcdctl on PATH (Debian: etcd-server,
# etcd-client); missing ones fail the test.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export LBAGENT=${LBAGENT:-$BUILD/tools/lbagent/lbagent}
export LBCTL=${LBCTL:-$BUILD/tools/lbctl/lbctl}
export LBDP=${LBDP:-$BUILD/tools/lbdp/lbdp}
export TESTBACKEND=${TESTBACKEND:-$BUILD/tools/testbackend/ballast-testbackend}

PREFIX=${PREFIX:-cl$$}
WORK=$(mktemp -d "/tmp/ballast-$T_NAME.XXXXXX")
ETCD_NS=$PREFIX-etcd
NODES=()           # node names: a b c
declare -A AGENT   # node -> lbagent pid
declare -A MEMBER  # member index -> etcd pid
LABS=()
TTL=${TTL:-3}

require_root "network namespaces, XDP, bpffs"
BUILT_HINT="LBAGENT=/LBCTL=/LBDP=/TESTBACKEND=" require_built "$LBAGENT" "$LBCTL" "$LBDP" "$TESTBACKEND"
require_tools "Debian: etcd-server etcd-client; tools/setup.sh" etcd etcdctl ip python3 curl

cluster_cleanup() {
  local rc=$? pid n
  for n in "${!AGENT[@]}"; do
    pid=${AGENT[$n]}
    [[ -n $pid ]] && kill -CONT "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
  for n in "${!MEMBER[@]}"; do
    pid=${MEMBER[$n]}
    [[ -n $pid ]] && kill -CONT "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
  for n in "${!AGENT[@]}" "${!MEMBER[@]}"; do :; done
  wait 2>/dev/null || true
  if ((rc != 0 || FAILED != 0)); then
    for n in "${NODES[@]}"; do
      echo "---- lbagent $n log (last 25 lines) ----" >&2
      tail -n 25 "$WORK/$n/lbagent.log" >&2 2>/dev/null || true
    done
  fi
  if [[ -n ${CLUSTER_KEEP:-} ]]; then  # keep the agents' logs and audit logs for a look
    mkdir -p "$CLUSTER_KEEP"
    for n in "${NODES[@]}"; do
      cp "$WORK/$n/lbagent.log" "$CLUSTER_KEEP/$n.log" 2>/dev/null || true
      cp "$WORK/$n/audit.jsonl" "$CLUSTER_KEEP/$n.audit.jsonl" 2>/dev/null || true
    done
  fi
  for n in "${LABS[@]}"; do
    "$repo/tools/lab/lab" --prefix "$n" --no-build down >/dev/null 2>&1 ||
      echo "$T_NAME: warning: lab $n down failed" >&2
  done
  ip netns del "$ETCD_NS" 2>/dev/null || true
  rm -rf "$WORK"
  if ((rc == 0 && FAILED != 0)); then rc=1; fi
  exit $rc
}
trap cluster_cleanup EXIT
trap 'exit 130' INT TERM

labp() { echo "$PREFIX$1"; }  # the lab prefix of node $1
lab() { # lab NODE ARGS...
  local n=$1
  shift
  "$repo/tools/lab/lab" --prefix "$(labp "$n")" --no-build "$@"
}
lbctl() { # lbctl NODE ARGS...
  local n=$1
  shift
  "$LBCTL" --socket "$WORK/$n/lbagent.sock" "$@"
}
endpoints() {
  local m out=""
  for ((m = 1; m <= ETCD_MEMBERS; m++)); do out+="${out:+,}http://198.18.200.1:2379$m"; done
  echo "$out"
}

# etcd_up MEMBERS: the etcd namespace, its bridge, and MEMBERS etcd members.
etcd_up() {
  ETCD_MEMBERS=$1
  local m cluster=""
  ip netns add "$ETCD_NS"
  ip -n "$ETCD_NS" link set lo up
  ip -n "$ETCD_NS" link add br0 type bridge
  ip -n "$ETCD_NS" addr add 198.18.200.1/24 dev br0
  ip -n "$ETCD_NS" link set br0 up
  for ((m = 1; m <= ETCD_MEMBERS; m++)); do
    cluster+="${cluster:+,}m$m=http://198.18.200.1:2380$m"
  done
  for ((m = 1; m <= ETCD_MEMBERS; m++)); do etcd_start "$m" new "$cluster"; done
  etcd_wait_healthy
  log "etcd: $ETCD_MEMBERS members at $(endpoints)"
}
etcd_start() { # etcd_start M new|existing CLUSTER
  local m=$1
  mkdir -p "$WORK/etcd"
  ip netns exec "$ETCD_NS" etcd --name "m$m" --data-dir "$WORK/etcd/m$m" \
    --listen-client-urls "http://198.18.200.1:2379$m" \
    --advertise-client-urls "http://198.18.200.1:2379$m" \
    --listen-peer-urls "http://198.18.200.1:2380$m" \
    --initial-advertise-peer-urls "http://198.18.200.1:2380$m" \
    --initial-cluster "$3" --initial-cluster-state "$2" \
    --initial-cluster-token "$PREFIX" --logger zap --log-level warn \
    >>"$WORK/etcd/m$m.log" 2>&1 &
  MEMBER[$m]=$!
}
etcd_wait_healthy() {
  local n
  for ((n = 0; n < 100; n++)); do
    if ip netns exec "$ETCD_NS" etcdctl --endpoints "$(endpoints)" endpoint health >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  die "etcd not healthy within 20 s: $(tail -n 5 "$WORK"/etcd/m1.log)"
}
etcdctl_() { ip netns exec "$ETCD_NS" etcdctl --endpoints "$(endpoints)" "$@"; }

# node_config NODE: the lbagent config of NODE (cluster mode, health
# checking with HTTP probes through the VIP every 200 ms).
node_config() {
  local n=$1 dir=$WORK/$1 i eps="" e
  IFS=, read -ra e <<<"$(endpoints)"
  for i in "${e[@]}"; do eps+="  endpoints: \"$i\""$'\n'; done
  cat >"$dir/lbagent.conf" <<CONF
admin { socket_path: "$dir/lbagent.sock" }
metrics_listen: "127.0.0.1:9580"
state_file: "$dir/state.cache"
audit_log: "$dir/audit.jsonl"
attach_mode: "native"
flow_capacity: 65536
cluster {
$eps  node: "$n"
  prefix: "/ballast-test"
  lease_ttl_s: $TTL
  drift_alert_s: 5
  etcd_allow_plaintext_remote: true  # the test's own namespaces (etcd TLS: etcd_tests [auth])
}
probe_forwarding { device: "to-be1" }
initial {
  global {
    interface: "to-client"
    source_v4: "198.18.0.1"
    source_v6: "2001:db8::1"
    drain_timeout_s: 30
    health { eval_interval_ms: 200 }
  }
  vips {
    key { address: "198.18.0.10" port: 80 protocol: TCP }
    name: "web4"${VIP_EXTRA:+
    $VIP_EXTRA}
$(for i in 1 2 3; do
    printf '    backends { address: "198.18.1%s.2" weight: 10\n' "$i"
    printf '      probe { kind: HTTP interval_ms: 200 timeout_ms: 150 http_path: "/" body_contains: "backend-%s" } }\n' "$i"
  done)
  }
}
CONF
}

# cluster_up NODES MEMBERS: NODES labs (nodes a, b, c...), etcd with MEMBERS
# members, one lbagent per lab.
cluster_up() {
  local count=$1 i n names=(a b c d e)
  etcd_up "$2"
  for ((i = 0; i < count; i++)); do
    n=${names[$i]}
    NODES+=("$n")
    LABS+=("$(labp "$n")")
    mkdir -p "$WORK/$n"
    log "lab $(labp "$n") up (node $n)"
    lab "$n" --servers testbackend --no-lb --no-traffic up >"$WORK/$n/lab-up.log" 2>&1 ||
      die "lab up failed: $(tail -n 20 "$WORK/$n/lab-up.log")"
    ip -n "$(labp "$n")-router" route del 198.18.0.10/32
    ip -n "$(labp "$n")-router" -6 route del 2001:db8:10::10/128
    ip link add "$PREFIX-e$n" netns "$ETCD_NS" type veth peer name etcd0 netns "$(labp "$n")-router"
    ip -n "$ETCD_NS" link set "$PREFIX-e$n" master br0 up
    ip -n "$(labp "$n")-router" addr add "198.18.200.1$((i + 1))/24" dev etcd0
    ip -n "$(labp "$n")-router" link set etcd0 up
    node_config "$n"
    "$LBAGENT" --check-config "$WORK/$n/lbagent.conf" >/dev/null || die "lbagent rejects $WORK/$n/lbagent.conf"
  done
  for n in "${NODES[@]}"; do agent_start "$n"; done
}

# agent_start NODE: lbagent of NODE in its router namespace; waits for lbctl.
agent_start() {
  local n=$1 k
  local st=/run/ballast-lab/$(labp "$n")
  ip netns exec "$(labp "$n")-router" sh -c 'mount --bind "$0" /sys/fs/bpf && exec "$@"' \
    "$st/bpffs/router" "$LBAGENT" --config "$WORK/$n/lbagent.conf" \
    >>"$WORK/$n/lbagent.log" 2>&1 &
  AGENT[$n]=$!
  for ((k = 0; k < 150; k++)); do
    if lbctl "$n" status >/dev/null 2>&1; then
      log "node $n: lbagent running (pid ${AGENT[$n]})"
      return 0
    fi
    kill -0 "${AGENT[$n]}" 2>/dev/null || die "lbagent $n exited: $(tail -n 5 "$WORK/$n/lbagent.log")"
    sleep 0.1
  done
  die "lbagent $n did not answer within 15 s: $(tail -n 5 "$WORK/$n/lbagent.log")"
}
agent_stop() { # agent_stop NODE SIGNAL
  kill -"$2" "${AGENT[$1]}" 2>/dev/null || true
  wait "${AGENT[$1]}" 2>/dev/null || true
  AGENT[$1]=""
}

# coord NODE FIELD: a field of `lbctl --json status`'s coordination.
coord() {
  lbctl "$1" --json status 2>/dev/null | python3 -c '
import json, sys
c = json.load(sys.stdin).get("coordination", {})
v = c.get(sys.argv[1], "")
print(str(v).lower() if isinstance(v, bool) else v)' "$2" || echo "error"
}
# field NODE ADDR FIELD: a backend field of the IPv4 VIP in `lbctl --json status`.
field() {
  lbctl "$1" --json status 2>/dev/null | python3 -c '
import json, sys
for v in json.load(sys.stdin).get("vips", []):
    for b in v.get("backends", []):
        if b["address"] == sys.argv[1]:
            print(b.get(sys.argv[2], "")); sys.exit(0)
print("missing")' "$2" "$3" || echo "error"
}
# pins NODE: NODE's pin directory (lbdp --pin-dir).
pins() { echo "/run/ballast-lab/$(labp "$1")/bpffs/router/ballast"; }
# owner_of NODE: true/false, whether NODE says it owns the (first)
# ACTIVE_STANDBY VIP; none when it has none.
owner_of() {
  lbctl "$1" --json status 2>/dev/null | python3 -c '
import json, sys
for o in json.load(sys.stdin).get("coordination", {}).get("owners", []):
    print("true" if o.get("owner") else "false"); sys.exit(0)
print("none")' || echo "error"
}
# one_owner: exactly one of nodes a and b says it owns the VIP.
one_owner() {
  local a b
  a=$(owner_of a)
  b=$(owner_of b)
  [[ ($a == true && $b == false) || ($a == false && $b == true) ]]
}
# dp_owner NODE VIP: the VIP's owner deadline in NODE's data plane, as lbdp
# shows it ("not owned", "owned, deadline in ...", "owned, stopped: ...").
dp_owner() {
  "$LBDP" --pin-dir "$(pins "$1")" vip owner-deadline "$2" 2>&1 | sed -E 's/^vip [^ ]+ //; s/ fenced [0-9]+$//'
}
# metric NODE NAME: a metric's value from NODE's /metrics.
metric() {
  ip netns exec "$(labp "$1")-router" curl -s --max-time 2 http://127.0.0.1:9580/metrics |
    awk -v m="$2" '$1 == m { print $2 }'
}
# audit_count NODE ACTION: audit records of ACTION (last 10 min) on NODE.
audit_count() {
  lbctl "$1" --json audit --since 10m 2>/dev/null | python3 -c '
import json, sys
print(sum(1 for r in json.load(sys.stdin).get("records", []) if r["action"] == sys.argv[1]))' "$2"
}
# wait_for SECONDS CMD...: until CMD succeeds; 0 reached, 1 timed out.
wait_for() {
  local deadline
  deadline=$(awk -v s="$1" -v n="$(now)" 'BEGIN { printf "%.3f", n + s }')
  shift
  while awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }'; do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}
# hashes_equal: every node reports the same config hash (non-empty).
hashes_equal() {
  local n h first=""
  for n in "${NODES[@]}"; do
    h=$(coord "$n" configHash)
    [[ -n $h && $h != error ]] || return 1
    [[ -z $first ]] && first=$h
    [[ $h == "$first" ]] || return 1
  done
}
# leader_of NODE: the leader as NODE sees it.
leader_of() { coord "$1" leader; }
# has_leader NODE: NODE sees a leader (a condition for wait_for, which runs
# it again each time: `wait_for 10 test -n "$(leader_of a)"` would expand
# the $(...) once and never wait).
has_leader() { [[ -n $(leader_of "$1") ]]; }
# answered NODE N: requests answered out of N through NODE's VIP (fresh connections).
answered() {
  local i args=()
  for ((i = 0; i < $2; i++)); do args+=("http://198.18.0.10/"); done
  lab "$1" exec client curl -s -H 'Connection: close' --connect-timeout 1 --max-time 2 "${args[@]}" |
    grep -o 'backend backend-[0-9]' | wc -l
}

cluster_finish() {
  if ((FAILED)); then
    log "FAILED"
    exit 1
  fi
  log "PASS"
}
