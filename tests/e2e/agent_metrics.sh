#!/bin/bash
# e2e: lbagent balances real traffic in a netns lab and its /metrics output
# passes `promtool check metrics` and counts what happened.
#   - 60 fresh connections per family through the VIPs: all answered, spread
#     over the three backends;
#   - /metrics (loopback of the router namespace) passes promtool, reports
#     ballast_up 1, the new flows per backend (summing to at least the
#     requests), forwarded verdicts and the process's RSS;
#   - a config with a non-loopback metrics_listen is refused;
#   - `lbctl teardown --yes` detaches the program, removes the pins and
#     stops the agent (exit 0).
source "$(dirname "$0")/agent_lib.sh"

agent_lab_up
agent_start

for fam in 4 6; do
  out=$(curl_fresh "$fam" 60)
  n=$(grep -c '^backend-' <<<"$out" || true)
  check "IPv$fam: 60 of 60 fresh connections answered through the VIP (got $n)" test "$n" -eq 60
  spread=$({ grep '^backend-' <<<"$out" || true; } | sort -u | wc -l)
  check "IPv$fam: answers came from all 3 backends (got $spread)" test "$spread" -eq 3
done

# lbctl flows: the connection table's entries of the VIP, like ipvsadm -Lnc.
flows=$(lbctl flows "$VIP4:$VIP_PORT/tcp")
live=$(sed -nE 's/^[0-9]+ of ([0-9]+) live flows of .*/\1/p' <<<"$flows")
log "lbctl flows: $(tail -n 1 <<<"$flows")"
check "lbctl flows lists the VIP's live flows (got ${live:-none})" test "${live:-0}" -ge 1
rows=$(grep -cE '^tcp ' <<<"$flows" || true)
with_backend=$(grep -E '^tcp ' <<<"$flows" | grep -cE " ($BE1_ADDR4|$BE2_ADDR4|$BE3_ADDR4) " || true)
check "lbctl flows names a backend of the VIP on every row ($with_backend of $rows)" \
  test "$rows" -ge 1 -a "$with_backend" -eq "$rows"

metrics=$AGENT_DIR/metrics.txt
in_ns router curl -s --max-time 5 http://127.0.0.1:9580/metrics >"$metrics"
check "promtool check metrics passes" sh -c "promtool check metrics <'$metrics' >'$AGENT_DIR/promtool.out' 2>&1"
[[ -s $AGENT_DIR/promtool.out ]] && sed 's/^/  promtool: /' "$AGENT_DIR/promtool.out"
dash=$repo/deploy/grafana-dashboard.json
check "the Grafana dashboard names only exported metrics and labels (standalone panels)" \
  python3 "$repo/deploy/tests/dashboard_check.py" "$dash" "$metrics" --skip "BGP:" "Cluster:"
sed 's/ballast_vip_backends/ballast_vip_backendz/' "$dash" >"$AGENT_DIR/bad-dashboard.json"
check "the check finds a query of a metric that is not exported" \
  bash -c "out=\$(python3 '$repo/deploy/tests/dashboard_check.py' '$AGENT_DIR/bad-dashboard.json' '$metrics' --skip BGP: Cluster:); [[ \$? -eq 1 && \$out == *'ballast_vip_backendz is not exported'* ]]"
check "ballast_up is 1" grep -qx 'ballast_up 1' "$metrics"
check "config generation is 1" grep -qx 'ballast_config_generation 1' "$metrics"
new4=$(awk -v v="vip=\"$VIP4:$VIP_PORT/tcp\"" 'index($0, "ballast_backend_new_flows_total{" v) == 1 {s += $2} END {print s + 0}' "$metrics")
check "new flows of $VIP4 per the data plane >= 60 (got $new4)" test "$new4" -ge 60
new6=$(awk -v v="vip=\"[$VIP6]:$VIP_PORT/tcp\"" 'index($0, "ballast_backend_new_flows_total{" v) == 1 {s += $2} END {print s + 0}' "$metrics")
check "new flows of [$VIP6] per the data plane >= 60 (got $new6)" test "$new6" -ge 60
fwd=$(awk '/^ballast_verdict_packets_total\{verdict="(tx|redirect)"\}/ {s += $2} END {print s + 0}' "$metrics")
check "forwarded-packet verdicts counted (got $fwd)" test "$fwd" -gt 0
check "every backend has effective weight 1" test "$(grep -c '^ballast_backend_effective_weight{.*} 1$' "$metrics")" -eq 6
check "process RSS is reported" grep -q '^process_resident_memory_bytes [1-9]' "$metrics"
rss=$(awk '/^process_resident_memory_bytes/ {printf "%.1f", $2 / 1048576}' "$metrics")
log "lbagent RSS with 2 VIPs x 3 backends: $rss MiB"

sed 's|metrics_listen: "127.0.0.1:9580"|metrics_listen: "0.0.0.0:9580"|' "$AGENT_DIR/lbagent.conf" >"$AGENT_DIR/bad.conf"
set +e
msg=$("$LBAGENT" --check-config "$AGENT_DIR/bad.conf" 2>&1)
rc=$?
set -e
check "non-loopback metrics_listen refused with exit 2 (got $rc)" test "$rc" -eq 2
check "the refusal names the field: $msg" grep -q 'metrics_listen: 0.0.0.0:9580 is not a loopback address' <<<"$msg"

log "lbctl teardown --yes"
lbctl teardown --yes
set +e
wait "$AGENT_PID"
rc=$?
set -e
AGENT_PID=""
check "the agent exited 0 after the teardown (got $rc)" test "$rc" -eq 0
check "no XDP program left on router/to-client" test -z "$(prog_id)"
check "the pins are gone" bash -c "! '${LAB[0]}' --prefix '$PREFIX' exec router test -e /sys/fs/bpf/ballast"
check "the VIP is no longer balanced (the router has no route for it)" \
  test "$(curl_fresh 4 3 | grep -c '^backend-' || true)" -eq 0

((FAILED == 0)) && log "PASS"
