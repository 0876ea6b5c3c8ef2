#!/bin/bash
# reap_stale_netns.sh removes a test's namespace whose PID is gone (with a
# process still in it, ended by PID) and keeps one whose PID is alive.
# Root. Cleans up after itself.
set -u
[[ $(id -u) -eq 0 ]] || { echo "FAIL: needs root (network namespaces)"; exit 1; }
true &
dead=$!
wait "$dead"
stale=hl${dead}-reaptest
live=ballast-pkg-$$
cleanup() { ip netns del "$stale" 2>/dev/null; ip netns del "$live" 2>/dev/null; }
trap cleanup EXIT
ip netns add "$stale" && ip netns add "$live" || { echo "FAIL: cannot create namespaces"; exit 1; }
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
((rc == 0)) && echo "ok: stale namespace and its process removed, live one kept"
exit $rc
