#!/usr/bin/env bash
# torture_smoke.sh: a short crash-torture run for `make test`.
# Usage: tools/torture/torture_smoke.sh [BUILD_DIR] (default build).
#
# Runs BUILD_DIR/bin/mxfs-torture for 8 rounds (alternating the pool-backed
# and the SSD-only instance, 2 threads, kills at random moments, after
# flush/compact and at kill points) with a 40 s round budget, under a hard
# 120 s timeout, then 6 rounds with --full 64 (data directories on a nearly
# full 64 MiB tmpfs: ENOSPC is an expected answer). Passes when both exit 0:
# every round's fsck -n passed, every acknowledged operation was found after
# each remount, and the final clean unmount left both instances fsck-clean.
# Needs root (it mounts); without root it says so and passes.
set -uo pipefail

build=${1:-build}
bin=$build/bin
for b in mxfs-torture matrixfs fsck.matrixfs; do
  [ -x "$bin/$b" ] || { echo "torture smoke: $bin/$b not found" >&2; exit 1; }
done
if [ "$(id -u)" -ne 0 ]; then
  echo "torture smoke: skipped (needs root to mount)"
  exit 0
fi
tmp=$(mktemp -d /tmp/torture-smoke.XXXXXX)
cleanup() {
  # If mxfs-torture was killed by the timeout, end its daemons and mounts.
  for d in "$tmp"/mxfs-torture-*/*/; do
    [ -f "$d/daemon.pid" ] && kill -9 "$(cat "$d/daemon.pid")" 2>/dev/null
    umount -l "$d/mnt" 2>/dev/null
    umount -l "$d/disk" 2>/dev/null
  done
  for t in "$tmp"/mxfs-torture-*; do
    [ -e "$t" ] && rm -f "/dev/shm/$(basename "$t").pool"
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
seed=${TORTURE_SEED:-$(( $(date +%s) % 1000000 ))}
run() {  # NAME ARGS...: one mxfs-torture run
  local name=$1
  shift
  if timeout -k 10 120 "$bin/mxfs-torture" --bin "$bin" --threads 2 --round-ms 1200 --seed "$seed" --dir "$tmp" \
       "$@" >"$tmp/$name.txt" 2>&1; then
    tail -1 "$tmp/$name.txt"
    return 0
  fi
  local rc=$?
  cat "$tmp/$name.txt" >&2
  echo "torture smoke: $name FAILED (exit $rc, seed $seed; rerun with TORTURE_SEED=$seed)" >&2
  exit 1
}
run plain --rounds 8 --time-limit 40
run full --rounds 6 --time-limit 30 --full 64
echo "torture smoke: OK"
exit 0
