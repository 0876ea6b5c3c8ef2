# Shared by tests/e2e/health_*.sh: the netns lab with ballast-testbackend
# servers and lbagent with health checking on (tools/lab/lab --servers
# testbackend --health: HTTP probes via the VIP every 200 ms, one evaluation
# per 200 ms), continuous load from tests/e2e/connload.py, and helpers to
# read what health checking decided.
#
# Source it, then: health_lab_up [extra health settings]; ...; the EXIT trap
# removes everything (load generators by PID, then the lab: lbagent,
# servers, namespaces, pins).
#
# Environment: LBAGENT, LBCTL, LBDP, TESTBACKEND (paths to the binaries;
# default: the build directory $BUILD, default <repo>/build).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export LBAGENT=${LBAGENT:-$BUILD/tools/lbagent/lbagent}
export LBCTL=${LBCTL:-$BUILD/tools/lbctl/lbctl}
export LBDP=${LBDP:-$BUILD/tools/lbdp/lbdp}
export TESTBACKEND=${TESTBACKEND:-$BUILD/tools/testbackend/ballast-testbackend}

PREFIX=${PREFIX:-hl$$}
LAB=("$repo/tools/lab/lab" --prefix "$PREFIX" --no-build)
PIDS=()
WORK=$(mktemp -d "/tmp/ballast-$T_NAME.XXXXXX")

require_root "network namespaces, XDP, tc, bpffs"
BUILT_HINT="LBAGENT=/LBCTL=/LBDP=/TESTBACKEND=" require_built "$LBAGENT" "$LBCTL" "$LBDP" "$TESTBACKEND"
require_tools "tools/setup.sh" ip python3 curl

health_cleanup() {
  local rc=$? pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -n ${STATE:-} && ($rc -ne 0 || $FAILED -ne 0) ]]; then
    echo "---- lbagent log (last 30 lines) ----" >&2
    tail -n 30 "$STATE/agent/lbagent.log" >&2 2>/dev/null || true
    echo "---- audit (last 40 records) ----" >&2
    lbctl audit --since 10m 2>/dev/null | tail -n 40 >&2 || true
  fi
  if [[ -n ${DEBUG_DUMP:-} ]]; then
    "${LAB[@]}" exec router "$LBDP" stats >&2 2>&1 || true
    for i in 1 2 3; do "${LAB[@]}" exec "be$i" "$LBDP" decap stats --dev to-router >&2 2>&1 || true; done
  fi
  # KEEP_AGENT_LOG=FILE: the whole log survives the lab, pass or fail
  # (sanitizer runs, timelines).
  if [[ -n ${KEEP_AGENT_LOG:-} && -n ${STATE:-} ]]; then
    cp "$STATE/agent/lbagent.log" "$KEEP_AGENT_LOG" 2>/dev/null || true
  fi
  "${LAB[@]}" down >/dev/null 2>&1 || echo "$T_NAME: warning: lab down failed" >&2
  rm -rf "$WORK"
  if ((rc == 0 && FAILED != 0)); then rc=1; fi
  exit $rc
}
trap health_cleanup EXIT
trap 'exit 130' INT TERM

lab() { "${LAB[@]}" "$@"; }
lbctl() { "$LBCTL" --socket "$SOCK" "$@"; }
knob() { # knob BACKEND_INDEX ARGS...: ballast-testbackend ctl in backend i's namespace
  local i=$1
  shift
  lab exec "be$i" "$TESTBACKEND" ctl "$@" >/dev/null
}

# health_lab_up [SETTINGS]: the lab; SETTINGS (protobuf text, e.g.
# "eval_interval_ms: 100 ramp_hold: 3") replace the lab's global.health
# settings ("eval_interval_ms: 200") through `lbctl config apply`.
health_lab_up() {
  log "lab $PREFIX up (testbackend servers, lbagent with health checking)"
  local extra=()
  # SECOND_CHANCE=0 (tools/bench/health_bench.sh): backends that do not bounce.
  [[ ${SECOND_CHANCE:-1} == 0 ]] && extra+=(--no-second-chance)
  lab --servers testbackend --health --no-traffic "${extra[@]}" up >"$WORK/lab-up.log" 2>&1 ||
    die "lab up failed: $(tail -n 20 "$WORK/lab-up.log")"
  eval "$(lab addrs)"
  if [[ -n ${1:-} ]]; then
    lbctl config get >"$WORK/config.txtpb"
    sed -i "s/eval_interval_ms: 200/$1/" "$WORK/config.txtpb"
    grep -q "$1" "$WORK/config.txtpb" || die "cannot set health settings '$1' in: $(cat "$WORK/config.txtpb")"
    lbctl config apply -f "$WORK/config.txtpb" >/dev/null || die "config apply of health settings '$1' failed"
  fi
  wait_state "$VIP4_KEY" "$BE1_ADDR4" healthy 10 || die "backend-1 not healthy 10 s after start"
}

# field VIP ADDR FIELD: a field of a backend in `lbctl --json status`.
field() {
  lbctl --json status | python3 -c '
import json, sys
vip, addr, field = sys.argv[1:4]
for v in json.load(sys.stdin).get("vips", []):
    k = v["key"]; a = k["address"]
    text = ("[%s]" % a if ":" in a else a) + ":%s/%s" % (k.get("port", 0), k["protocol"].lower())
    if text != vip: continue
    if field == "frozen":
        print(str(v.get("frozen", False)).lower()); sys.exit(0)
    for b in v.get("backends", []):
        if b["address"] == addr:
            for part in field.split("."):  # counters.refusedSyns
                b = b.get(part, "") if isinstance(b, dict) else ""
            print(b); sys.exit(0)
print("missing")' "$1" "$2" "$3"
}

# wait_state VIP ADDR STATE SECONDS: poll until the backend's health state is
# STATE; 0 when reached (prints nothing), 1 after SECONDS.
wait_state() {
  local deadline
  deadline=$(awk -v s="$4" -v n="$(now)" 'BEGIN { printf "%.3f", n + s }')
  while awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }'; do
    [[ $(field "$1" "$2" health) == "$3" ]] && return 0
    sleep 0.05
  done
  return 1
}

# wait_weight_at_most VIP ADDR W SECONDS: until effectiveWeight <= W.
wait_weight_at_most() {
  local deadline w
  deadline=$(awk -v s="$4" -v n="$(now)" 'BEGIN { printf "%.3f", n + s }')
  while awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }'; do
    w=$(field "$1" "$2" effectiveWeight)
    [[ $w =~ ^[0-9]+$ ]] && ((w <= $3)) && return 0
    sleep 0.05
  done
  return 1
}

# unwell ADDR...: "<count> <what>" of the listed backends (on any VIP) not
# healthy, and of frozen pools, in one status read.
unwell() {
  lbctl --json status | python3 -c '
import json, sys
want = set(sys.argv[1:])
bad = []
for v in json.load(sys.stdin).get("vips", []):
    if v.get("frozen", False):
        bad.append("%s frozen" % v["key"]["address"])
    for b in v.get("backends", []):
        if b["address"] in want and b.get("health") != "healthy":
            bad.append("%s %s" % (b["address"], b.get("health")))
print(len(bad), "; ".join(bad))' "$@"
}

# hold_healthy SECONDS ADDR...: samples `unwell ADDR...` every 0.1 s for
# SECONDS, logging what was unwell; sets HOLD_BAD (samples with something
# unwell) and HOLD_SAMPLES.
hold_healthy() {
  local secs=$1 t0 n what
  shift
  HOLD_BAD=0 HOLD_SAMPLES=0 t0=$(now)
  while awk -v a="$t0" -v n="$(now)" -v s="$secs" 'BEGIN { exit !(n - a < s) }'; do
    read -r n what < <(unwell "$@")
    ((n == 0)) || { HOLD_BAD=$((HOLD_BAD + 1)); log "  $what"; }
    HOLD_SAMPLES=$((HOLD_SAMPLES + 1))
    sleep 0.1
  done
}

# load_start NAME SECONDS [ARGS...]: connload from the client namespace in the
# background (fresh connection per request unless --keepalive is given).
load_start() {
  local name=$1 secs=$2
  shift 2
  lab exec client python3 "$repo/tests/e2e/connload.py" --addr "$VIP4" --seconds "$secs" \
    --log "$WORK/$name.log" "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" &
  PIDS+=("$!")
  eval "LOAD_PID_$name=$!"
}
# load_wait NAME: waits for it (not in a subshell: `wait` needs the parent);
# its summary JSON is then in $LOAD_SUMMARY.
load_wait() {
  local v="LOAD_PID_$1"
  wait "${!v}" || true
  [[ -s $WORK/$1.json ]] || die "load generator $1 failed: $(head -c 600 "$WORK/$1.err")"
  LOAD_SUMMARY=$(cat "$WORK/$1.json")
}

# audit_actions ACTION [BACKEND]: audit records (last 10 min) of ACTION, as
# "<unix ms> <vip> <backend>" lines; with AUDIT_INPUTS=1, each line ends with
# the record's inputs JSON (the observations behind it).
audit_actions() {
  lbctl --json audit --since 10m | AUDIT_INPUTS=${AUDIT_INPUTS:-0} python3 -c '
import json, os, sys
action = sys.argv[1]; backend = sys.argv[2] if len(sys.argv) > 2 else None
for r in json.load(sys.stdin).get("records", []):
    if r["action"] == action and (backend is None or r.get("backend") == backend):
        row = [r["unixMs"], r.get("vip", ""), r.get("backend", "") or "-"]
        if os.environ["AUDIT_INPUTS"] == "1": row.append(r.get("inputsJson", ""))
        print(*row)' "$@"
}

# audit_inputs ACTION: audit_actions with each record's inputs: what a failing
# test prints about a freeze or a demotion it did not expect.
audit_inputs() { AUDIT_INPUTS=1 audit_actions "$1"; }

# log_dataplane_counters: what the router and each backend's decap counted
# (verdicts, bounces, SYNs refused, RSTs held): for a failure, which host
# answered a SYN with a RST, and why.
log_dataplane_counters() {
  local i
  log "router: $(lab exec router "$LBDP" stats 2>&1 | grep -vE '^\s*[a-z_0-9]+\s+0$' | tr -s ' ' | tr '\n' ';')"
  for i in 1 2 3; do
    log "backend-$i decap: $(lab exec "be$i" "$LBDP" decap stats --dev to-router 2>&1 | tr -s ' ' | tr '\n' ';')"
  done
}

health_finish() {
  if ((FAILED)); then
    log "FAILED"
    exit 1
  fi
  log "PASS"
}

# health_relearn [SED_EXPR]: the health logic forgets everything it learned
# (baselines, streaks, flaps): health checking is switched off by a config
# without the health block, then the current config (edited by SED_EXPR, e.g.
# "s/weight: [0-9]*/weight: 100/") is applied again. For a test that changes
# the backends' normal (a base delay) after start: a baseline is learned in
# its first intervals and then, by design, barely moves while anomalous.
health_relearn() {
  local deadline
  lbctl config get >"$WORK/relearn.txtpb"
  if [[ -n ${1:-} ]]; then sed -i "$1" "$WORK/relearn.txtpb"; fi
  python3 - "$WORK/relearn.txtpb" >"$WORK/relearn-off.txtpb" <<'PY'
import sys
out, depth = [], None
for line in open(sys.argv[1]):
    s = line.strip()
    if depth is None and s == "health {":
        depth = 1
        continue
    if depth is not None:
        depth += s.count("{") - s.count("}")
        if depth <= 0:
            depth = None
        continue
    out.append(line)
sys.stdout.write("".join(out))
PY
  lbctl config apply -f "$WORK/relearn-off.txtpb" >/dev/null || die "config apply without health failed"
  deadline=$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 5 }')
  until [[ -z $(field "$VIP4_KEY" "$BE1_ADDR4" health) ]]; do
    awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }' ||
      die "health checking still on 5 s after a config without it"
    sleep 0.05
  done
  lbctl config apply -f "$WORK/relearn.txtpb" >/dev/null || die "config apply of $WORK/relearn.txtpb failed"
  wait_state "$VIP4_KEY" "$BE1_ADDR4" healthy 10 || die "backend-1 not healthy 10 s after health checking came back"
}
