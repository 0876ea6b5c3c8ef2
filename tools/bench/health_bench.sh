#!/bin/bash
# Health checking's detection-to-steer benchmark: runs the health e2e
# scenarios (tests/e2e/health_kill.sh, and health_brownout.sh when present)
# ROUNDS times in the netns lab and summarises what they measured:
#   kill      SIGKILL of a backend's server -> its table slots are gone
#             (the demotion's audit time), and the failed new connections
#             (those whose SYN raced the kill; after the table change: 0)
#   hang      SIGSTOP -> out of the table
#   brownout  delay x3 -> first weight change, and >= 30 % of the weight off
# Probes every 200 ms, evaluations every 100 ms (kill, hang). Not a test:
# figures are printed (min / median / max); a failing scenario is reported.
#
# usage: sudo tools/bench/health_bench.sh [ROUNDS]   (default 3; build first)
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]?$ ]] || { echo "health_bench: ROUNDS must be 1..99" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "health_bench: needs root (network namespaces, XDP, tc)" >&2; exit 1; }
export BUILD=${BALLAST_BUILD_DIR:-$root/build}
logs=$(mktemp -d /tmp/ballast-health-bench.XXXXXX)
trap 'rm -rf "$logs"' EXIT

scripts=("$root/tests/e2e/health_kill.sh")
[[ -x $root/tests/e2e/health_brownout.sh ]] && scripts+=("$root/tests/e2e/health_brownout.sh")

failed=0
for ((r = 1; r <= rounds; r++)); do
  for s in "${scripts[@]}"; do
    name=$(basename "$s" .sh)
    if ! "$s" >"$logs/$name.$r.log" 2>&1; then
      echo "health_bench: round $r: $name FAILED (log follows)" >&2
      grep -v score_band "$logs/$name.$r.log" | tail -n 20 >&2
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

# figure SCRIPT SED_CAPTURE LABEL: one number per log line of SCRIPT's runs.
figure() {
  cat "$logs"/"$1".*.log 2>/dev/null | sed -nE "s/$2/\\1/p" | stats "$3"
}

echo "health_bench: $rounds round(s); min / median / max"
figure health_kill '.*kill: backend-2 out of the table ([0-9.]+) s after SIGKILL.*' \
  "kill -> out of the table (s)"
figure health_kill '.*kill: failed new connections: ([0-9]+) raced the kill.*' \
  "kill: failed new connections that raced the kill"
figure health_kill '.*raced the kill .*, ([0-9]+) after it.*' \
  "kill: failed new connections after the table change"
figure health_kill '.*hang: backend-3 out of the table ([0-9.]+) s after SIGSTOP.*' \
  "hang -> out of the table (s)"
figure health_brownout '.*brownout: first weight change of backend-1 ([0-9.]+) s after the slowdown.*' \
  "brownout -> first weight change (s)"
figure health_brownout '.*brownout: backend-1 at <= 70% of its weight ([0-9.]+) s after the slowdown.*' \
  "brownout -> 30 % of the weight off (s)"
((failed == 0)) || echo "health_bench: $failed scenario run(s) failed"
exit 0
