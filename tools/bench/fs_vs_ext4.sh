#!/usr/bin/env bash
# fs_vs_ext4.sh — MatrixFS side by side with ext4 (a directory on the same
# disk), tmpfs, and libfuse's passthrough_ll example (FUSE over the same ext4
# directory), in one invocation, with the same workloads; matrixfs-pt is
# MatrixFS mounted with -o passthrough (the kernel reads and writes large
# files' objects itself, no writeback cache):
#
#   fs_mark 4 KiB files, no sync (-S 0) and fsync before close (-S 1)
#   fsbench stat storm over existing and over missing names
#   fsbench readdir of a large directory (entries listed per second)
#   fsbench open: open, read 4 KiB and close the stat files (page cache warm)
#   fio on one file: 4k random read/write, 1M sequential read/write
#
# Usage: tools/bench/fs_vs_ext4.sh [--dir BASE] [--files N] [--stat N]
#          [--readdir N] [--fio-size SIZE] [--fio-runtime SECS] [--direct]
#          [--only LIST] [--build DIR] [--extra-opts OPTS]
#   --dir      where the ext4 directory, passthrough source and the MatrixFS
#              data directory go (default: var/fsbench in the repo, i.e. the
#              same disk); the MatrixFS pool and tmpfs are on /dev/shm
#   --direct   fio with O_DIRECT (honest device numbers; FUSE targets then
#              bypass the page cache too). Without it fio is buffered, with
#              end_fsync=1 for writes and caches dropped before reads.
#   --extra-opts  more -o options for the MatrixFS mounts (e.g. uring)
#   --only     comma list of targets among matrixfs,matrixfs-pt,ext4,tmpfs,
#              passthrough (default: all but matrixfs-pt)
#
# Prints one table (rows: workloads; columns: targets, then MatrixFS/ext4
# and MatrixFS/passthrough ratios, and matrixfs-pt/ext4 when both ran). Needs root (mounts, drop_caches).
set -Eeuo pipefail
trap 'echo "fs_vs_ext4.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR

top=$(cd "$(dirname "$0")/../.." && pwd)
base="$top/var/fsbench"
files=20000
statn=10000
readdirn=100000
fio_size=1G
fio_runtime=10
direct=0
only="matrixfs,ext4,tmpfs,passthrough"
build=build
extra_opts=""

while [ $# -gt 0 ]; do
  case "$1" in
    --dir) base=$2; shift 2 ;;
    --files) files=$2; shift 2 ;;
    --stat) statn=$2; shift 2 ;;
    --readdir) readdirn=$2; shift 2 ;;
    --fio-size) fio_size=$2; shift 2 ;;
    --fio-runtime) fio_runtime=$2; shift 2 ;;
    --direct) direct=1; shift ;;
    --only) only=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --extra-opts) extra_opts=",$2"; shift 2 ;;
    *) echo "fs_vs_ext4.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done

[ "$(id -u)" -eq 0 ] || { echo "fs_vs_ext4.sh: needs root (mounts, drop_caches)" >&2; exit 1; }
bin="$top/$build/bin"
need=(fsbench)
[[ ",$only," == *",matrixfs,"* || ",$only," == *",matrixfs-pt,"* ]] && need+=(matrixfs)
for t in "${need[@]}"; do
  [ -x "$bin/$t" ] || { echo "fs_vs_ext4.sh: $bin/$t is missing; run 'make' first" >&2; exit 1; }
done
for t in fs_mark fio python3 cc; do
  command -v $t >/dev/null || { echo "fs_vs_ext4.sh: '$t' not found (apt-get install fsmark fio python3 gcc)" >&2; exit 1; }
done

mkdir -p "$base"
source "$top/tools/bench/lib-targets.sh"
lt_init "$(mktemp -d "$base/run.XXXXXX")" "$(mktemp -d /dev/shm/mxfs-fsbench.XXXXXX)" "$bin"
trap lt_cleanup EXIT

want() { [[ ",$only," == *",$1,"* ]]; }

want ext4 && lt_add_ext4 ext4
want tmpfs && lt_add_tmpfs tmpfs
if want passthrough; then
  # passthrough_ll holds one O_PATH fd per inode the kernel knows: both
  # fs_mark directories, the stat files (reused by the open row) and the
  # readdir directory at once.
  need_fds=$((2 * files + statn + readdirn + 100))
  if [ "$need_fds" -gt "$LT_NOFILE" ]; then
    echo "fs_vs_ext4.sh: passthrough_ll would need ~$need_fds open files, the limit is $LT_NOFILE;" \
      "use smaller --files/--stat/--readdir (2*files + stat + readdir below it)" >&2
    exit 1
  fi
  lt_add_passthrough passthrough
fi
want matrixfs && lt_add_matrixfs matrixfs "${extra_opts#,}"
want matrixfs-pt && lt_add_matrixfs matrixfs-pt "passthrough$extra_opts"

targets=()
for t in matrixfs matrixfs-pt ext4 tmpfs passthrough; do want $t && targets+=("$t"); done
declare -A res

fsmark() {  # target sync_mode -> files/sec
  # fs_mark refuses directory paths of 40 bytes or more: run it from inside.
  mkdir -p "${lt_dir[$1]}/fsm$2"
  (cd "${lt_dir[$1]}" && fs_mark -d "fsm$2" -s 4096 -n "$files" -t 1 -S "$2" -k -L 1 -l /dev/null 2>&1) |
    awk '/^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+/ {print $4}' | tail -1
}

fio_run() {  # target rw bs -> MiB/s
  local d="${lt_dir[$1]}" rw=$2 bs=$3 extra=()
  if [ $direct -eq 1 ]; then extra+=(--direct=1); else extra+=(--end_fsync=1); fi
  # Lay the file out once (sequential write), then measure.
  if [ ! -f "$d/fio.dat" ]; then
    fio --name=layout --filename="$d/fio.dat" --size="$fio_size" --bs=1M --rw=write --ioengine=psync \
      --end_fsync=1 --output-format=terse >/dev/null
  fi
  [[ $rw == *read* ]] && [ $direct -eq 0 ] && lt_drop_caches
  fio --name=bench --filename="$d/fio.dat" --size="$fio_size" --bs="$bs" --rw="$rw" --ioengine=psync \
    --runtime="$fio_runtime" --time_based "${extra[@]}" --output-format=json |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print("%.1f" % ((j["read"]["bw_bytes"]+j["write"]["bw_bytes"])/1048576))'
}

rate() { grep "^$1:" | awk '{print $(NF-1)}' | tail -1; }

for t in "${targets[@]}"; do
  echo "== $t (${lt_dir[$t]})" >&2
  mx=0
  [[ $t == matrixfs* ]] && mx=1
  [ $mx = 1 ] && r0=$(lt_requests_total "$t")
  res[$t,fsmark_nosync]=$(fsmark "$t" 0)
  [ $mx = 1 ] && r1=$(lt_requests_total "$t")
  res[$t,fsmark_fsync]=$(fsmark "$t" 1)
  [ $mx = 1 ] && r2=$(lt_requests_total "$t") &&
    echo "$t FUSE requests per fs_mark file: $(python3 -c "print('%.2f no sync, %.2f with fsync' % (($r1 - $r0) / $files, ($r2 - $r1) / $files))")" >&2
  out=$("$bin/fsbench" stat "${lt_dir[$t]}/stat" "$statn" 5)
  res[$t,stat_existing]=$(rate stat-existing <<<"$out")
  res[$t,stat_missing]=$(rate stat-missing <<<"$out")
  out=$("$bin/fsbench" open "${lt_dir[$t]}/stat" "$statn" 3)
  res[$t,open_read_close]=$(rate open-read-close <<<"$out")
  out=$("$bin/fsbench" readdir "${lt_dir[$t]}/big" "$readdirn")
  res[$t,readdir]=$(rate readdir-entries <<<"$out")
  res[$t,fio_4k_randread]=$(fio_run "$t" randread 4k)
  res[$t,fio_4k_randwrite]=$(fio_run "$t" randwrite 4k)
  res[$t,fio_1m_read]=$(fio_run "$t" read 1M)
  res[$t,fio_1m_write]=$(fio_run "$t" write 1M)
done

rows="fsmark_nosync fsmark_fsync stat_existing stat_missing open_read_close readdir fio_4k_randread fio_4k_randwrite fio_1m_read fio_1m_write"
units="files/s files/s ops/s ops/s files/s entries/s MiB/s MiB/s MiB/s MiB/s"
echo
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, kernel $(uname -r); fio $( [ $direct -eq 1 ] && echo O_DIRECT || echo buffered+end_fsync, caches dropped before reads)"
[ -n "$extra_opts" ] && echo "MatrixFS mount options: ...${extra_opts}"
echo "workload: fs_mark -s 4096 -n $files -t 1; stat $statn names x5; open+read+close $statn files x3; readdir $readdirn entries; fio $fio_size file, ${fio_runtime}s per run"
printf '%-18s %-9s' workload unit
for t in "${targets[@]}"; do printf ' %12s' "$t"; done
want matrixfs && want ext4 && printf ' %10s' "mxfs/ext4"
want matrixfs && want passthrough && printf ' %10s' "mxfs/pt"
want matrixfs-pt && want ext4 && printf ' %10s' "mxpt/ext4"
echo
set -- $units
for r in $rows; do
  printf '%-18s %-9s' "$r" "$1"
  shift
  for t in "${targets[@]}"; do printf ' %12s' "${res[$t,$r]:-n/a}"; done
  ratio() { python3 -c "a,b='$1','$2'; print('%.2fx' % (float(a)/float(b)) if a and b and float(b) > 0 else 'n/a')" 2>/dev/null || echo n/a; }
  want matrixfs && want ext4 && printf ' %10s' "$(ratio "${res[matrixfs,$r]:-}" "${res[ext4,$r]:-}")"
  want matrixfs && want passthrough && printf ' %10s' "$(ratio "${res[matrixfs,$r]:-}" "${res[passthrough,$r]:-}")"
  want matrixfs-pt && want ext4 && printf ' %10s' "$(ratio "${res[matrixfs-pt,$r]:-}" "${res[ext4,$r]:-}")"
  echo
done
