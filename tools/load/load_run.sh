#!/usr/bin/env bash
# load_run.sh: a long mixed load on a fresh MatrixFS mount that watches the
# daemon for unbounded growth (issue 6, "Load and limits").
#
#   tools/load/load_run.sh [BUILD_DIR]          (default build)
#
# Environment: DURATION seconds of load (default 600), SAMPLE seconds between
# samples (default 5), PROCS metadata-storm processes (default 4), FIO_SIZE
# of the sequential fio file (default 256M; 16M when DURATION < 60), OUT
# directory for the CSV and logs (default: a new /tmp/mxfs-load.* that is
# kept when the run fails or OUT was given).
#
# 1. Formats and mounts a fresh instance (pool on /dev/shm) with the
#    foreground daemon BUILD_DIR/bin/matrixfs, so its pid is known.
# 2. For DURATION seconds runs, in parallel: fio in rounds (a sequential 1 MiB
#    write and a 4 KiB random write, each verified with crc32c, plus a random
#    read of the sequential file), and mxfs-meta-storm (PROCS processes on a
#    bounded set of names: create/stat/rename/unlink/link/symlink/mkdir/
#    readdir/xattrs in shared directories).
# 3. Every SAMPLE seconds writes the daemon's VmRSS, VmHWM, RssAnon,
#    RssFile, RssShmem, thread count and open fds (/proc/PID/fd) to
#    OUT/samples.csv. RssShmem is the touched part of the /dev/shm pool
#    mapping: it grows as the PM WAL and L0 fill the pool, bounded by the
#    pool size, so it is judged apart from the daemon's private memory
#    (RssAnon + RssFile: heap, block cache, memtables, mapped files).
# 4. After the load: removes the workload's files, waits two samples, and
#    takes the end sample.
# 5. Verdict: private memory of the last third of the load samples averages
#    within 10% + 16 MiB of the middle third (the first third is warm-up),
#    and RssShmem never exceeds the pool size;
#    threads at the end are at most the load's maximum; open fds at the end
#    are within 16 of the baseline after mount (the engine's table cache may
#    keep a few more SSTables open); fio and the storm report no error.
# 6. Unmounts, waits for the daemon to exit 0, runs fsck.matrixfs -n (must
#    exit 0).
# Prints a table (first/middle/last/max) and "load run: OK" or
# "load run: FAILED: ..." and exits 0 or 1.
set -uo pipefail

build=${1:-build}
duration=${DURATION:-600}
sample=${SAMPLE:-5}
procs=${PROCS:-4}
if [ -z "${FIO_SIZE:-}" ]; then
  if [ "$duration" -lt 60 ]; then fio_size=16M; else fio_size=256M; fi
else
  fio_size=$FIO_SIZE
fi
bin=$build/bin
for b in matrixfs mxfs-meta-storm fsck.matrixfs; do
  [ -x "$bin/$b" ] || { echo "load run: $bin/$b not found (build it first)" >&2; exit 1; }
done
command -v fio >/dev/null || { echo "load run: fio is not installed" >&2; exit 1; }

keep_out=0
if [ -n "${OUT:-}" ]; then
  out=$OUT
  keep_out=1
  mkdir -p "$out"
else
  out=$(mktemp -d /tmp/mxfs-load.XXXXXX)
fi
work=$(mktemp -d /tmp/mxfs-load-work.XXXXXX)
data=$work/data
mnt=$work/mnt
pool=/dev/shm/mxfs-load-$$.pool
mkdir -p "$mnt"
csv=$out/samples.csv
failed=0
reasons=()
fail() {
  failed=1
  reasons+=("$*")
  echo "load run: FAILED: $*" >&2
}

daemon=
sampler=
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
    sleep 1
    kill -9 "$daemon" 2>/dev/null
  fi
  mountpoint -q "$mnt" && umount -l "$mnt"
  rm -rf "$work"
  rm -f "$pool"
  if [ "$failed" -eq 0 ] && [ "$keep_out" -eq 0 ]; then rm -rf "$out"; fi
}
trap cleanup EXIT

pool_mib=512
"$bin/matrixfs" "$data" "$mnt" -f -o "format,pool=$pool,pool_size=${pool_mib}M" >"$out/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 1 300); do
  [ "$(stat -f -c %T "$mnt" 2>/dev/null)" = fuseblk ] && break
  [ "$(stat -f -c %t "$mnt" 2>/dev/null)" = 65735546 ] && break
  kill -0 "$daemon" 2>/dev/null || { fail "the daemon exited before mounting: $(cat "$out/daemon.log")"; exit 1; }
  sleep 0.1
done
[ "$(stat -f -c %t "$mnt" 2>/dev/null)" = 65735546 ] || { fail "no FUSE mount on $mnt after 30 s"; exit 1; }

# field NAME from /proc/PID/status, in kB (or a count for Threads)
status_field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$daemon/status" 2>/dev/null; }
take_sample() {  # phase
  local rss hwm anon file shm thr fds
  rss=$(status_field VmRSS) hwm=$(status_field VmHWM) anon=$(status_field RssAnon) thr=$(status_field Threads)
  file=$(status_field RssFile) shm=$(status_field RssShmem)
  fds=$(ls "/proc/$daemon/fd" 2>/dev/null | wc -l)
  echo "$(( $(date +%s) - start )),$1,$rss,$hwm,$anon,$file,$shm,$thr,$fds" >>"$csv"
}
start=$(date +%s)
echo "elapsed_s,phase,vmrss_kb,vmhwm_kb,rssanon_kb,rssfile_kb,rssshmem_kb,threads,fds" >"$csv"
sleep 1
take_sample baseline
(
  while true; do
    sleep "$sample"
    if [ -e "$out/.done" ]; then break; fi
    take_sample load
  done
) &
sampler=$!

# ---- the load
deadline=$(( $(date +%s) + duration ))
mkdir -p "$mnt/fio" "$mnt/storm"
"$bin/mxfs-meta-storm" --dir "$mnt/storm" --procs "$procs" --seconds "$duration" --seed "$$" \
  >"$out/storm.log" 2>&1 &
storm=$!
rounds=0
fio_failed=0
while [ "$(date +%s)" -lt "$deadline" ]; do
  rounds=$((rounds + 1))
  if ! fio --output="$out/fio-last.log" --directory="$mnt/fio" --ioengine=psync --group_reporting \
      --name=seq --rw=write --bs=1M --size="$fio_size" --filename=seq.dat --verify=crc32c --end_fsync=1 --verify_state_save=0 \
      --name=rand --rw=randwrite --bs=4k --size=16M --filename=rand.dat --verify=crc32c --fsync=64 --verify_state_save=0 \
      --name=rread --rw=randread --bs=64k --size="$fio_size" --filename=seq.dat --time_based --runtime=3 \
      >/dev/null 2>"$out/fio-last.err"; then
    fio_failed=1
    cp "$out/fio-last.log" "$out/fio-failed.log" 2>/dev/null
    fail "fio round $rounds failed: $(tail -5 "$out/fio-last.err")"
    break
  fi
  rm -f "$mnt/fio/"*.dat
done
wait "$storm"
storm_rc=$?
[ "$storm_rc" -eq 0 ] || fail "metadata storm: $(tail -3 "$out/storm.log")"
touch "$out/.done"
wait "$sampler"
sampler=

# ---- after the load: remove its files; the kernel forgets them, the daemon closes them
rm -rf "$mnt/fio" "$mnt/storm" || fail "cannot remove the workload's files"
sleep $((2 * sample))
take_sample end

# ---- verdict
summary=$(awk -F, -v out="$out/table.txt" '
  # columns: 1 elapsed 2 phase 3 VmRSS 4 VmHWM 5 RssAnon 6 RssFile 7 RssShmem 8 threads 9 fds
  NR == 1 { next }
  $2 == "baseline" { b_rss = $3; b_priv = $5 + $6; b_shm = $7; b_thr = $8; b_fds = $9; next }
  $2 == "end" { e_rss = $3; e_hwm = $4; e_priv = $5 + $6; e_shm = $7; e_thr = $8; e_fds = $9; next }
  { n++; rss[n] = $3; priv[n] = $5 + $6; shm[n] = $7
    if ($3 > max_rss) max_rss = $3; if ($5 + $6 > max_priv) max_priv = $5 + $6; if ($7 > max_shm) max_shm = $7
    if ($8 > max_thr) max_thr = $8; if ($9 > max_fds) max_fds = $9 }
  END {
    if (n < 3) { print "samples=" n; exit }
    a = int(n / 3); bnd = int(2 * n / 3)
    for (i = a + 1; i <= bnd; i++) { mid += priv[i]; midr += rss[i]; mids += shm[i]; mc++ }
    for (i = bnd + 1; i <= n; i++) { last += priv[i]; lastr += rss[i]; lasts += shm[i]; lc++ }
    mid /= mc; last /= lc; midr /= mc; lastr /= lc; mids /= mc; lasts /= lc
    f = "%-34s %10s %10s %10s %10s %10s\n"; g = "%-34s %10s %10d %10d %10d %10d\n"
    printf f, "", "baseline", "mid-avg", "last-avg", "max", "end" > out
    printf f, "private kB (RssAnon+RssFile)", b_priv, int(mid), int(last), max_priv, e_priv > out
    printf f, "pool pages kB (RssShmem)", b_shm, int(mids), int(lasts), max_shm, e_shm > out
    printf f, "VmRSS kB", b_rss, int(midr), int(lastr), max_rss, e_rss > out
    printf f, "threads", b_thr, "-", "-", max_thr, e_thr > out
    printf f, "open fds", b_fds, "-", "-", max_fds, e_fds > out
    printf f, "VmHWM kB", "-", "-", "-", "-", e_hwm > out
    printf "samples=%d mid=%d last=%d maxshm=%d bfds=%d efds=%d maxthr=%d ethr=%d\n", n, mid, last, max_shm, b_fds, e_fds, max_thr, e_thr
  }' "$csv")
echo "load run: $duration s, $rounds fio rounds, $procs storm processes, samples every $sample s ($csv)"
cat "$out/table.txt" 2>/dev/null
eval "$(tr ' ' '\n' <<<"$summary" | grep -E '^[a-z]+=[0-9]+$')"
if [ "${samples:-0}" -lt 3 ]; then
  fail "only ${samples:-0} samples under load (DURATION $duration, SAMPLE $sample)"
else
  if [ "$last" -gt $(( mid + mid / 10 + 16 * 1024 )) ]; then
    fail "memory grows: last-third private memory average $last kB > middle-third $mid kB + 10% + 16 MiB"
  fi
  if [ "$maxshm" -gt $(( pool_mib * 1024 + 1024 )) ]; then
    fail "shared memory beyond the pool: RssShmem $maxshm kB, pool $pool_mib MiB"
  fi
  if [ "$efds" -gt $(( bfds + 16 )) ]; then
    fail "open fds do not return: $efds after the load, $bfds at the start"
  fi
  if [ "$ethr" -gt "$maxthr" ]; then
    fail "threads keep growing: $ethr after the load, at most $maxthr under it"
  fi
fi
grep -h '^storm' "$out/storm.log" | tail -1

# ---- unmount, daemon exit status, fsck
umount "$mnt" || fail "umount $mnt failed"
drc=0
for _ in $(seq 1 300); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$daemon" 2>/dev/null; then
  fail "the daemon did not exit after umount"
else
  wait "$daemon"
  drc=$?
  [ "$drc" -eq 0 ] || fail "the daemon exited with status $drc: $(tail -5 "$out/daemon.log")"
fi
daemon=
if ! "$build/bin/fsck.matrixfs" -n "$data" >"$out/fsck.log" 2>&1; then
  fail "fsck.matrixfs -n exited $?: $(tail -5 "$out/fsck.log")"
else
  echo "fsck.matrixfs -n: clean"
fi

if [ "$failed" -eq 0 ]; then
  echo "load run: OK"
  exit 0
fi
echo "load run: FAILED: ${reasons[*]} (logs in $out)"
exit 1
