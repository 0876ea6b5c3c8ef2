#!/bin/bash
# The Debian packages, built and installed as an operator would get them:
#   1. cpack -G DEB from this build: ballast-router, ballast-backend,
#      ballast-lbdp;
#   2. lintian on each: no errors, no warnings;
#   3. their dependencies are satisfiable on this host (dpkg --dry-run);
#   4. dpkg -i into a scratch root (maintainer scripts run with DPKG_ROOT):
#      the admin group and directories exist (/etc/ballast too: the quick
#      start's copies of the examples work), every path a unit names is
#      in a package, systemd-analyze verify accepts the units, the
#      installed binaries run and the example configs are valid;
#   5. the installed ballast-backend in a network namespace: up attaches
#      xdp_decap and puts the VIPs on lo, a bad file is refused with the
#      field named and changes nothing, up again applies a changed file,
#      down takes it all away;
#   6. with both units enabled (systemctl --root) and the files the agent
#      and the backend unit write while they run, dpkg --purge leaves no
#      path in the scratch root that was not there before the install.
#      (deploy/tests/package_systemd_test.sh does this with the real agent
#      under systemd.)
# Usage: package_test.sh BUILD_DIR   (root; cleans up after itself)
#   BALLAST_TEST_DEBS=DIR   test the packages in DIR instead of building them
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH

build=$(cd "${1:?usage: package_test.sh BUILD_DIR}" && pwd)
say() { printf 'package_test: %s\n' "$*"; }
fail() { printf 'package_test: FAIL: %s\n' "$*"; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "needs root (dpkg into a scratch root, a network namespace, XDP)"
for t in cpack lintian dpkg dpkg-deb systemd-analyze systemd-sysusers man ip; do
  command -v "$t" >/dev/null || fail "$t not found (tools/setup.sh installs it)"
done

"$(dirname "$0")/../../tests/lib/reap_stale_netns.sh"
work=$(mktemp -d /tmp/ballast-pkg.XXXXXX)
ns=ballast-pkg-$$
cleanup() {
  local pids
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  [[ -z $pids ]] || kill $pids 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# ---- 1. build ---------------------------------------------------------------
out=$work/out
if [[ -n ${BALLAST_TEST_DEBS:-} ]]; then # other packages (e.g. older ones) to test instead
  mkdir -p "$out" && cp "$BALLAST_TEST_DEBS"/*.deb "$out/"
elif ! cpack --config "$build/CPackConfig.cmake" -B "$out" >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log"
  fail "cpack -G DEB failed"
fi
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
arch=$(dpkg --print-architecture)
debs=()
for p in ballast-router ballast-backend ballast-lbdp; do
  d=$out/${p}_${version}_${arch}.deb
  [[ -f $d ]] || { ls -l "$out"; fail "cpack made no $d"; }
  debs+=("$d")
  say "built $(basename "$d") ($(($(stat -c %s "$d") / 1024)) KiB)"
done

# contains DEB PATH...: each path is in the package.
contains() {
  local deb=$1 list p
  shift
  list=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|; s|/$||')
  for p in "$@"; do
    grep -qxF "$p" <<<"$list" || fail "$(basename "$deb") lacks $p"
  done
}
router=${debs[0]} backend=${debs[1]} lbdp=${debs[2]}
contains "$router" /usr/sbin/lbagent /usr/bin/lbctl /lib/systemd/system/lbagent.service /etc/ballast \
  /usr/lib/sysusers.d/ballast-router.conf /usr/lib/tmpfiles.d/ballast-router.conf \
  /usr/share/doc/ballast-router/copyright /usr/share/doc/ballast-router/changelog.gz \
  /usr/share/doc/ballast-router/operations.md /usr/share/doc/ballast-router/examples/lbagent.conf \
  /usr/share/doc/ballast-router/examples/bird.conf /usr/share/ballast/prometheus/ballast-rules.yml \
  /usr/share/ballast/grafana/ballast.json \
  /usr/share/man/man1/lbctl.1.gz /usr/share/man/man8/lbagent.8.gz \
  /usr/share/bash-completion/completions/lbctl
contains "$backend" /usr/sbin/ballast-backend /lib/systemd/system/ballast-backend.service /etc/ballast \
  /usr/share/doc/ballast-backend/examples/backend.conf /usr/share/doc/ballast-backend/copyright \
  /usr/share/man/man8/ballast-backend.8.gz
contains "$lbdp" /usr/sbin/lbdp /usr/share/doc/ballast-lbdp/copyright /usr/share/man/man8/lbdp.8.gz \
  /usr/share/bash-completion/completions/lbdp
deps=$(dpkg-deb -f "$router" Depends)
for want in "ballast-lbdp (= $version)" libbpf libgrpc++ libc6; do
  [[ $deps == *"$want"* ]] || fail "ballast-router's Depends lacks $want: $deps"
done
[[ $(dpkg-deb -f "$backend" Depends) == *iproute2* ]] || fail "ballast-backend does not depend on iproute2"
say "contents and dependencies as expected (router Depends: $deps)"

# ---- 2. lintian ---------------------------------------------------------------
for d in "${debs[@]}"; do
  if ! lintian --fail-on error,warning --tag-display-limit 0 "$d" >"$work/lintian.log" 2>&1; then
    cat "$work/lintian.log"
    fail "lintian reports errors or warnings for $(basename "$d")"
  fi
  say "lintian $(basename "$d"): no errors, no warnings"
  grep -v 'running with root privileges' "$work/lintian.log" | sed 's/^/  /' || true
done

# ---- 3. dependencies on this host ---------------------------------------------
if ! dpkg --dry-run -i "${debs[@]}" >"$work/dry.log" 2>&1; then
  cat "$work/dry.log"
  fail "the packages' dependencies are not satisfiable on this host"
fi
say "dpkg --dry-run -i: dependencies satisfiable here"

# ---- 4. install into a scratch root -------------------------------------------
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers" \
  "$root/etc" "$root/run"
touch "$root/var/lib/dpkg/status"
# What a base system has where the maintainer scripts write: the group
# files, systemd's unit and state directories.
printf 'root:x:0:\n' | tee "$root/etc/group" >"$root/etc/group-"
printf 'root:*::\n' | tee "$root/etc/gshadow" >"$root/etc/gshadow-"
touch "$root/etc/.pwd.lock"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants" "$root/var/lib/systemd"
# paths: every path of the scratch root but dpkg's own database.
paths() { (cd "$root" && find . -path ./var/lib/dpkg -prune -o -print | sort); }
paths >"$work/before-install.txt"
# The scratch root has no libraries or shell: dependencies are checked above
# (step 3), the maintainer scripts run here with DPKG_ROOT set.
if ! dpkg --root="$root" --log=/dev/null --force-script-chrootless --force-depends \
  -i "${debs[@]}" >"$work/install.log" 2>&1; then
  cat "$work/install.log"
  fail "dpkg -i into the scratch root failed"
fi
status=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Package} ${db:Status-Abbrev}\n' \
  ballast-router ballast-backend ballast-lbdp)
[[ $(grep -c ' ii $' <<<"$status") -eq 3 ]] || fail "not all installed: $status"
grep -q '^ballast-admin:' "$root/etc/group" || fail "postinst made no ballast-admin group"
[[ $(stat -c %a "$root/var/lib/ballast" 2>/dev/null) == 750 ]] ||
  fail "postinst made no /var/lib/ballast with mode 0750"
[[ -d $root/run/ballast ]] || fail "postinst made no /run/ballast"
say "installed into the scratch root: group ballast-admin, /var/lib/ballast 0750, /run/ballast"

# Every path a unit names is installed (in the scratch root) or, for a
# program of the base system (/bin/kill), on this host.
for unit in "$root"/lib/systemd/system/*.service; do
  while IFS= read -r path; do
    [[ -e $root$path || ($path == /bin/* && -x $path) ]] ||
      fail "$(basename "$unit") names $path, which no package installs"
  done < <(sed -nE 's/^Exec[A-Za-z]*=[-@!+:]*([^ ]+).*/\1/p; s/^Documentation=.*file:([^ ]+).*/\1/p' "$unit")
  say "$(basename "$unit"): every program and document it names is installed"
done
# verify resolves what the units refer to (sysinit.target, network-online
# .target, /bin/kill) in the root: give the scratch root the host's systemd
# units and kill, as the base system of a real host would have them.
paths >"$work/before-verify.txt"
cp -an /lib/systemd/system/. "$root/lib/systemd/system/"
mkdir -p "$root/bin"
cp -L /bin/kill "$root/bin/kill"
if ! systemd-analyze verify --root="$root" --man=no lbagent.service ballast-backend.service \
  >"$work/verify.log" 2>&1; then
  cat "$work/verify.log"
  fail "systemd-analyze verify rejects the units"
fi
[[ ! -s $work/verify.log ]] || { cat "$work/verify.log"; fail "systemd-analyze verify warns"; }
say "systemd-analyze verify: both units clean"
# The host's units and kill go again (they are not the packages').
comm -13 "$work/before-verify.txt" <(paths) | sort -r | while IFS= read -r p; do
  if [[ -d $root/$p && ! -L $root/$p ]]; then rmdir "$root/$p"; else rm -f "$root/$p"; fi
done

for b in usr/sbin/lbagent usr/bin/lbctl usr/sbin/lbdp; do
  v=$("$root/$b" --version)
  [[ $v == "$(basename "$b") $version" ]] || fail "$b --version: '$v'"
done
export LBDP=$root/usr/sbin/lbdp RUNTIME_DIRECTORY=$work/run-backend
backend_sh=$root/usr/sbin/ballast-backend
"$root/usr/sbin/lbagent" --check-config "$root/usr/share/doc/ballast-router/examples/lbagent.conf" \
  >/dev/null || fail "the packaged example lbagent.conf is refused"
"$backend_sh" --config "$root/usr/share/doc/ballast-backend/examples/backend.conf" check >/dev/null ||
  fail "the packaged example backend.conf is refused"
say "installed binaries run; the example configs are valid"

# The quick start's copies (docs/operations.md, "Install"): /etc/ballast is there.
[[ $(stat -c %a "$root/etc/ballast" 2>/dev/null) == 755 ]] || fail "no /etc/ballast (mode 0755)"
cp "$root/usr/share/doc/ballast-router/examples/lbagent.conf" "$root/etc/ballast/lbagent.conf" ||
  fail "the router quick start's cp fails"
cp "$root/usr/share/doc/ballast-backend/examples/backend.conf" "$root/etc/ballast/backend.conf" ||
  fail "the backend quick start's cp fails"
say "the quick starts' copies into /etc/ballast work"

# The man pages render without a warning; the completion completes.
for page in "$root"/usr/share/man/man*/*.gz; do
  warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
  [[ -z $warn ]] || fail "$(basename "$page") renders with warnings: $warn"
done
got=$(bash -c 'source "$1"; COMP_WORDS=(lbctl backend dr); COMP_CWORD=2; _ballast_lbctl
  echo "${COMPREPLY[*]}"' _ "$root/usr/share/bash-completion/completions/lbctl")
[[ $got == drain ]] || fail "lbctl's completion of 'backend dr': '$got'"
say "man pages render cleanly: $(cd "$root/usr/share/man" && echo man*/*.gz); lbctl completes"

# ---- 5. the backend unit's script in a namespace ------------------------------
ip netns add "$ns"
ip -n "$ns" link add nic0 type veth peer name nic1
ip -n "$ns" link set nic0 up
ip -n "$ns" link set nic1 up
ip -n "$ns" link set lo up
ip -n "$ns" addr add 198.18.12.2/24 dev nic0
nsrun() { ip netns exec "$ns" "$@"; }
conf=$work/backend.conf
cat >"$conf" <<'EOF'
DEVICE=nic0
ADDRESSES=198.18.12.2
ROUTERS=198.18.12.1/32 2001:db8:12::1/128
VIPS=198.18.0.10:80/tcp [2001:db8::10]:443/tcp
MODE=auto
GUE_PORT=6080
EOF
lo_vips() { nsrun ip -o addr show dev lo | awk '{print $4}' | grep -v -e '^127\.' -e '^::1/' | sort | xargs; }
xdp_on() { nsrun ip -d link show dev nic0 | grep -q 'prog/xdp'; }

nsrun "$backend_sh" --config "$conf" up >"$work/up.log" 2>&1 || { cat "$work/up.log"; fail "up failed"; }
xdp_on || fail "up attached no XDP program to nic0"
grep -q "(GUE on UDP port 6080)" "$work/up.log" || fail "up did not take GUE on 6080: $(cat "$work/up.log")"
[[ $(lo_vips) == "198.18.0.10/32 2001:db8::10/128" ]] || fail "VIPs on lo after up: '$(lo_vips)'"
st=$(nsrun "$backend_sh" --config "$conf" status) || fail "status failed: $st"
grep -q '^VIPS=198.18.0.10 2001:db8::10$' <<<"$st" || fail "status does not show the VIPs: $st"
grep -q '^pass ' <<<"$st" || fail "status does not show the decap counters: $st"
say "up: xdp_decap on nic0, $(lo_vips) on lo"

# Bad files: refused (exit 2) with the field named, nothing changes.
# refused WHAT FILE COMMAND WANT: the script's COMMAND on FILE exits 2 with
# WANT in its message.
refused() {
  local rc=0
  msg=$(nsrun "$backend_sh" --config "$2" "$3" 2>&1) || rc=$?
  [[ $rc -eq 2 && $msg == *"$4"* ]] || fail "$1: exit $rc, '$msg' (want exit 2 and '$4')"
}
sed 's/^VIPS=.*/VIPS=198.18.0.10 224.0.0.5/' "$conf" >"$work/bad.conf"
refused "a multicast VIP" "$work/bad.conf" up "VIPS: '224.0.0.5' is not a unicast"
# Addresses are parsed by lbdp (the agent's parser), not by the script.
sed 's/^VIPS=.*/VIPS=::ffff:198.18.0.10/' "$conf" >"$work/bad3.conf"
refused "an IPv4-mapped VIP" "$work/bad3.conf" check \
  "VIPS: '::ffff:198.18.0.10' is an IPv4 address written as IPv6"
sed 's/^GUE_PORT=.*/GUE_PORT=65536/' "$conf" >"$work/bad4.conf"
refused "a GUE port out of range" "$work/bad4.conf" check "GUE_PORT: '65536' is not a UDP port"
printf 'DEVICE=nic0\nSHELL=$(reboot)\n' >"$work/bad2.conf"
refused "an unknown key" "$work/bad2.conf" check "unknown key SHELL"
[[ $(lo_vips) == "198.18.0.10/32 2001:db8::10/128" ]] && xdp_on ||
  fail "a refused file changed something: lo has '$(lo_vips)'"
say "bad files refused with the field named ($msg), nothing changed"

# A changed file: the VIP no longer listed leaves lo.
sed -i 's/^VIPS=.*/VIPS=198.18.0.10:80\/tcp/' "$conf"
nsrun "$backend_sh" --config "$conf" up >/dev/null
[[ $(lo_vips) == "198.18.0.10/32" ]] || fail "after up with one VIP: '$(lo_vips)'"
xdp_on || fail "up again left no XDP program"
nsrun "$backend_sh" --config "$conf" down >/dev/null
xdp_on && fail "down left the XDP program on nic0"
[[ -z $(lo_vips) ]] || fail "down left '$(lo_vips)' on lo"
say "up again dropped the unlisted VIP; down detached and cleared lo"

# ---- 6. purge -------------------------------------------------------------------
# Both units enabled, and what the agent and the backend unit write while
# they run (state, audit log, bounce devices, socket, BGP hold file; the
# VIPs the backend put on lo).
systemctl --root="$root" enable lbagent.service ballast-backend.service >/dev/null 2>&1 ||
  fail "systemctl --root enable failed"
[[ -L $root/etc/systemd/system/multi-user.target.wants/lbagent.service ]] ||
  fail "systemctl --root enable made no link for lbagent"
for f in var/lib/ballast/state.pb var/lib/ballast/audit.jsonl var/lib/ballast/bounce-interfaces \
  run/ballast/lbagent.sock run/ballast/bgp-hold run/ballast-backend/vips; do
  mkdir -p "$root/$(dirname "$f")"
  echo written-while-running >"$root/$f"
done
files=$(dpkg-query --admindir="$root/var/lib/dpkg" -L ballast-router ballast-backend ballast-lbdp)
if ! dpkg --root="$root" --log=/dev/null --force-script-chrootless --force-depends \
  -P ballast-router ballast-backend ballast-lbdp >"$work/purge.log" 2>&1; then
  cat "$work/purge.log"
  fail "dpkg --purge failed"
fi
left=$(comm -13 "$work/before-install.txt" <(paths))
[[ -z $left ]] || fail "purge left paths that were not there before the install: $(echo $left)"
grep -q '^ballast-admin:' "$root/etc/group" && fail "purge left the group ballast-admin"
say "purged: none of the packages' $(wc -l <<<"$files") paths, no link, state, socket or group is left"
say "ok"
