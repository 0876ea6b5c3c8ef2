#!/bin/bash
# reap_stale_netns.sh removes a test's namespace whose PID is gone (with a
# process still in it, ended by PID) and keeps one whose PID is alive; and
# a dead test's lab state (/run/ballast-lab/<prefix>, with a bpffs mount
# holding a pinned map), keeping a live test's. Root. Cleans up after itself.
set -u
[[ $(id -u) -eq 0 ]] || { echo "FAIL: needs root (network namespaces)"; exit 1; }
true &
dead=$!
wait "$dead"
stale=hl${dead}-reaptest
live=ballast-pkg-$$
stale_lab=/run/ballast-lab/hl${dead}rt
live_lab=/run/ballast-lab/hl$$rt
cleanup() {
  ip netns del "$stale" 2>/dev/null
  ip netns del "$live" 2>/dev/null
  local d
  for d in "$stale_lab" "$live_lab"; do
    mountpoint -q "$d/bpffs/router" 2>/dev/null && umount "$d/bpffs/router"
    rm -rf "$d"
  done
  rmdir /run/ballast-lab 2>/dev/null
}
trap cleanup EXIT
ip netns add "$stale" && ip netns add "$live" || { echo "FAIL: cannot create namespaces"; exit 1; }
# Two labs' state as tools/lab/lab leaves it: the router's bpffs, with a pin.
for d in "$stale_lab" "$live_lab"; do
  mkdir -p "$d/bpffs/router" && mount -t bpf bpf "$d/bpffs/router" &&
    bpftool map create "$d/bpffs/router/flows" type hash key 4 value 4 entries 4 name reaptest ||
    { echo "FAIL: cannot make the lab state $d"; exit 1; }
done
ip netns exec "$stale" sleep 60 &
sleeper=$!
# Wait until the process is in the namespace (not a fixed sleep).
for ((i = 0; i < 50; i++)); do
  [[ -n $(ip netns pids "$stale" 2>/dev/null) ]] && break
  sleep 0.1
done
[[ -n $(ip netns pids "$stale" 2>/dev/null) ]] || { echo "FAIL: no process entered $stale"; exit 1; }
"$(dirname "$0")/reap_stale_netns.sh"
rc=0
if ip netns list | grep -qw "$stale"; then echo "FAIL: $stale (pid $dead gone) was kept"; rc=1; fi
if ! ip netns list | grep -qw "$live"; then echo "FAIL: $live (pid $$ alive) was removed"; rc=1; fi
if kill -0 "$sleeper" 2>/dev/null; then
  echo "FAIL: the process in $stale was not ended"
  kill "$sleeper"
  rc=1
fi
wait "$sleeper" 2>/dev/null
if [[ -e $stale_lab ]] || grep -q " $stale_lab/" /proc/mounts; then
  echo "FAIL: the lab state $stale_lab (pid $dead gone) was kept"
  rc=1
fi
if [[ ! -e $live_lab/bpffs/router/flows ]]; then echo "FAIL: the lab state $live_lab (pid $$ alive) was removed"; rc=1; fi
((rc == 0)) && echo "ok: stale namespace, its process and its lab state removed, live ones kept"
exit $rc
