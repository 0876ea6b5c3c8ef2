# shellcheck shell=bash
# Sourced first by every tests/e2e/*_lib.sh: the repository and build paths,
# the test's name, result reporting and the checks every e2e test makes
# before it starts (root, built binaries, installed tools). A test fails,
# never skips, when one of them is missing.
#
#   repo, BUILD (default <repo>/build), T_NAME (the script's name), FAILED
#   log MSG; fail MSG (record, go on); die MSG (fail now); check DESC CMD...
#   now; since T (seconds since `now` returned T, two decimals)
#   grep_soon [GREP-OPTION...] PATTERN FILE (a line within 2 s: audit.jsonl)
#   require_root WHY; require_built BIN... (hint in BUILT_HINT);
#   require_tools HINT TOOL...

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$repo/build}
T_NAME=$(basename "$0" .sh)
FAILED=0

# Namespaces of earlier runs that were killed before their cleanup ran.
[[ $(id -u) -eq 0 ]] && "$repo/tests/lib/reap_stale_netns.sh"

log() { printf '%s: %s\n' "$T_NAME" "$*"; }
fail() {
  printf '%s: FAIL: %s\n' "$T_NAME" "$*" >&2
  FAILED=1
}
die() {
  printf '%s: FAIL: %s\n' "$T_NAME" "$*" >&2
  exit 1
}
check() { # check DESCRIPTION CMD...: run CMD; record a failure if it fails
  local what=$1
  shift
  if "$@"; then log "ok: $what"; else fail "$what"; fi
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# grep_soon [GREP-OPTION...] PATTERN FILE: `grep -q` succeeds within 2 s
# (tried every 50 ms). For audit.jsonl: the audit log's writer thread
# writes a record a few ms after the change it records has returned.
grep_soon() {
  local i
  for ((i = 0; i < 40; i++)); do
    grep -q "$@" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

require_root() { # require_root WHAT-IT-NEEDS
  [[ $(id -u) -eq 0 ]] || die "needs root ($1); run as root"
}
require_built() { # require_built BIN...: each an executable file
  local b
  for b in "$@"; do
    [[ -x $b ]] || die "$b is not built (set BUILD= or ${BUILT_HINT:-the variable naming it})"
  done
}
require_tools() { # require_tools HINT TOOL...: each on PATH
  local hint=$1 t
  shift
  for t in "$@"; do
    command -v "$t" >/dev/null || die "$t is not installed ($hint)"
  done
}

# Under `set -e` (the *_lib.sh files set it before they source this file), a
# command of the script itself that fails outside a check ends the test:
# name it, so the test does not end without a word. (Not inherited by
# functions and command substitutions: there set -e still ends the test, but
# the failing step is the function call or the assignment.)
# Quiet while a script has turned set -e off around a command it expects to
# fail.
if [[ $- == *e* ]]; then
  trap 'errexit_rc=$?; if [[ $- == *e* ]]; then printf "%s: FAIL: line %s: \`%s\` exited %s; set -e ends the test here\n" \
    "$T_NAME" "$LINENO" "$BASH_COMMAND" "$errexit_rc" >&2; fi' ERR
fi
