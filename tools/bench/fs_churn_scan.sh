#!/usr/bin/env bash
# fs_churn_scan.sh: issue 8's unpack/remove loop on one mount per target, with
# cold-cache scans of the unpacked tree in every round (issue 16). Each
# MatrixFS binary gets one fresh mount with a pool (--pool-size) for the whole
# run, beside an ext4 directory on the same disk as the repository and a tmpfs
# directory on /dev/shm. Every round runs on every target before the next
# round starts (the target order rotates by one each round):
#
#   tar_xf    tar xf of a tarball of /usr/include (made once), then sync
#   readdir   find of the tree (a getdents of every directory, no stat)
#   du_s      du -s of the tree
#   stat      find -type f | xargs stat
#   read      find -type f | xargs cat (the small files' data)
#   rm_rf     rm -rf of the tree, then sync
#
# Before every scan step (readdir, du_s, stat, read) `sync; echo 3 >
# /proc/sys/vm/drop_caches` (untimed), so that the scan goes to the daemon (or
# ext4's disk) rather than the kernel's dentry, attribute and page caches; tar
# xf and rm -rf run as issue 8's loop ran them (rm -rf with the tree's dentries
# in the kernel's cache, here from the read step). For MatrixFS targets each step also
# records the daemon's own CPU time (utime + stime of its threads), the
# container's rows before the step (.matrixfs/container) and, per round, the
# daemon's private memory (RssAnon) after the rm.
#
# Usage: tools/bench/fs_churn_scan.sh [--bin NAME=PATH]... [--rounds N]
#          [--pool-size SIZE] [--only LIST] [--work DIR] [--out DIR] [--quick]
#   --bin        a matrixfs binary and the name it gets in the output (may be
#                given several times; default: matrixfs=build/bin/matrixfs)
#   --rounds     rounds (10)
#   --pool-size  each MatrixFS pool's size, mount option pool_size (2G)
#   --only       which of ext4,tmpfs run beside the binaries (ext4,tmpfs;
#                "none" for neither)
#   --work       scratch directory on the disk under test (var/fs_churn_scan
#                in the repository); the pools and the tmpfs target go to
#                /dev/shm
#   --out        where steps.tsv (round target step wall_s cpu_s rows),
#                rounds.tsv (round target anon_mb rows_after) and, with
#                gnuplot, churn.png go (the work directory)
#   --quick      smoke-test size: /usr/include/linux instead of /usr/include,
#                2 rounds unless --rounds is given
# Prints one line per round and target, a Markdown table of every step's
# median (min-max) over the rounds per target, the rm -rf time per round, and
# the load average at the start and the end. Needs root (mounts,
# drop_caches). Run it under `flock /tmp/bench.lock` beside other benchmarks.
set -Eeuo pipefail
trap 'echo "fs_churn_scan.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR

top=$(cd "$(dirname "$0")/../.." && pwd)
bins=()
rounds=10
pool_size=2G
only=ext4,tmpfs
work="$top/var/fs_churn_scan"
out=
quick=0
rounds_given=0
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bins+=("$2"); shift 2 ;;
    --rounds) rounds=$2; rounds_given=1; shift 2 ;;
    --pool-size) pool_size=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "fs_churn_scan.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ $quick = 0 ] || [ $rounds_given = 1 ] || rounds=2
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "fs_churn_scan.sh: --rounds wants a positive number, not '$rounds'" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "fs_churn_scan.sh: needs root (mounts, drop_caches)" >&2; exit 1; }
[ ${#bins[@]} -gt 0 ] || bins=("matrixfs=$top/build/bin/matrixfs")
out=${out:-$work}

targets=()
declare -A bin_of=() dir_of=() pid_of=()
for b in "${bins[@]}"; do
  name=${b%%=*} path=${b#*=}
  [[ $b == *=* && $name =~ ^[A-Za-z0-9_.-]+$ ]] ||
    { echo "fs_churn_scan.sh: --bin wants NAME=PATH with NAME of letters, digits, . _ -, not '$b'" >&2; exit 2; }
  [ -x "$path" ] || { echo "fs_churn_scan.sh: $path (--bin $name) is not an executable; run make first" >&2; exit 2; }
  [ -z "${bin_of[$name]+x}" ] || { echo "fs_churn_scan.sh: --bin name '$name' given twice" >&2; exit 2; }
  targets+=("$name")
  bin_of[$name]=$path
done
for t in ${only//,/ }; do
  case $t in
    ext4 | tmpfs) targets+=("$t") ;;
    none) ;;
    *) echo "fs_churn_scan.sh: unknown --only entry '$t' (ext4, tmpfs, none)" >&2; exit 2 ;;
  esac
done

rm -rf "$work"
mkdir -p "$work" "$out"
shm=$(mktemp -d /dev/shm/fs_churn_scan.XXXXXX)
cleanup() {
  for t in "${!pid_of[@]}"; do
    umount "${dir_of[$t]}" 2>/dev/null || umount -l "${dir_of[$t]}" 2>/dev/null || true
    wait "${pid_of[$t]}" 2>/dev/null || true
  done
  rm -rf "$shm"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

tarball="$shm/tree.tar" # on tmpfs: drop_caches does not evict it
if [ $quick = 1 ]; then tree_src=/usr/include tree=linux; else tree_src=/usr tree=include; fi
tar cf "$tarball" -C "$tree_src" "$tree"
entries=$(tar tf "$tarball" | wc -l)

for t in "${targets[@]}"; do
  case $t in
    ext4) dir_of[$t]="$work/ext4"; mkdir -p "${dir_of[$t]}" ;;
    tmpfs) dir_of[$t]="$shm/tmpfs"; mkdir -p "${dir_of[$t]}" ;;
    *)
      dir_of[$t]="$work/$t/mnt"
      mkdir -p "$work/$t/data" "${dir_of[$t]}"
      "${bin_of[$t]}" -f "$work/$t/data" "${dir_of[$t]}" -o "format,pool=$shm/$t.pool,pool_size=$pool_size" \
        >"$work/$t/daemon.log" 2>&1 &
      pid_of[$t]=$!
      for _ in $(seq 1 300); do mountpoint -q "${dir_of[$t]}" && break; kill -0 "${pid_of[$t]}" || break; sleep 0.1; done
      mountpoint -q "${dir_of[$t]}" ||
        { echo "fs_churn_scan.sh: $t did not mount; its log:" >&2; cat "$work/$t/daemon.log" >&2; exit 1; }
      ;;
  esac
done

tick=$(getconf CLK_TCK)
now() { date +%s.%N; }
cpu() { if [ -n "${pid_of[$1]+x}" ]; then awk -v t="$tick" '{printf "%.2f", ($14 + $15) / t}' "/proc/${pid_of[$1]}/stat"; else echo 0; fi; }
rows() {
  if [ -n "${pid_of[$1]+x}" ]; then awk '$1 == "rows" {print $2}' "${dir_of[$1]}/.matrixfs/container"; else echo -; fi
}
anon() { if [ -n "${pid_of[$1]+x}" ]; then awk '/^RssAnon/ {printf "%.1f", $2 / 1024}' "/proc/${pid_of[$1]}/status"; else echo -; fi; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

steps=(tar_xf readdir du_s stat read rm_rf)
run_step() { # TARGET STEP
  local d="${dir_of[$1]}"
  case $2 in
    tar_xf) tar xf "$tarball" -C "$d"; sync ;;
    readdir) find "$d/$tree" >/dev/null ;;
    du_s) du -s "$d/$tree" >/dev/null ;;
    stat) find "$d/$tree" -type f -print0 | xargs -0 stat >/dev/null ;;
    read) find "$d/$tree" -type f -print0 | xargs -0 cat >/dev/null ;;
    rm_rf) rm -rf "$d/$tree"; sync ;;
  esac
}

printf 'round\ttarget\tstep\twall_s\tcpu_s\trows\n' >"$out/steps.tsv"
printf 'round\ttarget\tanon_mb\trows_after\n' >"$out/rounds.tsv"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start_utc=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
echo "fs_churn_scan.sh: $entries entries, $rounds rounds, targets ${targets[*]}, start $start_utc, load $load_start"
n=${#targets[@]}
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $((n - 1))); do
    t=${targets[$(((i + r - 1) % n))]}
    line="round $r $t:"
    for s in "${steps[@]}"; do
      case $s in tar_xf | rm_rf) ;; *) drop ;; esac
      rw=$(rows "$t"); c0=$(cpu "$t"); t0=$(now)
      run_step "$t" "$s"
      t1=$(now); c1=$(cpu "$t")
      w=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
      c=$(awk -v a="$c0" -v b="$c1" 'BEGIN {printf "%.2f", b - a}')
      printf '%d\t%s\t%s\t%s\t%s\t%s\n' "$r" "$t" "$s" "$w" "$c" "$rw" >>"$out/steps.tsv"
      line+=" $s $w"
    done
    printf '%d\t%s\t%s\t%s\n' "$r" "$t" "$(anon "$t")" "$(rows "$t")" >>"$out/rounds.tsv"
    echo "$line rows $(rows "$t") anon_mb $(anon "$t")"
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo "fs_churn_scan.sh: end $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load $load_end"

python3 - "$out" "${targets[@]}" <<'EOF'
import csv, statistics, sys
out, targets = sys.argv[1], sys.argv[2:]
steps = ["tar_xf", "readdir", "du_s", "stat", "read", "rm_rf"]
rows = list(csv.DictReader(open(out + "/steps.tsv"), delimiter="\t"))
def vals(t, s, k): return [float(x[k]) for x in rows if x["target"] == t and x["step"] == s]
def mr(v): return "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))
mx = [t for t in targets if t not in ("ext4", "tmpfs")]
print("\nwall s, median (min-max) over the rounds\n")
print("| step | " + " | ".join(targets) + " | " + " | ".join("%s vs %s" % (mx[-1], t) for t in targets if t != mx[-1]) + " |")
print("|---|" + "---:|" * (2 * len(targets) - 1))
for s in steps:
    med = {t: statistics.median(vals(t, s, "wall_s")) for t in targets}
    print("| %s | %s | %s |" % (s, " | ".join(mr(vals(t, s, "wall_s")) for t in targets),
          " | ".join("%.2fx" % (med[t] / med[mx[-1]]) for t in targets if t != mx[-1])))
if mx:
    print("\ndaemon CPU s, median (min-max); container rows before the step, median (min-max)\n")
    print("| step | " + " | ".join("%s cpu" % t for t in mx) + " | " + " | ".join("%s rows" % t for t in mx) + " |")
    print("|---|" + "---:|" * (2 * len(mx)))
    for s in steps:
        print("| %s | %s | %s |" % (s, " | ".join(mr(vals(t, s, "cpu_s")) for t in mx),
              " | ".join("%g (%g-%g)" % (statistics.median(vals(t, s, "rows")), min(vals(t, s, "rows")),
                                         max(vals(t, s, "rows"))) for t in mx)))
rr = list(csv.DictReader(open(out + "/rounds.tsv"), delimiter="\t"))
print("\nrm -rf s per round (round 10 / round 1 at the end); MatrixFS: rows after the round, RssAnon MB\n")
print("| target | " + " | ".join(str(r) for r in sorted({int(x["round"]) for x in rows})) + " | last / first |")
print("|---|" + "---:|" * (len({x["round"] for x in rows}) + 1))
for t in targets:
    v = vals(t, "rm_rf", "wall_s")
    print("| %s rm_rf | %s | %.2fx |" % (t, " | ".join("%.2f" % x for x in v), v[-1] / v[0]))
    v = vals(t, "tar_xf", "wall_s")
    print("| %s tar_xf | %s | %.2fx |" % (t, " | ".join("%.2f" % x for x in v), v[-1] / v[0]))
    if t in mx:
        print("| %s rows | %s | |" % (t, " | ".join(x["rows_after"] for x in rr if x["target"] == t)))
        print("| %s RssAnon | %s | |" % (t, " | ".join(x["anon_mb"] for x in rr if x["target"] == t)))
EOF

if command -v gnuplot >/dev/null; then
  # One data file per target: round tar_s rm_s rm_cpu_s rows_before_rm anon_mb.
  times="" cpus="" mems=""
  for t in "${targets[@]}"; do
    awk -F'\t' -v t="$t" 'FNR == 1 {f++; next}
      f == 1 && $2 == t && $3 == "tar_xf" {tar[$1] = $4}
      f == 1 && $2 == t && $3 == "rm_rf" {rm[$1] = $4; cpu[$1] = $5; rows[$1] = $6}
      f == 2 && $2 == t {anon[$1] = $3}
      END {for (r = 1; r in rm; r++) print r, tar[r], rm[r], cpu[r], rows[r], anon[r]}' \
      "$out/steps.tsv" "$out/rounds.tsv" >"$out/plot-$t.dat"
    times+="'$out/plot-$t.dat' using 1:3 with linespoints lw 2 title '$t rm -rf', "
    times+="'' using 1:2 with linespoints dt 2 title '$t tar xf', "
    if [ -n "${pid_of[$t]+x}" ]; then
      cpus+="'$out/plot-$t.dat' using 1:4 with linespoints lw 2 title '$t: daemon CPU of rm -rf (s)' axes x1y1, "
      cpus+="'' using 1:5 with linespoints dt 2 title '$t: container rows before rm -rf' axes x1y2, "
      mems+="'$out/plot-$t.dat' using 1:6 with linespoints lw 2 title '$t RssAnon', "
    fi
  done
  gnuplot <<EOF || echo "fs_churn_scan.sh: gnuplot failed; no churn.png" >&2
set terminal pngcairo size 1000,1100
set output "$out/churn.png"
set multiplot layout 3,1 title "tar xf, scans, rm -rf of $tree_src/$tree ($entries entries), one mount per target, $rounds rounds, $start_utc"
set grid
set key outside right
set xlabel "round"
set ylabel "wall seconds (log)"
set logscale y
plot ${times%, }
unset logscale y
set yrange [0:*]
set ylabel "daemon CPU seconds"
set y2label "container rows"
set y2tics
set y2range [0:*]
${cpus:+plot ${cpus%, }}
unset y2tics
unset y2label
set ylabel "daemon RssAnon MB"
${mems:+plot ${mems%, }}
unset multiplot
EOF
fi
echo "fs_churn_scan.sh: load $load_start at the start, $load_end at the end; $out/steps.tsv, $out/rounds.tsv"
