#!/bin/bash
# e2e attack suite (issue 41): nothing a stranger sends steers the automation
# or a connection. In the health lab (tools/lab/lab --servers testbackend
# --health: lbagent with health checking, HTTP probes every 200 ms, backends
# with ballast's decap program) plus a port-0 TCP VIP and a UDP VIP on the
# IPv4 VIP's address (TCP probes), with 16 IPv4 and 16 IPv6 long-lived
# connections asking for a page every 0.4 s, the client's namespace sends
# each hostile class (tests/e2e/attack_send.py, scapy; every count bounded):
#
#   live_syn_targeted   SYNs on the live IPv4 flows of one backend, with real clients
#   live_spoof          SYN, and RST/FIN outside the router's window, on each live flow
#   live_inwindow       a RST or FIN within the window of each live flow, then a SYN
#   ack_flood           ACKs of random tuples (adopted, on probation)
#   udp_flood           UDP of random tuples to the UDP VIP; unserved ports and protocols
#   malformed           bad IHL and lengths, truncated TCP, bad data offsets, fragments,
#                       IPv6 extension chains
#   icmp                ICMP errors quoting other clients' flows, unknown tuples, unserved
#                       ports; echo requests
#   decap_stranger      IP-in-IP / GUE / IPv6-in-IPv6 to the backends from a non-router
#   decap_router_spoof  the same with a router's outer source, on the backends' links:
#                       outer fragments, inner destination no VIP, a VIP's unserved port
#   forged_bounce       bounces forged from the backends' addresses without the router's
#                       tag: SYNs spoofed on live flows, new SYNs, mid-stream packets
#   pairs               blind handshakes: SYN, ACK ISN + 1, the probe, a packet 150 ms later
#   storm               400 real connections to a closed port of the port-0 VIP (80/s)
#
# and checks after each class that every packet was counted where
# docs/security.md says (the router's verdicts and backend counters from its
# metrics, the backends' `lbdp decap stats`), and at the end: every long-lived
# connection answered every request from the backend it started on (none
# reset, none moved), no backend demoted or re-weighted and no pool frozen
# (lbctl status sampled every 0.25 s; the audit log: no automation action,
# no score change on passive evidence). Prints the figures of the table in
# docs/security.md. About 45 s. Needs root and python3-scapy (tools/setup.sh).
source "$(dirname "${BASH_SOURCE[0]}")/health_lib.sh"

# Debian's python3 (python3-scapy is installed for it), not whichever
# python3 comes first on PATH.
PY=${ATTACK_PYTHON:-/usr/bin/python3}
"$PY" -c 'import scapy.all' 2>/dev/null ||
  die "$PY cannot import scapy: install python3-scapy (tools/setup.sh)"
command -v bpftool >/dev/null || die "bpftool is not installed (tools/setup.sh)"
SEND=$repo/tests/e2e/attack_send.py
CHECK=$repo/tests/e2e/attack_check.py
UDP_PORT=5353
SUMMARY=$WORK/summary.jsonl
t_test=$(now)

health_lab_up
SRC4=$(lbctl config get | sed -n 's/^ *source_v4: "\(.*\)"/\1/p')
SRC6=$(lbctl config get | sed -n 's/^ *source_v6: "\(.*\)"/\1/p')
[[ -n $SRC4 && -n $SRC6 ]] || die "no source_v4/source_v6 in the lab's config"

# The backends' decap programs get the lab's VIP keys (the lab gives
# addresses alone, which pass every port and protocol): what no VIP serves
# is then `unserved` there.
for i in 1 2 3; do
  a4=BE${i}_ADDR4 a6=BE${i}_ADDR6
  lab exec "be$i" "$LBDP" decap attach --dev to-router --addr "${!a4}" --addr "${!a6}" \
    --from "$SRC4" --from "$ROUTER_PREFIX4" --from "$SRC6" --vip "$VIP4:80/tcp" --vip "$VIP4:0/tcp" \
    --vip "$VIP4:$UDP_PORT/udp" --vip "[$VIP6]:80/tcp" --gue-port 6080 >>"$WORK/decap.log" 2>&1 ||
    die "decap attach with the VIP keys failed on backend-$i: $(tail -n 5 "$WORK/decap.log")"
done

# The port-0 VIP (every TCP port of the IPv4 VIP's address but 80) and a UDP
# VIP, each with TCP probes of port 80 on the three backends.
lbctl config get >"$WORK/config.txtpb"
for v in "0 TCP all4" "$UDP_PORT UDP udp4"; do
  read -r port proto name <<<"$v"
  printf 'vips {\n  key { address: "%s" port: %s protocol: %s }\n  name: "%s"\n' "$VIP4" "$port" "$proto" "$name"
  for a in "$BE1_ADDR4" "$BE2_ADDR4" "$BE3_ADDR4"; do
    printf '  backends { address: "%s" weight: 1 probe { kind: TCP port: 80 interval_ms: 200 timeout_ms: 150 } }\n' "$a"
  done
  printf '}\n'
done >>"$WORK/config.txtpb"
lbctl config apply -f "$WORK/config.txtpb" >/dev/null || die "config apply of the port-0 and UDP VIPs failed"
ALL4_KEY="$VIP4:0/tcp"
UDP4_KEY="$VIP4:$UDP_PORT/udp"

# settled: every backend of every VIP healthy at its nominal weight, no pool
# frozen (up to 15 s).
settled() {
  lbctl --json status | python3 -c '
import json, sys
vips = json.load(sys.stdin).get("vips", [])
ok = len(vips) == 4 and all(not v.get("frozen", False) and len(v.get("backends", [])) == 3 and all(
    b.get("health") == "healthy" and b.get("effectiveWeight") == b.get("nominalWeight")
    for b in v["backends"]) for v in vips)
sys.exit(0 if ok else 1)'
}
deadline=$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 15 }')
until settled; do
  awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n < d) }' ||
    die "the pools did not settle (healthy, nominal weights, not frozen) within 15 s: $(unwell "$BE1_ADDR4" "$BE2_ADDR4" "$BE3_ADDR4" "$BE1_ADDR6" "$BE2_ADDR6" "$BE3_ADDR6")"
  sleep 0.2
done
log "lab settled $(since "$t_test") s after start: 4 VIPs (web4, web6, all4 = $ALL4_KEY, udp4 = $UDP4_KEY)"

# ---- the long-lived connections ------------------------------------------------------------------
python3 - "$WORK/ctx0.json" <<EOF
import json, sys
json.dump({"vip4": "$VIP4", "vip6": "$VIP6", "client4": "$CLIENT4", "client6": "$CLIENT6",
           "router4": "$SRC4", "router6": "$SRC6", "gue_port": 6080, "udp_port": $UDP_PORT,
           "backends4": ["$BE1_ADDR4", "$BE2_ADDR4", "$BE3_ADDR4"],
           "backends6": ["$BE1_ADDR6", "$BE2_ADDR6", "$BE3_ADDR6"], "flows": []}, open(sys.argv[1], "w"))
EOF
lab exec client "$PY" "$SEND" hold "$WORK/ctx0.json" --seconds 150 --conns4 16 --conns6 16 \
  --out "$WORK/hold.json" --ready "$WORK/ready.json" --pidfile "$WORK/hold.pid" 2>"$WORK/hold.err" &
PIDS+=("$!")
for ((n = 0; n < 100; n++)); do
  [[ -s $WORK/ready.json ]] && break
  sleep 0.1
done
[[ -s $WORK/ready.json ]] || die "the long-lived connections were not up within 10 s: $(head -c 600 "$WORK/hold.err")"
# Their flows leave probation 100 ms after their first packet past the
# handshake (the next request promotes them into `flows`).
for ((n = 0; n < 20; n++)); do
  sleep 0.25
  lab exec router bpftool -j map dump pinned /sys/fs/bpf/ballast/flows >"$WORK/flows.json"
  "$PY" "$SEND" context "$WORK/ctx0.json" --ready "$WORK/ready.json" --dump "$WORK/flows.json" \
    >"$WORK/ctx.json" 2>"$WORK/ctx.err" && break
done
[[ -s $WORK/ctx.json ]] || die "live connections not in the router's flows: $(cat "$WORK/ctx.err")"
log "32 long-lived connections (16 IPv4, 16 IPv6) up: $(python3 -c '
import json, sys, collections
c = collections.Counter("%s/IPv%d" % (f["backend"], f["family"]) for f in json.load(open(sys.argv[1]))["flows"])
print(", ".join("%s %d" % kv for kv in sorted(c.items())))' "$WORK/ctx.json")"

ROUTER_MAC=$(lab exec router cat /sys/class/net/to-client/address)

# snap FILE: the counters as "name value" lines: the router's verdicts,
# backend counters (summed), flow table entries and freeze alerts from its
# metrics; the backends' decap counters (summed, prefixed decap_); and how
# many entries of `flows` belong to spoofed strangers (spoofed_in_flows).
snap() {
  local i
  lab exec router curl -s --max-time 3 http://127.0.0.1:9580/metrics | awk -F'[{}" ]+' '
    /^ballast_verdict_packets_total\{/ { print $3, $NF }
    /^ballast_backend_(client_rsts|new_flows|refused_syns|second_chance_syns)_total\{/ {
      sub(/^ballast_/, "", $1); sub(/_total$/, "", $1); print $1, $NF }
    /^ballast_flow_table_entries\{/ { print "entries_" $3, $NF }
    /^ballast_health_alerts_total\{/ { print "alerts_" $3, $NF }' >"$1"
  grep -q '^redirect ' "$1" || die "no verdicts in the router's metrics"
  for i in 1 2 3; do
    lab exec "be$i" "$LBDP" decap stats --dev to-router | awk 'NF == 2 && $2 ~ /^[0-9]+$/ { print "decap_" $1, $2 }'
  done >>"$1"
  lab exec router bpftool -j map dump pinned /sys/fs/bpf/ballast/flows >"$WORK/flows.json"
  echo "spoofed_in_flows $("$PY" "$SEND" spoofed-in "$WORK/ctx.json" --dump "$WORK/flows.json" | awk '{ print $1 + $2 }')" >>"$1"
}

# judge CLASS EXPECT...: the counters' change over the class (from
# $WORK/before to a new snapshot, which becomes the next class's before)
# against what was sent ($WORK/CLASS.sent); one check per expectation.
judge() {
  local cls=$1 status msg e
  shift
  local args=()
  for e in "$@"; do args+=(--expect "$e"); done
  snap "$WORK/after"
  while read -r status msg; do
    case $status in
      ok) log "ok: $msg" ;;
      FAIL) fail "$msg" ;;
      *) log "$msg" ;;
    esac
  done < <("$PY" "$CHECK" delta "$WORK/before" "$WORK/after" "$WORK/$cls.sent" --summary "$SUMMARY" "${args[@]}" || true)
  mv "$WORK/after" "$WORK/before"
}

# replay NAME IFACE DST_MAC [ROLE]: sends a built class from ROLE's
# namespace (default client) on IFACE to DST_MAC; its report goes to
# $WORK/NAME.sent.
replay() {
  log "$1 at $(date +%s.%N | cut -c1-14)"
  lab exec "${4:-client}" "$PY" "$SEND" replay "$WORK/ctx.json" --dir "$WORK/packets" --name "$1" \
    --iface "$2" --dst-mac "$3" >"$WORK/$1.sent" 2>"$WORK/$1.err" ||
    die "attack_send replay $1 failed: $(tail -n 5 "$WORK/$1.err")"
}

# attack CLASS: sends one class from the client, then gives bounces and
# the counters 0.3 s.
attack() {
  replay "$1" to-router "$ROUTER_MAC"
  sleep 0.3
}

# Every class's packets, built once (scapy is slow to start).
mkdir -p "$WORK/packets"
t_build=$(now)
"$PY" "$SEND" build "$WORK/ctx.json" --dir "$WORK/packets" >"$WORK/build.out" 2>"$WORK/build.err" ||
  die "attack_send build failed: $(tail -n 5 "$WORK/build.err")"
log "packets built in $(since "$t_build") s: $(cat "$WORK/build.out")"

# ---- the attacks ---------------------------------------------------------------------------------
t_attack_ms=$(date +%s%3N)
"$PY" "$CHECK" watch --lbctl "$LBCTL" --socket "$SOCK" --out "$WORK/watch.json" --seconds 150 &
WATCH_PID=$!
PIDS+=("$WATCH_PID")
snap "$WORK/start"
cp "$WORK/start" "$WORK/before"

# Blind SYN / RST / FIN on live flows: guarded, forwarded to the flow's
# backend (whose TCP answers a challenge ACK or drops them), the flow kept.
attack live_spoof
judge live_spoof 'guarded == syn + rst_out_of_window + fin_out_of_window' 'spoofed_in_flows == 0'

# A guessed in-window RST or FIN then a SYN: the RST/FIN closes the flow
# here (counted once as the client's RST), the SYN stays on its backend.
attack live_inwindow
judge live_inwindow 'guarded == syn_after' 'forwarded >= rst_in_window + fin_in_window' \
  'backend_client_rsts == rst_in_window' 'spoofed_in_flows == 0'

# ACKs of random tuples: adopted on probation; the probe finds no socket on
# the backend, which bounces it; the router ends the probation.
attack ack_flood
judge ack_flood 'decap_bounced_est == ack4 + ack6' 'drop_probation_refuted == ack4 + ack6' \
  'forwarded >= ack4 + ack6' 'spoofed_in_flows == 0'

# UDP of random tuples: flows_udp (their own class); unserved ports and
# protocols of the VIP addresses are dropped (IPv6: an unknown next header
# is an extension header the parser does not walk, ip6_ext).
attack udp_flood
judge udp_flood 'entries_flows_udp == udp_vip' 'forwarded >= udp_vip' \
  'drop_vip_unserved == udp_unserved4 + syn_unserved6 + gre_unserved4' 'ip6_ext == sctp_unserved6' \
  'spoofed_in_flows == 0'

# Malformed headers to the VIPs, each sub-class named after the verdict
# docs/dataplane.md ("Policy for unusual packets") gives it.
attack malformed
judge malformed 'bad_ip4 == bad_ip4' 'bad_ip6 == bad_ip6' 'ip6_ext == ip6_ext' \
  'drop_bad_l4 == drop_bad_l4' 'drop_frag4 == drop_frag4' 'drop_frag6 == drop_frag6'

# ICMP errors quoting live flows go to the flow's backend, whose TCP ignores
# them (the quoted sequence number is not in flight).
attack icmp
judge icmp 'icmp_fwd == frag_needed_live + port_unreach_live + too_big_live + frag_needed_unknown + too_big_unknown' \
  'drop_icmp_unmatched == unmatched' 'drop_icmp_not_err == echo' 'icmp_too_big_sent == 0'

# Tunnelled packets to the backends' own addresses from a stranger (routed
# by the router like any other packet): the decap program drops them.
attack decap_stranger
judge decap_stranger 'decap_bad_source == ipip + gue + ip6ip6' 'decap_bounced == 0'

# With a router's outer source: only on the backends' own links (the router
# drops its own source arriving from outside as a martian).
for i in 1 2 3; do
  replay "decap_router_spoof$i" "to-be$i" "$(lab exec "be$i" cat /sys/class/net/to-router/address)" router
done
python3 - "$WORK"/decap_router_spoof{1,2,3}.sent >"$WORK/decap_router_spoof.sent" <<'EOF'
import json, sys
rows = [json.load(open(p)) for p in sys.argv[1:]]
out = dict(rows[0], sent={}, frames=0, tx_dropped=0)
for r in rows:
    out["frames"] += r["frames"]; out["tx_dropped"] += r["tx_dropped"]
    for k, v in r["sent"].items(): out["sent"][k] = out["sent"].get(k, 0) + v
print(json.dumps(out))
EOF
sleep 0.4
judge decap_router_spoof 'decap_frag == frag' 'decap_not_vip == not_vip' 'decap_unserved == vip_unserved'

# Forged bounces (outer mark 0xba11 / label 0xfffff: never a tag, so exact):
# from the handshake's backend `drop_bounce_forged` (and that handshake
# takes no more: `drop_bounce_budget`), from the others and for flows not on
# probation `drop_bounce_stranger`; nothing taken, nothing counted as a
# refusal.
attack forged_bounce
judge forged_bounce 'drop_bounce_forged == live_syn + new_syn + pair_syn' \
  'drop_bounce_stranger == 2 * live_syn + 2 * new_syn + 2 * pair_syn + live_data_bounce' \
  'drop_bounce_budget == live_syn_bounce_again' 'drop_bounce_bad == not_a_bounce' \
  'guarded == live_syn' 'bounce_sent == 0' 'esc == 0' 'backend_refused_syns == 0' \
  'spoofed_in_flows == 0'

# Blind handshakes (docs/security.md: the probe is bounced, the probation
# refuted, no spoofed pair reaches `flows`). Phases 150 ms apart: each SYN
# with its ACK (ISN + 1), the probes, the packets after the probation's wait.
attack pairs
judge pairs 'decap_bounced_est == probe4 + probe6' 'drop_probation_refuted == probe4 + probe6' \
  'spoofed_in_flows == 0' 'backend_refused_syns == 0'

# A closed-port SYN storm on the port-0 VIP: real connections from the
# client, each from a new source port. Each SYN is bounced (twice, or once
# when its choices run out sooner), every bounce is taken, and its last hop
# refuses it (the client gets its RST at once); no refusal counts against
# a backend (no connection completed elsewhere).
log "storm at $(date +%s.%N | cut -c1-14)"
lab exec client "$PY" "$SEND" storm "$WORK/ctx.json" --count 400 --rate 80 --port 1 >"$WORK/storm.out" 2>"$WORK/storm.err" ||
  die "attack_send storm failed: $(tail -n 5 "$WORK/storm.err")"
python3 - "$WORK/storm.out" >"$WORK/storm.sent" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({"class": "storm", "sent": {"syn": s["attempts"]}, "frames": s["attempts"], "tx_dropped": 0}))
EOF
sleep 0.4
read -r s_att s_ref s_max s_err < <(python3 -c '
import json, sys
s = json.load(open(sys.argv[1])); print(s["attempts"], s["refused"], s["max_ms"], json.dumps(s["errors"]).replace(" ", ""))' "$WORK/storm.out")
check "storm: every connection to the closed port refused at once ($s_ref of $s_att, slowest $s_max ms, other outcomes $s_err)" \
  awk -v a="$s_att" -v r="$s_ref" -v m="$s_max" 'BEGIN { exit !(a == r && m < 500) }'
judge storm 'decap_refused == syn' 'decap_bounced >= syn' 'decap_bounced <= 2 * syn' \
  'bounce_sent == d_decap_bounced' 'backend_second_chance_syns == d_decap_bounced' 'backend_refused_syns == 0'

# Last (what it moves must not shift the other classes' counts): SYNs on
# the live IPv4 flows of one backend while real clients open 300
# connections a second (so that the passive signals have values and peers):
# guarded, the flows kept; the health logic must not take them as that
# backend's evidence (the status samples and the audit log below).
target=$(python3 -c '
import json, sys, collections
c = collections.Counter(f["backend"] for f in json.load(open(sys.argv[1]))["flows"] if f["family"] == 4)
print("%s (%d flows)" % max(sorted(c.items()), key=lambda kv: kv[1]))' "$WORK/ctx.json")
load_start fresh 6 --workers 3 --rate 100 --timeout 2
sleep 2.5
attack live_syn_targeted
judge live_syn_targeted 'guarded == syn'
log "live_syn_targeted: the SYNs went to the live flows of $target"
load_wait fresh
read -r f_att f_fail < <(python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(d["attempts"], d["failed"])' "$LOAD_SUMMARY")
check "live_syn_targeted: real clients' new connections meanwhile: $f_fail of $f_att failed" test "$f_fail" = 0 -a "$f_att" -gt 0

# Two more evaluations' worth of time after the last packet.
sleep 1
snap "$WORK/end"
t_end_ms=$(date +%s%3N)

# ---- what moved ----------------------------------------------------------------------------------
kill -TERM "$WATCH_PID" 2>/dev/null || true
wait "$WATCH_PID" 2>/dev/null || true
hold_pid=$(cat "$WORK/hold.pid" 2>/dev/null || true)
[[ $hold_pid =~ ^[0-9]+$ ]] && kill -TERM "$hold_pid" 2>/dev/null
for ((n = 0; n < 50; n++)); do
  [[ -s $WORK/hold.json ]] && break
  sleep 0.1
done
[[ -s $WORK/hold.json ]] || die "the long-lived connections' report is missing: $(head -c 600 "$WORK/hold.err")"

read -r h_conns h_rounds h_bad h_moved h_what < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
bad = [c for c in d["conns"] if c["errors"] or c["ok"] != d["rounds"]]
moved = [c for c in d["conns"] if len(c["seen"]) != 1]
what = "; ".join("IPv%d :%d %s %s" % (c["family"], c["sport"], c["seen"], c["errors"][:3]) for c in (bad + moved)[:6])
print(len(d["conns"]), d["rounds"], len(bad), len(moved), what or "-")' "$WORK/hold.json")
log "long-lived connections: $h_conns, $h_rounds requests each over $(awk -v a="$t_attack_ms" -v b="$t_end_ms" 'BEGIN { printf "%.1f", (b - a) / 1000 }') s of attacks"
check "every long-lived connection answered every request ($h_bad of $h_conns failed or reset: $h_what)" test "$h_bad" = 0
check "every long-lived connection stayed on its backend ($h_moved of $h_conns moved)" test "$h_moved" = 0

python3 - "$WORK/watch.json" >"$WORK/watch.txt" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["samples"], len(d["bad"]))
for c, names in sorted(d["conditions"].items()):
    print("condition", c, len(names))
for b in d["bad"][:8]:
    print("bad", b)
EOF
read -r w_samples w_bad <"$WORK/watch.txt"
log "health conditions seen during the attacks: $(awk '$1 == "condition" { printf "%s%s on %s", sep, $2, $3; sep = ", " }' "$WORK/watch.txt")"
while read -r _ line; do log "  status: $line"; done < <(grep '^bad ' "$WORK/watch.txt" || true)
check "lbctl status every 0.25 s: every backend healthy at its weight, no pool frozen, no passive-signal condition ($w_bad bad of $w_samples samples)" \
  test "$w_bad" = 0 -a "$w_samples" -gt 20
"$PY" "$CHECK" audit --lbctl "$LBCTL" --socket "$SOCK" --since-ms "$t_attack_ms" >"$WORK/audit.txt"
read -r _ a_records _ a_moves < <(tail -n 1 "$WORK/audit.txt")
while read -r line; do log "  audit: $line"; done < <(grep -E '^(move|other) ' "$WORK/audit.txt" | head -n 10 || true)
log "audit log since the first attack: $a_records records, $(grep -c '^noise ' "$WORK/audit.txt" || true) of them score changes from probe latency alone"
check "audit log: no demotion, re-weighting, freeze or passive-evidence score change since the first attack ($a_moves)" \
  test "$a_moves" = 0
echo '{"class": "all classes", "sent": {}, "frames": 0, "tx_dropped": 0}' >"$WORK/all.sent"
while read -r status msg; do
  case $status in
    ok) log "ok: health alerts: $msg" ;;
    FAIL) fail "health alerts: $msg" ;;
  esac
done < <("$PY" "$CHECK" delta "$WORK/start" "$WORK/end" "$WORK/all.sent" --expect 'alerts_freeze == 0' \
  --expect 'alerts_pin == 0' --expect 'alerts_disagreement == 0' || true)

# ---- the table's figures -------------------------------------------------------------------------
log "figures (class: packets sent -> counted):"
python3 - "$SUMMARY" <<'EOF' | while read -r line; do log "  $line"; done
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    counted = ", ".join("%s %d" % kv for kv in r["counted"].items() if kv[0] != "spoofed_in_flows" or kv[1])
    print("%s: %d sent (%s) -> %s" % (r["class"], r["sent"],
          ", ".join("%s %d" % kv for kv in sorted(r["subs"].items())), counted))
EOF
log "run time $(since "$t_test") s"
health_finish
