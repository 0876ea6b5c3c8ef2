#!/bin/bash
# A router host that dies leaves the tor's ECMP group fast (BFD), and comes
# back when it lives again. The ECMP lab with 2 routers, BFD 100 ms x 3 on
# every BGP session (tor and routers; the routers' timers are
# deploy/bird.conf's). RUNS times in each of the two ways a host dies
# (tools/lab/ecmp kill-host):
#   - hung (default): its processes stopped, its tor port silent both ways,
#     link up: only BFD can tell (without it, the BGP hold time: 6 s);
#   - links (--links): processes stopped and its link down: the tor's port
#     loses carrier.
# Asserted: the tor's BFD sessions are up before; the killed router's path
# leaves both VIP routes within BOUND_MS (1.5 s: a bound on the BFD config,
# 0.3 s detection plus BGP and the kernel route, not a benchmark; the
# measured time is logged as a figure) and not before BFD could have noticed
# in the hung case (a sanity check of the measurement); the other router
# stays; clients are answered meanwhile; after revive-host the path is back
# within 30 s and the revived router carries VIP traffic again.
source "$(dirname "$0")/bgp_lib.sh"

RUNS=${BFD_RUNS:-3}
BOUND_MS=1500
MIN_HUNG_MS=100  # BFD cannot declare a silent peer down sooner (3 x 100 ms after its last packet)

ecmp up --routers 2 | sed "s/^/$T_NAME: /"

bfd_up=$(ecmp birdc tor show bfd sessions | grep -c ' Up ' || true)
log "tor BFD sessions: $(ecmp birdc tor show bfd sessions | grep -E ' (Up|Down|Init) ' | tr -s ' \n' ' ')"
check "tor: 4 BFD sessions up (2 routers x IPv4, IPv6)" test "$bfd_up" = 4

answered() {  # answered: a fresh client connection through the tor is answered
  [[ $(ecmp exec client curl -s --max-time 2 "http://$VIP4/") == backend-* &&
    $(ecmp exec client curl -s --max-time 2 "http://[$VIP6]/") == backend-* ]]
}
# ms_of OUT FAMILY: the lab's "IPv<F> <ms> ms" figure from kill-host/revive-host output.
ms_of() { sed -n "s/.*IPv$2 \([0-9]*\) ms.*/\1/p" <<<"$1" | head -n 1; }

declare -A FIG=()
for mode in hung links; do
  for ((run = 1; run <= RUNS; run++)); do
    r=r$(((run - 1) % 2 + 1))
    other=r$((run % 2 + 1))
    opt=()
    [[ $mode == links ]] && opt=(--links)
    check "$mode run $run: the tor routes both VIPs through $r before" eval 'route_via 4 "$r" && route_via 6 "$r"'
    # kill-host stops the processes and cuts the traffic, then polls the
    # tor's routes every 5 ms and prints the time from the kill on.
    out=$(ecmp kill-host "$r" "${opt[@]}" 2>&1) || fail "$mode run $run: kill-host $r: $out"
    log "$mode run $run: $(tail -n 1 <<<"$out")"
    for fam in 4 6; do
      ms=$(ms_of "$out" "$fam")
      if [[ -z $ms ]]; then
        fail "$mode run $run: $r's path to the IPv$fam VIP not gone within the lab's 20 s"
        continue
      fi
      FIG[$mode]+=" $ms"
      log "figure: $mode: $r killed -> its IPv$fam VIP path gone from the tor: $ms ms"
      check "$mode run $run: IPv$fam path of $r gone within $BOUND_MS ms ($ms ms)" test "$ms" -le "$BOUND_MS"
      if [[ $mode == hung ]]; then
        check "$mode run $run: IPv$fam path not gone before BFD could notice ($ms ms >= $MIN_HUNG_MS)" test "$ms" -ge "$MIN_HUNG_MS"
      fi
    done
    check "$mode run $run: the tor no longer routes to $r" eval '! route_via 4 "$r" && ! route_via 6 "$r"'
    check "$mode run $run: the tor still routes both VIPs through $other" eval 'route_via 4 "$other" && route_via 6 "$other"'
    check "$mode run $run: clients are answered while $r is dead" answered
    out=$(ecmp revive-host "$r" 2>&1) || fail "$mode run $run: revive-host $r: $out"
    log "$mode run $run: $(tail -n 1 <<<"$out")"
    log "figure: $mode: $r revived -> its paths back on the tor: IPv4 $(ms_of "$out" 4) ms, IPv6 $(ms_of "$out" 6) ms"
    check "$mode run $run: the tor routes both VIPs through $r again" eval 'route_via 4 "$r" && route_via 6 "$r"'
    # The revived router forwards again: fixed 5-tuples spread over both
    # routers, some of them through it.
    p0=$(vip_packets "$r")
    ecmp exec client python3 "$FLOWS" fixed --addr "$VIP4" --src 198.18.2.2 --ports "$((44000 + run * 100))-$((44031 + run * 100))" \
      >/dev/null
    p1=$(vip_packets "$r")
    check "$mode run $run: the revived $r forwards VIP traffic again (+$((p1 - p0)) packets)" test $((p1 - p0)) -gt 0
  done
done
for mode in hung links; do
  log "figure: $mode: a killed router's paths gone from the tor after (ms):${FIG[$mode]:-}"
done
