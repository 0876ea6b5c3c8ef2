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

# The Release build, the one the packages ship (-O3: GCC 12 warns at -O3
# where it does not at -O2, so development and CI see what a package build
# sees), with line tables (-g1: backtraces, perf and gdb show file:line; the
# code is the same, cpack strips them from the packages).
build_type=${CMAKE_BUILD_TYPE:-Release}
type_flags=()
if [[ $build_type == Release ]]; then
  type_flags=(-DCMAKE_C_FLAGS_RELEASE="-O3 -DNDEBUG -g1" -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG -g1")
fi
# Warnings are errors here (development and CI), not in a plain cmake build.
cmake -S "$repo" -B "$repo/build" -DCMAKE_BUILD_TYPE="$build_type" "${type_flags[@]}" \
  -DBALLAST_WERROR=ON "${cmake_args[@]}"
make -C "$repo/build" -j"$jobs"
printf 'build: ok (%s)\n' "$repo/build"
