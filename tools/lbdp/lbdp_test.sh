#!/bin/bash
# lbdp_test.sh LBDP: drives the lbdp CLI the way the lab does, against a
# private bpffs and a veth pair in a network namespace this script creates;
# checks outputs and exit codes (0 ok, 2 invalid input, 3 not found).
# Needs root; fails (does not skip) without it. Cleans up on any exit.
set -u
LBDP=${1:?usage: lbdp_test.sh path/to/lbdp}
[[ $(id -u) -eq 0 ]] || { echo "FAIL: needs root (bpffs mount, netns, XDP)"; exit 1; }
[[ -x $LBDP ]] || { echo "FAIL: $LBDP is not executable"; exit 1; }

"$(dirname "$0")/../../tests/lib/reap_stale_netns.sh"
NS=ballast-lbdpt-$$
FS=$(mktemp -d /tmp/ballast-lbdpt-fs-XXXXXX)
cleanup() {
  ip netns del "$NS" 2>/dev/null
  umount "$FS" 2>/dev/null
  rmdir "$FS" 2>/dev/null
}
trap cleanup EXIT
mount -t bpf bpf "$FS" || { echo "FAIL: cannot mount bpffs on $FS"; exit 1; }
# libxdp keeps its own state under <bpffs>/xdp; keep it in the private bpffs
# too, so nothing is left in the host's /sys/fs/bpf.
export LIBXDP_BPFFS="$FS"
ip netns add "$NS" &&
  ip -n "$NS" link add name lt0 type veth peer name lt1 &&
  ip -n "$NS" link set dev lt0 up &&
  ip -n "$NS" link set dev lt1 up || { echo "FAIL: cannot create netns $NS"; exit 1; }

failures=0
# expect RC PATTERN ARGS...: runs lbdp, checks exit code and that stdout+stderr match PATTERN.
expect() {
  local rc=$1 pattern=$2 out got
  shift 2
  out=$("$LBDP" --pin-dir "$FS/ballast" --netns "$NS" "$@" 2>&1)
  got=$?
  if [[ $got != "$rc" ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: lbdp $* -> exit $got (want $rc), output:"
    sed 's/^/    /' <<<"$out"
    echo "    (wanted /$pattern/)"
    failures=$((failures + 1))
  else
    echo "ok: lbdp $*"
  fi
}

expect 3 "no ballast data plane is pinned" stats
expect 0 "runs on dev lt0 in native mode" attach --dev lt0 --mode native --src4 198.18.0.1 --src6 2001:db8::1
expect 0 "adopted" attach --dev lt0 --src4 198.18.0.1 --src6 2001:db8::1
# libxdp's directory for a dispatcher it did not pin is not left behind.
[[ ! -e $FS/xdp ]] || { echo "FAIL: $FS/xdp left behind by attach"; failures=$((failures + 1)); }
expect 0 "vip 198.18.0.10:80/tcp id 1" vip add 198.18.0.10:80/tcp --id 1
expect 0 "id 2" vip add "[2001:db8::10]:0/udp" --id 2
expect 2 "already used" vip add 198.18.0.11:80/tcp --id 1
expect 0 "vip 198.18.0.13:80/tcp id 3 \\(GUE\\)" vip add 198.18.0.13:80/tcp --id 3 --gue
expect 0 "198.18.0.13:80/tcp +id 3 gue" vip list
expect 0 "vip 198.18.0.13:80/tcp id 3$" vip add 198.18.0.13:80/tcp --id 3
expect 0 "vip 198.18.0.13:80/tcp +id 3$" vip list
expect 0 "deleted" vip del 198.18.0.13:80/tcp
expect 2 "not tcp or udp" vip add 198.18.0.12:80/sctp --id 3
expect 2 "out of range" vip add 198.18.0.12:80/tcp --id 5000
expect 0 "backend 1 198.18.1.10 active" backend set --id 1 --addr 198.18.1.10
expect 0 "draining" backend set --id 2 --addr 2001:db8:1::11 --state draining --drain-deadline-ms 60000
expect 2 "not one of" backend set --id 3 --addr 198.18.1.12 --state bogus
expect 2 "out of range" backend set --id 0 --addr 198.18.1.12
expect 0 "table of 65537 slots" table set --vip-id 1 --backend 1:be1:2 --backend 2:be2:1
expect 0 "^backend 1 slots 43691" table show --vip-id 1
expect 0 "^size 65537" table show --vip-id 1
expect 0 "table of 7 slots" table set --vip-id 1 --size 7 --backend 1:be1:1
expect 0 "^backend 1 slots 7" table show --vip-id 1
expect 2 "not prime" table set --vip-id 1 --size 8 --backend 1:be1:1
expect 2 "ID:KEY:WEIGHT" table set --vip-id 1 --backend nonsense
expect 3 "no Maglev table" table show --vip-id 2
# VIP ownership: show, set, preserved by vip add / table set, stopped, cleared.
expect 0 "198.18.0.10:80/tcp not owned fenced 0" vip owner-deadline 198.18.0.10:80/tcp
expect 0 "owned, deadline in (59|60)\.[0-9]+ s \(monotonic [0-9]+ ns\) fenced 0" \
  vip owner-deadline 198.18.0.10:80/tcp --in 60s
expect 0 "198.18.0.10:80/tcp +id 1 owned, deadline in" vip list
expect 0 "id 1" vip add 198.18.0.10:80/tcp --id 1
expect 0 "table of 7 slots" table set --vip-id 1 --size 7 --backend 1:be1:1
expect 0 "owned, deadline in (59|60)\." vip owner-deadline 198.18.0.10:80/tcp
expect 0 "owned, deadline in 0\.[0-9]+ s" vip owner-deadline 198.18.0.10:80/tcp --in 500ms
expect 0 "owned, stopped: deadline passed" vip owner-deadline 198.18.0.10:80/tcp --at-ns 0
expect 0 "198.18.0.10:80/tcp +id 1 owned, stopped" vip list
expect 0 "not owned" vip owner-deadline 198.18.0.10:80/tcp --clear
expect 2 "at most one" vip owner-deadline 198.18.0.10:80/tcp --in 1s --clear
expect 2 "duration \"2x\"" vip owner-deadline 198.18.0.10:80/tcp --in 2x
expect 3 "does not exist" vip owner-deadline 198.18.0.99:80/tcp --in 1s
expect 0 '"fenced":0' stats --json
expect 0 "pass_not_ip|verdicts:" stats
expect 0 '"verdicts":\{"tx":0' stats --json
# lbdp attach writes the default ICMP too-big budget: 1000/s per CPU, burst 50.
expect 0 "icmp too-big: 1000/s per CPU \(0 = no limit\), burst 50; limited 0" stats
expect 0 '"icmp_too_big":\{"per_s":1000,"burst":50,"limited":0\}' stats --json
expect 0 "0 flows shown" flows
expect 0 "^0 handshakes under way in [0-9]+ slots; 0 sets full" handshakes

# Real packets on the veth (XDP native on lt0, SYNs sent from lt1): the VIP
# is forwarded before its owner deadline, stopped from the deadline on with
# no further command, forwarded again once cleared. lt1 does not forward,
# so the encapsulated packets that XDP_TX sends back end there.
mac() { ip -n "$NS" link show "$1" | awk '/link\/ether/ {print $2}'; }
ip -n "$NS" addr add 198.18.0.2/24 dev lt1 &&
  ip -n "$NS" neigh replace 198.18.0.10 lladdr "$(mac lt0)" dev lt1 &&
  ip -n "$NS" route add 198.18.1.0/24 dev lt0 &&
  ip -n "$NS" neigh replace 198.18.1.10 lladdr "$(mac lt1)" dev lt0 &&
  ip netns exec "$NS" sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv4.conf.lt0.forwarding=1 \
    net.ipv4.conf.lt1.forwarding=0 || { echo "FAIL: cannot set up the veth routes"; exit 1; }
# send_syn: one connection attempt to the VIP (its first SYN; no answer comes).
send_syn() { ip netns exec "$NS" timeout 0.3 bash -c 'exec 3<>/dev/tcp/198.18.0.10/80' 2>/dev/null; }
# verdict NAME: the verdict counter's current value.
verdict() {
  "$LBDP" --pin-dir "$FS/ballast" stats --json |
    grep -oE "\"$1\":[0-9]+" | head -n 1 | cut -d: -f2
}
# expect_moved WHAT VERDICT: after send_syn, VERDICT moved and the other one of tx/drop_fenced did not.
expect_moved() {
  local what=$1 want=$2 other tx0 f0 tx1 f1
  [[ $want == tx ]] && other=drop_fenced || other=tx
  tx0=$(verdict tx) f0=$(verdict drop_fenced)
  send_syn
  tx1=$(verdict tx) f1=$(verdict drop_fenced)
  local dw dother
  if [[ $want == tx ]]; then dw=$((tx1 - tx0)) dother=$((f1 - f0)); else dw=$((f1 - f0)) dother=$((tx1 - tx0)); fi
  if ((dw >= 1 && dother == 0)); then
    echo "ok: $what: $want +$dw, $other +$dother"
  else
    echo "FAIL: $what: $want +$dw, $other +$dother (want $want >= 1, $other 0)"
    failures=$((failures + 1))
  fi
}
expect_moved "not owned: forwarded" tx
# That SYN (unanswered) is a handshake under way on backend 1, not a flow.
expect 0 "^backend 1: 1 under way" handshakes
expect 0 "0 flows shown" flows
expect 0 "owned, deadline in" vip owner-deadline 198.18.0.10:80/tcp --in 1500ms
expect_moved "owned, before the deadline: forwarded" tx
sleep 1.6
expect_moved "owned, past the deadline: stopped" drop_fenced
expect 0 "owned, stopped: deadline passed .* fenced [1-9]" vip owner-deadline 198.18.0.10:80/tcp
expect 0 "198.18.0.10:80/tcp id 1 packets [0-9]+ bytes [0-9]+ dropped [1-9][0-9]* fenced [1-9]" stats
expect 0 "not owned" vip owner-deadline 198.18.0.10:80/tcp --clear
expect_moved "cleared: forwarded again" tx

expect 0 "198.18.0.10:80/tcp +id 1" vip list
expect 0 "backend 2 2001:db8:1::11 draining" backend list
expect 0 "deleted" vip del 198.18.0.10:80/tcp
expect 3 "does not exist" vip del 198.18.0.10:80/tcp
expect 0 "cleared" backend clear --id 1
expect 2 "required" decap attach --dev lt1 --addr 198.18.1.10
# decap check: the lists as attach takes them, nothing loaded (ballast-backend's check).
expect 0 "decap lists are valid: 2 addresses, 2 sources, 1 VIPs" decap check --addr 198.18.1.10 --addr 2001:db8:1::10 --from 198.18.0.0/24 --from 2001:db8::1 --vip 198.18.0.10
expect 2 "--vip: '224.0.0.5' is not a unicast address \\(multicast\\)" decap check --addr 198.18.1.10 --from 198.18.0.1 --vip 224.0.0.5
expect 2 "--addr: '255.255.255.255' is not a unicast address \\(broadcast\\)" decap check --addr 255.255.255.255 --from 198.18.0.1 --vip 198.18.0.10
expect 2 "written as IPv6: write 198.18.0.10" decap check --addr 198.18.1.10 --from 198.18.0.1 --vip ::ffff:198.18.0.10
expect 2 "--vip: '2001:DB8:1:0::10' is also given as --addr" decap check --addr 2001:db8:1::10 --from 2001:db8::1 --vip 2001:DB8:1:0::10
expect 2 "not an address or prefix" decap check --addr 198.18.1.10 --from 198.18.0.1/33 --vip 198.18.0.10
# VIPs by protocol and port (port 0: every port); an address alone is valid, with a warning.
expect 0 "decap lists are valid: 1 addresses, 1 sources, 2 VIPs" decap check --addr 198.18.1.10 --from 198.18.0.1 --vip 198.18.0.10:80/tcp --vip '[2001:db8::10]:0/udp'
expect 0 "^198.18.0.10\$" decap check --addr 198.18.1.10 --from 198.18.0.1 --vip 198.18.0.10:80/tcp --vip 198.18.0.10:0/udp --print-vip-addresses
expect 0 "warning: --vip: '198.18.0.10' names no protocol and port" decap check --addr 198.18.1.10 --from 198.18.0.1 --vip 198.18.0.10
expect 2 "--vip: '198.18.0.10:80' is neither an address nor ADDR:PORT/PROTO" decap check --addr 198.18.1.10 --from 198.18.0.1 --vip 198.18.0.10:80
expect 2 "given both alone \\(every port\\) and with ports" decap attach --dev lt1 --addr 198.18.1.10 --from 198.18.0.1 --vip 198.18.0.10 --vip 198.18.0.10:80/tcp
expect 2 "is not a unicast address \\(loopback\\)" decap attach --dev lt1 --addr 127.0.0.1 --from 198.18.0.1 --vip 198.18.0.10
expect 2 "cannot be combined" decap attach --dev lt1 --addr 198.18.1.10 --from any --from 198.18.0.1 --vip any
expect 2 "not an address or prefix" decap attach --dev lt1 --addr 198.18.1.10 --from 198.18.0.300 --vip any
expect 2 "--gue-port: Value 0 not in range" decap attach --dev lt1 --addr 198.18.1.10 --from 198.18.0.1 --vip 198.18.0.10 --gue-port 0
expect 0 "xdp_decap attached to dev lt1 in native mode for 198.18.1.10 2001:db8:1::10 \\(GUE on UDP port 6080\\)" decap attach --dev lt1 --addr 198.18.1.10 --addr 2001:db8:1::10 --from 198.18.0.0/24 --from 2001:db8::1 --vip 198.18.0.10:80/tcp --vip '[2001:db8:10::10]:0/udp' --gue-port 6080
expect 0 "addresses: .*198.18.1.10" decap stats --dev lt1
expect 0 "^vips: 198.18.0.10:80/tcp \\[2001:db8:10::10\\]:0/udp\$" decap stats --dev lt1
expect 0 "^unserved 0\$" decap stats --dev lt1
expect 0 "decapped_gue +0" decap stats --dev lt1
expect 0 "rst_held +0" decap stats --dev lt1
expect 0 "rst hold \\(tc egress\\): on" decap stats --dev lt1
expect 4 "not xdp_decap" decap detach --dev lt0
expect 0 "detached" decap detach --dev lt1
if tc -n "$NS" filter show dev lt1 egress | grep -q tc_decap_rst; then
  echo "FAIL: tc_decap_rst left on lt1 egress after detach"
  failures=$((failures + 1))
fi
expect 3 "runs no XDP program" decap detach --dev lt1
expect 0 "detached from dev lt0" detach --dev lt0
expect 3 "runs no XDP program" detach --dev lt0
expect 3 "no network device" attach --dev nosuch0
expect 0 "removed" teardown
[[ ! -e $FS/ballast ]] || { echo "FAIL: $FS/ballast still exists after teardown"; failures=$((failures + 1)); }
expect 2 "" bogus-command

if ((failures)); then
  echo "lbdp_test: $failures failure(s)"
  exit 1
fi
echo "lbdp_test: all checks passed"
