#!/bin/bash
# ballast build: set-up (unless --no-setup), configure and build everything
# into <repo>/build.
#
# Usage: tools/build.sh [--no-setup] [-j N] [extra cmake -D options...]
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
setup=1
jobs=$(nproc)
cmake_args=()
while (($#)); do
  case $1 in
    --no-setup) setup=0 ;;
    -j) jobs=$2; shift ;;
    -j*) jobs=${1#-j} ;;
    -D*) cmake_args+=("$1") ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) printf 'build: unknown argument %s\n' "$1" >&2; exit 2 ;;
  esac
  shift
done

if ((setup)); then
  "$repo/tools/setup.sh"
fi

build_type=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
# Warnings are errors here (development and CI), not in a plain cmake build.
cmake -S "$repo" -B "$repo/build" -DCMAKE_BUILD_TYPE="$build_type" -DBALLAST_WERROR=ON "${cmake_args[@]}"
make -C "$repo/build" -j"$jobs"
printf 'build: ok (%s)\n' "$repo/build"
