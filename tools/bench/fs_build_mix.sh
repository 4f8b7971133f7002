#!/usr/bin/env bash
# fs_build_mix.sh — a build-like mix of reads and writes on a fresh MatrixFS
# mount, for an A/B of two or more builds of the daemon, quiet or beside
# CPU-bound processes (the users MatrixFS is for: compilers on every core,
# the mount holding sources and outputs). Steps of one run, each timed as
# wall time including a `sync` after it (the writeback cache sends the
# writes then):
#
#   tar_xf      --copies tar xf of a tarball of /usr/include at once, each
#               into its own directory (lookups and creates, about 120 MiB
#               each into the database: files up to the inline limit)
#   build       --units "compile units", --jobs at a time: a unit reads
#               --includes headers of the first copy (cat) and writes an
#               object file (8-56 KiB) into out/
#   cp_r        cp -r of the first copy (reads and writes)
#   find_stat   find -type f | xargs stat over the mount (reads only)
#
# Builds: every --bin entry is a bin/ directory holding matrixfs. A round
# runs every build once (a fresh format each, the order rotating by one per
# round). --contend N starts N busy loops (`while :; do :; done`) before
# each run's first step and stops them after its last. A sampler reads
# .matrixfs/stats every 0.1 s: "active" is the share of samples with
# readers.active 1 (the reader step-back, kvcore/background.h), "low" the
# share with background.share low; the stall columns are the
# stall.micros.* counters' growth over the step.
#
# Usage: tools/bench/fs_build_mix.sh --bin DIR[,DIR...] [--reps N] [--contend N]
#          [--copies N] [--units N] [--includes N] [--jobs N]
#          [--pool_size SIZE] [--dir BASE] [--tsv FILE] [--quick]
#   --bin        bin/ directories, comma-separated (default: build/bin)
#   --reps       rounds (default 3)
#   --contend    busy loops beside every run (default 0)
#   --copies     tar xf at once (default 3)
#   --units      compile units (default 2000), --includes headers each (20),
#                --jobs units at a time (2)
#   --pool_size  the mount's pool (default 1G)
#   --dir        where the data directories go (default var/fsbench in the
#                repository: the disk under test); pools go to /dev/shm
#   --tsv        raw lines, one per round, build and step (default
#                BASE/fs_build_mix-DATE.tsv)
#   --quick      smoke sizes: /usr/include/linux, 1 copy, 50 units, 1 round
#
# Prints one Markdown table per measure (wall s; memtable-full and
# container-full stall s; active and low shares) with a column per build:
# median (min-max) over the rounds, and the load average at the start and
# the end. Needs root (mounts).
set -Eeuo pipefail
trap 'echo "fs_build_mix.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR

top=$(cd "$(dirname "$0")/../.." && pwd)
base="$top/var/fsbench"
bins="$top/build/bin"
reps=3
contend=0
copies=3
units=2000
includes=20
jobs=2
pool_size=1G
tsv=""
quick=0
reps_given=0

num() { [[ $2 =~ ^[0-9]+$ ]] || { echo "fs_build_mix.sh: $1 wants a number, not '$2'" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bins=$2; shift 2 ;;
    --reps) num "$1" "$2"; reps=$2; reps_given=1; shift 2 ;;
    --contend) num "$1" "$2"; contend=$2; shift 2 ;;
    --copies) num "$1" "$2"; copies=$2; shift 2 ;;
    --units) num "$1" "$2"; units=$2; shift 2 ;;
    --includes) num "$1" "$2"; includes=$2; shift 2 ;;
    --jobs) num "$1" "$2"; jobs=$2; shift 2 ;;
    --pool_size) pool_size=$2; shift 2 ;;
    --dir) base=$2; shift 2 ;;
    --tsv) tsv=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "fs_build_mix.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
src=/usr/include
if [ $quick = 1 ]; then
  src=/usr/include/linux
  copies=1
  units=50
  [ $reps_given = 1 ] || reps=1
fi
for v in reps copies jobs; do
  [ "${!v}" -gt 0 ] || { echo "fs_build_mix.sh: --$v wants a positive number" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "fs_build_mix.sh: needs root (mounts)" >&2; exit 1; }
[ -d "$src" ] || { echo "fs_build_mix.sh: $src not found (the tarball's source)" >&2; exit 1; }
IFS=, read -r -a binlist <<<"$bins"
for b in "${binlist[@]}"; do
  case $b in /*) ;; *) echo "fs_build_mix.sh: --bin wants absolute paths, not '$b'" >&2; exit 2 ;; esac
  [ -x "$b/matrixfs" ] || { echo "fs_build_mix.sh: $b/matrixfs is missing (run 'make', or fix --bin)" >&2; exit 1; }
done

stamp=$(date +%Y%m%d-%H%M%S)
work="$base/build_mix-$stamp-$$"
shm="/dev/shm/mxfs-build-mix-$stamp-$$"
[ -n "$tsv" ] || tsv="$base/fs_build_mix-$stamp.tsv"
mkdir -p "$work" "$shm" "$(dirname "$tsv")"
# shellcheck source=tools/bench/lib-targets.sh
source "$top/tools/bench/lib-targets.sh"

busy=()
sampler=""
stop_helpers() {
  local p
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  busy=()
  if [ -n "$sampler" ]; then
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    sampler=""
  fi
}
cleanup() {
  stop_helpers
  lt_cleanup 2>/dev/null || true
  rm -rf "$work" "$shm"
}
trap cleanup EXIT

# The inputs, outside every target: the tarball, the unit list, the objects.
in="$work/inputs"
mkdir -p "$in"
tar cf "$in/src.tar" -C "$(dirname "$src")" "$(basename "$src")"
top_dir=$(basename "$src")
# Regular files only (cat of a directory or a dangling link fails).
(cd "$(dirname "$src")" && find "$top_dir" -type f) >"$in/files"
nfiles=$(wc -l <"$in/files")
[ "$nfiles" -ge "$includes" ] || { echo "fs_build_mix.sh: $src holds fewer than $includes files" >&2; exit 1; }
for k in 0 1 2 3 4 5 6; do head -c $(((k + 1) * 8192)) /dev/urandom >"$in/obj$k.o"; done
# A unit: its number and the first of its --includes consecutive headers.
awk -v n="$units" -v f="$nfiles" -v inc="$includes" \
  'BEGIN { srand(7); for (i = 0; i < n; i++) print i, int(rand() * (f - inc)) + 1 }' >"$in/units"

# run_units ROOT < lines "unit first": one batch of units (run by xargs).
cat >"$in/unit.sh" <<'EOF'
#!/usr/bin/env bash
# unit.sh ROOT FILES OBJDIR INCLUDES UNIT FIRST [UNIT FIRST ...]
root=$1 files=$2 objs=$3 inc=$4
shift 4
mapfile -t all <"$files"
while [ $# -ge 2 ]; do
  u=$1 first=$2
  shift 2
  hs=()
  for ((i = first - 1; i < first - 1 + inc; i++)); do hs+=("$root/c1/${all[i]}"); done
  cat "${hs[@]}" >/dev/null
  cp "$objs/obj$((u % 7)).o" "$root/out/u$u.o"
done
EOF
chmod +x "$in/unit.sh"

steps=(tar_xf build cp_r find_stat)
stat_of() { grep "^$2 " "$1/.matrixfs/stats" | awk '{print $2}'; }

# one_run ROUND BIN: a fresh mount of BIN's daemon, the steps, one TSV line each.
one_run() {
  local round=$1 b=$2 name=mx
  lt_init "$work/run" "$shm/run" "$b"
  mkdir -p "$work/run" "$shm/run"
  lt_add_matrixfs "$name" "pool_size=$pool_size"
  local mnt=${lt_dir[$name]}
  local samples="$work/samples"
  : >"$samples"
  (
    while :; do
      a=$(grep -E '^(readers.active|background.share) ' "$mnt/.matrixfs/stats" 2>/dev/null | awk '{printf "%s ", $2}')
      echo "$(date +%s.%N) $a" >>"$samples"
      sleep 0.1
    done
  ) &
  sampler=$!
  local i
  for ((i = 0; i < contend; i++)); do
    (while :; do :; done) &
    busy+=($!)
  done
  local step t0 t1 m0 m1 c0 c1 ch0 ch1
  for step in "${steps[@]}"; do
    m0=$(stat_of "$mnt" stall.micros.memtable-full)
    c0=$(stat_of "$mnt" stall.micros.container-full)
    ch0=$(stat_of "$mnt" background.share.changes)
    t0=$(date +%s.%N)
    case $step in
      tar_xf)
        local pids=() k
        for ((k = 1; k <= copies; k++)); do
          mkdir "$mnt/c$k"
          tar xf "$in/src.tar" -C "$mnt/c$k" &
          pids+=($!)
        done
        for k in "${pids[@]}"; do wait "$k"; done
        ;;
      build)
        mkdir "$mnt/out"
        xargs -a "$in/units" -n 100 -P "$jobs" "$in/unit.sh" "$mnt" "$in/files" "$in" "$includes"
        ;;
      cp_r) cp -r "$mnt/c1/$top_dir" "$mnt/c1/copy" ;;
      find_stat) find "$mnt" -path "$mnt/.matrixfs" -prune -o -type f -print0 | xargs -0 stat >/dev/null ;;
    esac
    sync
    t1=$(date +%s.%N)
    m1=$(stat_of "$mnt" stall.micros.memtable-full)
    c1=$(stat_of "$mnt" stall.micros.container-full)
    ch1=$(stat_of "$mnt" background.share.changes)
    # The sampler's lines inside the step: active and low shares.
    local shares
    shares=$(awk -v a="$t0" -v z="$t1" '$1 >= a && $1 <= z { n++; if ($2 == 1) act++; if ($3 == "low") low++ }
      END { if (n == 0) print "0 0"; else printf "%.2f %.2f\n", act / n, low / n }' "$samples")
    printf '%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%s\t%s\n' "$round" "$b" "$step" "$(echo "$t1 - $t0" | bc)" \
      "$(echo "($m1 - $m0) / 1000000" | bc -l)" "$(echo "($c1 - $c0) / 1000000" | bc -l)" \
      "${shares// /	}" "$((ch1 - ch0))" >>"$tsv"
  done
  stop_helpers
  lt_cleanup
}

echo "fs_build_mix.sh: $(uptime)"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
printf 'round\tbin\tstep\twall_s\tmemtable_full_s\tcontainer_full_s\tactive\tlow\tshare_changes\n' >"$tsv"
nb=${#binlist[@]}
for ((r = 1; r <= reps; r++)); do
  for ((j = 0; j < nb; j++)); do
    b=${binlist[$(((j + r - 1) % nb))]}
    one_run "$r" "$b"
    echo "fs_build_mix.sh: round $r, $b done ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# The tables: median (min-max) per step and build.
table() {
  local col=$1 title=$2 fmt=$3
  echo
  echo "$title"
  echo
  local hdr="| step |" sep="|---|" b
  for b in "${binlist[@]}"; do hdr+=" $b |"; sep+="---:|"; done
  echo "$hdr"
  echo "$sep"
  local step
  for step in "${steps[@]}"; do
    local line="| $step |"
    for b in "${binlist[@]}"; do
      line+=" $(awk -F'\t' -v s="$step" -v b="$b" -v c="$col" 'NR > 1 && $2 == b && $3 == s { print $c }' "$tsv" |
        sort -g | awk -v f="$fmt" '{ v[NR] = $1 } END {
          if (NR == 0) { print "-"; exit }
          m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf f " (" f "-" f ")", m, v[1], v[NR] }') |"
    done
    echo "$line"
  done
}
echo "Runs: $reps round(s), --contend $contend, --copies $copies, --units $units x $includes headers, --jobs $jobs"
table 4 "Wall time, s" "%.2f"
table 5 "memtable-full stall, s" "%.2f"
table 6 "container-full stall, s" "%.2f"
table 7 "Share of samples with readers.active 1" "%.2f"
table 9 "background.share changes" "%d"
echo
echo "Load average: start $load_start, end $load_end. Raw: $tsv"
