#!/usr/bin/env bash
# fs_build_mix_smoke.sh: fs_build_mix.sh --quick with the build's daemon
# twice (the A/B mechanics) and one busy loop beside, for `make test`.
# Usage: tools/bench/fs_build_mix_smoke.sh [BUILD_DIR] (default build).
# Checks, from its raw file:
#   - it exits 0: every step (tar, the units, cp -r, find|stat) succeeded;
#   - every step has a time for both entries of --bin;
#   - readers.active was never 1 on the mount: the daemon opens its database
#     with background_yields_to_readers off, so its workers' lookups never
#     make the flush and the compactions step back (kvcore/background.h).
# Prints "fs_build_mix smoke: OK" and exits 0, or says what failed and exits
# 1 with the full output. Needs root. Times are not checked (STYLE.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
case $build in /*) bin="$build/bin" ;; *) bin="$PWD/$build/bin" ;; esac
tmp=$(mktemp -d /tmp/fs-build-mix-smoke.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/out.log
fail() {
  echo "fs_build_mix smoke: FAILED: $*" >&2
  cat "$log" >&2
  exit 1
}
tools/bench/fs_build_mix.sh --quick --contend 1 --bin "$bin,$bin" --dir "$tmp/base" --tsv "$tmp/raw.tsv" \
  >"$log" 2>&1 || fail "fs_build_mix.sh exited $?"
for s in tar_xf build cp_r find_stat; do
  n=$(awk -F'\t' -v s="$s" '$3 == s && $4 ~ /^[0-9.]+$/ {n++} END {print n + 0}' "$tmp/raw.tsv")
  [ "$n" -eq 2 ] || fail "$n times for $s in $tmp/raw.tsv (2 expected)"
done
awk -F'\t' 'NR > 1 && $7 + 0 > 0 {f = 1} END {exit f}' "$tmp/raw.tsv" ||
  fail "readers.active was 1 on the mount (the background stepped back behind the workers)"
echo "fs_build_mix smoke: OK"
