#!/bin/bash
# Agent benchmark: lbagent with 100 VIPs x 100 backends (10,000 backends,
# Maglev tables of 65537 slots), on this host's bpffs under a private pin
# directory, not attached to any device (no traffic is involved).
#
# Measures:
#   - start-up: first start (build and write 100 tables) and a restart that
#     adopts the pinned maps (reads the 100 tables back, rewrites nothing);
#   - 100 weight changes over the admin API (bench_agent): call latency and
#     the time from the call returning to the new table being read back from
#     the map (p50/p99);
#   - RSS (VmRSS, VmHWM) and CPU time: idle for 10 s, and for the 100 changes;
#   - one /metrics scrape (10,000 backends' series);
#   - status reads do not stall writers: the same weight changes timed with
#     FLOWS (default 1,000,000) live flows in the table, idle and then with
#     SCRAPERS (default 8) loops scraping /metrics (each scrape counts the
#     flows, outside the engine's lock): call p99 of both and their ratio.
#
#   tools/bench/agent_bench.sh [BUILD_DIR]      (root; default BUILD_DIR <repo>/build)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-${BUILD:-$repo/build}}
LBAGENT=$BUILD/tools/lbagent/lbagent
LBCTL=$BUILD/tools/lbctl/lbctl
BENCH=$BUILD/tools/bench/bench_agent
VIPS=${VIPS:-100}
BACKENDS=${BACKENDS:-100}
CHANGES=${CHANGES:-100}
FLOWS=${FLOWS:-1000000}
SCRAPERS=${SCRAPERS:-8}

[[ $(id -u) -eq 0 ]] || { echo "agent_bench: needs root (BPF maps)" >&2; exit 1; }
for b in "$LBAGENT" "$LBCTL" "$BENCH"; do
  [[ -x $b ]] || { echo "agent_bench: $b is not built" >&2; exit 1; }
done

dir=$(mktemp -d /tmp/ballast-agent-bench.XXXXXX)
pin=/sys/fs/bpf/ballast-bench-$$
port=$((20000 + $$ % 20000))
AGENT=""
SCRAPING=()
cleanup() {
  for p in "${SCRAPING[@]}"; do kill "$p" 2>/dev/null || true; done
  [[ -n $AGENT ]] && kill -KILL "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null || true
  "$LBAGENT" --teardown --config "$dir/lbagent.conf" >/dev/null 2>&1 || true
  [[ -n ${KEEP:-} ]] && cp "$dir/agent.log" "$KEEP"
  rm -rf "$dir"
}
trap cleanup EXIT

python3 - "$VIPS" "$BACKENDS" "$dir" "$pin" "$port" >"$dir/lbagent.conf" <<'PY'
import sys
vips, backends, d, pin, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
print('admin { socket_path: "%s/lbagent.sock" }' % d)
print('metrics_listen: "127.0.0.1:%s"' % port)
print('state_file: "%s/state.pb"\naudit_log: "%s/audit.jsonl"\npin_dir: "%s"' % (d, d, pin))
print('flow_capacity: 1048576')
print('initial {\n  global { source_v4: "198.18.0.1" source_v6: "2001:db8::1" }')
n = 0
for i in range(vips):
    print('  vips {\n    key { address: "198.18.%d.%d" port: 80 protocol: TCP }' % (i // 250, i % 250 + 1))
    for j in range(backends):
        print('    backends { address: "198.19.%d.%d" weight: 1 }' % (n // 250, n % 250 + 1))
        n += 1
    print('  }')
print('}')
PY

ms() { echo $(($(date +%s%N) / 1000000)); }
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }
mem() { awk '/^VmRSS|^VmHWM/ {printf "%s %.1f MiB  ", $1, $2 / 1024}' "/proc/$1/status"; }
start_agent() {
  local t0 n
  t0=$(ms)
  "$LBAGENT" --config "$dir/lbagent.conf" --log-level "${LOG_LEVEL:-info}" >>"$dir/agent.log" 2>&1 &
  AGENT=$!
  for ((n = 0; n < 600; n++)); do
    "$LBCTL" --socket "$dir/lbagent.sock" --timeout 1s vip list >/dev/null 2>&1 && break
    kill -0 "$AGENT" 2>/dev/null || { tail "$dir/agent.log" >&2; exit 1; }
    sleep 0.05
  done
  READY_MS=$(($(ms) - t0))
}

echo "agent_bench: $VIPS VIPs x $BACKENDS backends, table size 65537, $CHANGES weight changes"
start_agent
echo "first start ($VIPS tables built and written) to API ready: $READY_MS ms"
echo "after start:      $(mem "$AGENT") cpu $(cpu_s "$AGENT") s"
c0=$(cpu_s "$AGENT")
sleep 10
c1=$(cpu_s "$AGENT")
echo "idle 10 s:        cpu $(awk -v a="$c0" -v b="$c1" 'BEGIN {printf "%.2f", b - a}') s ($(mem "$AGENT"))"
if [[ -n ${PERF:-} ]]; then
  perf record -g -o "$PERF" -p "$AGENT" 2>/dev/null &
  perf_pid=$!
  sleep 0.5
fi
"$BENCH" --socket "$dir/lbagent.sock" --pin-dir "$pin" --changes "$CHANGES" | sed 's/^/bench_agent: /'
if [[ -n ${PERF:-} ]]; then
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
fi
c2=$(cpu_s "$AGENT")
echo "$CHANGES changes:      cpu $(awk -v a="$c1" -v b="$c2" 'BEGIN {printf "%.2f", b - a}') s ($(mem "$AGENT"))"
t0=$(ms)
bytes=$(curl -s "http://127.0.0.1:$port/metrics" | wc -c)
echo "/metrics scrape:  $(($(ms) - t0)) ms, $bytes bytes ($(mem "$AGENT"))"

# Writers under scrapers, with a full flow table.
p99() { awk '/^call/ { print $6 }'; }
idle=$("$BENCH" --socket "$dir/lbagent.sock" --pin-dir "$pin" --changes "$CHANGES" \
  --fill-flows "$FLOWS" | tee /dev/stderr | p99)
t0=$(ms)
curl -s -o /dev/null "http://127.0.0.1:$port/metrics"
echo "/metrics scrape with $FLOWS flows: $(($(ms) - t0)) ms"
for ((i = 0; i < SCRAPERS; i++)); do
  (end=$((SECONDS + 300))
   while ((SECONDS < end)); do curl -s -o /dev/null --max-time 10 "http://127.0.0.1:$port/metrics"; done) &
  SCRAPING+=($!)
done
sleep 1
busy=$("$BENCH" --socket "$dir/lbagent.sock" --pin-dir "$pin" --changes "$CHANGES" | tee /dev/stderr | p99)
for p in "${SCRAPING[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${SCRAPING[@]}" 2>/dev/null || true
SCRAPING=()
echo "weight change call p99 with $FLOWS flows: idle $idle ms, under $SCRAPERS scrapers $busy ms ($(awk -v a="$idle" -v b="$busy" 'BEGIN {printf "%.2f", b / a}')x)"
kill -TERM "$AGENT"
wait "$AGENT" || true
AGENT=""
start_agent
echo "restart (adopts the pinned maps, reads $VIPS tables back) to API ready: $READY_MS ms"
grep -o '"msg":"data plane reconciled[^}]*}' "$dir/agent.log" | tail -1 | sed 's/^/  /'
echo "after restart:    $(mem "$AGENT")"
