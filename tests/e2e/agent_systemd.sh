#!/bin/bash
# e2e: lbagent under systemd's service protocol (Type=notify, WatchdogSec=),
# with a datagram socket standing where systemd's would ($NOTIFY_SOCKET) and
# WATCHDOG_USEC=1000000 (WatchdogSec=1s). Expected:
#   - READY=1 once it serves: after its "running" log line (the admin socket
#     listens), with the XDP program attached and lbctl answering;
#   - WATCHDOG=1 every half interval, no gap longer than the interval;
#   - a stopped agent (SIGSTOP: what a hang looks like from outside) sends
#     no ping, so systemd would restart it; pings resume after SIGCONT;
#   - SIGHUP: RELOADING=1, then READY=1 again; a changed `initial` is
#     applied (audited as the reload's), a bad one refused with the field
#     named and nothing changed, a change that needs a restart named;
#   - SIGTERM: STOPPING=1 with the reason.
source "$(dirname "$0")/agent_lib.sh"

agent_lab_up
NOTIFY_LOG=$AGENT_DIR/notify.log
export NOTIFY_SOCKET=$AGENT_DIR/notify.sock
# The listener: one line per message, "<unix time> <message with | for
# newlines>"; it ends by itself after 120 s.
python3 - "$NOTIFY_SOCKET" "$NOTIFY_LOG" <<'PY' &
import os, socket, sys, time
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(0.5)
end = time.time() + 120
with open(out, "a", buffering=1) as f:
    while time.time() < end:
        try:
            m = s.recv(4096)
        except socket.timeout:
            continue
        f.write("%.6f %s\n" % (time.time(), m.decode(errors="replace").replace("\n", "|")))
PY
PIDS+=("$!")
for ((n = 0; n < 50; n++)); do [[ -S $NOTIFY_SOCKET ]] && break; sleep 0.1; done
[[ -S $NOTIFY_SOCKET ]] || die "the notification listener did not start"

export WATCHDOG_USEC=1000000
agent_start
unset NOTIFY_SOCKET WATCHDOG_USEC

# ---- READY=1 --------------------------------------------------------------------------------
for ((n = 0; n < 50; n++)); do grep -q ' READY=1' "$NOTIFY_LOG" && break; sleep 0.1; done
ready=$(grep ' READY=1' "$NOTIFY_LOG" | head -n 1)
log "first notification: $(head -n 1 "$NOTIFY_LOG")"
check "READY=1 sent, with a status (${ready#* })" grep -q ' READY=1|STATUS=serving 2 VIPs' "$NOTIFY_LOG"
running_ms=$(python3 -c '
import datetime, json, sys
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("msg") == "running":
        t = datetime.datetime.strptime(r["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        print(int(t.timestamp() * 1000)); break' "$AGENT_DIR/agent.log")
ready_ms=$(awk '{ printf "%.0f", $1 * 1000 }' <<<"$ready")
check "READY=1 ($ready_ms) not before the agent serves (running: $running_ms)" \
  test -n "$running_ms" -a -n "$ready_ms" -a "$ready_ms" -ge "$running_ms"
check "the XDP program is attached when READY=1 has been sent" test -n "$(prog_id)"
status_quiet() { lbctl status >/dev/null; }
check "lbctl answers" status_quiet

# ---- the watchdog ---------------------------------------------------------------------------
# gaps FROM TO: pings between two unix times, and the widest gap between
# consecutive ones (also from FROM to the first and from the last to TO).
gaps() {
  awk -v a="$1" -v b="$2" '$2 == "WATCHDOG=1" && $1 >= a && $1 <= b { n++; if ($1 - p > g) g = $1 - p; p = $1 }
    BEGIN { p = a } END { if (b - p > g) g = b - p; printf "%d %.2f\n", n, g }' "$NOTIFY_LOG"
}
t0=$(now)
sleep 3
read -r pings widest < <(gaps "$t0" "$(now)")
check "watchdog: $pings pings in 3 s, widest gap $widest s (interval 1 s, a ping every 0.5 s)" \
  awk -v n="$pings" -v g="$widest" 'BEGIN { exit !(n >= 4 && g <= 1.0) }'

t_stop=$(now)
kill -STOP "$AGENT_PID"
sleep 2
t_cont=$(now)
kill -CONT "$AGENT_PID"
read -r pings widest < <(gaps "$(awk -v a="$t_stop" 'BEGIN { printf "%.6f", a + 0.05 }')" "$t_cont")
check "watchdog: no ping while stopped ($pings in 2 s): systemd would restart the agent" test "$pings" = 0
sleep 1.5
read -r pings widest < <(gaps "$t_cont" "$(now)")
check "watchdog: pings resume after SIGCONT ($pings in 1.5 s)" test "$pings" -ge 2

# ---- reload and stop ------------------------------------------------------------------------
# reload: SIGHUP, then, once the READY=1 that follows came, the
# notifications since (the watchdog's aside), one per line.
reload() {
  local t n
  t=$(now)
  kill -HUP "$AGENT_PID"
  for ((n = 0; n < 30; n++)); do
    awk -v a="$t" '$1 >= a && $2 ~ /^READY=1/' "$NOTIFY_LOG" | grep -q . && break
    sleep 0.1
  done
  awk -v a="$t" '$1 >= a && $2 != "WATCHDOG=1" { sub(/^[^ ]* /, ""); print }' "$NOTIFY_LOG"
}
# status_of NOTIFICATIONS: the STATUS of the READY=1 among them.
status_of() { grep -m 1 '^READY=1' <<<"$1" | sed 's/^READY=1|STATUS=//'; }
seq=$(reload | cut -d'|' -f1 | tr '\n' ' ')
check "SIGHUP: RELOADING=1, then READY=1 (got: $seq)" test "$seq" = "RELOADING=1 READY=1 "

conf=$AGENT_DIR/lbagent.conf
weight() { backend_field "$VIP4:$VIP_PORT/tcp" "$BE1_ADDR4" nominalWeight; }
sed -i "s/address: \"$BE1_ADDR4\" weight: 1/address: \"$BE1_ADDR4\" weight: 3/" "$conf"
st=$(status_of "$(reload)")
log "reload with initial changed: $st"
check "SIGHUP applies a changed initial (backend-1 weight $(weight))" test "$(weight)" = 3
check "the status line says so" grep -q 'initial applied' <<<"$st"
check "audited as the reload's change" grep_soon '"actor":"operator:reload:' "$AGENT_DIR/audit.jsonl"
cp "$conf" "$conf.good"
sed -i "0,/name: \"web4\"/s//name: \"web4\"\n    table_size: 4/" "$conf"
st=$(status_of "$(reload)")
log "reload with a bad initial: $st"
check "a bad initial is refused with the field named" grep -q 'reload refused: .*initial\.vips\[0\]\.table_size' <<<"$st"
check "and nothing changed (weight $(weight))" test "$(weight)" = 3
cp "$conf.good" "$conf"
sed -i 's/^metrics_listen: .*/metrics_listen: "127.0.0.1:9581"/' "$conf"
st=$(status_of "$(reload)")
log "reload with metrics_listen changed: $st"
check "a change that needs a restart is named" grep -q 'at the next start: metrics_listen' <<<"$st"

agent_stop TERM
check "SIGTERM: STOPPING=1 with the reason" grep -q ' STOPPING=1|STATUS=SIGTERM$' "$NOTIFY_LOG"
((FAILED == 0)) && log "PASS"
