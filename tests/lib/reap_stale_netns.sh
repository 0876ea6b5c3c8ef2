#!/bin/bash
# reap_stale_netns.sh: removes the network namespaces a ballast test made
# and could not remove itself because it was killed (SIGKILL, a machine or
# session that stopped mid-run: no trap runs then). Only names the tests
# give, with the creating test's PID in them:
#   ag<pid>..., bgp<pid>..., bte<pid>..., cl<pid>..., hl<pid>...   (tests/e2e labs)
#   pk<pid>-...                                  (package_systemd: lab and container)
#   ballast-lbdpt-<pid>, ballast-pkg-<pid>             (lbdp_cli, package_deb)
# and only when that PID is no longer a live process (a namespace of a
# running test, or of a PID reused since, is left alone). Processes still
# in a reaped namespace are ended by PID first. A lab of such a test also
# leaves its state under /run/ballast-lab/<prefix>: the bpffs mounts there
# hold the pinned lb program and maps after the namespaces are gone. The
# lab's own `down` removes it (unmount, then the directory). Run by every
# e2e test as it starts (tests/e2e/common.sh) and by the two standalone
# scripts.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
  if [[ $ns =~ ^(ag|bgp|bte|cl|hl|pk)([0-9]+) ]]; then
    pid=${BASH_REMATCH[2]}
  elif [[ $ns =~ ^ballast-(lbdpt|pkg)-([0-9]+)$ ]]; then
    pid=${BASH_REMATCH[2]}
  else
    continue
  fi
  kill -0 "$pid" 2>/dev/null && continue
  for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  if ip netns del "$ns" 2>/dev/null; then
    printf 'reap_stale_netns: removed %s (left by pid %s, which is gone)\n' "$ns" "$pid" >&2
  fi
done
lab=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tools/lab/lab
for dir in /run/ballast-lab/*/; do
  prefix=$(basename "$dir")
  [[ $prefix =~ ^(ag|bgp|bte|cl|hl|pk)([0-9]+) ]] || continue
  pid=${BASH_REMATCH[2]}
  kill -0 "$pid" 2>/dev/null && continue
  if "$lab" --prefix "$prefix" --no-build down >/dev/null 2>&1; then
    printf 'reap_stale_netns: removed lab %s (left by pid %s, which is gone)\n' "$prefix" "$pid" >&2
  fi
done
exit 0
