# Shared by tests/e2e/agent_*.sh: a netns lab (tools/lab/lab, used as a black
# box with --no-lb: namespaces, nginx backends, decap programs) with lbagent
# running in the router namespace instead of lbdp, driven through lbctl.
#
# Source it, then: agent_lab_up; agent_start; ... ; the EXIT trap removes
# everything (processes by PID, the lab's namespaces, pins and bpffs mounts).
#
# Environment: LBAGENT, LBCTL, LBDP (paths to the binaries; default: the
# build directory $BUILD, default <repo>/build).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
LBAGENT=${LBAGENT:-$BUILD/tools/lbagent/lbagent}
LBCTL=${LBCTL:-$BUILD/tools/lbctl/lbctl}
LBDP=${LBDP:-$BUILD/tools/lbdp/lbdp}
export LBDP

PREFIX=${PREFIX:-ag$$}
LAB=("$repo/tools/lab/lab" --prefix "$PREFIX" --no-build)
PIDS=()          # background processes this test started (killed by PID)
AGENT_PID=""

require_root "network namespaces, XDP, bpffs"
BUILT_HINT="LBAGENT=/LBCTL=/LBDP=" require_built "$LBAGENT" "$LBCTL" "$LBDP"
require_tools "tools/setup.sh" wrk nginx curl ip python3 promtool

cleanup() {
  local rc=$? pid
  for pid in "${PIDS[@]}" $AGENT_PID; do
    [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}" $AGENT_PID; do
    [[ -n $pid ]] && wait "$pid" 2>/dev/null || true
  done
  if [[ -n ${STATE:-} && -f ${STATE}/agent/agent.log && ($rc -ne 0 || $FAILED -ne 0) ]]; then
    echo "---- lbagent log (last 40 lines) ----" >&2
    tail -n 40 "$STATE/agent/agent.log" >&2 || true
  fi
  "${LAB[@]}" down >/dev/null 2>&1 || echo "$T_NAME: warning: lab down failed" >&2
  if ((rc == 0 && FAILED != 0)); then rc=1; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

lab() { "${LAB[@]}" "$@"; }
in_ns() { # in_ns ROLE CMD...: CMD in the lab namespace ROLE (with its bpffs)
  local role=$1
  shift
  lab exec "$role" "$@"
}
lbctl() { "$LBCTL" --socket "$SOCK" "$@"; }

# agent_lab_up: namespaces, nginx, decap; the VIP is not routed directly
# (lbagent's XDP program on router/to-client balances it).
agent_lab_up() {
  log "lab $PREFIX up (namespaces, nginx backends, decap)"
  lab --no-lb --no-traffic up >/dev/null
  eval "$(lab addrs)"
  in_ns router ip route del "$VIP4/32"
  in_ns router ip -6 route del "$VIP6/128"
  AGENT_DIR=$STATE/agent
  SOCK=$AGENT_DIR/lbagent.sock
  mkdir -p "$AGENT_DIR"
  agent_write_config "${1:-30}"
}

# agent_write_config DRAIN_TIMEOUT_S: lbagent.conf with both VIPs and the
# three backends (weights 1,1,1).
agent_write_config() {
  local i b4="" b6=""
  for ((i = 1; i <= NBACKENDS; i++)); do
    local a4 a6
    a4=BE${i}_ADDR4
    a6=BE${i}_ADDR6
    b4+="    backends { address: \"${!a4}\" weight: 1 }"$'\n'
    b6+="    backends { address: \"${!a6}\" weight: 1 }"$'\n'
  done
  cat >"$AGENT_DIR/lbagent.conf" <<CONF
admin { socket_path: "$SOCK" }
metrics_listen: "127.0.0.1:9580"
state_file: "$AGENT_DIR/state.pb"
audit_log: "$AGENT_DIR/audit.jsonl"
attach_mode: "native"
flow_capacity: 65536
initial {
  global {
    interface: "to-client"
    source_v4: "198.18.0.1"
    source_v4_prefix: "$ROUTER_PREFIX4"
    source_v6: "2001:db8::1"
    timeouts { linger_s: 2 }
    drain_timeout_s: $1
  }
  vips {
    key { address: "$VIP4" port: $VIP_PORT protocol: TCP }
    name: "web4"
$b4  }
  vips {
    key { address: "$VIP6" port: $VIP_PORT protocol: TCP }
    name: "web6"
$b6  }
}
CONF
}

# agent_start: lbagent in the router namespace; waits until lbctl answers.
agent_start() {
  ip netns exec "$PREFIX-router" sh -c 'mount --bind "$0" /sys/fs/bpf && exec "$@"' \
    "$STATE/bpffs/router" "$LBAGENT" --config "$AGENT_DIR/lbagent.conf" \
    >>"$AGENT_DIR/agent.log" 2>&1 &
  AGENT_PID=$!
  local n
  for ((n = 0; n < 100; n++)); do
    if lbctl status >/dev/null 2>&1; then
      log "lbagent running (pid $AGENT_PID)"
      return 0
    fi
    kill -0 "$AGENT_PID" 2>/dev/null || die "lbagent exited: $(tail -n 5 "$AGENT_DIR/agent.log")"
    sleep 0.1
  done
  die "lbagent did not answer on $SOCK within 10 s"
}

# agent_stop SIGNAL: signal the agent and wait for it to exit.
agent_stop() {
  kill -"$1" "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null || true
  AGENT_PID=""
}

# prog_id: the XDP program id on router/to-client ("" if none).
prog_id() {
  in_ns router ip -o link show dev to-client | grep -o 'prog/xdp[a-z]* id [0-9]*' |
    awk '{print $3}' || true
}

# lines LOG: lines in a backend's access log.
lines() { wc -l <"$1"; }

# curl_fresh FAMILY N: N requests on fresh connections; prints one backend
# name per answered request.
curl_fresh() {
  local url i args=()
  if [[ $1 == 4 ]]; then url="http://$VIP4:$VIP_PORT/"; else url="http://[$VIP6]:$VIP_PORT/"; fi
  for ((i = 0; i < $2; i++)); do args+=("$url"); done
  in_ns client curl -g -s -H 'Connection: close' --connect-timeout 1 --max-time 2 "${args[@]}" || true
}

# ns_bg VAR ROLE CMD...: CMD in the background in ROLE's namespace (with its
# bpffs), as a direct child of this shell; its PID goes to VAR and to PIDS.
ns_bg() {
  local __var=$1 role=$2
  shift 2
  ip netns exec "$PREFIX-$role" sh -c 'mount --bind "$0" /sys/fs/bpf && exec "$@"' \
    "$STATE/bpffs/$role" "$@" &
  printf -v "$__var" '%s' "$!"
  PIDS+=("$!")
}

# rst_capture_start / rst_capture_stop: count TCP RSTs that reach the client
# from the IPv4 VIP (a backend resetting a client connection), captured with
# dumpcap on the client's interface. rst_capture_stop prints the count.
rst_capture_start() {
  RST_PCAP=$AGENT_DIR/rst-$RANDOM.pcapng
  ns_bg RST_PID client dumpcap -q -i to-router \
    -f "src host $VIP4 and tcp[tcpflags] & tcp-rst != 0" -w "$RST_PCAP" 2>>"$AGENT_DIR/dumpcap.err"
  local n
  for ((n = 0; n < 50; n++)); do
    [[ -s $RST_PCAP ]] && return 0
    sleep 0.1
  done
  die "dumpcap did not start: $(cat "$AGENT_DIR/dumpcap.err")"
}
rst_capture_stop() {
  kill -INT "$RST_PID" 2>/dev/null || true
  wait "$RST_PID" 2>/dev/null || true
  tshark -r "$RST_PCAP" 2>/dev/null | wc -l
}

# status_json: lbctl status --json (protobuf JSON: lowerCamelCase names)
status_json() { lbctl --json status; }

# backend_field VIP ADDR FIELD: a field of a backend in `lbctl --json status`
# (JSON names, e.g. effectiveWeight, counters.resteeredAway).
backend_field() {
  status_json | python3 -c '
import json, sys
vip, addr, field = sys.argv[1], sys.argv[2], sys.argv[3]
s = json.load(sys.stdin)
for v in s.get("vips", []):
    k = v["key"]
    a = k["address"]
    text = ("[%s]" % a if ":" in a else a) + ":%s/%s" % (k.get("port", 0), k["protocol"].lower())
    if text != vip:
        continue
    for b in v.get("backends", []):
        if b["address"] == addr:
            cur = b
            for part in field.split("."):
                cur = cur.get(part, 0) if isinstance(cur, dict) else 0
            print(cur)
            sys.exit(0)
print("missing")
' "$1" "$2" "$3"
}
