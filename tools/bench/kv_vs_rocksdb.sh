#!/usr/bin/env bash
# kv_vs_rocksdb.sh: MatrixKV (kvbench) and RocksDB (db_bench) side by side on
# the same workload, on the same disk, one after the other.
#
# What it runs, in this order (one thread, no compression, fixed seed):
#   1. kvbench  --benchmarks=fillrandom,stats   on a fresh DIR/kvbench
#   2. db_bench --benchmarks=fillrandom,stats   on a fresh DIR/rocksdb
#   3. kvbench  --benchmarks=readrandom --use_existing_db=1  on DIR/kvbench
#   4. db_bench --benchmarks=readrandom --use_existing_db=1  on DIR/rocksdb
# Both get the same --num, --key_size, --value_size, --write_buffer_size,
# --max_bytes_for_level_base, --target_file_size_base, --bloom_bits,
# --cache_size, --sync and --histogram=1; db_bench also gets
# --compression_type=none --statistics=1.
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
#   --reads N                     readrandom reads (default: --num)
#   --key_size B                  (16)
#   --value_size B                (4096)
#   --write_buffer_size B         memtable size (67108864)
#   --max_bytes_for_level_base B  (268435456)
#   --target_file_size_base B     (67108864)
#   --bloom_bits N                (10)
#   --cache_size B                block cache (8388608, db_bench's default)
#   --sync 0|1                    sync every write (0)
#   --direct                      O_DIRECT on both: kvbench --use_direct_io=1,
#                                 db_bench --use_direct_reads=1
#                                 --use_direct_io_for_flush_and_compaction=1
#   --drop_caches                 sync and drop the page cache before each
#                                 readrandom (needs root; says if it failed)
#   --dir DIR                     where the two DBs and the logs go
#                                 (default: <repo>/var/bench); both DBs live
#                                 on this one filesystem
#   --kvbench PATH                (default: $KVBENCH, else <repo>/build/bin/kvbench)
#   --db_bench PATH               (default: db_bench from PATH)
#   --seed N                      (1)
#   --keep                        keep the two DBs afterwards (default: deleted)
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
#                                 readrandom after the load on (a) and (b).
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
# Logs of the four runs stay in DIR/logs/. Exit status: 0 when all four runs
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
cache_size=$((8 << 20))
sync=0
direct=0
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
    --cache_size) need_int "$arg" "$val"; cache_size=$val ;;
    --sync) [[ $val == 0 || $val == 1 ]] || { echo "kv_vs_rocksdb.sh: --sync: expected 0 or 1, got '$val'" >&2; exit 2; }; sync=$val ;;
    --seed) need_int "$arg" "$val"; seed=$val ;;
    --dir) dir=$val ;;
    --kvbench) kvbench=$val ;;
    --db_bench) db_bench=$val ;;
    --nvm_size) need_int "$arg" "$val"; nvm_size=$val ;;
    --shm) shm=$val ;;
    *) echo "kv_vs_rocksdb.sh: unknown option $arg (--help lists them)" >&2; exit 2 ;;
  esac
done
[ -n "$reads" ] || reads=$num
if [ "$rocksdb_blob" = 1 ] && [ "$three_way" = 0 ]; then
  echo "kv_vs_rocksdb.sh: --rocksdb_blob needs --three_way" >&2
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
  --sync="$sync" --threads=1 --histogram=1 --seed="$seed" --compression_type=none)
kv_only=()
rocks_only=(--statistics=1)
if [ "$direct" = 1 ]; then
  kv_only+=(--use_direct_io=1)
  rocks_only+=(--use_direct_reads=1 --use_direct_io_for_flush_and_compaction=1)
fi

run() {  # log-name command...
  local name=$1 log=$logs/$1.log
  shift
  echo "+ $*" >"$log"
  echo "== $(date -u +%H:%M:%S) $name (log: $log)" >&2
  if ! "$@" >>"$log" 2>"$log.stderr"; then
    tail -5 "$log.stderr" >&2
    die "$1 failed; see $log and $log.stderr"
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
  trap 'rm -rf "$pool" "$wal"' EXIT
  rep_flags() { echo "--report_interval_seconds=1 --report_file=$logs/$1.csv"; }
  started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  # shellcheck disable=SC2046
  run kvbench_pool_fill "$kvbench" --benchmarks=fillrandom,stats --db="$kvdir" "${common[@]}" "${kv_only[@]}" \
    --nvm_path="$pool" --nvm_size="$nvm_size" $(rep_flags kvbench_pool_fill)
  # shellcheck disable=SC2046
  run db_bench_disk_fill "$db_bench" --benchmarks=fillrandom,stats --db="$rdir" "${common[@]}" "${rocks_only[@]}" \
    $(rep_flags db_bench_disk_fill)
  # shellcheck disable=SC2046
  run db_bench_shmwal_fill "$db_bench" --benchmarks=fillrandom,stats --db="$sdir" --wal_dir="$wal" "${common[@]}" \
    "${rocks_only[@]}" $(rep_flags db_bench_shmwal_fill)
  if [ "$rocksdb_blob" = 1 ]; then
    # shellcheck disable=SC2046
    run db_bench_blob_fill "$db_bench" --benchmarks=fillrandom,stats --db="$bdir" "${common[@]}" "${rocks_only[@]}" \
      "${blob_flags[@]}" $(rep_flags db_bench_blob_fill)
  fi
  # readrandom after the load, on (a) and (b) (c differs from b only in its WAL).
  if [ "$reads" -gt 0 ]; then
    drop
    run kvbench_pool_read "$kvbench" --benchmarks=readrandom --use_existing_db=1 --reads="$reads" --db="$kvdir" \
      "${common[@]}" "${kv_only[@]}" --nvm_path="$pool" --nvm_size="$nvm_size"
    drop
    run db_bench_disk_read "$db_bench" --benchmarks=readrandom --use_existing_db=1 --reads="$reads" --db="$rdir" \
      "${common[@]}" "${rocks_only[@]}"
    if [ "$rocksdb_blob" = 1 ]; then
      drop
      run db_bench_blob_read "$db_bench" --benchmarks=readrandom --use_existing_db=1 --reads="$reads" --db="$bdir" \
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
    gnuplot <<GP
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
  rocks_wa() {
    awk -v s=$((key_size + value_size)) '$2 == "COUNT" { t[$1] = $4 }
      END { k = t["rocksdb.number.keys.written"]; if (k > 0) printf "%.3f", (t["rocksdb.flush.write.bytes"] + t["rocksdb.compact.write.bytes"]) / (k * s); else print "n/a" }' "$1"
  }
  rocks_stall() { awk '$1 == "rocksdb.stall.micros" && $2 == "COUNT" { printf "%.3f", $4 / 1e6; exit }' "$1"; }
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
  echo "target_file_size_base $target_file_size_base, 1 thread, no compression, sync=$sync, seed $seed;"
  echo "pool $nvm_size bytes on $shm ($(df -PT "$shm" | awk 'NR==2 {print $2}')); disk: $dir ($(df -PT "$dir" | awk 'NR==2 {print $2}'));"
  echo "(c) moves only RocksDB's WAL (--wal_dir): db_bench $("$db_bench" --version 2>/dev/null | awk '{print $NF}') cannot place L0 apart."
  if [ "$rocksdb_blob" = 1 ]; then
    echo "(d), informational: RocksDB's integrated BlobDB, all on disk: ${blob_flags[*]}."
  fi
  echo "ran $started .. $finished; repository at $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown);"
  echo "load average (1, 5, 15 min) before: $load_before, after: $load_after, on $(nproc) CPUs."
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
  trow "write amplification" \
    "$(sed -nE 's/^Write amplification: ([0-9.]+|n\/a).*/\1/p' "$kf" | head -1)" "$(rocks_wa "$rf")" "$(rocks_wa "$sf")" \
    "$(blob rocks_wa "$bf")"
  trow "stall time (s)" "$(sed -nE 's/^Stall time: ([0-9.]+) seconds.*/\1/p' "$kf" | head -1)" \
    "$(rocks_stall "$rf")" "$(rocks_stall "$sf")" "$(blob rocks_stall "$bf")"
  trow "L0->L1 compactions (count, avg input)" "$(kv_l01 "$kf")" "$(rocks_l01 "$rf")" \
    "$(rocks_l01 "$sf")" "$(blob rocks_l01 "$bf")"
  # Troughs: the slowest whole second after warm-up (the first 10% of the
  # run's seconds, at least 5) against the median of those seconds; the
  # last, partial second is left out.
  trough() {
    awk -F, 'FNR > 1 && $2 != "" { v[++n] = $2 + 0 }
      END { w = int(n / 10); if (w < 5) w = 5; m = 0
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

started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# What else is using the CPU (a 1-second sample; processes at >= 5%).
busy() {
  top -b -n2 -d1 -w 200 2>/dev/null |
    awk '/^top -/ { it++ } it == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 >= 5 { n[$12]++; c[$12] += $9 }
         END { for (p in n) printf "%s%s x%d (%d%% CPU)", (k++ ? ", " : ""), p, n[p], c[p]; if (!k) printf "nothing" }'
}
busy_before=$(busy)
run kvbench_fill "$kvbench" --benchmarks=fillrandom,stats --db="$kvdir" "${common[@]}" "${kv_only[@]}"
run db_bench_fill "$db_bench" --benchmarks=fillrandom,stats --db="$rdir" "${common[@]}" "${rocks_only[@]}"
kv_size=$(du -sb "$kvdir" | cut -f1)
r_size=$(du -sb "$rdir" | cut -f1)
drop
run kvbench_read "$kvbench" --benchmarks=readrandom --use_existing_db=1 --reads="$reads" --db="$kvdir" \
  "${common[@]}" "${kv_only[@]}"
drop
run db_bench_read "$db_bench" --benchmarks=readrandom --use_existing_db=1 --reads="$reads" --db="$rdir" \
  "${common[@]}" "${rocks_only[@]}"
finished=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
busy_after=$(busy)

kf=$logs/kvbench_fill.log
rf=$logs/db_bench_fill.log
kr=$logs/kvbench_read.log
rr=$logs/db_bench_read.log

kv_wa=$(sed -nE 's/^Write amplification: ([0-9.]+|n\/a).*/\1/p' "$kf" | head -1)
kv_stall=$(sed -nE 's/^Stall time: ([0-9.]+) seconds.*/\1/p' "$kf" | head -1)
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

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2fx", a / b; else print "-" }'; }
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
echo "1 thread, no compression, sync=$sync, seed $seed; direct I/O (O_DIRECT): $([ "$direct" = 1 ] && echo yes || echo 'no (page cache in use)');"
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
