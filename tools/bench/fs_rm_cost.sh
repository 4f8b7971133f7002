#!/usr/bin/env bash
# fs_rm_cost.sh: what removing a file costs the MatrixFS daemon by file size
# (issue 16: would range deletions make tree removal cheaper?). A small file
# keeps its data in F keys, one per block (fuse/schema.h), and an unlink
# deletes each of them with a point tombstone found by a prefix scan
# (MatrixFs::DeleteInodeKeys); a large file is an object in the data
# directory, removed with one unlink(2), and has no F keys. For every size
# the script makes a tarball of FILES files of that size (100 per directory,
# on /dev/shm, once), and in each round, for every size in turn on a fresh
# mount (pool on /dev/shm): tar xf; sync; rm -rf; sync (or, with --op
# truncate, `truncate -s 0` of every file; sync), recording the wall
# time and the daemon's own CPU time (utime + stime of its threads) of the
# rm -rf and the engine records it wrote ("records.written" of
# .matrixfs/stats), i.e. the keys deleted. With --perf, one more round (not
# counted in the table) records every size's rm -rf with `perf record
# --call-graph dwarf` of the daemon and prints the shares of the daemon's
# samples in the delete path (including callees) and the top symbols.
#
# Usage: tools/bench/fs_rm_cost.sh [--build DIR] [--sizes LIST] [--files N]
#          [--large-files N] [--rounds N] [--op rm|truncate] [--perf] [--work DIR]
#   --build        build directory holding bin/matrixfs (build)
#   --sizes        file sizes in bytes, comma separated (0,4096,61440,1048576)
#   --files        files per size up to the inline limit (64 KiB) (4000)
#   --large-files  files per size above it (300)
#   --rounds       rounds (3)
#   --op           what is timed: rm (rm -rf of the tree) or truncate
#                  (truncate -s 0 of every file, the inline files' F keys
#                  deleted the same way) (rm)
#   --perf         one more round, with perf record of the daemon during rm -rf
#   --work         scratch directory on the disk under test (var/fs_rm_cost)
# Prints one line per round and size and a Markdown table (median and range
# over the rounds, per file). Needs root. Run it under
# `flock /tmp/bench.lock`.
set -Eeuo pipefail
trap 'echo "fs_rm_cost.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR
top=$(cd "$(dirname "$0")/../.." && pwd)
build="$top/build" sizes=0,4096,61440,1048576 files=4000 large=300 rounds=3 perf=0 op=rm work="$top/var/fs_rm_cost"
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --files) files=$2; shift 2 ;;
    --large-files) large=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --perf) perf=1; shift ;;
    --op) op=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "fs_rm_cost.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
for v in "$files" "$large" "$rounds"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "fs_rm_cost.sh: --files, --large-files and --rounds want positive numbers, not '$v'" >&2; exit 2; }
done
for s in ${sizes//,/ }; do
  [[ $s =~ ^[0-9]+$ ]] || { echo "fs_rm_cost.sh: --sizes wants byte counts, not '$s'" >&2; exit 2; }
done
case $op in rm | truncate) ;; *) echo "fs_rm_cost.sh: --op wants rm or truncate, not '$op'" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "fs_rm_cost.sh: needs root (mounts)" >&2; exit 1; }
bin="$build/bin/matrixfs"
[ -x "$bin" ] || { echo "fs_rm_cost.sh: $bin not found (make first, or give --build)" >&2; exit 2; }
[ $perf = 0 ] || command -v perf >/dev/null || { echo "fs_rm_cost.sh: --perf needs perf" >&2; exit 2; }

rm -rf "$work"
mkdir -p "$work/d" "$work/m"
shm=$(mktemp -d /dev/shm/fs_rm_cost.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then umount "$work/m" 2>/dev/null || umount -l "$work/m" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$shm"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

declare -A n_of=()
for s in ${sizes//,/ }; do
  n=$files
  [ "$s" -le 65536 ] || n=$large
  n_of[$s]=$n
  python3 - "$shm/src-$s" "$s" "$n" <<'EOF'
import os, sys
root, size, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = bytes((i * 131 + 7) % 251 for i in range(size))
for i in range(n):
    d = os.path.join(root, "t", "d%03d" % (i // 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(data)
EOF
  tar cf "$shm/t-$s.tar" -C "$shm/src-$s" t
  rm -rf "$shm/src-$s"
done

tick=$(getconf CLK_TCK)
now() { date +%s.%N; }
cpu() { awk -v t="$tick" '{printf "%.3f", ($14 + $15) / t}' "/proc/$pid/stat"; }
recs() { awk '$1 == "records.written" {print $2}' "$work/m/.matrixfs/stats"; }
echo "fs_rm_cost.sh: start $(date -u '+%H:%M:%S UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), sizes $sizes"
printf 'round\tsize\tfiles\trm_wall_s\trm_cpu_s\trecords\n' >"$work/rm.tsv"
last=$rounds
[ $perf = 0 ] || last=$((rounds + 1))
for r in $(seq 1 "$last"); do
  for s in ${sizes//,/ }; do
    rm -rf "$work/d"; mkdir -p "$work/d"; rm -f "$shm/pool"
    "$bin" -f "$work/d" "$work/m" -o "format,pool=$shm/pool" >"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 1 300); do mountpoint -q "$work/m" && break; kill -0 "$pid" || break; sleep 0.1; done
    mountpoint -q "$work/m" || { echo "fs_rm_cost.sh: the daemon did not mount; its log:" >&2; cat "$work/log" >&2; exit 1; }
    tar xf "$shm/t-$s.tar" -C "$work/m"; sync
    k0=$(recs); c0=$(cpu); t0=$(now)
    if [ "$r" -gt "$rounds" ]; then
      perf record -q --call-graph dwarf,16384 -F 1999 -p "$pid" -o "$work/perf-$s.data" 2>/dev/null &
      ppid=$!
      sleep 0.5
    fi
    t0=$(now); c0=$(cpu)
    if [ $op = rm ]; then
      rm -rf "$work/m/t"; sync
    else
      find "$work/m/t" -type f -print0 | xargs -0 truncate -s 0; sync
    fi
    t1=$(now); c1=$(cpu)
    if [ -n "${ppid:-}" ]; then kill -INT "$ppid"; wait "$ppid" || true; ppid=; fi
    k1=$(recs)
    umount "$work/m"; wait "$pid"; pid=
    line=$(awk -v r="$r" -v s="$s" -v n="${n_of[$s]}" -v a="$t0" -v b="$t1" -v c="$c0" -v d="$c1" -v k=$((k1 - k0)) \
      'BEGIN {printf "%d\t%d\t%d\t%.3f\t%.3f\t%d", r, s, n, b - a, d - c, k}')
    [ "$r" -gt "$rounds" ] || echo "$line" >>"$work/rm.tsv"
    echo "round $r size $s: $(echo "$line" | awk -F'\t' '{printf "'"$op"' %s s, daemon cpu %s s, %s records (%.2f per file)", $4, $5, $6, $6 / $3}')"
  done
done
echo "fs_rm_cost.sh: end $(date -u '+%H:%M:%S UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/rm.tsv" "$op" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def mr(v): return "%.0f (%.0f-%.0f)" % (statistics.median(v), min(v), max(v))
what = "rm -rf" if sys.argv[2] == "rm" else "truncate -s 0"
print("\n| file size | files (+ dirs) | " + what + " us per file, wall | daemon CPU us per file | engine records per file |")
print("|---:|---:|---:|---:|---:|")
for s in dict.fromkeys(x["size"] for x in rows):
    v = [x for x in rows if x["size"] == s]
    n = int(v[0]["files"]); n_all = n + (n + 99) // 100 + 1
    print("| %s | %d (+%d) | %s | %s | %.2f |" % (s, n, n_all - n, mr([float(x["rm_wall_s"]) * 1e6 / n for x in v]),
          mr([float(x["rm_cpu_s"]) * 1e6 / n for x in v]), statistics.median(int(x["records"]) / n for x in v)))
EOF
if [ $perf = 1 ]; then
  for s in ${sizes//,/ }; do
    f="$work/perf-$s.data"
    [ -s "$f" ] || continue
    echo "perf, size $s: the daemon's samples (children, i.e. including callees) in:"
    perf report -i "$f" --children --stdio --no-demangle -g none 2>/dev/null | awk '
      /^ +[0-9.]+% +[0-9.]+%/ {
        for (i = 1; i <= n; i++) if (index($0, pat[i]) && !(i in seen)) { seen[i] = 1; printf "  %-40s %s\n", name[i], $1 }
      }
      BEGIN {
        n = split("8MatrixFs6Unlink|8MatrixFs5Rmdir|8MatrixFs7SetAttr|8MatrixFs8Truncate|8MatrixFs15DeleteInodeKeys|6DBImpl5Write|10WriteBatch6Delete|6DBImpl11NewIterator|8MatrixFs12RemoveObject|8MatrixFs6Forget|8MatrixFs11ForgetMulti|do_syscall_64", pat, "|")
        split("MatrixFs::Unlink|MatrixFs::Rmdir|MatrixFs::SetAttr|MatrixFs::Truncate (F scan + deletes)|MatrixFs::DeleteInodeKeys (F, X scans)|DBImpl::Write (WAL, memtable)|WriteBatch::Delete|DBImpl::NewIterator|MatrixFs::RemoveObject|MatrixFs::Forget|MatrixFs::ForgetMulti|do_syscall_64 (all system calls)", name, "|")
      }'
    echo "  top self symbols:"
    perf report -i "$f" --no-children --stdio -g none 2>/dev/null | grep -E '^ +[0-9.]+%' | head -12 | cut -c1-120 || true
  done
fi
