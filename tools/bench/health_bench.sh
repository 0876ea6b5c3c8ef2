#!/bin/bash
# Health checking's detection-to-steer benchmark: runs the health e2e
# scenarios ROUNDS times in the netns lab and summarises what they measured:
#   kill      SIGKILL of a backend's server -> its table slots are gone
#             (the demotion's audit time); the new connections that failed
#             to connect, and those established on it before it died
#   hang      SIGSTOP -> out of the table
#   brownout  delay x3 -> first weight change, and >= 30 % of the weight off
#   hostdown  a backend's link down -> demotion, failed new connections,
#             the longest connect (tests/e2e/health_hostdown.sh, lab and
#             default probe settings)
# kill and hostdown run with second chance on and off (SECOND_CHANCE=0:
# backends that do not bounce, a retransmitted SYN to the same backend).
# Probes every 200 ms, evaluations every 100 ms (kill, hang). Not a test:
# figures are printed (min / median / max); a failing scenario is reported.
#
# usage: tools/bench/health_bench.sh [ROUNDS]   (default 3; as root; build first)
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]?$ ]] || { echo "health_bench: ROUNDS must be 1..99" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "health_bench: needs root (network namespaces, XDP, tc)" >&2; exit 1; }
export BUILD=${BALLAST_BUILD_DIR:-$root/build}
logs=$(mktemp -d /tmp/ballast-health-bench.XXXXXX)
trap 'rm -rf "$logs"' EXIT

# SCRIPT:SECOND_CHANCE; a log is <script>.sc<0|1>.<round>.log
runs=(health_kill:1 health_kill:0 health_hostdown:1 health_hostdown:0)
[[ -x $root/tests/e2e/health_brownout.sh ]] && runs+=(health_brownout:1)

failed=0
for ((r = 1; r <= rounds; r++)); do
  for run in "${runs[@]}"; do
    name=${run%:*} sc=${run#*:}
    log=$logs/$name.sc$sc.$r.log
    if ! SECOND_CHANCE=$sc "$root/tests/e2e/$name.sh" >"$log" 2>&1; then
      echo "health_bench: round $r: $name (second chance $sc) FAILED (log follows)" >&2
      grep -v score_band "$log" | tail -n 20 >&2
      failed=$((failed + 1))
    fi
  done
done

# stats LABEL: reads numbers on stdin, prints "LABEL: min / median / max (n)".
stats() {
  sort -n | awk -v label="$1" '
    { v[NR] = $1 }
    END {
      if (NR == 0) { printf "%-58s  (no data)\n", label; exit }
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%-58s  %s / %s / %s  (n=%d)\n", label, v[1], m, v[NR], NR
    }'
}

# figure SCRIPT SC SED_CAPTURE LABEL: one number per log line of SCRIPT's
# runs with SECOND_CHANCE=SC.
figure() {
  cat "$logs"/"$1".sc"$2".*.log 2>/dev/null | sed -nE "s/$3/\\1/p" | stats "$4"
}

echo "health_bench: $rounds round(s); min / median / max"
for sc in 1 0; do
  on=$([[ $sc == 1 ]] && echo on || echo off)
  figure health_kill $sc '.*kill: backend-2 out of the table ([0-9.]+) s after SIGKILL.*' \
    "kill (second chance $on) -> out of the table (s)"
  figure health_kill $sc '.*kill: of those, ([0-9]+) failed to connect.*' \
    "kill (second chance $on): new connections that failed to connect"
  figure health_kill $sc '.*kill: of those, [0-9]+ failed to connect, ([0-9]+) were established.*' \
    "kill (second chance $on): connections established before, lost"
  figure health_kill $sc '.*raced the kill .*, ([0-9]+) after it.*' \
    "kill (second chance $on): failed after the table change"
  for round in fast default; do
    figure health_hostdown $sc ".*$round: backend-2 demoted ([0-9.]+) s after its link went down.*" \
      "hostdown $round (second chance $on) -> demoted (s)"
    figure health_hostdown $sc ".*$round: ([0-9]+) failed new connections.*" \
      "hostdown $round (second chance $on): failed new connections"
    figure health_hostdown $sc ".*$round: longest connect ([0-9]+) ms.*" \
      "hostdown $round (second chance $on): longest connect (ms)"
  done
done
figure health_kill 1 '.*hang: backend-3 out of the table ([0-9.]+) s after SIGSTOP.*' \
  "hang -> out of the table (s)"
figure health_brownout 1 '.*brownout: first weight change of backend-1 ([0-9.]+) s after the slowdown.*' \
  "brownout -> first weight change (s)"
figure health_brownout 1 '.*brownout: backend-1 at <= 70% of its weight ([0-9.]+) s after the slowdown.*' \
  "brownout -> 30 % of the weight off (s)"
((failed == 0)) || echo "health_bench: $failed scenario run(s) failed"
exit 0
