#!/bin/bash
# e2e health: a backend host that stops answering (its link down: SYNs to it
# vanish), under continuous new-connection load through the VIP.
#
# A client whose SYN went to the dead host gets no SYN-ACK and retransmits
# after 1 s; the router sends that retransmission to the flow's next choice
# (timeouts.syn_retry_ms, 200 ms by default), so no new connection fails and
# none waits more than one retransmission, however long the health checks
# take to demote the host. Run twice: with the lab's fast probes (200 ms)
# and with the default probe settings (1 s probes, 1 s evaluations), where
# the demotion comes well after the clients' first retransmission. Needs
# root.
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

health_lab_up "eval_interval_ms: 200"
# SECOND_CHANCE=0 (tools/bench/health_bench.sh compares): a retransmitted SYN
# goes to the same backend again (syn_retry_ms beyond the test), and the
# checks are reported only.
if [[ ${SECOND_CHANCE:-1} == 0 ]]; then
  lbctl config get >"$WORK/noretry.txtpb"
  python3 - "$WORK/noretry.txtpb" <<'PY' || die "cannot turn the SYN retry off"
import re, sys
p = sys.argv[1]; s = open(p).read()
s = re.sub(r"global \{", "global {\n  timeouts { syn_retry_ms: 60000 syn_idle_s: 120 }", s, count=1)
open(p, "w").write(s)
PY
  lbctl config apply -f "$WORK/noretry.txtpb" >/dev/null || die "config apply without the SYN retry failed"
fi

# round NAME: be2's link down for 5 s under load, then back.
round() {
  local name=$1 t_down
  load_start "$name" 9 --workers 4 --rate 50 --timeout 3
  sleep 2
  lab exec be2 sysctl -qw net.ipv6.conf.to-router.keep_addr_on_down=1
  t_down=$(now)
  lab exec be2 ip link set dev to-router down
  if wait_weight_at_most "$VIP4_KEY" "$BE2_ADDR4" 0 6; then
    log "$name: backend-2 demoted $(since "$t_down") s after its link went down"
  else
    log "$name: backend-2 not demoted within 6 s"
  fi
  load_wait "$name"
  lab exec be2 ip link set dev to-router up
  lab exec be2 ip route replace default via "${BE2_ADDR4%.*}.1"
  lab exec be2 ip -6 route replace default via "${BE2_ADDR6%::*}::1"
  log "$name: load $LOAD_SUMMARY"
  python3 - "$LOAD_SUMMARY" "$name" "${SECOND_CHANCE:-1}" <<'PY' || FAILED=1
import json, sys
s, name = json.loads(sys.argv[1]), sys.argv[2]
e = s.get("errors", {})
new_failed = sum(n for k, n in e.items() if k in ("connect_timeout", "refused"))
inflight = s["failed"] - new_failed
ok = True
def check(cond, what):
    global ok
    print("health_hostdown: %s: %s" % ("ok" if cond else "FAIL", what))
    ok = ok and cond
check(new_failed == 0, "%s: %d failed new connections (connect timed out or refused); "
      "%d requests lost on connections already made" % (name, new_failed, inflight))
check(s.get("connect_ms_max", 0) <= 1200,
      "%s: longest connect %.0f ms (at most one SYN retransmission: <= 1200 ms); "
      "%d connects took a retransmission" % (name, s.get("connect_ms_max", 0), s.get("connects_over_1s", 0)))
sys.exit(0 if ok or sys.argv[3] == "0" else 1)
PY
  # Back in service (promoted: ramping, then healthy) once its link is back,
  # for the next round. (After the last round, with the default settings'
  # longer cooldown for a second flap, the test does not wait for it.)
  [[ $name == default ]] && return 0
  local t_up h
  t_up=$(now)
  while awk -v a="$t_up" -v n="$(now)" 'BEGIN { exit !(n - a < 25) }'; do
    h=$(field "$VIP4_KEY" "$BE2_ADDR4" health)
    [[ $h == ramping || $h == healthy ]] && break
    sleep 0.2
  done
  [[ $h == ramping || $h == healthy ]] ||
    fail "$name: backend-2 not promoted 25 s after its link came back ($h)"
  wait_state "$VIP4_KEY" "$BE2_ADDR4" healthy 30 ||
    fail "$name: backend-2 not healthy 30 s after its promotion ($(field "$VIP4_KEY" "$BE2_ADDR4" health))"
}

round fast

# The default probe settings: no interval or timeout in the probes, the
# default evaluation interval.
lbctl config get >"$WORK/default.txtpb"
sed -i -e 's/ interval_ms: [0-9]*//; s/ timeout_ms: [0-9]*//' -e '/eval_interval_ms/d' "$WORK/default.txtpb"
grep -q 'interval_ms' "$WORK/default.txtpb" && die "cannot drop the probe intervals: $(grep interval_ms "$WORK/default.txtpb" | head -3)"
lbctl config apply -f "$WORK/default.txtpb" >/dev/null || die "config apply of the default probe settings failed"
wait_state "$VIP4_KEY" "$BE1_ADDR4" healthy 20 || die "backend-1 not healthy with the default settings"
round default
health_finish
