#!/usr/bin/env bash
# kv_vs_rocksdb.sh: MatrixKV (kvbench) and RocksDB (db_bench) side by side on
# the same workload, on the same disk, one after the other.
#
# What it runs, in this order (no compression, fixed seed):
#   1. kvbench  --benchmarks=fillrandom,stats   on a fresh DIR/kvbench
#   2. db_bench --benchmarks=fillrandom,stats   on a fresh DIR/rocksdb
#   3. kvbench  --benchmarks=readrandom --use_existing_db=1  on DIR/kvbench
#   4. db_bench --benchmarks=readrandom --use_existing_db=1  on DIR/rocksdb
# Both get the same --num, --key_size, --value_size, --write_buffer_size,
# --max_bytes_for_level_base, --target_file_size_base, --bloom_bits,
# --cache_size, --sync, --readwritepercent, --seek_nexts and --histogram=1;
# db_bench also gets --compression_type=none --statistics=1. A fill runs
# with --threads=FILL_THREADS --writes=NUM/FILL_THREADS (the threads share
# the --num writes), every other benchmark with --threads=THREADS
# --reads=READS/THREADS (the threads share the --reads operations).
#
# Then it prints a Markdown table: ops/s, MB/s, P50/P99/P99.9 (from the
# db_bench-layout histograms) for fillrandom and readrandom, keys found,
# write amplification, stall time and the size of each DB directory after
# the fill, plus the targets (kvbench fill ops/s >= db_bench with P99.9 no
# worse; readrandom ops/s >= 0.8x db_bench).
#
# Write amplification, measured at the end of fillrandom (pending flushes
# and compactions are not waited for, on either side):
#   kvbench:  its "Write amplification:" line, i.e. the DB properties
#             matrixkv.bytes-written-ssd / matrixkv.user-bytes-written
#             accumulated during fillrandom.
#   RocksDB:  (rocksdb.flush.write.bytes + rocksdb.compact.write.bytes) /
#             (rocksdb.number.keys.written * (key_size + value_size)),
#             the tickers of --statistics; WAL bytes (rocksdb.wal.bytes) are
#             shown separately as "incl. WAL".
# Stall time: kvbench's "Stall time:" line (matrixkv.stall-micros);
#             RocksDB's rocksdb.stall.micros ticker.
# L0 at end of fill: files and bytes in L0 when fillrandom returned
#             (matrixkv.levels; RocksDB's compaction stats), i.e. the
#             compaction backlog that a low write amplification may hide.
#
# Usage: tools/bench/kv_vs_rocksdb.sh [options]
#   --num N                       keys written by fillrandom (500000)
#   --reads N                     operations of each read or mixed benchmark
#                                 (default: --num)
#   --fill_threads N              writer threads of each fillrandom (1)
#   --threads N                   threads of every other benchmark (1); in
#                                 readwhilewriting and seekrandomwhilewriting
#                                 the readers, beside which both tools start
#                                 one writer more
#   --readwritepercent P          reads among readrandomwriterandom's
#                                 operations (90, as db_bench)
#   --seek_nexts N                Next calls after each seek (10)
#   --key_size B                  (16)
#   --value_size B                (4096)
#   --write_buffer_size B         memtable size (67108864)
#   --max_bytes_for_level_base B  (268435456)
#   --target_file_size_base B     (67108864)
#   --bloom_bits N                (10)
#   --memtable_bloom_size_ratio R a bloom filter of each memtable's keys of R
#                                 times the write buffer size, on both:
#                                 kvbench --memtable_bloom_size_ratio=R,
#                                 db_bench --memtable_bloom_size_ratio=R
#                                 --memtable_whole_key_filtering=true
#                                 (0: none, db_bench's default; 0)
#   --cache_size B                block cache (8388608, db_bench's default)
#   --sync 0|1                    sync every write (0)
#   --direct                      O_DIRECT on both: kvbench --use_direct_io=1,
#                                 db_bench --use_direct_reads=1
#                                 --use_direct_io_for_flush_and_compaction=1
#   --mmap_read                   reads of tables (and MatrixKV's blob files)
#                                 copy out of a read-only mapping instead of
#                                 pread, on both: --mmap_read=1 (MatrixFS
#                                 reads this way by default)
#   --drop_caches                 sync and drop the page cache before each
#                                 readrandom (needs root; says if it failed)
#   --dir DIR                     where the two DBs and the logs go
#                                 (default: <repo>/var/bench); both DBs live
#                                 on this one filesystem
#   --kvbench PATH                (default: $KVBENCH, else <repo>/build/bin/kvbench)
#   --db_bench PATH               (default: db_bench from PATH)
#   --seed N                      (1)
#   --keep                        keep the two DBs (and the pool of
#                                 --workloads) afterwards (default: deleted)
#   --contend N                   start N CPU-bound processes (awk busy loops,
#                                 nice 0) before the first run and stop them
#                                 after the last, so that both engines run
#                                 beside the same load; the output gives the
#                                 load average before they started and at the
#                                 end of each run (0: none)
#
#   --workloads LIST              instead of the default runs: fillrandom on
#                                 both (kvbench with its WAL and L0 in a pool
#                                 on --shm of --nvm_size bytes, as (a) of
#                                 --three_way; RocksDB all on disk), then each
#                                 benchmark of the comma-separated LIST on
#                                 both, interleaved (kvbench, db_bench, next
#                                 benchmark), each on the DB as the previous
#                                 ones left it, with --use_existing_db=1.
#                                 LIST: readrandom, readwhilewriting,
#                                 seekrandom, seekrandomwhilewriting,
#                                 readrandomwriterandom, updaterandom,
#                                 overwrite, ycsba..ycsbf. db_bench runs YCSB
#                                 A, B, C, F as the benchmark kvbench maps
#                                 them onto (kvbench.1: A, B =
#                                 readrandomwriterandom 50 and 95%, C =
#                                 readrandom, F = updaterandom); D and E
#                                 have no db_bench counterpart and run on
#                                 kvbench only. Prints one table row per
#                                 benchmark: ops/s of both and their ratio,
#                                 P99 and P99.9 of the main operation (write,
#                                 read, seek or update), the writes per second
#                                 of the *whilewriting writer (kvbench's
#                                 "Background writer:" count, RocksDB's
#                                 rocksdb.number.keys.written ticker, each
#                                 over the result line's seconds) and the
#                                 1-minute load average at the end of each run.
#
#   --benchmark_write_rate_limit B
#                                 with --workloads: the writer beside the
#                                 readers of readwhilewriting and
#                                 seekrandomwhilewriting keeps to B bytes a
#                                 second on both tools (db_bench's flag of
#                                 that name; kvbench's is the same), so
#                                 that both readers run beside the same
#                                 writing (0: as fast as each can, default)
#
#   --three_way                   instead of the above: three fillrandom runs,
#                                 (a) kvbench with its WAL and L0 in a pool
#                                 on SHM (--nvm_path, --nvm_size), (b)
#                                 db_bench all on disk, (c) db_bench with its
#                                 WAL on SHM (--wal_dir). db_bench 7.8.3 has
#                                 no db_paths/cf_paths flag, so RocksDB's L0
#                                 stays on disk in (c): only the WAL moves.
#                                 Writes DIR/logs/throughput.csv (second,
#                                 ops/s of a, b, c from --report_interval_seconds=1)
#                                 and throughput.png (gnuplot), and prints a
#                                 table: ops/s, P50/P99/P99.9 write latency,
#                                 write amplification, stall time, number and
#                                 average input size of L0->L1 compactions
#                                 (MatrixKV: column compactions), the
#                                 slowest second after warm-up against the
#                                 median second, and, unless --reads 0,
#                                 readrandom after the load on (a) and (b),
#                                 with the state (a)'s reads began from:
#                                 container rows, immutable memtables and
#                                 level files at the end of its fill, and
#                                 the write groups its open replayed.
#   --rocksdb_blob                with --three_way only, informational: a
#                                 fourth fillrandom, (d) db_bench all on disk
#                                 with RocksDB's integrated BlobDB
#                                 (--enable_blob_files=true --min_blob_size=2048
#                                 --enable_blob_garbage_collection=true
#                                 --blob_file_size=134217728, i.e. MatrixKV's
#                                 default min_blob_size and blob_file_size;
#                                 RocksDB's own GC cutoffs, 0.25 of the oldest
#                                 blob files by age, and
#                                 blob_file_starting_level 0: values leave the
#                                 LSM-tree at flush, where MatrixKV moves them
#                                 at their first compaction), then readrandom
#                                 on it after the load unless --reads 0. Adds
#                                 the column "RocksDB + BlobDB (disk)" to the
#                                 table, rocksdb_blobdb to throughput.csv and
#                                 a fourth line to throughput.png. Without the
#                                 flag the output is as before.
#                                 Its write amplification is the same ticker
#                                 ratio as for (b) and (c), and it counts the
#                                 blob files: flush.write.bytes and
#                                 compact.write.bytes are the bytes the flush
#                                 or compaction thread wrote to any file
#                                 (IOSTATS bytes_written), blob files included
#                                 (checked on 7.8.3: after waitforcompaction
#                                 their sum exceeds
#                                 rocksdb.blobdb.blob.file.bytes.written by
#                                 the SSTable bytes, to within 2 KB in a
#                                 240 MB run). So that ticker
#                                 is not added again; it is printed under the
#                                 table, with rocksdb.blobdb.gc.bytes.relocated
#                                 (live values that GC copied). At the end of
#                                 the fill it may run ahead of the flush
#                                 ticker by a flush still in progress. Its
#                                 L0->L1 average input includes the blob
#                                 bytes that GC read (Rblob).
#   --nvm_size B                  pool size for --three_way (268435456)
#   --shm DIR                     where the pool and RocksDB's WAL go (/dev/shm)
#
# Logs of the runs stay in DIR/logs/. Exit status: 0 when all runs
# succeeded (whether or not the targets are met), 1 otherwise, 2 on bad usage.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

num=500000
reads=
key_size=16
value_size=4096
write_buffer_size=$((64 << 20))
max_bytes_for_level_base=$((256 << 20))
target_file_size_base=$((64 << 20))
bloom_bits=10
memtable_bloom_size_ratio=0
cache_size=$((8 << 20))
sync=0
direct=0
mmap_read=0
drop_caches=0
dir="$repo/var/bench"
kvbench=${KVBENCH:-$repo/build/bin/kvbench}
db_bench=db_bench
seed=1
keep=0
three_way=0
rocksdb_blob=0
nvm_size=$((256 << 20))
shm=/dev/shm
fill_threads=1
threads=1
readwritepercent=90
seek_nexts=10
contend=0
workloads=
write_rate_limit=0

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
}
die() {
  echo "kv_vs_rocksdb.sh: $*" >&2
  exit 1
}
need_int() {  # flag value
  [[ $2 =~ ^[0-9]+$ ]] || { echo "kv_vs_rocksdb.sh: $1: expected a non-negative integer, got '$2'" >&2; exit 2; }
}

while [ $# -gt 0 ]; do
  arg=$1
  shift
  val=
  case $arg in
    --*=*) val=${arg#*=}; arg=${arg%%=*} ;;
  esac
  case $arg in
    --direct) direct=1; continue ;;
    --mmap_read) mmap_read=1; continue ;;
    --drop_caches) drop_caches=1; continue ;;
    --keep) keep=1; continue ;;
    --three_way) three_way=1; continue ;;
    --rocksdb_blob) rocksdb_blob=1; continue ;;
    -h|--help) usage ;;
  esac
  if [ -z "$val" ]; then
    [ $# -gt 0 ] || { echo "kv_vs_rocksdb.sh: $arg needs a value" >&2; exit 2; }
    val=$1
    shift
  fi
  case $arg in
    --num) need_int "$arg" "$val"; num=$val ;;
    --reads) need_int "$arg" "$val"; reads=$val ;;
    --key_size) need_int "$arg" "$val"; key_size=$val ;;
    --value_size) need_int "$arg" "$val"; value_size=$val ;;
    --write_buffer_size) need_int "$arg" "$val"; write_buffer_size=$val ;;
    --max_bytes_for_level_base) need_int "$arg" "$val"; max_bytes_for_level_base=$val ;;
    --target_file_size_base) need_int "$arg" "$val"; target_file_size_base=$val ;;
    --bloom_bits) need_int "$arg" "$val"; bloom_bits=$val ;;
    --memtable_bloom_size_ratio)
      [[ $val =~ ^(0|0?\.[0-9]+)$ ]] && awk -v r="$val" 'BEGIN { exit !(r <= 0.25) }' ||
        { echo "kv_vs_rocksdb.sh: --memtable_bloom_size_ratio: expected a ratio 0..0.25, got '$val'" >&2; exit 2; }
      memtable_bloom_size_ratio=$val ;;
    --cache_size) need_int "$arg" "$val"; cache_size=$val ;;
    --sync) [[ $val == 0 || $val == 1 ]] || { echo "kv_vs_rocksdb.sh: --sync: expected 0 or 1, got '$val'" >&2; exit 2; }; sync=$val ;;
    --seed) need_int "$arg" "$val"; seed=$val ;;
    --dir) dir=$val ;;
    --kvbench) kvbench=$val ;;
    --db_bench) db_bench=$val ;;
    --nvm_size) need_int "$arg" "$val"; nvm_size=$val ;;
    --shm) shm=$val ;;
    --fill_threads) need_int "$arg" "$val"; fill_threads=$val ;;
    --threads) need_int "$arg" "$val"; threads=$val ;;
    --readwritepercent) need_int "$arg" "$val"; readwritepercent=$val ;;
    --seek_nexts) need_int "$arg" "$val"; seek_nexts=$val ;;
    --contend) need_int "$arg" "$val"; contend=$val ;;
    --benchmark_write_rate_limit) need_int "$arg" "$val"; write_rate_limit=$val ;;
    --workloads) workloads=$val ;;
    *) echo "kv_vs_rocksdb.sh: unknown option $arg (--help lists them)" >&2; exit 2 ;;
  esac
done
[ -n "$reads" ] || reads=$num
if [ "$rocksdb_blob" = 1 ] && [ "$three_way" = 0 ]; then
  echo "kv_vs_rocksdb.sh: --rocksdb_blob needs --three_way" >&2
  exit 2
fi
if [ -n "$workloads" ] && [ "$three_way" = 1 ]; then
  echo "kv_vs_rocksdb.sh: --workloads and --three_way are two different modes; give one" >&2
  exit 2
fi
for w in ${workloads//,/ }; do
  case $w in
    readrandom|readwhilewriting|seekrandom|seekrandomwhilewriting|readrandomwriterandom|updaterandom|overwrite|ycsb[a-f]) ;;
    *) echo "kv_vs_rocksdb.sh: --workloads: unknown benchmark '$w' (--help lists them)" >&2; exit 2 ;;
  esac
done
if [ "$fill_threads" -lt 1 ] || [ "$threads" -lt 1 ] || [ "$readwritepercent" -gt 100 ]; then
  echo "kv_vs_rocksdb.sh: --fill_threads and --threads must be at least 1, --readwritepercent at most 100" >&2
  exit 2
fi
[ -x "$kvbench" ] || die "kvbench not found at $kvbench (build it: make build/bin/kvbench, or pass --kvbench PATH)"
command -v "$db_bench" >/dev/null || die "db_bench not found (Debian package rocksdb-tools), or pass --db_bench PATH"

mkdir -p "$dir/logs"
dir=$(cd "$dir" && pwd)
kvdir=$dir/kvbench
rdir=$dir/rocksdb
logs=$dir/logs
# Only our own two subdirectories are ever deleted.
rm -rf "$kvdir" "$rdir"
mkdir -p "$kvdir" "$rdir"

common=(--num="$num" --key_size="$key_size" --value_size="$value_size"
  --write_buffer_size="$write_buffer_size" --max_bytes_for_level_base="$max_bytes_for_level_base"
  --target_file_size_base="$target_file_size_base" --bloom_bits="$bloom_bits" --cache_size="$cache_size"
  --sync="$sync" --histogram=1 --seed="$seed" --compression_type=none
  --readwritepercent="$readwritepercent" --seek_nexts="$seek_nexts")
# The threads of a fill share the --num writes, those of the other
# benchmarks the --reads operations.
fill_flags=(--threads="$fill_threads" --writes=$((num / fill_threads)))
read_flags=(--threads="$threads" --reads=$((reads / threads)))
threads_said="fill threads $fill_threads, other threads $threads"
kv_only=()
rocks_only=(--statistics=1)
if [ "$direct" = 1 ]; then
  kv_only+=(--use_direct_io=1)
  rocks_only+=(--use_direct_reads=1 --use_direct_io_for_flush_and_compaction=1)
fi
if [ "$mmap_read" = 1 ]; then
  kv_only+=(--mmap_read=1)
  rocks_only+=(--mmap_read=1)
fi
if [ "$memtable_bloom_size_ratio" != 0 ]; then
  kv_only+=(--memtable_bloom_size_ratio="$memtable_bloom_size_ratio")
  rocks_only+=(--memtable_bloom_size_ratio="$memtable_bloom_size_ratio" --memtable_whole_key_filtering=true)
fi

declare -A load_after_run  # log name -> 1-minute load average when the run ended
# The benchmark running now, in the background so that a signal reaches
# the trap at once (cleanup stops it) instead of after the benchmark.
child=
run() {  # log-name command...
  local name=$1 log=$logs/$1.log
  shift
  echo "+ $*" >"$log"
  echo "== $(date -u +%H:%M:%S) $name (log: $log)" >&2
  "$@" >>"$log" 2>"$log.stderr" &
  child=$!
  if ! wait "$child"; then
    child=
    tail -5 "$log.stderr" >&2
    die "$1 failed; see $log and $log.stderr"
  fi
  child=
  load_after_run[$name]=$(cut -d' ' -f1 /proc/loadavg)
}

# Cleanup on any exit: the running benchmark, the contenders, then the
# temporary paths.
contend_pids=()
cleanup_paths=()
cleanup() {
  if [ -n "$child" ]; then
    kill "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  if [ ${#contend_pids[@]} -gt 0 ]; then
    kill "${contend_pids[@]}" 2>/dev/null || true
    wait "${contend_pids[@]}" 2>/dev/null || true
  fi
  if [ ${#cleanup_paths[@]} -gt 0 ]; then rm -rf "${cleanup_paths[@]}"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
load_quiet=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < contend; i++)); do
  awk 'BEGIN { for (;;) n++ }' </dev/null >/dev/null 2>&1 &
  contend_pids+=($!)
done
contend_started=$(date -u +%H:%M:%S)
# contention_said: one line for the summaries.
contention_said() {
  if [ "$contend" -gt 0 ]; then
    echo "contention: $contend CPU-bound process(es) (awk busy loops) beside both engines from $contend_started UTC to the end;"
    echo "load average (1, 5, 15 min) before they started: $load_quiet."
  else
    echo "contention: none started by this script (--contend 0)."
  fi
  if [ "$write_rate_limit" != 0 ]; then
    echo "writers beside readers (*whilewriting): --benchmark_write_rate_limit=$write_rate_limit bytes/s on both."
  fi
}

drop() {
  [ "$drop_caches" = 1 ] || return 0
  sync
  if echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
    echo "== page cache dropped" >&2
  else
    echo "== could not drop the page cache (not root?); readrandom may hit it" >&2
    drop_failed=1
  fi
}
drop_failed=0

# ---- parsing ----------------------------------------------------------------
# result_field LOG BENCH N: the Nth number of the "BENCH   : ..." line
# (1 micros/op, 2 ops/sec, 3 seconds, 4 operations, 5 MB/s).
result_field() {
  awk -v b="$2" -v n="$3" '$1 == b && $2 == ":" {
    split("", v); k = 0
    for (i = 3; i <= NF; i++) if ($i ~ /^[0-9.]+$/) v[++k] = $i
    print v[n]; exit }' "$1"
}
# percentile LOG P: "P50" etc. from the first Percentiles: line.
percentile() {
  awk -v p="$2:" '/^Percentiles:/ { for (i = 1; i < NF; i++) if ($i == p) { print $(i + 1); exit } }' "$1"
}
found() { sed -nE 's/.*\(([0-9]+) of ([0-9]+) found\).*/\1 of \2/p' "$1" | head -1; }
ticker() { awk -v t="$2" '$1 == t && $2 == "COUNT" { print $4; exit }' "$1"; }
# rocks_wa LOG: (flush + compaction bytes) / user bytes from the tickers.
rocks_wa() {
  awk -v s=$((key_size + value_size)) '$2 == "COUNT" { t[$1] = $4 }
    END { k = t["rocksdb.number.keys.written"]; if (k > 0) printf "%.3f", (t["rocksdb.flush.write.bytes"] + t["rocksdb.compact.write.bytes"]) / (k * s); else print "n/a" }' "$1"
}
rocks_stall() { awk '$1 == "rocksdb.stall.micros" && $2 == "COUNT" { printf "%.3f", $4 / 1e6; exit }' "$1"; }
kv_wa() { sed -nE 's/^Write amplification: ([0-9.]+|n\/a).*/\1/p' "$1" | head -1; }
# kv_read_start FILL_LOG READ_LOG: what a read after the fill starts from
# (the fill's closing stats; the open's WAL replay, i.e. the memtable the
# reads search until its flush).
kv_read_start() {
  local replay
  replay=$(cat "$2" "$2.stderr" 2>/dev/null | sed -nE 's/.*replayed ([0-9]+) write groups.*/\1/p' | head -1)
  awk -v replay="${replay:-0}" '$1 == "rows" && r == "" { r = $2 } $1 == "memtables.immutable" { m = $2 }
    $1 == "levels" && $2 == "files[" { l = "L0 " $3 ", L1 " $4 ", L2 " $5 }
    END { printf "container rows %s, immutable memtables %s, files %s, WAL write groups replayed %s", r, m, l, replay }' "$1"
}
kv_stall() { sed -nE 's/^Stall time: ([0-9.]+) seconds.*/\1/p' "$1" | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2fx", a / b; else print "-" }'; }

if [ "$three_way" = 1 ]; then
  command -v gnuplot >/dev/null || echo "kv_vs_rocksdb.sh: gnuplot not found (Debian: gnuplot-nox); no PNG" >&2
  sdir=$dir/rocksdb_shmwal
  pool=$shm/kv_vs_rocksdb-$$.pool
  wal=$shm/kv_vs_rocksdb-wal-$$
  bdir=$dir/rocksdb_blob
  blob_flags=(--enable_blob_files=true --min_blob_size=2048 --enable_blob_garbage_collection=true
    --blob_file_size=134217728)
  rm -rf "$sdir" "$bdir"
  rm -f "$logs"/db_bench_blob_*  # so a run without --rocksdb_blob leaves none from an earlier run
  mkdir -p "$sdir"
  if [ "$rocksdb_blob" = 1 ]; then mkdir -p "$bdir"; fi
  cleanup_paths+=("$pool" "$wal")
  rep_flags() { echo "--report_interval_seconds=1 --report_file=$logs/$1.csv"; }
  started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  # shellcheck disable=SC2046
  run kvbench_pool_fill "$kvbench" --benchmarks=fillrandom,stats --db="$kvdir" "${common[@]}" "${fill_flags[@]}" "${kv_only[@]}" \
    --nvm_path="$pool" --nvm_size="$nvm_size" $(rep_flags kvbench_pool_fill)
  # shellcheck disable=SC2046
  run db_bench_disk_fill "$db_bench" --benchmarks=fillrandom,stats --db="$rdir" "${common[@]}" "${fill_flags[@]}" "${rocks_only[@]}" \
    $(rep_flags db_bench_disk_fill)
  # shellcheck disable=SC2046
  run db_bench_shmwal_fill "$db_bench" --benchmarks=fillrandom,stats --db="$sdir" --wal_dir="$wal" "${common[@]}" "${fill_flags[@]}" \
    "${rocks_only[@]}" $(rep_flags db_bench_shmwal_fill)
  if [ "$rocksdb_blob" = 1 ]; then
    # shellcheck disable=SC2046
    run db_bench_blob_fill "$db_bench" --benchmarks=fillrandom,stats --db="$bdir" "${common[@]}" "${fill_flags[@]}" "${rocks_only[@]}" \
      "${blob_flags[@]}" $(rep_flags db_bench_blob_fill)
  fi
  # readrandom after the load, on (a) and (b) (c differs from b only in its WAL).
  if [ "$reads" -gt 0 ]; then
    drop
    run kvbench_pool_read "$kvbench" --benchmarks=readrandom --use_existing_db=1 "${read_flags[@]}" --db="$kvdir" \
      "${common[@]}" "${kv_only[@]}" --nvm_path="$pool" --nvm_size="$nvm_size"
    drop
    run db_bench_disk_read "$db_bench" --benchmarks=readrandom --use_existing_db=1 "${read_flags[@]}" --db="$rdir" \
      "${common[@]}" "${rocks_only[@]}"
    if [ "$rocksdb_blob" = 1 ]; then
      drop
      run db_bench_blob_read "$db_bench" --benchmarks=readrandom --use_existing_db=1 "${read_flags[@]}" --db="$bdir" \
        "${common[@]}" "${rocks_only[@]}" "${blob_flags[@]}"
    fi
  fi
  finished=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  # CSV: second, ops/s of each run (empty once a run has finished).
  csv=$logs/throughput.csv
  csv_in=("$logs/kvbench_pool_fill.csv" "$logs/db_bench_disk_fill.csv" "$logs/db_bench_shmwal_fill.csv")
  csv_head=second,matrixkv_pool,rocksdb_disk,rocksdb_shm_wal
  if [ "$rocksdb_blob" = 1 ]; then
    csv_in+=("$logs/db_bench_blob_fill.csv")
    csv_head+=,rocksdb_blobdb
  fi
  awk -F, -v head="$csv_head" 'FNR == 1 { f++; next } { v[f, $1 + 0] = $2; if ($1 + 0 > m) m = $1 + 0 }
    END { print head
          for (t = 1; t <= m; t++) { printf "%d", t; for (i = 1; i <= f; i++) printf ",%s", v[i, t]; printf "\n" } }' \
    "${csv_in[@]}" >"$csv"
  blob_plot=
  if [ "$rocksdb_blob" = 1 ]; then
    blob_plot=", \"$csv\" using 1:5 with lines title \"RocksDB + BlobDB, all on disk\""
  fi
  if command -v gnuplot >/dev/null; then
    gnuplot <<GP || echo "kv_vs_rocksdb.sh: gnuplot drew no $logs/throughput.png (a run too short for a point?)" >&2
set terminal pngcairo size 1000,500 noenhanced
set output "$logs/throughput.png"
set datafile separator ","
set title "fillrandom throughput, $num keys of $value_size B"
set xlabel "seconds"
set ylabel "ops/s"
set key outside right
plot "$csv" using 1:2 with lines title "MatrixKV, pool on $shm", \
     "$csv" using 1:3 with lines title "RocksDB, all on disk", \
     "$csv" using 1:4 with lines title "RocksDB, WAL on $shm"$blob_plot
GP
  fi
  kf=$logs/kvbench_pool_fill.log
  rf=$logs/db_bench_disk_fill.log
  sf=$logs/db_bench_shmwal_fill.log
  bf=$logs/db_bench_blob_fill.log
  # trow METRIC A B C D: a table row; D (the BlobDB column) only with --rocksdb_blob.
  trow() {
    if [ "$rocksdb_blob" = 1 ]; then
      printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "${5-}"
    else
      printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4"
    fi
  }
  # blob CMD...: CMD's output for the BlobDB column, nothing without --rocksdb_blob.
  blob() { if [ "$rocksdb_blob" = 1 ]; then "$@"; fi; }
  # L1 row of the compaction stats: Comp(cnt) is field 17; input MB = Rd(MB/s) x Comp(sec).
  rocks_l01() {
    awk '$1 == "L1" && $2 ~ /\// && !done { done = 1; n = $17; if (n > 0) printf "%d, %.1f MB", n, $13 * $15 / n; else print "0" }' "$1"
  }
  kv_l01() {
    awk '$1 == "column.compactions" { n = $2 } $1 == "column.bytes.read.nvm" { b = $2 }
      END { if (n > 0) printf "%d, %.1f MB from NVM (+ L1 inputs)", n, b / n / 1048576; else print "0" }' "$1"
  }
  echo
  echo "three-way fillrandom: $num keys of $key_size B, values of $value_size B; write_buffer_size $write_buffer_size,"
  echo "target_file_size_base $target_file_size_base, $threads_said, no compression, sync=$sync, seed $seed;"
  echo "pool $nvm_size bytes on $shm ($(df -PT "$shm" | awk 'NR==2 {print $2}')); disk: $dir ($(df -PT "$dir" | awk 'NR==2 {print $2}'));"
  echo "(c) moves only RocksDB's WAL (--wal_dir): db_bench $("$db_bench" --version 2>/dev/null | awk '{print $NF}') cannot place L0 apart."
  if [ "$rocksdb_blob" = 1 ]; then
    echo "(d), informational: RocksDB's integrated BlobDB, all on disk: ${blob_flags[*]}."
  fi
  echo "ran $started .. $finished; repository at $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown);"
  echo "load average (1, 5, 15 min) before: $load_before, after: $load_after, on $(nproc) CPUs."
  contention_said
  grep -h -m1 "^NVM split:" "$kf" || true
  echo
  trow metric "MatrixKV (pool)" "RocksDB (disk)" "RocksDB (WAL on $shm)" "RocksDB + BlobDB (disk)"
  if [ "$rocksdb_blob" = 1 ]; then echo "|---|---:|---:|---:|---:|"; else echo "|---|---:|---:|---:|"; fi
  trow "ops/s" "$(result_field "$kf" fillrandom 2)" "$(result_field "$rf" fillrandom 2)" \
    "$(result_field "$sf" fillrandom 2)" "$(blob result_field "$bf" fillrandom 2)"
  for p in P50 P99 P99.9; do
    trow "write $p (us)" "$(percentile "$kf" $p)" "$(percentile "$rf" $p)" "$(percentile "$sf" $p)" \
      "$(blob percentile "$bf" $p)"
  done
  trow "write amplification" "$(kv_wa "$kf")" "$(rocks_wa "$rf")" "$(rocks_wa "$sf")" \
    "$(blob rocks_wa "$bf")"
  trow "stall time (s)" "$(kv_stall "$kf")" "$(rocks_stall "$rf")" "$(rocks_stall "$sf")" "$(blob rocks_stall "$bf")"
  trow "L0->L1 compactions (count, avg input)" "$(kv_l01 "$kf")" "$(rocks_l01 "$rf")" \
    "$(rocks_l01 "$sf")" "$(blob rocks_l01 "$bf")"
  # Troughs: the slowest whole second after warm-up (the first 10% of the
  # run's seconds, at least 1) against the median of those seconds; the
  # last, partial second is left out. (At least 5 seconds of warm-up left
  # too few seconds of a 1M-key fill that now ends in 4-8 s: "n/a".)
  trough() {
    awk -F, 'FNR > 1 && $2 != "" { v[++n] = $2 + 0 }
      END { w = int(n / 10); if (w < 1) w = 1; m = 0
            for (i = w + 1; i < n; i++) s[++m] = v[i]
            if (m < 3) { print "n/a"; exit }
            for (i = 2; i <= m; i++) { x = s[i]; for (j = i - 1; j >= 1 && s[j] > x; j--) s[j + 1] = s[j]; s[j + 1] = x }
            med = (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
            printf "%d / %d = %.0f%%", s[1], med, (med > 0 ? 100 * s[1] / med : 0) }' "$1"
  }
  trow "slowest 1-s interval after warm-up / median (ops/s)" \
    "$(trough "$logs/kvbench_pool_fill.csv")" "$(trough "$logs/db_bench_disk_fill.csv")" \
    "$(trough "$logs/db_bench_shmwal_fill.csv")" "$(blob trough "$logs/db_bench_blob_fill.csv")"
  if [ "$reads" -gt 0 ]; then
    trow "readrandom after the load, ops/s ($reads reads)" \
      "$(result_field "$logs/kvbench_pool_read.log" readrandom 2)" \
      "$(result_field "$logs/db_bench_disk_read.log" readrandom 2)" "(not run)" \
      "$(blob result_field "$logs/db_bench_blob_read.log" readrandom 2)"
    trow "readrandom found" "$(found "$logs/kvbench_pool_read.log")" \
      "$(found "$logs/db_bench_disk_read.log")" "" "$(blob found "$logs/db_bench_blob_read.log")"
    trow "MatrixKV's tree when its reads began" "$(kv_read_start "$logs/kvbench_pool_fill.log" "$logs/kvbench_pool_read.log")" "" "" ""
  fi
  echo
  if [ "$rocksdb_blob" = 1 ]; then
    # The blob tickers, for the reader to check the write amplification above.
    awk -v s=$((key_size + value_size)) '$2 == "COUNT" { t[$1] = $4 }
      END { u = t["rocksdb.number.keys.written"] * s; b = t["rocksdb.blobdb.blob.file.bytes.written"]
            printf "RocksDB + BlobDB write amplification: (rocksdb.flush.write.bytes %.0f + rocksdb.compact.write.bytes %.0f)\n", t["rocksdb.flush.write.bytes"], t["rocksdb.compact.write.bytes"]
            printf "/ user bytes %.0f; both tickers count blob file writes. rocksdb.blobdb.blob.file.bytes.written %.0f", u, b
            if (u > 0) printf " (%.3f x user bytes)", b / u
            printf ",\nof which rocksdb.blobdb.gc.bytes.relocated %.0f. L0->L1 input includes the blob bytes GC read.\n", t["rocksdb.blobdb.gc.bytes.relocated"] }' "$bf"
    echo
  fi
  echo "per-second throughput: $csv$(command -v gnuplot >/dev/null && echo ", plot: $logs/throughput.png")"
  if [ "$keep" = 0 ]; then rm -rf "$kvdir" "$rdir" "$sdir" "$bdir"; fi
  exit 0
fi

if [ -n "$workloads" ]; then
  pool=$shm/kv_vs_rocksdb-$$.pool
  if [ "$keep" = 0 ]; then cleanup_paths+=("$pool"); fi
  kv_pool=(--nvm_path="$pool" --nvm_size="$nvm_size")
  # rocks_bench W: the db_bench benchmark that runs kvbench's W, and its
  # --readwritepercent; nothing for YCSB D and E.
  rocks_bench() {
    case $1 in
      ycsba) echo "readrandomwriterandom 50" ;;
      ycsbb) echo "readrandomwriterandom 95" ;;
      ycsbc) echo "readrandom $readwritepercent" ;;
      ycsbf) echo "updaterandom $readwritepercent" ;;
      ycsbd|ycsbe) ;;
      *) echo "$1 $readwritepercent" ;;
    esac
  }
  # main_op W: the operation whose latency the table shows.
  main_op() {
    case $1 in
      fillrandom|overwrite) echo write ;;
      seekrandom|seekrandomwhilewriting|ycsbe) echo seek ;;
      updaterandom|ycsbf) echo update ;;
      *) echo read ;;
    esac
  }
  started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  run kvbench_fill "$kvbench" --benchmarks=fillrandom,stats --db="$kvdir" "${common[@]}" "${fill_flags[@]}" \
    "${kv_only[@]}" "${kv_pool[@]}"
  run db_bench_fill "$db_bench" --benchmarks=fillrandom,stats --db="$rdir" "${common[@]}" "${fill_flags[@]}" \
    "${rocks_only[@]}"
  for w in ${workloads//,/ }; do
    # The writer beside the readers: limited on both, or on neither.
    rate=()
    case $w in *whilewriting) [ "$write_rate_limit" = 0 ] || rate=(--benchmark_write_rate_limit="$write_rate_limit") ;; esac
    drop
    run "kvbench_$w" "$kvbench" --benchmarks="$w" --use_existing_db=1 --db="$kvdir" "${common[@]}" "${read_flags[@]}" \
      "${kv_only[@]}" "${kv_pool[@]}" "${rate[@]}"
    rb=$(rocks_bench "$w")
    if [ -n "$rb" ]; then
      drop
      run "db_bench_$w" "$db_bench" --benchmarks="${rb% *}" --use_existing_db=1 --db="$rdir" "${common[@]}" \
        "${read_flags[@]}" "${rocks_only[@]}" --readwritepercent="${rb#* }" "${rate[@]}"
    fi
  done
  finished=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)

  # percentile_of LOG OP P: P ("P99") of the "Microseconds per OP:" histogram.
  percentile_of() {
    awk -v t="Microseconds per $2:" -v p="$3:" '$0 == t { in_t = 1; next }
      in_t && /^Percentiles:/ { for (i = 1; i < NF; i++) if ($i == p) { print $(i + 1); exit } }' "$1"
  }
  per_sec() { awk -v n="$1" -v s="$2" 'BEGIN { if (n ~ /^[0-9]+$/ && s > 0) printf "%d", n / s; else print "-" }'; }
  # row LABEL KEY KV_NAME ROCKS_NAME OP: the table row of kvbench's
  # KV_NAME, run by db_bench as ROCKS_NAME (empty: not run on RocksDB),
  # from the logs kvbench_KEY.log and db_bench_KEY.log.
  row() {
    local label=$1 kn=$3 rn=$4 op=$5 kl=$logs/kvbench_$2.log rl=$logs/db_bench_$2.log
    local ko rload=- ro=- rp99=- rp999=- kw=- rw=-
    ko=$(result_field "$kl" "$kn" 2)
    if [ -n "$rn" ]; then
      ro=$(result_field "$rl" "$rn" 2)
      rp99=$(percentile_of "$rl" "$op" P99)
      rp999=$(percentile_of "$rl" "$op" P99.9)
      rload=${load_after_run[db_bench_$2]:-?}
    fi
    if [[ $kn == *whilewriting ]]; then
      kw=$(per_sec "$(awk '/^Background writer:/ { print $3; exit }' "$kl")" "$(result_field "$kl" "$kn" 3)")
      [ -z "$rn" ] || rw=$(per_sec "$(ticker "$rl" rocksdb.number.keys.written)" "$(result_field "$rl" "$rn" 3)")
    fi
    printf '| %s | %s | %s | %s | %s / %s | %s / %s | %s / %s | %s / %s |\n' "$label" "${ko:-?}" "${ro:-?}" \
      "$(ratio "$ko" "$ro")" "$(percentile_of "$kl" "$op" P99)" "$rp99" "$(percentile_of "$kl" "$op" P99.9)" "$rp999" \
      "$kw" "$rw" "${load_after_run[kvbench_$2]:-?}" "$rload"
  }
  # label_of W: W's name in the table, with its parameters.
  label_of() {
    local rb
    rb=$(rocks_bench "$1")
    case $1 in
      readrandomwriterandom) echo "$1 ($readwritepercent% reads)" ;;
      seekrandom|seekrandomwhilewriting) echo "$1 ($seek_nexts nexts)" ;;
      ycsba|ycsbb) echo "$1 (db_bench: ${rb% *}, ${rb#* }% reads)" ;;
      ycsbc|ycsbf) echo "$1 (db_bench: ${rb% *})" ;;
      ycsbd) echo "$1 (kvbench only)" ;;
      ycsbe) echo "$1 ($seek_nexts nexts; kvbench only)" ;;
      *) echo "$1" ;;
    esac
  }

  echo
  echo "kvbench vs db_bench, mixed workloads: fillrandom of $num keys of $key_size B, values of $value_size B, then"
  echo "${workloads//,/, } on the loaded DBs, interleaved; $reads operations per benchmark; $threads_said;"
  echo "readwritepercent $readwritepercent, seek_nexts $seek_nexts; write_buffer_size $write_buffer_size,"
  echo "max_bytes_for_level_base $max_bytes_for_level_base, target_file_size_base $target_file_size_base,"
  echo "bloom_bits $bloom_bits, memtable_bloom_size_ratio $memtable_bloom_size_ratio, cache_size $cache_size, no compression, sync=$sync, seed $seed;"
  echo "MatrixKV with its WAL and L0 in a pool of $nvm_size bytes on $shm ($(df -PT "$shm" | awk 'NR==2 {print $2}')),"
  echo "RocksDB $("$db_bench" --version 2>/dev/null | awk '{print $NF}') all on disk: $dir ($(df -PT "$dir" | awk 'NR==2 {print $2}'))."
  if grep -q 'Assertions are enabled' "$logs/db_bench_fill.log"; then
    echo "note: this db_bench build has assertions enabled (it prints so); RocksDB pays for them here."
  fi
  echo "ran $started .. $finished; repository at $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown);"
  echo "load average (1, 5, 15 min) before: $load_before, after: $load_after, on $(nproc) CPUs."
  contention_said
  grep -h -m1 "^NVM split:" "$logs/kvbench_fill.log" || true
  echo
  echo "| benchmark | MatrixKV ops/s | RocksDB ops/s | MatrixKV / RocksDB | P99 us (MatrixKV / RocksDB) | P99.9 us | writer beside, writes/s | load at end |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  row "fillrandom, $fill_threads thread(s)" fill fillrandom fillrandom write
  for w in ${workloads//,/ }; do
    rb=$(rocks_bench "$w")
    row "$(label_of "$w")" "$w" "$w" "${rb% *}" "$(main_op "$w")"
  done
  echo
  echo "fillrandom: write amplification MatrixKV $(kv_wa "$logs/kvbench_fill.log"), RocksDB $(rocks_wa "$logs/db_bench_fill.log") (no WAL);"
  echo "stall time MatrixKV $(kv_stall "$logs/kvbench_fill.log") s, RocksDB $(rocks_stall "$logs/db_bench_fill.log") s."
  echo "P99/P99.9: of the write, read, seek or update histogram (readrandomwriterandom, ycsba, ycsbb: the reads);"
  echo "the *whilewriting rows count the readers only, the writer's puts are in \"writer beside\"."
  echo "logs: $logs"
  if [ "$keep" = 0 ]; then rm -rf "$kvdir" "$rdir"; fi
  exit 0
fi

started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# What else is using the CPU (a 1-second sample; processes at >= 5%).
busy() {
  top -b -n2 -d1 -w 200 2>/dev/null |
    awk '/^top -/ { it++ } it == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 >= 5 { n[$12]++; c[$12] += $9 }
         END { for (p in n) printf "%s%s x%d (%d%% CPU)", (k++ ? ", " : ""), p, n[p], c[p]; if (!k) printf "nothing" }'
}
busy_before=$(busy)
run kvbench_fill "$kvbench" --benchmarks=fillrandom,stats --db="$kvdir" "${common[@]}" "${fill_flags[@]}" "${kv_only[@]}"
run db_bench_fill "$db_bench" --benchmarks=fillrandom,stats --db="$rdir" "${common[@]}" "${fill_flags[@]}" "${rocks_only[@]}"
kv_size=$(du -sb "$kvdir" | cut -f1)
r_size=$(du -sb "$rdir" | cut -f1)
drop
run kvbench_read "$kvbench" --benchmarks=readrandom --use_existing_db=1 "${read_flags[@]}" --db="$kvdir" \
  "${common[@]}" "${kv_only[@]}"
drop
run db_bench_read "$db_bench" --benchmarks=readrandom --use_existing_db=1 "${read_flags[@]}" --db="$rdir" \
  "${common[@]}" "${rocks_only[@]}"
finished=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
busy_after=$(busy)

kf=$logs/kvbench_fill.log
rf=$logs/db_bench_fill.log
kr=$logs/kvbench_read.log
rr=$logs/db_bench_read.log

kv_wa=$(kv_wa "$kf")
kv_stall=$(kv_stall "$kf")
r_flush=$(ticker "$rf" rocksdb.flush.write.bytes)
r_comp=$(ticker "$rf" rocksdb.compact.write.bytes)
r_wal=$(ticker "$rf" rocksdb.wal.bytes)
r_keys=$(ticker "$rf" rocksdb.number.keys.written)
r_stall=$(ticker "$rf" rocksdb.stall.micros)
r_wa=$(awk -v f="${r_flush:-0}" -v c="${r_comp:-0}" -v k="${r_keys:-0}" -v s=$((key_size + value_size)) \
  'BEGIN { if (k > 0) printf "%.3f", (f + c) / (k * s); else print "n/a" }')
r_wa_wal=$(awk -v f="${r_flush:-0}" -v c="${r_comp:-0}" -v w="${r_wal:-0}" -v k="${r_keys:-0}" \
  -v s=$((key_size + value_size)) 'BEGIN { if (k > 0) printf "%.3f", (f + c + w) / (k * s); else print "n/a" }')
r_stall_s=$(awk -v m="${r_stall:-0}" 'BEGIN { printf "%.3f", m / 1e6 }')

row() { printf '| %s | %s | %s | %s |\n' "$1" "${2:-?}" "${3:-?}" "${4:-}"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

kfo=$(result_field "$kf" fillrandom 2); rfo=$(result_field "$rf" fillrandom 2)
kfm=$(result_field "$kf" fillrandom 5); rfm=$(result_field "$rf" fillrandom 5)
kro=$(result_field "$kr" readrandom 2); rro=$(result_field "$rr" readrandom 2)
krm=$(result_field "$kr" readrandom 5); rrm=$(result_field "$rr" readrandom 5)
kf999=$(percentile "$kf" P99.9); rf999=$(percentile "$rf" P99.9)

echo
echo "kvbench vs db_bench: fillrandom then readrandom; $num keys of $key_size B, values of $value_size B;"
echo "write_buffer_size $write_buffer_size, max_bytes_for_level_base $max_bytes_for_level_base,"
echo "target_file_size_base $target_file_size_base, bloom_bits $bloom_bits, cache_size $cache_size;"
echo "$threads_said, no compression, sync=$sync, seed $seed; direct I/O (O_DIRECT): $([ "$direct" = 1 ] && echo yes || echo 'no (page cache in use)');"
echo "mmap reads (--mmap_read=1 on both): $([ "$mmap_read" = 1 ] && echo yes || echo no)."
if [ "$drop_caches" = 1 ]; then
  echo "page cache dropped before each readrandom: $([ "$drop_failed" = 0 ] && echo yes || echo 'tried, failed')."
fi
if grep -q 'Assertions are enabled' "$rf"; then
  echo "note: this db_bench build has assertions enabled (it prints so); RocksDB pays for them here."
fi
echo "ran $started .. $finished in $dir ($(df -PT "$dir" | awk 'NR==2 {print $2}')) on $(nproc) CPUs;"
dirty=$(git -C "$repo" status --porcelain -- base ssd nvm kvcore tools/kvbench.cc 2>/dev/null | wc -l)
echo "repository at $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown) ($dirty uncommitted engine files); kvbench binary $kvbench built $(date -u -r "$kvbench" '+%H:%M UTC')."
echo "load average (1, 5, 15 min) before: $load_before, after: $load_after."
contention_said
echo "other processes at >= 5% CPU before: $busy_before; after: $busy_after."
echo
row "metric" "kvbench (MatrixKV)" "db_bench (RocksDB $("$db_bench" --version 2>/dev/null | awk '{print $NF}'))" "kvbench / db_bench"
echo "|---|---:|---:|---:|"
row "fillrandom ops/s" "$kfo" "$rfo" "$(ratio "$kfo" "$rfo")"
row "fillrandom MB/s" "$kfm" "$rfm" "$(ratio "$kfm" "$rfm")"
for p in P50 P99 P99.9; do
  a=$(percentile "$kf" "$p"); b=$(percentile "$rf" "$p")
  row "fillrandom $p (us)" "$a" "$b" "$(ratio "$a" "$b")"
done
row "write amplification (end of fill)" "$kv_wa" "$r_wa (incl. WAL $r_wa_wal)" "$(ratio "$kv_wa" "$r_wa")"
row "stall time during fill (s)" "$kv_stall" "$r_stall_s" ""
kv_l0=$(awk '$1 == "L0" && NF == 3 && $3 ~ /^[0-9]+$/ { printf "%d files, %.1f MB", $2, $3 / 1048576; exit }' "$kf")
r_l0=$(awk '$1 == "L0" && $2 ~ /\// { split($2, a, "/"); printf "%d files, %s %s", a[1], $3, $4; exit }' "$rf")
row "L0 at end of fill (backlog)" "$kv_l0" "$r_l0" ""
row "DB size after fill (MB)" "$(mb "$kv_size")" "$(mb "$r_size")" "$(ratio "$kv_size" "$r_size")"
row "readrandom ops/s" "$kro" "$rro" "$(ratio "$kro" "$rro")"
row "readrandom MB/s" "$krm" "$rrm" "$(ratio "$krm" "$rrm")"
for p in P50 P99 P99.9; do
  a=$(percentile "$kr" "$p"); b=$(percentile "$rr" "$p")
  row "readrandom $p (us)" "$a" "$b" "$(ratio "$a" "$b")"
done
row "readrandom found" "$(found "$kr")" "$(found "$rr")" ""
echo
verdict() { if [ "$1" = 1 ]; then echo met; else echo MISSED; fi; }
t1=$(awk -v a="${kfo:-0}" -v b="${rfo:-0}" 'BEGIN { print (a >= b && b > 0) ? 1 : 0 }')
t2=$(awk -v a="${kf999:-0}" -v b="${rf999:-0}" 'BEGIN { print (a <= b && a > 0) ? 1 : 0 }')
t3=$(awk -v a="${kro:-0}" -v b="${rro:-0}" 'BEGIN { print (a >= 0.8 * b && b > 0) ? 1 : 0 }')
echo "target fillrandom ops/s >= db_bench: $(verdict "$t1") ($kfo vs $rfo)"
echo "target fillrandom P99.9 <= db_bench: $(verdict "$t2") ($kf999 vs $rf999 us)"
echo "target readrandom ops/s >= 0.8x db_bench: $(verdict "$t3") ($kro vs $rro)"
echo "logs: $logs"

if [ "$keep" = 0 ]; then
  rm -rf "$kvdir" "$rdir"
fi
