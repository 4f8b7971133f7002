#!/usr/bin/env bash
# daemon_cpu.sh — the MatrixFS daemon's own CPU time (utime + stime of all its
# threads, /proc/PID/stat) and the wall time of tar xf and rm -rf of a tree,
# for several matrixfs binaries interleaved (A/B of daemon-side changes that
# do not change the requests). Each round mounts every binary on a fresh data
# directory (pool in /dev/shm), unpacks the tarball, syncs, removes the tree.
#
# Usage: [OPTS=mount-options] tools/bench/daemon_cpu.sh TARBALL MATRIXFS...
#   TARBALL   e.g. made once with: tar cf /tmp/tree.tar -C / usr/include
#   MATRIXFS  paths of matrixfs binaries; each is named in the output by the
#             directory two levels above it (DIR/bin/matrixfs -> DIR)
# Prints one line per round and binary. Needs root. Wrap it in
# flock /tmp/bench.lock like every benchmark.
set -u
tarball=$1
shift
bins=("$@")
top=$(cd "$(dirname "$0")/../.." && pwd)
w="$top/var/daemon_cpu"
pool=/dev/shm/daemon_cpu.pool
tick=$(getconf CLK_TCK)
cpu() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
now() { date +%s.%N; }
for r in 1 2 3; do
  for bin in "${bins[@]}"; do
    tag=$(basename "$(dirname "$(dirname "$bin")")")
    rm -rf "$w"; mkdir -p "$w/d" "$w/m"; rm -f "$pool"
    "$bin" -f "$w/d" "$w/m" -o "format,pool=$pool${OPTS:+,$OPTS}" > "$w/log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do grep -q " $w/m " /proc/mounts && break; sleep 0.1; done
    c0=$(cpu $pid); t0=$(now)
    tar xf "$tarball" -C "$w/m"; sync
    c1=$(cpu $pid); t1=$(now)
    rm -rf "$w/m"/*
    c2=$(cpu $pid); t2=$(now)
    printf 'round %d %s: tar cpu %.2f s wall %.3f s; rm cpu %.2f s wall %.3f s\n' "$r" "$tag" \
      "$(echo "$c1 - $c0" | bc)" "$(echo "$t1 - $t0" | bc)" "$(echo "$c2 - $c1" | bc)" "$(echo "$t2 - $t1" | bc)"
    umount "$w/m"; wait $pid
    rm -f "$pool"
  done
done
rm -rf "$w"
