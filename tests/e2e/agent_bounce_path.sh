#!/bin/bash
# e2e: second chance when the backends are reached through a router device
# the config does not list. The agent lab (agent_lib.sh) reaches backend i
# through the router's to-be<i>, and its config names only to-client
# (interface), no extra_interfaces. Expected:
#   - the agent finds to-be1..3 by route lookups and attaches its lb program
#     there (the program of to-client); `lbctl status` shows every
#     backend's bounce path ok (via automatic) and the devices;
#     ballast_backend_bounce_path_ok is 1;
#   - with backend-1's server stopped (no listener), fresh connections
#     whose first choice is backend-1 are bounced and served by another
#     backend at once: every connection is made well under the client's
#     1 s retransmission, IPv4 (IP-in-IP) and IPv6 (GUE);
#   - with global.no_auto_bounce_interfaces the agent detaches what it
#     attached (to-client keeps its program), status shows
#     bounces_unreachable for every backend and the metric 0, the log warns
#     once per device (not again on the next refresh), and the bounced
#     connections wait for the retransmission (about 1 s);
#   - switched on again, it attaches again; after SIGTERM the devices keep
#     the program, and the restarted agent takes them over.
source "$(dirname "$0")/agent_lib.sh"

agent_lab_up
agent_start
VIPK4="$VIP4:$VIP_PORT/tcp"

# xdp_id DEV: the XDP program id on router/DEV ("" if none).
xdp_id() {
  in_ns router ip -o link show dev "$1" | grep -o 'prog/xdp[a-z]* id [0-9]*' | awk '{print $3}' || true
}
# paths: "<backend> <ok> <via> <device> <problem>" per backend of both VIPs.
paths() {
  status_json | python3 -c '
import json, sys
for v in json.load(sys.stdin).get("vips", []):
    for b in v.get("backends", []):
        p = b.get("bouncePath")
        if p is None:
            print(b["address"], "none")
            continue
        print(b["address"], "ok" if p.get("ok") else "lost", p.get("via", "-"),
              p.get("device", "-"), p.get("problem", ""))
'
}
# wait_paths WORD: until every backend of both VIPs shows WORD (ok | lost),
# at most 5 s.
wait_paths() {
  local n
  for ((n = 0; n < 50; n++)); do
    if [[ $(paths | awk -v w="$1" '$2 != w' | wc -l) -eq 0 ]]; then return 0; fi
    sleep 0.1
  done
  paths | sed 's/^/  path: /' >&2
  return 1
}
metric_values() { # metric_values NAME: its sample values, one per line
  in_ns router curl -s --max-time 5 http://127.0.0.1:9580/metrics | awk -v m="$1" '$1 ~ "^"m"\\{" {print $2}'
}
bounces_taken() { # the router's bounce_tx + bounce_redirect verdicts
  status_json | python3 -c '
import json, sys
v = json.load(sys.stdin).get("verdicts", {})
print(int(v.get("bounce_tx", 0)) + int(v.get("bounce_redirect", 0)))'
}
# connect_times FAMILY N: N fresh connections; "<http code> <time_connect>"
# per connection.
connect_times() {
  local url i args=()
  if [[ $1 == 4 ]]; then url="http://$VIP4:$VIP_PORT/"; else url="http://[$VIP6]:$VIP_PORT/"; fi
  for ((i = 0; i < $2; i++)); do args+=("$url"); done
  in_ns client curl -g -s -o /dev/null -H 'Connection: close' --connect-timeout 4 --max-time 5 \
    -w '%{http_code} %{time_connect}\n' "${args[@]}" || true
}
# summary TIMES: "answered slow max": answers 200, connections slower than
# 0.5 s, the longest time to connect (s).
summary() {
  awk '$1 == 200 {ok++} $2 > 0.5 {slow++} $2 > max {max = $2}
       END {printf "%d %d %.4f\n", ok, slow, max}' <<<"$1"
}
agent_warnings() { grep -c '"msg":"second-chance bounces are lost' "$AGENT_DIR/agent.log" || true; }

# ---- the agent attaches where the bounces arrive ----------------------------
prog=$(xdp_id to-client)
[[ -n $prog ]] || die "no XDP program on router/to-client"
check "every backend's bounce path is ok" wait_paths ok
for i in 1 2 3; do
  check "to-be$i runs the lb program (id $prog) though no config lists it" test "$(xdp_id "to-be$i")" = "$prog"
done
check "status says how: via automatic, on to-be<i>" \
  test "$(paths | awk '$3 == "automatic" && $4 ~ /^to-be[123]$/' | wc -l)" -eq 6
devices=$(lbctl status | sed -n 's/^bounce interfaces ([^)]*): //p')
check "lbctl status lists the bounce interfaces (got '$devices')" test "$devices" = "to-be1 to-be2 to-be3"
check "ballast_backend_bounce_path_ok is 1 for all 6 backends" \
  test "$(metric_values ballast_backend_bounce_path_ok | grep -cx 1)" -eq 6

# ---- second chance works through them ---------------------------------------
pid=$(cat "$STATE/be1/nginx.pid")
log "stopping backend-1's nginx (pid $pid): nothing listens there any more"
kill -TERM "$pid"
for ((n = 0; n < 50; n++)); do
  in_ns be1 ss -Hltn 'sport = :80' | grep -q . || break
  sleep 0.1
done
check "backend-1 has no listener on :80" bash -c "! ip netns exec '$PREFIX-be1' ss -Hltn 'sport = :80' | grep -q ."

for fam in 4 6; do
  before=$(bounces_taken)
  times=$(connect_times "$fam" 30)
  read -r ok slow max <<<"$(summary "$times")"
  taken=$(($(bounces_taken) - before))
  log "IPv$fam, automatic: 30 fresh connections, $ok answered, $slow over 0.5 s, longest connect $max s, $taken bounces taken"
  check "IPv$fam: all 30 answered" test "$ok" -eq 30
  check "IPv$fam: some SYNs were bounced off backend-1 and taken (got $taken)" test "$taken" -ge 1
  check "IPv$fam: no connection waited for a retransmission (longest $max s)" test "$slow" -eq 0
done
refused=$(backend_field "$VIPK4" "$BE1_ADDR4" counters.refusedSyns)
check "status counts backend-1's refused SYNs (got $refused)" test "$refused" -ge 1

# ---- switched off: the agent only warns ----------------------------------------
log "global.no_auto_bounce_interfaces: true"
lbctl config get >"$AGENT_DIR/running.conf"
sed '0,/^global {/s//global {\n  no_auto_bounce_interfaces: true/' "$AGENT_DIR/running.conf" >"$AGENT_DIR/off.conf"
lbctl config apply -f "$AGENT_DIR/off.conf" >/dev/null
check "every backend's bounce path is shown lost" wait_paths lost
for i in 1 2 3; do
  check "to-be$i: the lb program was detached" test -z "$(xdp_id "to-be$i")"
done
check "to-client keeps its program (id $prog)" test "$(xdp_id to-client)" = "$prog"
problem=$(paths | awk -v a="$BE1_ADDR4" '$1 == a' | cut -d' ' -f5-)
log "status, backend-1: $problem"
check "the problem names the device and the switch" test "$problem" = \
  "bounces_unreachable: device to-be1 runs no lb program (global.no_auto_bounce_interfaces is set)"
st=$(lbctl status)
check "lbctl status flags it under WHY" grep -q " $BE1_ADDR4 .* bounces_unreachable\$" <<<"$st"
check "lbctl status says why under the table" \
  grep -qF "  BOUNCES LOST: $BE1_ADDR4: bounces_unreachable: device to-be1 runs no lb program" <<<"$st"
check "ballast_backend_bounce_path_ok is 0 for all 6 backends" \
  test "$(metric_values ballast_backend_bounce_path_ok | grep -cx 0)" -eq 6
check "the log warned once per device (got $(agent_warnings))" test "$(agent_warnings)" -eq 3
lbctl backend weight "$VIPK4" "$BE3_ADDR4" 2 >/dev/null  # a state change: a refresh
sleep 1.5
check "and not again on the next refresh (got $(agent_warnings))" test "$(agent_warnings)" -eq 3
lbctl backend weight "$VIPK4" "$BE3_ADDR4" 1 >/dev/null

for fam in 4 6; do
  before=$(bounces_taken)
  times=$(connect_times "$fam" 30)
  read -r ok slow max <<<"$(summary "$times")"
  taken=$(($(bounces_taken) - before))
  log "IPv$fam, switched off: 30 fresh connections, $ok answered, $slow over 0.5 s, longest connect $max s, $taken bounces taken"
  check "IPv$fam: all 30 answered (after the retransmission)" test "$ok" -eq 30
  check "IPv$fam: no bounce reached the lb program (got $taken)" test "$taken" -eq 0
  check "IPv$fam: the connections refused by backend-1 waited for the retransmission ($slow over 0.5 s, longest $max s)" \
    awk -v s="$slow" -v m="$max" 'BEGIN { exit !(s >= 1 && m >= 0.9) }'
done

# ---- on again; SIGTERM and restart -------------------------------------------
lbctl config apply -f "$AGENT_DIR/running.conf" >/dev/null
check "switched on again: every bounce path ok" wait_paths ok
check "to-be1 runs the lb program again" test "$(xdp_id to-be1)" = "$prog"
check "the devices are recorded beside the state file" \
  test "$(grep -cv '^#' "$AGENT_DIR/bounce-interfaces")" -eq 3
agent_stop TERM
for i in 1 2 3; do
  check "after SIGTERM, to-be$i keeps the program" test "$(xdp_id "to-be$i")" = "$prog"
done
agent_start
check "the restarted agent shows every bounce path ok" wait_paths ok
check "and took the devices over (attached by the previous run)" \
  test "$(grep -c 'lb program kept for second-chance bounces (attached by the previous run)' "$AGENT_DIR/agent.log")" -eq 3
times=$(connect_times 4 20)
read -r ok slow max <<<"$(summary "$times")"
check "after the restart, IPv4: 20 answered, none waited (got $ok, $slow; longest $max s)" \
  test "$ok" -eq 20 -a "$slow" -eq 0

exit "$FAILED"
