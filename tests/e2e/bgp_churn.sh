#!/bin/bash
# Router churn costs no connection: a table change followed by a router
# change, with long-lived connections established on the old table.
#
# The ECMP lab with 3 routers and 4 backend hosts (the VIPs start with be1..3,
# weight 4 each: the baseline). For each sequence, CONNS IPv4 and CONNS IPv6
# connections (default 300 each), each sending a line every 200 ms, are
# established through the tor's ECMP route; then
#   1. a table change, applied with lbctl on r1, r2, r3 in that order, both
#      VIPs (the same commands everywhere, including a router that is
#      withdrawn at the time):
#        halved    be1's weight 4 -> 2
#        added     be4 added (weight 4)
#        drained   be1 drained, deadline 1 h (far beyond the test)
#        weights3  be1 -> 2, be2 -> 6, be3 -> 3, each rolled over all routers
#   2. ~1 s later, a router change on router R (r1, r2, r3 in turn):
#        withdrawn R withdraws (ecmp withdraw: operator hold)
#        joining   R was withdrawn before the connections started (it got the
#                  table change all the same) and announces now
#        agent     R's lbagent stops (SIGTERM: withdraws, exits) and, once the
#                  tor has moved, starts again
#        dead      R's host dies (ecmp kill-host: processes stopped, its port
#                  silent; BFD takes it out of the tor's ECMP group)
#   3. the connections run on RUN_AFTER_S (3 s) after the tor's routes settle,
#      then stop and are counted.
# Between sequences the router is brought back (announce, revive-host) and the
# table restored (the inverse lbctl commands on every router); every router's
# `lbctl config get` must then equal the baseline again.
#
# Phase "on" (the agents' defaults: established second chance on) asserts per
# sequence: every connection established before the table change, 0 resets,
# 0 timeouts, 0 errors, every connection alive to the end and still on the
# backend it started on, no gap between two answers over GAP_MAX_S (1 s).
# Phase "off" (a fresh lab, `ecmp up --no-established-second-chance`) shows
# that the same sequences reset connections without the mechanism: each must
# have resets (the fraction is logged). It runs a subset (CHURN_OFF_SEQS, by
# default one sequence per table change and per router change) to keep the
# test within about 6 minutes on 2 cores.
#
# Environment: CHURN_PHASES ("on off"), CHURN_CONNS (300 per family),
# CHURN_ON_SEQS / CHURN_OFF_SEQS (TABLE:ROUTER words), CHURN_OFF_SWITCH (the
# off lab's `ecmp up` option, default --no-established-second-chance; set it
# empty to run "off" on a build without the mechanism). Figures: `figure:`
# lines. Failures name the phase and sequence, the counts, the first failed
# connections and each router's verdict counters over the sequence.
source "$(dirname "$0")/bgp_lib.sh"

CONNS=${CHURN_CONNS:-300}
INTERVAL=0.2
RUN_AFTER_S=3
GAP_MAX_S=1.0
SETTLE_S=15
PHASES=${CHURN_PHASES:-on off}
OFF_SWITCH=${CHURN_OFF_SWITCH---no-established-second-chance}
TABLE_CHANGES=(halved added drained weights3)
ROUTER_CHANGES=(withdrawn joining agent dead)
ON_SEQS=${CHURN_ON_SEQS:-}
if [[ -z $ON_SEQS ]]; then
  for t in "${TABLE_CHANGES[@]}"; do for rc in "${ROUTER_CHANGES[@]}"; do ON_SEQS+=" $t:$rc"; done; done
fi
OFF_SEQS=${CHURN_OFF_SEQS:-halved:withdrawn added:joining drained:agent weights3:dead}
[[ $CONNS =~ ^[0-9]+$ ]] && ((CONNS >= 1 && CONNS <= 400)) || die "CHURN_CONNS must be 1..400"

ROUTERS=(r1 r2 r3)
V4="$VIP4:80/tcp"
V6="[$VIP6]:80/tcp"
CLIENT4=198.18.2.2
CLIENT6=2001:db8:2::2
be4() { echo "198.18.3$1.2"; }
be6() { echo "2001:db8:3$1::2"; }
T0=$(now)
WORK=$(mktemp -d /tmp/bgp_churn.XXXXXX)  # removed on exit (bgp_lib.sh)

# lbctl_at ROUTER ARGS...: lbctl on that router's socket (bounded: a stopped
# agent would never answer).
lbctl_at() { local r=$1; shift; timeout 20 "$LBCTL" --socket "$STATE/$r/lbagent.sock" "$@"; }
# lb_all ACTION J [ARGS...]: `lbctl backend ACTION VIP be<J> ARGS` for both
# VIPs, on r1, r2, r3 in that order.
lb_all() {
  local action=$1 j=$2 r out
  shift 2
  for r in "${ROUTERS[@]}"; do
    out=$(lbctl_at "$r" backend "$action" "$V4" "$(be4 "$j")" "$@" 2>&1) || die "$r: lbctl backend $action $V4 $(be4 "$j") $*: $out"
    out=$(lbctl_at "$r" backend "$action" "$V6" "$(be6 "$j")" "$@" 2>&1) || die "$r: lbctl backend $action $V6 $(be6 "$j") $*: $out"
  done
}

table_change() {
  case $1 in
    halved) lb_all weight 1 2 ;;
    added) lb_all add 4 --weight 4 ;;
    drained) lb_all drain 1 --deadline 3600s ;;
    weights3) lb_all weight 1 2; sleep 0.3; lb_all weight 2 6; sleep 0.3; lb_all weight 3 3 ;;
  esac
}
table_restore() {
  case $1 in
    halved) lb_all weight 1 4 ;;
    added) lb_all del 4 ;;
    drained) lb_all undrain 1 ;;
    weights3) lb_all weight 1 4; lb_all weight 2 4; lb_all weight 3 4 ;;
  esac
}

# config_of ROUTER: its VIPs and backends (lbctl config get without the
# global section, whose addresses are the router's own).
config_of() { lbctl_at "$1" config get | sed '/^global {/,/^}/d'; }
# same_as_baseline: every router's config is the baseline's; names the others.
same_as_baseline() {
  local r ok=0
  for r in "${ROUTERS[@]}"; do
    if ! config_of "$r" | diff -q "$WORK/baseline.conf" - >/dev/null; then
      fail "$r's config differs from the baseline: $(config_of "$r" | diff "$WORK/baseline.conf" - | head -n 8 | tr '\n' ' ')"
      ok=1
    fi
  done
  return "$ok"
}

# settle N WHAT: waits for both VIP routes at N nexthops; logs the time.
settle() {
  local ms
  if ms=$(wait_nexthops "$1" "$SETTLE_S"); then
    log "  $2: tor at $1 nexthops after $ms ms"
  else
    fail "$2: the tor's VIP routes are not at $1 nexthops after $SETTLE_S s (now $(nexthops 4)/$(nexthops 6)): $(tor_route 4 | tr -s ' \n' ' ')"
    return 1
  fi
}

router_before() {  # router_before CHANGE R: the router's state before the connections
  [[ $1 == joining ]] || return 0
  ecmp withdraw "$2" >/dev/null
  settle 2 "$2 withdrawn beforehand"
}
router_change() {
  local r=$2
  case $1 in
    withdrawn) ecmp withdraw "$r" >/dev/null; settle 2 "$r withdrawn" ;;
    joining) ecmp announce "$r" >/dev/null; settle 3 "$r joined" ;;
    agent)
      ecmp stop-agent "$r" >/dev/null
      settle 2 "$r's agent stopped"
      sleep 1
      ecmp start-agent "$r" >/dev/null
      settle 3 "$r's agent started"
      ;;
    dead)
      ecmp kill-host "$r" --no-wait >/dev/null
      settle 2 "$r dead"
      if route_via 4 "$r" || route_via 6 "$r"; then fail "$r dead: the tor still routes to it"; fi
      ;;
  esac
}
router_restore() {
  local r=$2
  case $1 in
    withdrawn) ecmp announce "$r" >/dev/null ;;
    dead) ecmp revive-host "$r" --no-wait >/dev/null ;;
  esac
  settle 3 "$r back" || die "cannot bring $r back: the next sequences would run on a different lab"
}

# verdicts ROUTER: "VERDICT COUNT" lines of its data plane (metrics).
verdicts() {
  ip netns exec "$PREFIX-$1" curl -s --max-time 3 http://127.0.0.1:9580/metrics |
    sed -n 's/^ballast_verdict_packets_total{verdict="\([^"]*\)"} \([0-9]*\)$/\1 \2/p'
}
# verdict_deltas ROUTER TAG: the counters that moved since $WORK/TAG.ROUTER.v0.
verdict_deltas() {
  verdicts "$1" >"$WORK/$2.$1.v1"
  awk 'NR == FNR { a[$1] = $2; next } $2 != a[$1] { printf " %s +%d", $1, $2 - a[$1] }' \
    "$WORK/$2.$1.v0" "$WORK/$2.$1.v1"
}

H4=""
H6=""
hold_start() {  # hold_start TAG PORT_BASE
  local tag=$1 base=$2
  rm -f "$WORK/$tag".hold* "$WORK/$tag".ready*
  ip netns exec "$PREFIX-client" python3 "$FLOWS" hold --addr "$VIP4" --src "$CLIENT4" --conns "$CONNS" \
    --port-base "$base" --interval "$INTERVAL" --seconds 90 --ready-file "$WORK/$tag.ready4" \
    >"$WORK/$tag.hold4.json" 2>"$WORK/$tag.hold4.err" &
  H4=$!
  PIDS+=("$H4")
  ip netns exec "$PREFIX-client" python3 "$FLOWS" hold --addr "$VIP6" --src "$CLIENT6" --conns "$CONNS" \
    --port-base "$base" --interval "$INTERVAL" --seconds 90 --ready-file "$WORK/$tag.ready6" \
    >"$WORK/$tag.hold6.json" 2>"$WORK/$tag.hold6.err" &
  H6=$!
  PIDS+=("$H6")
}
hold_ready() {  # hold_ready TAG: both clients established (or failed) every connection
  local tag=$1 n
  for ((n = 0; n < 300; n++)); do
    [[ -f $WORK/$tag.ready4 && -f $WORK/$tag.ready6 ]] && break
    sleep 0.1
  done
  [[ -f $WORK/$tag.ready4 && -f $WORK/$tag.ready6 ]] || { fail "$tag: connections not established within 30 s"; return 1; }
  log "  connections: IPv4 $(cat "$WORK/$tag.ready4"), IPv6 $(cat "$WORK/$tag.ready6")"
  grep -q "\"connected\": $CONNS," "$WORK/$tag.ready4" && grep -q "\"connected\": $CONNS," "$WORK/$tag.ready6" ||
    fail "$tag: not every connection was established before the table change"
}
hold_stop() {  # hold_stop TAG: SIGTERM, then their JSON
  local tag=$1 p rc=0
  kill -TERM "$H4" "$H6" 2>/dev/null || true
  for p in "$H4" "$H6"; do wait "$p" || rc=$?; done
  PIDS=()
  ((rc == 0)) || fail "$tag: a hold client exited $rc: $(tail -n 3 "$WORK/$tag".hold*.err | tr '\n' ' ')"
}

RESULTS=()
K=0
# run_seq PHASE TABLE ROUTER_CHANGE R
run_seq() {
  local phase=$1 tc=$2 rc=$3 r=$4 tag base t_table t_router sum r2 deltas
  tag=$phase-$tc-$rc
  base=$((10000 + K * CONNS))
  K=$((K + 1))
  log "---- $phase: $tc, then $rc on $r (client ports $base-$((base + CONNS - 1)))"
  router_before "$rc" "$r"
  for r2 in "${ROUTERS[@]}"; do verdicts "$r2" >"$WORK/$tag.$r2.v0"; done
  hold_start "$tag" "$base"
  hold_ready "$tag"
  sleep 1
  t_table=$(date +%s.%N)
  table_change "$tc"
  log "  table change '$tc' applied on ${ROUTERS[*]} in $(awk -v a="$t_table" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
  sleep 1
  t_router=$(date +%s.%N)
  router_change "$rc" "$r"
  sleep "$RUN_AFTER_S"
  hold_stop "$tag"
  router_restore "$rc" "$r"
  deltas=""
  for r2 in "${ROUTERS[@]}"; do deltas+=" $r2:$(verdict_deltas "$r2" "$tag");"; done
  sum=$(python3 "$FLOWS" summary --table-at "$t_table" --router-at "$t_router" \
    "$WORK/$tag.hold4.json" "$WORK/$tag.hold6.json" 2>"$WORK/$tag.detail")
  # Sets conns, alive_to_end, failed, resets, timeouts, errors, moved,
  # backend_changes, max_gap_s, answers, failed_before_table,
  # failed_after_table, failed_after_router, started_on.
  local conns alive_to_end failed resets timeouts errors moved backend_changes max_gap_s answers
  local failed_before_table failed_after_table failed_after_router started_on
  eval "$sum"
  local pct bad=""
  ((answers > 0)) || bad+=" no answer at all;"
  pct=$(awk -v f="$failed" -v c="$conns" 'BEGIN { printf "%.1f", c ? 100 * f / c : 0 }')
  log "figure: $phase $tc+$rc ($r): $conns connections, $failed failed ($pct%: resets $resets, timeouts $timeouts, errors $errors; before the table change $failed_before_table, after it $failed_after_table, after the router change $failed_after_router), moved $moved, longest gap ${max_gap_s} s, started on $started_on"
  RESULTS+=("$phase $tc+$rc: failed $failed/$conns ($pct%), resets $resets, longest gap ${max_gap_s} s")
  if [[ $phase == on ]]; then
    ((conns == 2 * CONNS)) || bad+=" $conns connections of $((2 * CONNS));"
    ((resets == 0)) || bad+=" $resets resets;"
    ((timeouts == 0)) || bad+=" $timeouts timeouts;"
    ((errors == 0)) || bad+=" $errors errors;"
    ((alive_to_end == conns)) || bad+=" $((conns - alive_to_end)) not alive to the end;"
    ((moved == 0 && backend_changes == 0)) || bad+=" $moved ended on another backend;"
    awk -v g="$max_gap_s" -v m="$GAP_MAX_S" 'BEGIN { exit !(g <= m) }' || bad+=" longest gap $max_gap_s s > $GAP_MAX_S s;"
  else
    ((resets > 0)) || bad+=" no reset without the mechanism (expected some: the sequence does not reproduce the problem);"
  fi
  if [[ -n $bad ]]; then
    fail "$phase $tc+$rc on $r:$bad"
    sed "s/^/$T_NAME:   /" "$WORK/$tag.detail" >&2
    log "  verdicts over the sequence:$deltas"
  else
    log "  ok: $phase $tc+$rc ($([[ $phase == on ]] && echo "no connection lost, moved or stalled" || echo "$resets resets reproduced"))"
    log "  verdicts over the sequence:$deltas"
  fi
  table_restore "$tc"
  same_as_baseline || die "the table could not be restored after $tag"
}

# baseline: be1..3 at weight 4 (be4 is the lab's spare); the same on every
# router.
baseline() {
  lb_all weight 1 4
  lb_all weight 2 4
  lb_all weight 3 4
  config_of r1 >"$WORK/baseline.conf"
  same_as_baseline || die "the routers' configs differ at the baseline"
}

for phase in $PHASES; do
  case $phase in
    on) opts=(); seqs=$ON_SEQS ;;
    off) read -r -a opts <<<"$OFF_SWITCH"; seqs=$OFF_SEQS ;;
    *) die "CHURN_PHASES: unknown phase '$phase' (on, off)" ;;
  esac
  log "==== phase $phase: lab with 3 routers, 4 backends${opts[*]:+, ${opts[*]}} ($(since "$T0") s since start)"
  ecmp up --routers 3 --backends 4 "${opts[@]}" >"$WORK/up.log" 2>&1 || {
    sed "s/^/$T_NAME: /" "$WORK/up.log" >&2
    if [[ $phase == off && " ${opts[*]} " == *" --no-established-second-chance "* ]]; then
      die "the off lab did not come up: does this lbagent know no_established_second_chance? (CHURN_OFF_SWITCH= runs 'off' on a build without the mechanism)"
    fi
    die "the $phase lab did not come up"
  }
  rm -f "$WORK/up.log"
  baseline
  i=0
  for seq in $seqs; do
    tc=${seq%%:*}
    rc=${seq#*:}
    [[ " ${TABLE_CHANGES[*]} " == *" $tc "* && " ${ROUTER_CHANGES[*]} " == *" $rc "* ]] || die "unknown sequence '$seq'"
    run_seq "$phase" "$tc" "$rc" "${ROUTERS[i % 3]}"
    i=$((i + 1))
  done
  log "==== phase $phase done ($(since "$T0") s since start)"
done
log "summary:"
for line in "${RESULTS[@]}"; do log "  $line"; done
