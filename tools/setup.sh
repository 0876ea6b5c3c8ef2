#!/bin/bash
# ballast set-up: installs every Debian package that the build, the lab and
# the tests need, and mounts bpffs. Idempotent: when everything is already
# installed it touches nothing and does not call apt at all.
#
# Usage: tools/setup.sh        (as root, Debian 12)
#
# apt-get update runs at most once per invocation, and only when a package is
# missing. Services that Debian starts from package scripts (nginx, etcd,
# prometheus, bird) are kept from starting during the install through a
# temporary policy-rc.d, so a fresh machine does not end up with a system
# nginx on port 80 or an etcd on 2379; the lab and the tests start their own
# instances with their own configuration.
set -euo pipefail

PACKAGES=(
  # build
  cmake make g++ clang llvm pkg-config
  libbpf-dev libxdp-dev linux-libc-dev libelf-dev zlib1g-dev
  libabsl-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  catch2 libbenchmark-dev libcurl4-openssl-dev libre2-dev libcli11-dev libcpp-httplib-dev libyaml-cpp-dev
  clang-format
  # BPF and network tooling
  xdp-tools bpftool iproute2 ethtool iputils-ping tshark
  # lab and e2e: servers, clients, coordination, routing, metrics
  nginx-light wrk nghttp2-client curl etcd-server etcd-client bird2 prometheus
  # the attack suite's hostile packets (tests/e2e/attack_send.py)
  python3-scapy
  # scripting
  jq procps python3 util-linux openssl libssl-dev
  # systemd service protocol (sd_notify, watchdog)
  libsystemd-dev
  # packages: cpack -G DEB (dpkg-shlibdeps, file), their checks (lintian,
  # systemd-analyze verify, systemd-sysusers and -tmpfiles for a scratch root,
  # man for the man pages)
  dpkg-dev file lintian man-db systemd
  # the router package under a real systemd: a Debian 12 tree booted in a
  # container (deploy/tests/package_systemd_test.sh)
  mmdebstrap systemd-container
  # the status page's test: a headless browser loads it (no sandbox, as root)
  chromium
  # lbctl's completion tests: the shells it completes in (bash is there)
  zsh fish
)

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

if [[ $(id -u) -ne 0 ]]; then
  die "must run as root (it installs Debian packages and mounts bpffs): run it from a root shell"
fi
command -v dpkg-query >/dev/null || die "dpkg-query not found: this script supports Debian 12 only"

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  say "installing ${#missing[@]} missing package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Keep package scripts from starting services during this install, unless
  # the machine already has its own policy.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# temporary, written by ballast tools/setup.sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    own_policy=1
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  still=()
  for p in "${missing[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
    [[ $status == ii* ]] || still+=("$p")
  done
  ((${#still[@]} == 0)) || die "still not installed after apt-get: ${still[*]}"
else
  say "all ${#PACKAGES[@]} packages already installed"
fi

# bpffs: the data plane pins its maps under /sys/fs/bpf/ballast.
if ! mountpoint -q /sys/fs/bpf || [[ $(stat -f -c %T /sys/fs/bpf) != bpf_fs ]]; then
  mkdir -p /sys/fs/bpf
  mount -t bpf bpf /sys/fs/bpf || die "cannot mount bpffs at /sys/fs/bpf"
  say "mounted bpffs at /sys/fs/bpf"
fi

say "ok"
