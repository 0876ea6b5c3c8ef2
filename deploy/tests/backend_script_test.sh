#!/bin/bash
# ballast-backend (deploy/ballast-backend) against this build's lbdp, without
# packaging (package_test.sh runs the installed one):
#   1. check: the example file is valid and quiet; VIPS as VIP keys
#      (ADDR:PORT/PROTO) or, as files before ports had them, an address
#      alone (valid, with a warning naming VIPS); bad VIPS refused with exit
#      2, the field and the entry named;
#   2. (root) up in a network namespace with an address-only file, then
#      again with VIP keys for the same address: the address stays on lo,
#      the decap program serves what the file names (status), down clears.
# Usage: backend_script_test.sh LBDP
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH

here=$(cd "$(dirname "$0")" && pwd)
script=$here/../ballast-backend
export LBDP=${1:?usage: backend_script_test.sh LBDP}
work=$(mktemp -d /tmp/ballast-bscript.XXXXXX)
ns=ballast-bscript-$$
cleanup() {
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() {
  printf 'backend_script_test: FAIL: %s\n' "$*"
  failures=$((failures + 1))
}

# conf VIPS...: a file with these VIPS (and DEVICE nic0, one router).
conf() {
  printf 'DEVICE=nic0\nADDRESSES=198.18.12.2\nROUTERS=198.18.12.1/32\nVIPS=%s\n' "$*" >"$work/b.conf"
  echo "$work/b.conf"
}
# expect RC WANT COMMAND CONF: the script exits RC with WANT in its output
# (left in $out).
out=
expect() {
  local rc=0
  out=$("$script" --config "$4" "$3" 2>&1) || rc=$?
  if [[ $rc -ne $1 || $out != *"$2"* ]]; then
    fail "$3 $(sed -n 's/^VIPS=//p' "$4"): exit $rc, '$out' (want exit $1 and '$2')"
  fi
}

# ---- 1. check -------------------------------------------------------------------
expect 0 "is valid" check "$here/../backend.conf"
[[ $out != *warning* ]] || fail "the example file warns: $out"
expect 0 "is valid" check "$(conf '198.18.0.10:80/tcp [2001:db8::10]:0/udp')"
[[ $out != *warning* ]] || fail "VIP keys warn: $out"
expect 0 "warning: VIPS: '198.18.0.10' names no protocol and port: every packet to 198.18.0.10" \
  check "$(conf 198.18.0.10 '[2001:db8::10]:443/tcp')"
expect 2 "VIPS: '198.18.0.10:80' is neither an address nor ADDR:PORT/PROTO" check \
  "$(conf 198.18.0.10:80)"
expect 2 "VIPS: '198.18.0.10:80/icmp' has protocol 'icmp', not tcp or udp" check \
  "$(conf 198.18.0.10:80/icmp)"
expect 2 "VIPS: '198.18.0.10:80/tcp': 198.18.0.10 is given both alone (every port) and with ports" \
  check "$(conf 198.18.0.10 198.18.0.10:80/tcp)"
expect 2 "VIPS: '198.18.12.2:80/tcp' is also in ADDRESSES" check "$(conf 198.18.12.2:80/tcp)"
expect 2 "VIPS: 'any' would make this host an open tunnel" check "$(conf any)"
echo "backend_script_test: check: VIP keys, address-only files (warning), bad entries refused"

# ---- 2. up, up again with ports, down (root) ---------------------------------------
if [[ $(id -u) -ne 0 ]]; then
  echo "backend_script_test: not root: up/down skipped"
else
  ip netns add "$ns"
  ip -n "$ns" link add nic0 type veth peer name nic1
  ip -n "$ns" link set nic0 up
  ip -n "$ns" link set nic1 up
  ip -n "$ns" link set lo up
  nsrun() { ip netns exec "$ns" env RUNTIME_DIRECTORY="$work/run" "$@"; }
  lo_vips() { nsrun ip -o addr show dev lo | awk '{print $4}' | grep -v -e '^127\.' -e '^::1/' | sort | xargs; }
  up() { # up VIPS...: ballast-backend up with them; its output in $out
    local c
    c=$(conf "$@")
    out=$(nsrun "$script" --config "$c" up 2>&1) || fail "up with $*: $out"
  }
  up 198.18.0.10 2001:db8::10
  [[ $out == *"warning: VIPS: '198.18.0.10' names no protocol and port"* ]] ||
    fail "up with an address-only file does not warn: $out"
  [[ $(lo_vips) == "198.18.0.10/32 2001:db8::10/128" ]] || fail "lo after up: '$(lo_vips)'"
  st=$(nsrun "$script" --config "$work/b.conf" status)
  grep -q '^VIPS=198.18.0.10 2001:db8::10$' <<<"$st" || fail "status: no VIPS record: $st"
  grep -q '^vips: 198.18.0.10:\*/\* 2001:db8::10:\*/\*$' <<<"$st" || fail "status: vips: $st"
  up 198.18.0.10:80/tcp 198.18.0.10:0/udp '[2001:db8::10]:443/tcp'
  [[ $out != *warning* ]] || fail "up with VIP keys warns: $out"
  [[ $(lo_vips) == "198.18.0.10/32 2001:db8::10/128" ]] || fail "lo after up with ports: '$(lo_vips)'"
  st=$(nsrun "$script" --config "$work/b.conf" status)
  grep -q '^vips: 198.18.0.10:0/udp 198.18.0.10:80/tcp \[2001:db8::10\]:443/tcp$' <<<"$st" ||
    fail "status after up with ports: $st"
  grep -q '^unserved 0$' <<<"$st" || fail "status shows no unserved counter: $st"
  up 198.18.0.11:80/tcp
  [[ $(lo_vips) == "198.18.0.11/32" ]] || fail "lo after a changed VIP: '$(lo_vips)'"
  nsrun "$script" --config "$work/b.conf" down >/dev/null || fail "down"
  [[ -z $(lo_vips) ]] || fail "down left '$(lo_vips)' on lo"
  nsrun ip -d link show dev nic0 | grep -q 'prog/xdp' && fail "down left xdp_decap on nic0"
  echo "backend_script_test: up (address-only, then VIP keys), status, down"
fi

if ((failures)); then
  echo "backend_script_test: $failures failure(s)"
  exit 1
fi
echo "backend_script_test: all checks passed"
