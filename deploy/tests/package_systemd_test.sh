#!/bin/bash
# The router package under a real systemd, as an operator gets it (#37):
#   1. cpack -G DEB from this build;
#   2. a Debian 12 tree (mmdebstrap from Debian's archive: systemd and the
#      packages' dependencies; cached under BUILD/package-test/), booted
#      with systemd-nspawn --boot in the router namespace of a netns lab
#      (tools/lab/lab --no-lb: a client and three nginx backends with the
#      decap program), the lab's bpffs of that namespace on /sys/fs/bpf;
#   3. docs/operations.md's router quick start, its block run as it is
#      line by line in the container, the "then edit it" done by sed on the
#      lines marked SET: the agent runs and logs no warning or error; a VIP
#      added with lbctl forwards the client's connections to the backends;
#   4. the unit's restart policy: a crash (SIGSEGV) is restarted while the
#      program forwards on; a bad config file fails with exit code 2, the
#      field named, and is not retried;
#   5. a first start that fails (no such interface) stores no state and
#      leaves no pins; the corrected file is then used, its `initial` VIP
#      served;
#   6. docs/operations.md's router uninstall, as it is: no file, directory,
#      group, enablement link, pin or XDP attachment is left that was not
#      there before the install.
# The container needs the bpf system call allowed (--system-call-filter:
# nspawn's own filter denies it) and CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN;
# apt in it answers yes (APT::Get::Assume-Yes), as the operator would.
# Usage: package_systemd_test.sh BUILD_DIR   (root; cleans up by trap)
#   BALLAST_TEST_DEBS=DIR   test the packages in DIR instead of building them
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
BUILD=$(cd "${1:?usage: package_systemd_test.sh BUILD_DIR}" && pwd)
source "$(dirname "$0")/../../tests/e2e/common.sh"

require_root "a container, network namespaces, XDP"
require_tools "tools/setup.sh installs it" cpack dpkg-deb mmdebstrap systemd-nspawn nsenter ip curl \
  sha256sum
BUILT_HINT="BUILD_DIR" require_built "$BUILD/tools/lbdp/lbdp"

# Work directories of runs that were killed before their trap ran.
for d in /var/tmp/ballast-pkgsd-*; do
  [[ -d $d ]] || continue
  kill -0 "${d##*-}" 2>/dev/null || rm -rf "$d"
done
work=/var/tmp/ballast-pkgsd-$$
PREFIX=pk$$
LAB=("$repo/tools/lab/lab" --prefix "$PREFIX" --no-build)
NSPAWN_PID=""
mkdir -p "$work"
cleanup() {
  local rc=$? n
  if [[ -n $NSPAWN_PID ]] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
    if ((rc != 0 || FAILED != 0)) && [[ -n ${LEADER:-} ]]; then
      echo "---- lbagent's journal in the container (last 30 lines) ----" >&2
      ct journalctl -u lbagent -o cat -n 30 --no-pager 2>/dev/null | cut -c1-400 >&2 || true
    fi
    kill -TERM "$NSPAWN_PID" 2>/dev/null || true # the container powers off
    for ((n = 0; n < 100; n++)); do
      kill -0 "$NSPAWN_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$NSPAWN_PID" 2>/dev/null || true
    wait "$NSPAWN_PID" 2>/dev/null || true
  fi
  "${LAB[@]}" down >/dev/null 2>&1 || echo "$T_NAME: warning: lab down failed" >&2
  rm -rf "$work"
  if ((rc == 0 && FAILED != 0)); then rc=1; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
t_start=$(now)

# ---- 1. packages ------------------------------------------------------------------------------
t=$(now)
if [[ -n ${BALLAST_TEST_DEBS:-} ]]; then # other packages (e.g. older ones) to test instead
  mkdir -p "$work/out" && cp "$BALLAST_TEST_DEBS"/*.deb "$work/out/"
elif ! cpack --config "$BUILD/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log"
  die "cpack -G DEB failed"
fi
mkdir -p "$work/debs"
cp "$work"/out/ballast-{router,lbdp}_*.deb "$work/debs/" || die "cpack made no router or lbdp package"
log "cpack: $(cd "$work/debs" && echo *.deb) in $(since "$t") s"

# ---- 2. a Debian 12 tree, booted in the lab's router namespace --------------------------------
# The packages' dependencies, by name (their versions are what this host
# has, from the same suites).
deps=$(for d in "$work"/debs/*.deb; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' |
  sed -E 's/\(.*\)//; s/\|.*//; s/[[:space:]]//g' | grep -v '^ballast-' | sort -u | paste -sd, -)
include="systemd,systemd-sysv,dbus,iproute2,$deps"
suites=("deb http://deb.debian.org/debian bookworm main"
  "deb http://deb.debian.org/debian bookworm-updates main"
  "deb http://deb.debian.org/debian-security bookworm-security main")
key=$(printf '%s\n' "$include" "${suites[@]}" | sha256sum | cut -c1-16)
cache=$BUILD/package-test/debian12-$key.tar
if [[ ! -f $cache ]]; then
  t=$(now)
  mkdir -p "$BUILD/package-test"
  rm -rf "$BUILD"/package-test/debian12-*
  if ! mmdebstrap --variant=minbase --format=tar --include="$include" bookworm "$cache.tmp" \
    "${suites[@]}" \
    >"$work/mmdebstrap.log" 2>&1; then
    tail -n 30 "$work/mmdebstrap.log"
    die "mmdebstrap could not make a Debian 12 tree (it needs Debian's archive)"
  fi
  mv "$cache.tmp" "$cache"
  log "made a Debian 12 tree ($(($(stat -c %s "$cache") >> 20)) MiB) in $(since "$t") s: $cache"
fi
root=$work/root
mkdir -p "$root"
tar -C "$root" -xf "$cache"
echo "$PREFIX" >"$root/etc/hostname"
printf 'APT::Get::Assume-Yes "true";\n' >"$root/etc/apt/apt.conf.d/90ballast-test"
mkdir -p "$root/var/tmp/ballast-debs"
cp "$work"/debs/*.deb "$root/var/tmp/ballast-debs/"

log "lab $PREFIX up (client, router, three nginx backends)"
"${LAB[@]}" --no-lb --no-traffic up >"$work/lab.log" 2>&1 || {
  cat "$work/lab.log"
  die "lab up failed"
}
eval "$("${LAB[@]}" addrs)"
# The router forwards the VIP only through the lb program (no route to it).
ip -n "$PREFIX-router" route del "$VIP4/32"
ip -n "$PREFIX-router" -6 route del "$VIP6/128"
bpffs=$STATE/bpffs/router
bpffs_before=$(cd "$bpffs" && find . | sort)

t=$(now)
systemd-nspawn -D "$root" --boot -M "$PREFIX" --register=no --keep-unit --console=pipe \
  --network-namespace-path="/run/netns/$PREFIX-router" --bind="$bpffs:/sys/fs/bpf" \
  --capability=CAP_BPF,CAP_PERFMON,CAP_NET_ADMIN --system-call-filter=bpf \
  </dev/null >"$work/nspawn.log" 2>&1 &
NSPAWN_PID=$!
# The container's PID 1: nspawn's child in a PID namespace of its own (its
# first child may be a short-lived helper still in ours: taken for the
# leader, it is gone by the time nsenter looks, as in one run of three).
LEADER=""
own_pidns=$(readlink /proc/self/ns/pid)
for ((n = 0; n < 100; n++)); do
  for c in $(pgrep -P "$NSPAWN_PID" 2>/dev/null || true); do
    ns=$(readlink "/proc/$c/ns/pid" 2>/dev/null || true)
    [[ -n $ns && $ns != "$own_pidns" ]] && LEADER=$c && break
  done
  [[ -n $LEADER ]] && break
  kill -0 "$NSPAWN_PID" 2>/dev/null || break
  sleep 0.1
done
[[ -n $LEADER ]] || die "systemd-nspawn did not start a container: $(cat "$work/nspawn.log")"
# ct CMD...: CMD in the container (all its namespaces), with a clean environment.
ct() {
  nsenter -t "$LEADER" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive TERM=dumb "$@"
}
booted=""
for ((n = 0; n < 600; n++)); do # 60 s; the system bus comes up first
  booted=$(nsenter -t "$LEADER" -a systemctl is-system-running 2>&1 || true)
  [[ $booted == running || $booted == degraded ]] && break
  kill -0 "$NSPAWN_PID" 2>/dev/null || break
  sleep 0.1
done
[[ $booted == running ]] || {
  ct systemctl --failed --no-pager || true
  die "the container's systemd did not come up running: '$booted' ($(cat "$work/nspawn.log"))"
}
log "container $PREFIX booted (systemd $(ct systemctl --version | awk 'NR == 1 { print $2 }')) in $(since "$t") s"

# Every path of the container but the ones that change on their own (logs,
# package bookkeeping, systemd's runtime state), before the install.
snapshot() {
  ct sh -c 'find / /run -xdev \( -path /proc -o -path /sys -o -path /dev \
      -o -path /var/log -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache \
      -o -path /run/systemd -o -path /run/log -o -path /run/user -o -path /run/dbus \
      -o -path /tmp -o -path /var/tmp/ballast-debs -o -path /etc/ld.so.cache \) -prune -o -print' |
    sort -u
}
snapshot >"$work/before.txt"

# docs_block WHICH: the sh block of docs/operations.md after the comment
# that names WHICH.
docs_block() {
  awk -v which="$1" '
    index($0, "<!-- deploy/tests/package_systemd_test.sh runs this block as it is: " which " -->") { m = 1; next }
    m == 1 && /^```sh$/ { m = 2; next }
    m == 2 && /^```$/ { exit }
    m == 2 { print }' "$repo/docs/operations.md"
}
# run_block WHICH: each line of that block in the container, in the
# directory holding the packages; a line that fails ends the test. After
# the line that copies the example config, EDIT runs (the "then edit it").
run_block() {
  local line out
  [[ -n $(docs_block "$1") ]] || die "docs/operations.md has no '$1' block"
  while IFS= read -r line; do
    [[ -n $line ]] || continue
    log "\$ $line"
    out=$(ct sh -c "cd /var/tmp/ballast-debs && $line" 2>&1) || {
      printf '%s\n' "$out" >&2
      die "'$line' failed"
    }
    printf '%s\n' "$out" | sed 's/^/    /' | tail -n 8
    if [[ $line == cp\ *lbagent.conf* && -n ${EDIT:-} ]]; then ct sh -c "$EDIT"; fi
  done < <(docs_block "$1")
}

show() { ct systemctl show -P "$1" lbagent; }
journal_since() { ct journalctl -u lbagent -o cat --no-pager --since "@$1"; }
journal_has() { # journal_has SINCE PATTERN: within 3 s (journald indexes a line a moment later)
  local i
  for ((i = 0; i < 30; i++)); do
    journal_since "$1" | grep -q -- "$2" && return 0
    sleep 0.1
  done
  return 1
}
status_has() { ct lbctl status | grep -q -- "$1"; }
no_group() { ! ct getent group ballast-admin >/dev/null; }
xdp_on_client_side() { ip -n "$PREFIX-router" link show dev to-client | grep -q 'prog/xdp'; }
fresh_requests() { # fresh_requests N: one backend name per answered request
  local i args=()
  for ((i = 0; i < $1; i++)); do args+=("http://$VIP4:$VIP_PORT/"); done
  "${LAB[@]}" exec client curl -s -H 'Connection: close' --connect-timeout 1 --max-time 2 \
    "${args[@]}" || true
}
served() { # served N: N fresh requests, all answered (prints the backends that answered)
  local got
  got=$(fresh_requests "$1")
  [[ $(grep -c '^backend-' <<<"$got") -eq $1 ]] || {
    echo "answered $(grep -c '^backend-' <<<"$got") of $1"
    return 1
  }
  grep '^backend-' <<<"$got" | sort -u | paste -sd' ' -
}

# ---- 3. the quick start, as it is -------------------------------------------------------------
# The edit: the lines marked SET (the lab router's device facing the client
# and its addresses on lo).
EDIT="sed -i -E -e 's/^( *interface: )\"[^\"]*\"( *# SET)/\\1\"to-client\"\\2/' \
  -e 's/^( *source_v4: )\"[^\"]*\"( *# SET)/\\1\"198.18.0.1\"\\2/' \
  -e 's/^( *source_v6: )\"[^\"]*\"( *# SET)/\\1\"2001:db8::1\"\\2/' /etc/ballast/lbagent.conf"
t_qs=$(ct date +%s)
run_block "router quick start"
check "the quick start's edit set the interface" ct grep -q '^ *interface: "to-client" *# SET' \
  /etc/ballast/lbagent.conf
check "lbagent is active" test "$(show ActiveState)" = active
sleep 3
bad=$(journal_since "$t_qs" | grep -E '"level":"(warning|error)"' || true)
check "the example config runs without a warning or an error in 3 s${bad:+: $bad}" test -z "$bad"
check "lbctl status names the interface" status_has 'interface to-client'
check "the admin socket belongs to the package's group, ballast-admin (the example's socket_group)" \
  test "$(ct stat -c %G /run/ballast/lbagent.sock)" = ballast-admin
t_reload=$(ct date +%s)
check "systemctl reload lbagent works (its ExecReload's /bin/kill is installed)" \
  ct systemctl reload lbagent
check "the agent says it reloaded" journal_has "$t_reload" '"msg":"reloaded"'

ct lbctl vip add "$VIP4_KEY" --backend "$BE1_ADDR4" --backend "$BE2_ADDR4" --backend "$BE3_ADDR4" |
  sed 's/^/    /'
answered=$(served 30) || die "the VIP does not forward: $answered"
check "30 of 30 fresh connections through the VIP answered, by $answered" \
  test "$(wc -w <<<"$answered")" -ge 2
check "xdp_lb runs on the router's to-client" xdp_on_client_side

# ---- 4. the restart policy ---------------------------------------------------------------------
pid=$(show MainPID)
restarts=$(show NRestarts)
ct sh -c "kill -SEGV $pid"
during=$(served 10) || during="failed: $during"
for ((n = 0; n < 100; n++)); do
  [[ $(show NRestarts) -gt $restarts && $(show ActiveState) == active ]] && break
  sleep 0.1
done
check "a crash (SIGSEGV) is restarted: NRestarts $restarts -> $(show NRestarts), pid $pid -> $(show MainPID)" \
  test "$(show NRestarts)" -eq $((restarts + 1)) -a "$(show ActiveState)" = active -a "$(show MainPID)" != "$pid"
check "forwarding went on while the agent was down (10 of 10: $during)" test "${during#failed}" = "$during"
check "the restarted agent adopted the program" journal_has "$t_qs" '"adopted_program":true'

ct sed -i -E 's/^flow_capacity: [0-9]+/flow_capacity: 5/' /etc/ballast/lbagent.conf
t_bad=$(ct date +%s)
if ct systemctl restart lbagent 2>/dev/null; then fail "a restart with a bad config file succeeded"; fi
sleep 4 # RestartSec=1s: a retried start would have run three more times
check "a bad config file: failed with exit code 2 (state $(show ActiveState)/$(show SubState), exit $(show ExecMainStatus))" \
  test "$(show ActiveState)" = failed -a "$(show ExecMainStatus)" = 2
# (systemctl restart sets NRestarts to 0; each automatic restart adds one.)
starts=$(journal_since "$t_bad" | grep -c '^Starting lbagent.service' || true)
check "a bad config file is not retried: NRestarts $(show NRestarts), $starts start(s) in 4 s" \
  test "$(show NRestarts)" = 0 -a "$starts" -eq 1
check "the journal names the field" journal_has "$t_bad" 'flow_capacity: 5 is out of range'
during=$(served 10) || during="failed: $during"
check "forwarding goes on while the agent is stopped (10 of 10: $during)" test "${during#failed}" = "$during"
ct sed -i -E 's/^flow_capacity: 5/flow_capacity: 262144/' /etc/ballast/lbagent.conf
ct systemctl start lbagent
check "the corrected file starts" test "$(show ActiveState)" = active

# ---- 5. a first start that fails ---------------------------------------------------------------
ct lbctl teardown --yes | sed 's/^/    /'
for ((n = 0; n < 50; n++)); do
  [[ $(show ActiveState) == inactive ]] && break
  sleep 0.1
done
check "after lbctl teardown the agent stays stopped (result $(show Result))" \
  test "$(show ActiveState)" = inactive -a "$(show Result)" = success
# A first start again: no state, no pins; a device this host lacks, and a
# VIP in `initial`.
ct rm /var/lib/ballast/state.pb
check "the teardown removed the pins" test ! -e "$bpffs/ballast"
ct sed -i -E 's/^( *interface: )"to-client"/\1"eth0"/' /etc/ballast/lbagent.conf
ct sed -i "\$i\\  vips { key { address: \"$VIP4\" port: $VIP_PORT protocol: TCP } backends { address: \"$BE1_ADDR4\" weight: 1 } backends { address: \"$BE2_ADDR4\" weight: 1 } backends { address: \"$BE3_ADDR4\" weight: 1 } }" \
  /etc/ballast/lbagent.conf
ct lbagent --check-config /etc/ballast/lbagent.conf | sed 's/^/    /'
t_first=$(ct date +%s)
if ct systemctl start lbagent 2>/dev/null; then fail "a start on a missing interface succeeded"; fi
sleep 2.5 # Restart=on-failure: two more tries
ct systemctl stop lbagent
tries=$(journal_since "$t_first" | grep -c '^Starting lbagent.service' || true)
check "the failed first start ($tries tries) stored no state" ct test ! -e /var/lib/ballast/state.pb
check "and left no pins" test ! -e "$bpffs/ballast"
check "the journal says why (eth0)" journal_has "$t_first" 'no network device \\"eth0\\"'
check "and that it removed the data plane it created" journal_has "$t_first" 'the data plane it created was removed'
ct sed -i -E 's/^( *interface: )"eth0"/\1"to-client"/' /etc/ballast/lbagent.conf
ct systemctl reset-failed lbagent
ct systemctl start lbagent || fail "the corrected first start failed"
check "the corrected file's initial VIP is configured" status_has "^VIP $VIP4_KEY"
answered=$(served 20) || answered="failed: $answered"
check "20 of 20 through the initial VIP ($answered)" test "${answered#failed}" = "$answered"
check "the state is stored now" ct test -s /var/lib/ballast/state.pb

# ---- 6. the uninstall, as it is ---------------------------------------------------------------
run_block "router uninstall"
snapshot >"$work/after.txt"
left=$(comm -13 "$work/before.txt" "$work/after.txt")
check "the purge left no path that was not there before the install${left:+: $(paste -sd' ' - <<<"$left")}" \
  test -z "$left"
check "no ballast-admin group" no_group
check "no XDP program on the router's to-client" eval '! xdp_on_client_side'
bpffs_left=$(comm -13 <(echo "$bpffs_before") <(cd "$bpffs" && find . | sort))
check "nothing left in the router's bpffs${bpffs_left:+: $bpffs_left}" test -z "$bpffs_left"

log "done in $(since "$t_start") s"
((FAILED == 0)) && log "ok"
