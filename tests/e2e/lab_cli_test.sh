#!/bin/bash
# e2e: the labs' command lines as README.md and tools/lab/README.md use them.
#
#  (a) `lab exec be2 ballast-testbackend ctl set delay_ms=300` (README) runs
#      the build's ballast-testbackend inside backend 2's namespace and sets
#      the knob (`ctl show` says delay_ms 300; before: exit 127, not on the
#      namespace's PATH);
#  (b) `lab down` removes everything it made without a warning (exit 0,
#      nothing on stderr; before: "lbctl teardown failed" every time), the
#      namespaces and the state directory gone;
#  (c) `ecmp withdraw r1 --prefix X`: an option after the command names the
#      lab: X not up is refused, naming X, and the default lab ($ECMP_PREFIX)
#      is left alone; X up gets the hold file, the default lab does not; an
#      option the command does not take is refused (before: the options after
#      the command were ignored and the default lab withdrew). Two fake ECMP
#      labs (a lab.conf and the router directories: all `withdraw` reads), no
#      namespaces.
#
# Its own lab prefix (PID), removed on exit by trap. Needs root (netns, XDP,
# bpffs); fails with the reason otherwise. LAB and ECMP may name other copies
# of the scripts (to run this against an older one).
set -uo pipefail

if [[ $(id -u) -ne 0 ]]; then
  echo "lab_cli: needs root: network namespaces, XDP, bpffs (run the tests as root)" >&2
  exit 1
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LAB=${LAB:-$repo/tools/lab/lab}
ECMP=${ECMP:-$repo/tools/lab/ecmp}
export LBDP=${LBDP:-$repo/build/tools/lbdp/lbdp}
export LBAGENT=${LBAGENT:-$repo/build/tools/lbagent/lbagent}
export LBCTL=${LBCTL:-$repo/build/tools/lbctl/lbctl}
export TESTBACKEND=${TESTBACKEND:-$repo/build/tools/testbackend/ballast-testbackend}
prefix=blc$$
ecmp_a=/run/ballast-lab/elc$$a
ecmp_b=/run/ballast-lab/elc$$b
work=$(mktemp -d /tmp/ballast-lab-cli.XXXXXX)
failures=0
pass() { printf 'lab_cli: PASS %s\n' "$*"; }
fail() { printf 'lab_cli: FAIL %s\n' "$*"; failures=$((failures + 1)); }
check() { # check DESC CMD...
  local desc=$1
  shift
  if "$@"; then pass "$desc"; else fail "$desc"; fi
}
cleanup() {
  local rc=$?
  "$LAB" --prefix "$prefix" down >/dev/null 2>&1 || echo "lab_cli: warning: lab down failed for $prefix" >&2
  rm -rf "$ecmp_a" "$ecmp_b" "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for b in "$LBDP" "$LBAGENT" "$LBCTL" "$TESTBACKEND"; do
  [[ -x $b ]] || { echo "lab_cli: $b is not built (tools/build.sh)"; exit 1; }
done

# ---- (c) ecmp: options after the command ------------------------------------------
fake_ecmp() { # DIR: a lab `withdraw` can act on
  mkdir -p "$1/r1" "$1/r2"
  printf 'prefix=%s\nrouters=2\nbackends=3\nmode=native\nactive_standby=0\nbfd=1\nestablished_second_chance_off=0\n' \
    "$(basename "$1")" >"$1/lab.conf"
}
fake_ecmp "$ecmp_a"
export ECMP_PREFIX=${ecmp_a##*/}
"$ECMP" withdraw r1 --prefix "${ecmp_b##*/}" >"$work/c1.out" 2>&1
rc=$?
check "ecmp withdraw r1 --prefix X (X not up) is refused (exit $rc): $(tail -n 1 "$work/c1.out")" \
  test "$rc" -ne 0
check "... naming lab X" grep -q "lab '${ecmp_b##*/}' is not up" "$work/c1.out"
check "... and the default lab did not withdraw" test ! -e "$ecmp_a/r1/bgp-hold"
fake_ecmp "$ecmp_b"
"$ECMP" withdraw r1 --prefix "${ecmp_b##*/}" >"$work/c2.out" 2>&1
rc=$?
check "ecmp withdraw r1 --prefix X (X up) acts on X (exit $rc): $(tail -n 1 "$work/c2.out")" \
  test "$rc" -eq 0 -a -e "$ecmp_b/r1/bgp-hold"
check "... not on the default lab" test ! -e "$ecmp_a/r1/bgp-hold"
"$ECMP" announce r1 --prefix "${ecmp_b##*/}" >/dev/null 2>&1
check "ecmp announce r1 --prefix X removes X's hold file" test ! -e "$ecmp_b/r1/bgp-hold"
"$ECMP" withdraw r1 --routers 3 >"$work/c3.out" 2>&1
rc=$?
check "an option withdraw does not take is refused (exit $rc): $(tail -n 1 "$work/c3.out")" \
  test "$rc" -ne 0 -a ! -e "$ecmp_a/r1/bgp-hold"
unset ECMP_PREFIX

# ---- (a) lab exec with the build's programs ------------------------------------------
if ! "$LAB" --prefix "$prefix" --no-build --no-traffic --servers testbackend up >"$work/up.log" 2>&1; then
  tail -n 20 "$work/up.log"
  echo "lab_cli: lab up failed"
  exit 1
fi
"$LAB" --prefix "$prefix" exec be2 ballast-testbackend ctl set delay_ms=300 >"$work/a.out" 2>&1
rc=$?
check "lab exec be2 ballast-testbackend ctl set delay_ms=300: exit $rc (127: not found) $(head -c 200 "$work/a.out")" \
  test "$rc" -eq 0
"$LAB" --prefix "$prefix" exec be2 ballast-testbackend ctl show >"$work/a2.out" 2>&1
check "... backend 2's knobs say delay_ms 300: $(tr -d '\n' <"$work/a2.out" | head -c 200)" \
  grep -Eq '"delay_ms": *300' "$work/a2.out"
"$LAB" --prefix "$prefix" exec be2 ballast-testbackend ctl clear >/dev/null 2>&1
check "lab exec also runs lbdp there" \
  "$LAB" --prefix "$prefix" exec be1 lbdp --version

# ---- (b) lab down without a warning --------------------------------------------------
"$LAB" --prefix "$prefix" down >"$work/down.out" 2>"$work/down.err"
rc=$?
check "lab down: exit $rc" test "$rc" -eq 0
check "lab down: nothing on stderr ($(head -c 300 "$work/down.err"))" test ! -s "$work/down.err"
check "lab down: the namespaces are gone" \
  bash -c "! ip netns list | grep -q '^$prefix-'"
check "lab down: the state directory is gone" test ! -e "/run/ballast-lab/$prefix"

((failures == 0)) || { echo "lab_cli: $failures check(s) failed"; exit 1; }
echo "lab_cli: every check passed"
