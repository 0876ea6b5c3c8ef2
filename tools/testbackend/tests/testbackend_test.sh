#!/bin/bash
# testbackend_e2e: ballast-testbackend on loopback (127.0.0.1 and ::1 of the
# root namespace, ephemeral ports), driven by real clients: curl for HTTP,
# testbackend_grpc_call (the generated gRPC stub) for Hello, wrk for many
# keep-alive connections, and the binary's own `ctl` mode for the knobs.
# Every fault knob is checked for its effect on both protocols, then clear,
# /stats, flag validation and SIGTERM.
#
# usage: testbackend_test.sh BALLAST_TESTBACKEND TESTBACKEND_GRPC_CALL
set -euo pipefail

TB=${1:?usage: $0 ballast-testbackend testbackend_grpc_call}
CALL=${2:?usage: $0 ballast-testbackend testbackend_grpc_call}
T=testbackend_e2e
FAILED=0
PIDS=()
WORK=$(mktemp -d /tmp/testbackend_e2e.XXXXXX)

log() { printf '%s: %s\n' "$T" "$*"; }
fail() {
  printf '%s: FAIL: %s\n' "$T" "$*" >&2
  FAILED=1
}
die() {
  printf '%s: FAIL: %s\n' "$T" "$*" >&2
  exit 1
}
check() { # check DESCRIPTION CMD...
  local what=$1
  shift
  if "$@"; then log "ok: $what"; else fail "$what"; fi
}

cleanup() {
  local rc=$? pid
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((rc != 0 || FAILED != 0)) && [[ -f $WORK/tb.log ]]; then
    echo "---- ballast-testbackend log (last 30 lines) ----" >&2
    tail -n 30 "$WORK/tb.log" >&2 || true
  fi
  rm -rf "$WORK"
  if ((rc == 0 && FAILED != 0)); then rc=1; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for t in curl wrk jq; do
  command -v "$t" >/dev/null || die "$t is not installed (tools/setup.sh)"
done
[[ -x $TB ]] || die "$TB is not built"
[[ -x $CALL ]] || die "$CALL is not built"

# ---- start: dual-stack HTTP and gRPC, control on 127.0.0.1, ports from the kernel
"$TB" --name b1 --http '[::]:0' --grpc '[::]:0' --control 127.0.0.1:0 2>"$WORK/tb.log" &
TBPID=$!
PIDS+=("$TBPID")
for _ in $(seq 100); do
  grep -q ' ready ' "$WORK/tb.log" 2>/dev/null && break
  kill -0 "$TBPID" 2>/dev/null || die "ballast-testbackend exited: $(cat "$WORK/tb.log")"
  sleep 0.05
done
ready=$(grep ' ready ' "$WORK/tb.log") || die "ballast-testbackend not ready after 5 s"
HP=$(sed -E 's/.* http=\[::\]:([0-9]+) .*/\1/' <<<"$ready")
GP=$(sed -E 's/.* grpc=\[::\]:([0-9]+) .*/\1/' <<<"$ready")
CTL=$(sed -E 's/.* control=([^ ]+) .*/\1/' <<<"$ready")
log "backend b1 pid $TBPID: http port $HP, grpc port $GP, control $CTL"

ctl() { "$TB" ctl --control "$CTL" "$@" >/dev/null; }
# http FAMILY [curl args...]: prints "<status> <body>", the curl exit code on failure
http() {
  local host=127.0.0.1
  [[ $1 == 6 ]] && host='[::1]'
  shift
  curl -s -o "$WORK/body" -w '%{http_code}' --max-time 3 "$@" "http://$host:$HP/some/path"
}
body() { cat "$WORK/body"; }
grpc() { # grpc FAMILY FROM [USER_AGENT] [TIMEOUT_MS]
  local target=127.0.0.1:$GP
  [[ $1 == 6 ]] && target="[::1]:$GP"
  shift
  "$CALL" "$target" "$@" || true
}
ms_of() { sed -E 's/.* ms=([0-9]+).*/\1/' <<<"$1"; }

# ---- plain answers, both families, both protocols
for fam in 4 6; do
  check "IPv$fam GET: 200 and the name" [ "$(http $fam)" = 200 -a "$(body)" = "backend b1" ]
  check "IPv$fam POST: 200 and the name" [ "$(http $fam -d hello=1)" = 200 -a "$(body)" = "backend b1" ]
  out=$(grpc $fam me)
  check "IPv$fam gRPC Hello: name, message, healthy ($out)" \
    grep -q '^code=0 name=b1 message=hello me from b1 healthy=1 ' <<<"$out"
done
check "X-Backend header on HEAD" grep -qi '^X-Backend: b1' <(curl -sI --max-time 3 "http://127.0.0.1:$HP/")
check "unsupported method gets 405" [ "$(http 4 -X DELETE)" = 405 ]
conns=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects} ' --max-time 3 \
  "http://127.0.0.1:$HP/a" "http://127.0.0.1:$HP/b")
check "keep-alive: two requests on one connection (connects: $conns)" [ "$conns" = "1 0 " ]

# ---- delay
ctl set delay_ms=300
t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 3 "http://127.0.0.1:$HP/")
check "delay_ms=300: HTTP took ${t}s >= 0.3" awk -v t="$t" 'BEGIN { exit !(t >= 0.3) }'
out=$(grpc 6 me)
check "delay_ms=300: gRPC took $(ms_of "$out") ms >= 300, healthy=0" \
  bash -c "[[ '$out' == code=0*healthy=0* ]] && (( $(ms_of "$out") >= 300 ))"
ctl set delay_ms=100 delay_jitter_ms=100
t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 3 "http://127.0.0.1:$HP/")
check "delay 100 + jitter 100: took ${t}s in [0.1, 0.5)" \
  awk -v t="$t" 'BEGIN { exit !(t >= 0.1 && t < 0.5) }'
ctl clear

# ---- error_rate
ctl set error_rate=1
check "error_rate=1: HTTP 503" [ "$(http 4)" = 503 ]
out=$(grpc 4 me)
check "error_rate=1: gRPC UNAVAILABLE ($out)" grep -q '^code=14 ' <<<"$out"
ctl set error_rate=0.5
n503=0
for _ in $(seq 40); do [[ $(http 4) == 503 ]] && n503=$((n503 + 1)); done
check "error_rate=0.5: $n503 of 40 are 503 (expect 8..32)" [ $n503 -ge 8 -a $n503 -le 32 ]
ctl clear

# ---- reset_rate
ctl set reset_rate=1
rc=0
http 4 >/dev/null || rc=$?
check "reset_rate=1: curl reports a reset (exit $rc, want 56)" [ $rc = 56 ]
rc=0
http 6 -d x=1 >/dev/null || rc=$?
check "reset_rate=1: IPv6 POST reset too (exit $rc)" [ $rc = 56 ]
out=$(grpc 4 me)
check "reset_rate=1: gRPC call aborted, CANCELLED ($out)" grep -q '^code=1 ' <<<"$out"
ctl clear

# ---- wrong_body
ctl set wrong_body=true
code=$(http 4)
check "wrong_body: 200 without the name (body '$(body | tr -d '\n')')" \
  bash -c "[[ $code == 200 ]] && ! grep -q b1 '$WORK/body'"
out=$(grpc 4 me)
check "wrong_body: gRPC name=wrong healthy=0 ($out)" grep -q '^code=0 name=wrong .*healthy=0' <<<"$out"
ctl clear

# ---- hang: no answer, the connection stays open, clearing releases it
ctl set hang=1
rc=0
http 4 --max-time 1 >/dev/null || rc=$?
check "hang: curl times out (exit $rc, want 28)" [ $rc = 28 ]
out=$(grpc 6 me "" 700)
check "hang: gRPC DEADLINE_EXCEEDED ($out)" grep -q '^code=4 ' <<<"$out"
curl -s -o "$WORK/held" --max-time 5 "http://127.0.0.1:$HP/held" &
held=$!
PIDS+=("$held")
sleep 0.5
est=$(ss -Htn state established "( sport = :$HP )" | wc -l)
check "hang: the held connection is established ($est)" [ "$est" -ge 1 ]
kill -0 $held 2>/dev/null || fail "hang: the held request was answered"
ctl clear
rc=0
wait $held || rc=$?
check "hang cleared: the held request is answered (curl $rc, '$(tr -d '\n' <"$WORK/held")')" \
  [ $rc = 0 -a "$(cat "$WORK/held")" = "backend b1" ]

# ---- real_only: the probe's requests pass, real ones fail
ctl set error_rate=1 real_only=true
check "real_only: normal User-Agent gets 503" [ "$(http 4)" = 503 ]
check "real_only: User-Agent ballast-probe/1 gets 200" [ "$(http 4 -A ballast-probe/1)" = 200 ]
check "real_only: probe body has the name" [ "$(body)" = "backend b1" ]
out=$(grpc 4 me)
check "real_only: gRPC real call UNAVAILABLE ($out)" grep -q '^code=14 ' <<<"$out"
out=$(grpc 4 me ballast-probe/1)
check "real_only: gRPC user-agent ballast-probe passes healthy ($out)" \
  grep -q '^code=0 name=b1 .*healthy=1' <<<"$out"
out=$(grpc 6 ballast-probe)
check "real_only: gRPC from=ballast-probe passes ($out)" grep -q '^code=0 name=b1 .*healthy=1' <<<"$out"
ctl set real_only=false
check "real_only off: the probe fails too" [ "$(http 4 -A ballast-probe/1)" = 503 ]

# ---- clear restores; show prints the defaults
ctl clear
check "clear: 200 again" [ "$(http 4)" = 200 ]
shown=$("$TB" ctl --control "$CTL" show)
check "show: defaults as JSON" [ "$(jq -c . <<<"$shown")" = \
  '{"delay_ms":0,"delay_jitter_ms":0,"error_rate":0,"reset_rate":0,"hang":false,"wrong_body":false,"real_only":false}' ]

# ---- /stats counts by protocol, client kind and fault
ctl reset-stats
ctl set error_rate=1 real_only=1
http 4 >/dev/null
http 6 >/dev/null
http 4 -A ballast-probe/x >/dev/null
grpc 4 me >/dev/null
grpc 4 ballast-probe >/dev/null
ctl clear
ctl set reset_rate=1
http 4 >/dev/null || true
ctl clear
stats=$(curl -s --max-time 3 "http://$CTL/stats")
log "stats: $stats"
want='{"total":6,"http":4,"grpc":2,"probe":2,"real":4}'
check "stats: requests" [ "$(jq -c .requests <<<"$stats")" = "$want" ]
check "stats: faults by kind" [ "$(jq -c '[.faults.error, .faults.reset, .faults.faulted_real, .faults.faulted_probe]' <<<"$stats")" = "[3,1,4,0]" ]

# ---- control endpoint errors
code=$(curl -s -o "$WORK/err" -w '%{http_code}' -X POST --max-time 3 "http://$CTL/set?delay_ms=oops")
check "control: bad value is 400 naming the knob ($(cat "$WORK/err"))" \
  bash -c "[[ $code == 400 ]] && grep -q delay_ms '$WORK/err'"
rc=0
"$TB" ctl --control "$CTL" set colour=red 2>"$WORK/err" || rc=$?
check "ctl: unknown knob exits 2 ($(cat "$WORK/err"))" [ $rc = 2 ]

# ---- many concurrent keep-alive connections
wrk -t2 -c50 -d2s --latency "http://127.0.0.1:$HP/" >"$WORK/wrk" 2>&1 || true
rps=$(awk '/Requests\/sec/ { print $2 }' "$WORK/wrk")
log "wrk -t2 -c50 -d2s: ${rps:-?} requests/s, $(awk '/ 99%/ { print "p99 " $2 }' "$WORK/wrk")"
check "wrk 50 connections: no errors, no non-2xx" \
  bash -c "! grep -qE 'Socket errors|Non-2xx' '$WORK/wrk' && [[ -n '$rps' ]]"
check "wrk: the requests were served on 50 connections" \
  [ "$(curl -s "http://$CTL/stats" | jq .connections.accepted)" -ge 50 ]

# ---- flag validation: exit 2 naming the flag
for bad in "--http nowhere" "--grpc 1.2.3.4:99999" "--control [::1]" "--max-conns 0" \
  "--set hang=maybe" "--name bad/name" "--bogus 1"; do
  rc=0
  # shellcheck disable=SC2086
  "$TB" --name b2 $bad 2>"$WORK/err" || rc=$?
  flag=${bad%% *}
  check "bad flag '$bad': exit 2 naming $flag" bash -c "[[ $rc == 2 ]] && grep -q -- '$flag' '$WORK/err'"
done
rc=0
"$TB" 2>"$WORK/err" || rc=$?
check "--name is required" bash -c "[[ $rc == 2 ]] && grep -q -- --name '$WORK/err'"
rc=0
"$TB" --name b2 --http "127.0.0.1:$HP" --grpc off --control off 2>"$WORK/err" || rc=$?
check "address in use: exit 1 naming the address ($(cat "$WORK/err"))" \
  bash -c "[[ $rc == 1 ]] && grep -q '127.0.0.1:$HP' '$WORK/err'"

# ---- SIGTERM with a hung connection open: clean exit 0
ctl set hang=1
curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$HP/" &
PIDS+=("$!")
sleep 0.3
start=$(date +%s%N)
kill -TERM "$TBPID"
rc=0
wait "$TBPID" || rc=$?
took=$((($(date +%s%N) - start) / 1000000))
check "SIGTERM: exit 0 in ${took} ms (< 3000) with a held request" [ $rc = 0 -a $took -lt 3000 ]

((FAILED == 0)) && log "PASS"
