#!/bin/bash
# e2e: lbctl against a real lbagent process. No traffic and no interface:
# the agent loads the real XDP program and pins its maps under a private
# directory, and this test drives it only through lbctl.
#
# Checks: status/list/add/weight/drain through the unix socket (mode 0660);
# config diff == what apply then changes; events; audit names the caller;
# exit codes for invalid input (2), not found (3), conflict (4), agent down
# (5), permission denied over mutual TLS (6); state survives SIGKILL and a
# restart; `lbctl teardown --yes` stops the agent and removes the pins.
#
# Needs root (BPF) and openssl. Cleans up on any exit: the agent (by PID),
# the pin directory, the temp directory.
set -euo pipefail

LBAGENT=${LBAGENT:?set LBAGENT to the lbagent binary}
LBCTL=${LBCTL:?set LBCTL to the lbctl binary}
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root (loads BPF programs)"; exit 1; }
command -v openssl >/dev/null || { echo "FAIL: needs the openssl command"; exit 1; }
[ -x "$LBAGENT" ] || { echo "FAIL: $LBAGENT is not built"; exit 1; }
[ -x "$LBCTL" ] || { echo "FAIL: $LBCTL is not built"; exit 1; }

TMP=$(mktemp -d /tmp/ballast-e2e-api.XXXXXX)
PIN=/sys/fs/bpf/ballast-e2e-api-$$
SOCK=$TMP/run/lbagent.sock
AGENT_PID=
PORT=$((20000 + $$ % 20000))

cleanup() {
  local rc=$?
  if [ -n "$AGENT_PID" ] && kill -0 "$AGENT_PID" 2>/dev/null; then
    kill -KILL "$AGENT_PID" 2>/dev/null || true
    wait "$AGENT_PID" 2>/dev/null || true
  fi
  if [ -d "$PIN" ]; then
    "$LBAGENT" --teardown --config "$TMP/agent.conf" >/dev/null 2>&1 || true
    rm -rf "$PIN"
  fi
  if [ $rc -ne 0 ] && [ -f "$TMP/agent.log" ]; then
    echo "--- lbagent log (last 30 lines)"; tail -30 "$TMP/agent.log"
  fi
  rm -rf "$TMP"
  exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }
ctl() { "$LBCTL" --socket "$SOCK" --timeout 5s "$@"; }
# expect CODE cmd...: runs lbctl, checks its exit code, keeps its output.
expect() {
  local want=$1; shift
  set +e
  "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  set -e
  [ "$got" = "$want" ] || { cat "$TMP/out" "$TMP/err"; fail "'$*' exited $got, expected $want"; }
}

# ---- PKI for the TCP listener ------------------------------------------------
mkdir -p "$TMP/pki"
(
  cd "$TMP/pki"
  key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }
  key ca
  openssl req -x509 -new -key ca.key -subj "/CN=e2e CA" -days 1 -out ca.crt 2>/dev/null
  leaf() {
    key "$1"
    openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=%s\n%s\n' "$3" "$4" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
      -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  }
  leaf server lbagent serverAuth "subjectAltName=IP:127.0.0.1"
  leaf admin ops-admin clientAuth ""
  leaf reader dashboard clientAuth ""
)

cat >"$TMP/agent.conf" <<CONF
admin {
  socket_path: "$SOCK"
  tcp_listen: "127.0.0.1:$PORT"
  tls_cert: "$TMP/pki/server.crt"
  tls_key: "$TMP/pki/server.key"
  tls_client_ca: "$TMP/pki/ca.crt"
  identities { name: "ops-admin" }
  identities { name: "dashboard" read_only: true }
}
state_file: "$TMP/state.pb"
audit_log: "$TMP/audit.jsonl"
pin_dir: "$PIN"
flow_capacity: 4096
initial {
  global { source_v4: "198.18.0.1" source_v6: "2001:db8::1" }
  vips {
    key { address: "198.18.0.10" port: 80 protocol: TCP }
    name: "web"
    table_size: 251
    backends { address: "198.18.1.1" weight: 100 }
    backends { address: "198.18.1.2" weight: 100 }
  }
}
CONF

start_agent() {
  "$LBAGENT" --config "$TMP/agent.conf" >>"$TMP/agent.log" 2>&1 &
  AGENT_PID=$!
  for _ in $(seq 100); do
    [ -S "$SOCK" ] && ctl vip list >/dev/null 2>&1 && return 0
    kill -0 "$AGENT_PID" 2>/dev/null || fail "lbagent exited during start"
    sleep 0.1
  done
  fail "lbagent did not serve on $SOCK within 10 s"
}

start_agent
echo "lbagent running (pid $AGENT_PID)"

# The socket: a socket, mode 0660, group root.
[ "$(stat -c '%F %a %U %G' "$SOCK")" = "socket 660 root root" ] ||
  fail "socket is $(stat -c '%F %a %U %G' "$SOCK"), expected socket 660 root root"

expect 0 ctl status
grep -q 'VIP 198.18.0.10:80/tcp "web"' "$TMP/out" || fail "status has no VIP header"
grep -q '198.18.1.2' "$TMP/out" || fail "status has no backend row"

expect 0 ctl vip add '[2001:db8:10::10]:443/tcp' --table-size 7 --backend '2001:db8:1::1,weight=50'
expect 0 ctl --json vip list
grep -q '"weight": 50' "$TMP/out" || fail "--backend ADDR,weight=50 did not set weight 50"
# ADDR:N was the weight until 0.1; everywhere else it is a port: refused, saying so.
expect 2 ctl vip add 198.18.0.77:80/tcp --backend 198.18.12.2:3
grep -q "reads as a port.*198.18.12.2,weight=3" "$TMP/err" ||
  fail "--backend ADDR:N is not refused with the new form: $(cat "$TMP/err")"
expect 3 ctl backend weight 198.18.0.77:80/tcp 198.18.12.2 1 # nothing was added
# Global flags after the command, as before it.
expect 0 ctl vip list --json
grep -q '"weight": 50' "$TMP/out" || fail "'vip list --json' did not print JSON"
expect 0 ctl status --json
grep -q '"vips"' "$TMP/out" || fail "'status --json' did not print JSON"
expect 4 ctl vip add '[2001:db8:10::10]:443/tcp'
expect 2 ctl backend weight 198.18.0.10:80/tcp 198.18.1.1 3000
grep -q 'out of range 0..1000' "$TMP/err" || fail "weight error does not name the range"
expect 2 ctl backend weight 198.18.0.10:80 198.18.1.1 5
expect 3 ctl backend weight 198.18.0.10:80/tcp 198.18.1.99 5
expect 0 ctl backend weight 198.18.0.10:80/tcp 198.18.1.1 0
expect 0 ctl --json vip list
grep -q '"weight": 0' "$TMP/out" || fail "--json vip list does not show weight 0"

# Events: a stream sees a drain made from another lbctl.
"$LBCTL" --socket "$SOCK" events --count 1 >"$TMP/events" 2>&1 &
EV_PID=$!
sleep 0.5
expect 0 ctl backend drain 198.18.0.10:80/tcp 198.18.1.2 --deadline 5m
for _ in $(seq 50); do kill -0 $EV_PID 2>/dev/null || break; sleep 0.1; done
if kill -0 $EV_PID 2>/dev/null; then kill $EV_PID; fail "lbctl events saw no event"; fi
wait $EV_PID || fail "lbctl events failed: $(cat "$TMP/events")"
grep -q '198.18.1.2' "$TMP/events" || fail "event does not name the backend: $(cat "$TMP/events")"

# config diff shows exactly what apply then does.
ctl config get >"$TMP/config.txtpb"
sed -i 's/table_size: 251/table_size: 257/' "$TMP/config.txtpb"
expect 0 ctl config diff -f "$TMP/config.txtpb"
sed '/^dry run:/d' "$TMP/out" >"$TMP/diff"
[ -s "$TMP/diff" ] || fail "config diff shows no change"
expect 0 ctl config apply -f "$TMP/config.txtpb"
sed '/^applied /d' "$TMP/out" >"$TMP/applied"
cmp -s "$TMP/diff" "$TMP/applied" || fail "diff and apply differ: $(diff "$TMP/diff" "$TMP/applied")"
expect 0 ctl config diff -f "$TMP/config.txtpb"
[ "$(cat "$TMP/out")" = "no changes" ] || fail "after apply the diff is not empty"

expect 0 ctl audit --since 1h
grep -q 'operator:unix:uid=0' "$TMP/out" || fail "audit does not name the unix caller"

# The flow hash seed: secret from the first state, in the pinned map, never
# shown by lbctl or written to the audit log; a rotation keeps the old one as
# the previous seed (flags 3: current and previous).
seed_map() {
  bpftool -j map dump pinned "$PIN/flow_hash_seed" |
    python3 -c 'import json,sys; v=json.load(sys.stdin)[0]["formatted"]["value"]; print(v["flags"], *v["current"]["w"], *v["previous"]["w"])'
}
read -r flags c0 c1 c2 _ <<<"$(seed_map)"
[ "$flags" = 1 ] || fail "a first state's seed is not in the map (flags $flags)"
[ "$c0 $c1 $c2" != "1818452332 1818452332 1818452332" ] || fail "the map holds the public seed"
expect 0 ctl flow-hash rotate --reason "e2e rotation"
grep -q 'rotated (generation' "$TMP/out" || fail "rotate says: $(cat "$TMP/out")"
read -r flags n0 n1 n2 p0 p1 p2 <<<"$(seed_map)"
[ "$flags" = 3 ] || fail "after a rotation the map's flags are $flags, not 3"
[ "$p0 $p1 $p2" = "$c0 $c1 $c2" ] || fail "the previous seed is not the one replaced"
[ "$n0 $n1 $n2" != "$c0 $c1 $c2" ] || fail "the rotation kept the seed"
expect 2 ctl flow-hash rotate --reason "$(printf 'x%.0s' $(seq 201))"
expect 0 ctl --json status
cp "$TMP/out" "$TMP/status.json"
expect 0 ctl audit --since 1h
grep -q 'rotate_flow_hash_seed' "$TMP/out" || fail "the rotation is not in the audit log"
for w in $c0 $c1 $c2 $n0 $n1 $n2; do
  ! grep -qw "$w" "$TMP/audit.jsonl" "$TMP/out" "$TMP/status.json" ||
    fail "a seed word ($w) is in the audit log or the status"
done

# QUIC-LB: a UDP VIP with quic_lb gets server IDs 1 and 2 (in the pinned
# map quic_servers, under config 0), each backend's configuration exports
# with its key, a rotation keeps config 0 beside config 1 until it is
# retired, and no key is in the audit log, the status or the agent's log.
cat >>"$TMP/config.txtpb" <<'QUIC'
vips {
  key { address: "198.18.0.30" port: 443 protocol: UDP }
  table_size: 251
  quic_lb { server_id_len: 2 nonce_len: 14 encrypted: true }
  backends { address: "198.18.1.1" weight: 100 }
  backends { address: "198.18.1.2" weight: 100 }
}
QUIC
expect 0 ctl config apply -f "$TMP/config.txtpb"
quic_sids() {
  bpftool -j map dump pinned "$PIN/quic_servers" | python3 -c '
import json, sys
ids = []
for e in json.load(sys.stdin):
    k = e["formatted"]["key"]
    ids.append("%d:%s" % (k["config_id"], "".join("%02x" % b for b in k["sid"][:k["sid_len"]])))
print(" ".join(sorted(ids)))'
}
[ "$(quic_sids)" = "0:0001 0:0002" ] || fail "quic_servers holds '$(quic_sids)', not 0:0001 0:0002"
expect 0 ctl vip quic-config 198.18.0.30:443/udp 198.18.1.2
grep -qx 'server_id=0002' "$TMP/out" || fail "quic-config: $(cat "$TMP/out")"
key0=$(sed -n 's/^key=//p' "$TMP/out")
[[ $key0 =~ ^[0-9a-f]{32}$ ]] || fail "quic-config exports no key: $(cat "$TMP/out")"
expect 0 ctl status 198.18.0.30:443/udp
grep -Eq '198\.18\.1\.2 +0002 ' "$TMP/out" || fail "status shows no server ID: $(cat "$TMP/out")"
expect 0 ctl vip quic-rotate 198.18.0.30:443/udp --reason "e2e quic rotation"
[ "$(quic_sids)" = "0:0001 0:0002 1:0001 1:0002" ] ||
  fail "after a rotation quic_servers holds '$(quic_sids)'"
expect 4 ctl vip quic-rotate 198.18.0.30:443/udp
expect 0 ctl vip quic-config 198.18.0.30:443/udp 198.18.1.1
key1=$(sed -n 's/^key=//p' "$TMP/out" | head -1)
[ -n "$key1" ] && [ "$key1" != "$key0" ] || fail "the rotation kept the key"
expect 0 ctl vip quic-retire 198.18.0.30:443/udp
[ "$(quic_sids)" = "1:0001 1:0002" ] ||
  fail "after the retirement quic_servers holds '$(quic_sids)'"
expect 0 ctl --json status
cp "$TMP/out" "$TMP/status.json"
expect 0 ctl audit --since 1h
grep -q 'rotate_quic_config' "$TMP/out" || fail "the QUIC rotation is not in the audit log"
grep -q 'export_quic_config' "$TMP/out" || fail "the QUIC export is not in the audit log"
for k in "$key0" "$key1"; do
  ! grep -qi "$k" "$TMP/audit.jsonl" "$TMP/out" "$TMP/status.json" "$TMP/agent.log" ||
    fail "a QUIC-LB key is in the audit log, the status or the agent's log"
done

# Mutual TLS: admin may write, read-only may read only, no cert is refused.
tls() {
  local who=$1; shift
  "$LBCTL" --addr "127.0.0.1:$PORT" --cacert "$TMP/pki/ca.crt" --cert "$TMP/pki/$who.crt" \
    --key "$TMP/pki/$who.key" --timeout 5s "$@"
}
expect 0 tls reader status
expect 6 tls reader backend weight 198.18.0.10:80/tcp 198.18.1.1 1
grep -q "read-only" "$TMP/err" || fail "read-only denial does not say why"
expect 0 tls admin backend weight 198.18.0.10:80/tcp 198.18.1.1 1
expect 2 "$LBCTL" --addr "127.0.0.1:$PORT" status

# SIGKILL: the socket is left behind, lbctl says the agent is down; a
# restart replaces the stale socket and restores the state.
ctl --json config get >"$TMP/before.json"
kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=
expect 5 ctl status
grep -q 'Is lbagent running?' "$TMP/err" || fail "unreachable message: $(cat "$TMP/err")"
start_agent
ctl --json config get >"$TMP/after.json"
cmp -s "$TMP/before.json" "$TMP/after.json" || fail "state changed across SIGKILL + restart"

# Teardown: refused without --yes; with it the agent stops and unpins.
expect 2 ctl teardown
expect 0 ctl teardown --yes
for _ in $(seq 100); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$AGENT_PID" 2>/dev/null && fail "lbagent still running after teardown"
wait "$AGENT_PID" || true
AGENT_PID=
[ ! -e "$SOCK" ] || fail "socket left behind after teardown"
[ -z "$(ls -A "$PIN" 2>/dev/null)" ] || fail "pins left behind after teardown: $(ls "$PIN")"
echo "PASS"
