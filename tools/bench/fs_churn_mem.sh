#!/usr/bin/env bash
# fs_churn_mem.sh: the daemon's memory under filesystem churn (issue 16).
# Mounts a fresh MatrixFS with a pool, then for DURATION seconds unpacks a
# tarball of /usr/include into it and removes it again (tar xf; sync; rm
# -rf; sync), and samples the daemon's VmRSS and RssAnon (/proc/PID/status)
# and the "memory" line of .matrixfs/stats (inode table, glibc malloc's
# bytes in use, free but kept, mmapped; trims) every 5 s.
#
# Every --ext4_every rounds the same tarball is also unpacked into and
# removed from a directory of the work directory's own filesystem (ext4 on
# the development host), timed the same way, for comparison.
#
# Usage: tools/bench/fs_churn_mem.sh [--build DIR] [--duration S] [--work DIR] [--out DIR] [--ext4_every N]
#   --build     build directory holding bin/matrixfs (build)
#   --duration  seconds of churn (600)
#   --work      scratch directory for the data directory and the mount
#               (/tmp/fs_churn_mem); the pool goes to /dev/shm
#   --out       where mem.csv (t_s,round,rss_mb,anon_mb,inode_table,
#               malloc_in_use_mb,malloc_free_mb,malloc_mmap_mb,trims,trim_ms),
#               rounds.csv (round,tar_s,rm_s,at_s,rm_requests_per_entry,
#               ext4_tar_s,ext4_rm_s,rows_at_rm,flushes_in_rm,columns_in_rm,
#               switches_in_rm; the ext4 columns empty in other rounds; the
#               last four: the container's rows when rm -rf starts, and the
#               flushes, column compactions and receiver switches while it
#               runs, so that a slow round can be told from a slow disk)
#               and, with gnuplot, mem.png go (the work directory)
#   --ext4_every  compare with the work directory's filesystem every N
#               rounds, from round 1 (5; 0: never)
# Prints one line per round and the load average at the start and the end.
# Needs root (mount). Run it under `flock /tmp/bench.lock` beside other
# benchmarks.
set -euo pipefail
build=build duration=600 work=/tmp/fs_churn_mem out= ext4_every=5
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ext4_every) ext4_every=$2; shift 2 ;;
    *) echo "fs_churn_mem.sh: unknown argument '$1' (see the header for usage)" >&2; exit 2 ;;
  esac
done
out=${out:-$work}
[ -x "$build/bin/matrixfs" ] || { echo "fs_churn_mem.sh: $build/bin/matrixfs not found (make first)" >&2; exit 2; }
rm -rf "$work/data" "$work/mnt" "$work/ext4"
mkdir -p "$work/data" "$work/mnt" "$work/ext4" "$out"
pool=/dev/shm/fs_churn_mem.$$.pool
tar -C /usr -cf "$work/inc.tar" include
"$build/bin/matrixfs" -f "$work/data" "$work/mnt" -o format,pool="$pool" >"$work/daemon.log" 2>&1 &
pid=$!
cleanup() {
  umount "$work/mnt" 2>/dev/null || umount -l "$work/mnt" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null || true
  rm -f "$pool"
}
trap cleanup EXIT
for _ in $(seq 1 300); do mountpoint -q "$work/mnt" && break; kill -0 "$pid" || break; sleep 0.1; done
mountpoint -q "$work/mnt" || { echo "fs_churn_mem.sh: the daemon did not mount; its log:" >&2; cat "$work/daemon.log" >&2; exit 1; }
echo "t_s,round,rss_mb,anon_mb,inode_table,malloc_in_use_mb,malloc_free_mb,malloc_mmap_mb,trims,trim_ms" >"$out/mem.csv"
echo "fs_churn_mem.sh: start, load: $(uptime)"
cols=round,tar_s,rm_s,at_s,rm_requests_per_entry,ext4_tar_s,ext4_rm_s,rows_at_rm,flushes_in_rm,columns_in_rm,switches_in_rm
echo "$cols" >"$out/rounds.csv"
entries=$(tar -tf "$work/inc.tar" | wc -l)
# The sum of the per-opcode counts on the requests line of .matrixfs/stats.
requests() { awk '/^requests / {n = 0; for (i = 2; i <= NF; i++) {split($i, kv, "="); n += kv[2]} print n}' "$work/mnt/.matrixfs/stats"; }
# The engine's counters: container rows, flushes, column compactions, switches.
engine() {
  { cat "$work/mnt/.matrixfs/container" "$work/mnt/.matrixfs/stats"; } |
    awk '$1 == "rows" {r = $2} $1 == "flushes" {f = $2} $1 == "column.compactions" {c = $2} $1 == "switches" {s = $2}
         END {print r + 0, f + 0, c + 0, s + 0}'
}
t0=$(date +%s)
echo 0 >"$work/round"
(while kill -0 "$pid" 2>/dev/null; do
   m=$(grep '^memory ' "$work/mnt/.matrixfs/stats" 2>/dev/null || true)
   awk -v t=$(($(date +%s) - t0)) -v r="$(cat "$work/round")" -v m="$m" \
     'function f(k,  i) { for (i = 1; i <= n; i++) if (kv[i] ~ "^" k "=") return substr(kv[i], length(k) + 2); return "" }
      /^VmRSS/ {rss = $2 / 1024} /^RssAnon/ {anon = $2 / 1024}
      END {n = split(m, kv, " "); printf "%d,%s,%.1f,%.1f,%s,%.1f,%.1f,%.1f,%s,%s\n", t, r, rss, anon, f("inode_table"),
           f("malloc_in_use_kb") / 1024, f("malloc_free_kb") / 1024, f("malloc_mmap_kb") / 1024, f("trims"), f("trim_ms")}' \
     "/proc/$pid/status" >>"$out/mem.csv" 2>/dev/null || true
   sleep 5
 done) &
sampler=$!
r=0
now() { date +%s.%N; }
while [ $(($(date +%s) - t0)) -lt "$duration" ]; do
  r=$((r + 1))
  echo "$r" >"$work/round"
  s=$(now); tar -C "$work/mnt" -xf "$work/inc.tar"; sync; q0=$(requests); read -r rows f0 c0 w0 < <(engine); m=$(now)
  rm -rf "$work/mnt/include"; sync; e=$(now); q1=$(requests); read -r _ f1 c1 w1 < <(engine)
  xt= xr=
  if [ "$ext4_every" -gt 0 ] && [ $(((r - 1) % ext4_every)) -eq 0 ]; then
    xs=$(now); tar -C "$work/ext4" -xf "$work/inc.tar"; sync; xm=$(now)
    rm -rf "$work/ext4/include"; sync; xe=$(now)
    xt=$(awk -v s="$xs" -v m="$xm" 'BEGIN {printf "%.3f", m - s}')
    xr=$(awk -v m="$xm" -v e="$xe" 'BEGIN {printf "%.3f", e - m}')
  fi
  line=$(awk -v r=$r -v s="$s" -v m="$m" -v e="$e" -v a=$(($(date +%s) - t0)) -v q=$((q1 - q0)) -v n="$entries" \
    -v xt="$xt" -v xr="$xr" 'BEGIN {printf "%d,%.3f,%.3f,%d,%.2f,%s,%s", r, m - s, e - m, a, q / n, xt, xr}')
  line="$line,$rows,$((f1 - f0)),$((c1 - c0)),$((w1 - w0))"
  echo "$line" >>"$out/rounds.csv"
  echo "round $line ($cols)"
done
echo "fs_churn_mem.sh: end, load: $(uptime)"
if command -v gnuplot >/dev/null; then
  gnuplot <<EOF || echo "fs_churn_mem.sh: gnuplot failed; no mem.png" >&2
set terminal pngcairo size 900,500
set output "$out/mem.png"
set datafile separator ","
set key left top
set xlabel "minutes"
set ylabel "MB"
set grid
set title "matrixfs daemon memory under churn (tar xf /usr/include, rm -rf; $r rounds)"
plot "$out/mem.csv" every ::1 using (\$1/60):4 with lines lw 2 title "RssAnon (private)", \
     "" every ::1 using (\$1/60):6 with lines title "malloc in use", \
     "" every ::1 using (\$1/60):7 with lines title "malloc free, kept", \
     "" every ::1 using (\$1/60):8 with lines title "malloc mmapped"
EOF
fi
echo "fs_churn_mem.sh: $r rounds in $duration s; $out/mem.csv, $out/rounds.csv"
