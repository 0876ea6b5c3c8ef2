#!/bin/bash
# lbdp_test.sh LBDP: drives the lbdp CLI the way the lab does, against a
# private bpffs and a veth pair in a network namespace this script creates;
# checks outputs and exit codes (0 ok, 2 invalid input, 3 not found).
# Needs root; fails (does not skip) without it. Cleans up on any exit.
set -u
LBDP=${1:?usage: lbdp_test.sh path/to/lbdp}
[[ $(id -u) -eq 0 ]] || { echo "FAIL: needs root (bpffs mount, netns, XDP)"; exit 1; }
[[ -x $LBDP ]] || { echo "FAIL: $LBDP is not executable"; exit 1; }

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
expect 0 "vip 198.18.0.10:80/tcp id 1" vip add 198.18.0.10:80/tcp --id 1
expect 0 "id 2" vip add "[2001:db8::10]:0/udp" --id 2
expect 2 "already used" vip add 198.18.0.11:80/tcp --id 1
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
expect 0 "pass_not_ip|verdicts:" stats
expect 0 '"verdicts":\{"tx":0' stats --json
expect 0 "0 flows shown" flows
expect 0 "198.18.0.10:80/tcp +id 1" vip list
expect 0 "backend 2 2001:db8:1::11 draining" backend list
expect 0 "deleted" vip del 198.18.0.10:80/tcp
expect 3 "does not exist" vip del 198.18.0.10:80/tcp
expect 0 "cleared" backend clear --id 1
expect 0 "xdp_decap attached to dev lt1 in native mode" decap attach --dev lt1 --addr 198.18.1.10 --addr 2001:db8:1::10
expect 0 "addresses: .*198.18.1.10" decap stats --dev lt1
expect 4 "not xdp_decap" decap detach --dev lt0
expect 0 "detached" decap detach --dev lt1
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
