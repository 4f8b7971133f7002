#!/usr/bin/env bash
# fs_workloads.sh — real tools on MatrixFS side by side with ext4 (a directory
# on the same disk), tmpfs and libfuse's passthrough_ll example (FUSE over the
# same ext4 directory), mounted as fs_vs_ext4.sh mounts them
# (tools/bench/lib-targets.sh). Workloads (rows), each timed as wall time:
#
#   tree    tar_xf        tar xf of a tarball of /usr/include (made once per
#                         run, outside the targets; about 9,000 entries)
#           du_s          du -s of the unpacked tree
#           find_stat     find -type f | xargs stat (output to /dev/null)
#           rm_rf         rm -rf of the tree
#   git     git_clone     git clone --no-hardlinks of a local repository (see
#                         --repo; made once per run, outside the targets)
#           git_status_cold  git status after dropping the kernel's caches
#           git_status_warm  git status right after it
#           git_checkout  git checkout of a commit from the middle of the
#                         history, then back to the tip
#   ccache  ccache_cold   ccache g++ with the project's CXXFLAGS, -j2, over a
#                         fixed subset of this project's .cc files (--cc-dirs),
#                         sources, objects and CCACHE_DIR on the target, cache
#                         empty
#           ccache_warm   the same after removing the objects and `ccache -z`;
#                         the hit rate is printed (100% expected)
#   tree2   tar_xf_2c, find_stat_2c, rm_rf_2c: the tree workloads with 2
#   tree4   (_4c) and 4 clients at once, each in its own subdirectory, every
#           client starting a step together: the tarball's entries are split
#           in N consecutive parts, one per client (as make -j splits a
#           build), so every row handles the same entries in total
#
# Targets: matrixfs (the default mount) and matrixfs-MODE for every other
# entry of --modes, ext4, tmpfs, passthrough_ll. The rounds are interleaved:
# round r runs each step on every target before the next step (the target
# order rotates by one each round); `sync` runs after every step, untimed.
# For MatrixFS targets the FUSE requests of each step are the difference of the
# "requests" line of .matrixfs/stats before and after it (less what reading
# that file costs, measured once per mount).
#
# Usage: tools/bench/fs_workloads.sh [--only LIST] [--modes LIST] [--reps N]
#          [--workloads LIST] [--dir BASE] [--build DIR] [--repo PATH]
#          [--cc-dirs "DIR..."] [--tsv FILE] [--quick]
#   --only       targets among matrixfs (every --modes entry), matrixfs-MODE,
#                ext4, tmpfs, passthrough_ll (default: all)
#   --modes      MatrixFS mounts as a comma list; each entry is "default" (no
#                option) or mount options joined by '+', e.g.
#                default,passthrough,passthrough+spin_us=0 (default:
#                default,passthrough)
#   --reps       rounds (default 3)
#   --workloads  groups among tree,git,ccache,tree2,tree4 (default: all)
#   --dir        where the ext4 directory, passthrough_ll's source, the MatrixFS
#                data directories and the inputs go (default: var/fsbench in
#                the repo, i.e. the same disk); tmpfs and the pools go to
#                /dev/shm
#   --build      build directory holding bin/matrixfs (default: build)
#   --repo       the repository to clone (default: made locally from this
#                repository's first-parent history with the tarball's tree
#                added as vendor/include in every commit; --quick: a bare copy
#                of this repository)
#   --cc-dirs    the project folders whose .cc files ccache compiles
#                (default "kvcore ssd")
#   --tsv        raw times, one line per round, step and target (default:
#                BASE/fs_workloads-DATE.tsv)
#   --quick      smoke-test sizes: /usr/include/linux, this repository as is,
#                two files of base/ for ccache, 1 round
#
# Prints one Markdown table (rows: steps; columns: the targets' median wall
# time in seconds with its range min-max, then ext4_time/target_time for every
# other target, so >1 means faster than ext4, and passthrough_ll_time /
# target_time for MatrixFS targets), then the FUSE requests per step of each
# MatrixFS target (the total, then the five largest opcodes), and the load
# average at the start and at the end. Exits 1 if a step failed on a target
# (its output is shown, its time is "fail"). Needs root (mounts, drop_caches).
set -Eeuo pipefail
trap 'echo "fs_workloads.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR

top=$(cd "$(dirname "$0")/../.." && pwd)
base="$top/var/fsbench"
build=build
only="matrixfs,ext4,tmpfs,passthrough_ll"
modes="default,passthrough"
reps=3
workloads="tree,git,ccache,tree2,tree4"
repo=""
cc_dirs="kvcore ssd"
tsv=""
quick=0
reps_given=0
cc_given=0

while [ $# -gt 0 ]; do
  case "$1" in
    --only) only=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --reps) reps=$2; reps_given=1; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --dir) base=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --repo) repo=$2; shift 2 ;;
    --cc-dirs) cc_dirs=$2; cc_given=1; shift 2 ;;
    --tsv) tsv=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "fs_workloads.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
if [ $quick = 1 ]; then
  [ $reps_given = 1 ] || reps=1
  [ $cc_given = 1 ] || cc_dirs="base"
fi
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "fs_workloads.sh: --reps wants a positive number, not '$reps'" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || { echo "fs_workloads.sh: needs root (mounts, drop_caches)" >&2; exit 1; }
case $build in /*) bin="$build/bin" ;; *) bin="$top/$build/bin" ;; esac
for t in tar git python3 cc find xargs du; do
  command -v $t >/dev/null || { echo "fs_workloads.sh: '$t' not found" >&2; exit 1; }
done

has() { [[ ",$1," == *",$2,"* ]]; }

for t in ${only//,/ }; do
  case $t in
    matrixfs | matrixfs-* | ext4 | tmpfs | passthrough_ll) ;;
    *) echo "fs_workloads.sh: unknown target '$t' (matrixfs, matrixfs-MODE, ext4, tmpfs, passthrough_ll)" >&2; exit 2 ;;
  esac
done
# The targets, in table order.
targets=()
declare -A mode_opts=()
for m in ${modes//,/ }; do
  if [ "$m" = default ]; then name=matrixfs; opts=""; else name="matrixfs-$m"; opts=${m//+/,}; fi
  if has "$only" matrixfs || has "$only" "$name"; then
    targets+=("$name")
    mode_opts[$name]=$opts
  fi
done
for t in ext4 tmpfs passthrough_ll; do has "$only" $t && targets+=("$t"); done
[ ${#targets[@]} -gt 0 ] || { echo "fs_workloads.sh: no target left (--only '$only', --modes '$modes')" >&2; exit 2; }
ismx() { [ -n "${mode_opts[$1]+x}" ]; }
if [[ " ${targets[*]} " == *" matrixfs"* ]] && [ ! -x "$bin/matrixfs" ]; then
  echo "fs_workloads.sh: $bin/matrixfs is missing; run 'make' first (or give --build)" >&2
  exit 1
fi

groups=()
for g in ${workloads//,/ }; do
  case $g in
    tree | git | tree2 | tree4) groups+=("$g") ;;
    ccache)
      if command -v ccache >/dev/null; then
        groups+=(ccache)
      else
        echo "fs_workloads.sh: ccache not found (apt-get install ccache): skipping the ccache workloads" >&2
      fi
      ;;
    *) echo "fs_workloads.sh: unknown workload group '$g' (tree,git,ccache,tree2,tree4)" >&2; exit 2 ;;
  esac
done
[ ${#groups[@]} -gt 0 ] || { echo "fs_workloads.sh: no workload left to run" >&2; exit 2; }
groups_csv=$(IFS=,; echo "${groups[*]}")

mkdir -p "$base"
[ -n "$tsv" ] || tsv="$base/fs_workloads-$(date -u +%Y%m%d-%H%M%S).tsv"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start_utc=$(date -u '+%Y-%m-%d %H:%M UTC')

source "$top/tools/bench/lib-targets.sh"
lt_init "$(mktemp -d "$base/wl.XXXXXX")" "$(mktemp -d /dev/shm/mxfs-workloads.XXXXXX)" "$bin"
trap lt_cleanup EXIT
trap 'exit 130' INT TERM HUP
inputs="$LT_WORK/inputs"
mkdir -p "$inputs"

# --- Inputs, made once, outside the targets.
if [ $quick = 1 ]; then tree_src=(-C /usr/include linux); else tree_src=(-C /usr include); fi
tarball="$inputs/tree.tar"
tar cf "$tarball" "${tree_src[@]}"
tree_entries=$(tar tf "$tarball" | wc -l)
tree_mib=$(($(stat -c %s "$tarball") / 1048576))
for nc in 2 4; do
  has "$groups_csv" "tree$nc" || continue
  tar tf "$tarball" --quoting-style=literal >"$inputs/members"
  split -d -l $(((tree_entries + nc - 1) / nc)) "$inputs/members" "$inputs/members-$nc-"
  i=1
  for f in "$inputs/members-$nc-"*; do
    tar cf "$inputs/tree-$nc-c$i.tar" --no-recursion --verbatim-files-from -C "${tree_src[1]}" -T "$f"
    i=$((i + 1))
  done
done
cat "$inputs"/*.tar >/dev/null # in the page cache before the first target reads them

if has "$groups_csv" git; then
  src_repo="$inputs/repo.git"
  if [ -n "$repo" ]; then
    git clone -q --bare --no-hardlinks "$repo" "$src_repo"
    repo_desc="$repo"
  elif [ $quick = 1 ]; then
    git clone -q --bare --no-hardlinks "$top" "$src_repo"
    repo_desc="this repository"
  else
    # This repository's first-parent history, each commit's tree with the
    # tarball's tree added as vendor/include: a real history over a tree of a
    # few thousand files, as large projects carry.
    git init -q --bare "$src_repo"
    git -C "$src_repo" fetch -q "$top" HEAD:refs/heads/orig
    mkdir -p "$inputs/vendor"
    tar xf "$tarball" -C "$inputs/vendor"
    vendor=$(cd "$inputs/vendor" && GIT_DIR="$src_repo" GIT_INDEX_FILE="$inputs/vendor.index" \
      GIT_WORK_TREE=. git add -A . && GIT_DIR="$src_repo" GIT_INDEX_FILE="$inputs/vendor.index" git write-tree)
    rm -rf "$inputs/vendor" "$inputs/vendor.index"
    parent=""
    for c in $(git -C "$src_repo" rev-list --reverse --first-parent orig); do
      t=$({ git -C "$src_repo" ls-tree "$c^{tree}"; printf '040000 tree %s\tvendor\n' "$vendor"; } | git -C "$src_repo" mktree)
      IFS=$'\t' read -r an ae ad cn ce cdate < <(git -C "$src_repo" log -1 --format=$'%an\t%ae\t%ad\t%cn\t%ce\t%cd' --date=raw "$c")
      parent=$(git -C "$src_repo" log -1 --format=%B "$c" |
        GIT_AUTHOR_NAME=$an GIT_AUTHOR_EMAIL=$ae GIT_AUTHOR_DATE=$ad GIT_COMMITTER_NAME=$cn \
          GIT_COMMITTER_EMAIL=$ce GIT_COMMITTER_DATE=$cdate git -C "$src_repo" commit-tree "$t" ${parent:+-p "$parent"})
    done
    git -C "$src_repo" update-ref refs/heads/main "$parent"
    git -C "$src_repo" symbolic-ref HEAD refs/heads/main
    git -C "$src_repo" update-ref -d refs/heads/orig
    git -C "$src_repo" repack -adq
    git -C "$src_repo" prune
    repo_desc="this repository's history with vendor/include"
  fi
  repo_commits=$(git -C "$src_repo" rev-list --count --first-parent HEAD)
  repo_files=$(git -C "$src_repo" ls-tree -r HEAD | wc -l)
  repo_mib=$(($(du -sk "$src_repo" | cut -f1) / 1024))
  mid=$(git -C "$src_repo" rev-parse "HEAD~$((repo_commits / 2))")
  mid_changes=$(git -C "$src_repo" diff --shortstat "$mid" HEAD | sed 's/^ *//')
fi

if has "$groups_csv" ccache; then
  cxxflags=$(make -s --no-print-directory -C "$top" -f Makefile -f - print-cxxflags <<<'print-cxxflags: ; @echo $(CXXFLAGS)')
  git -C "$top" archive --format=tar HEAD >"$inputs/src.tar"
  cc_files=$(tar tf "$inputs/src.tar" | grep -E "^($(tr ' ' '|' <<<"$cc_dirs"))/[^/]*\.cc$" || true)
  [ -n "$cc_files" ] || { echo "fs_workloads.sh: no .cc files in '$cc_dirs'" >&2; exit 1; }
  [ $quick = 1 ] && [ $cc_given = 0 ] && cc_files=$(head -2 <<<"$cc_files")
  cc_count=$(wc -l <<<"$cc_files")
fi

# --- Mounts.
# passthrough_ll keeps an fd per inode the kernel knows (lib-targets.sh).
if has "${targets[*]// /,}" passthrough_ll; then
  for need in "$tree_entries" "${repo_files:-0}"; do
    [ "$need" -lt "$LT_NOFILE" ] || { echo "fs_workloads.sh: passthrough_ll would need ~$need open files," \
      "the hard limit is $LT_NOFILE: leave it out (--only) or use a smaller --repo" >&2; exit 1; }
  done
fi
for t in "${targets[@]}"; do
  case $t in
    ext4) lt_add_ext4 ext4 ;;
    tmpfs) lt_add_tmpfs tmpfs ;;
    passthrough_ll) lt_add_passthrough passthrough_ll ;;
    *) lt_add_matrixfs "$t" "${mode_opts[$t]}" ;;
  esac
done

# What one read of .matrixfs/stats costs in requests, per opcode (subtracted
# from every step's difference).
declare -A stats_cost=()
for t in "${targets[@]}"; do
  ismx "$t" || continue
  lt_requests "$t" >/dev/null
  a=$(lt_requests "$t")
  b=$(lt_requests "$t")
  stats_cost[$t]=$(LC_ALL=C join <(LC_ALL=C sort <<<"$a") <(LC_ALL=C sort <<<"$b") | awk '$3 > $2 {printf "%s=%d ", $1, $3 - $2}')
done

# requests_diff TARGET BEFORE AFTER -> "total op=n op=n ..." (largest first)
requests_diff() {
  LC_ALL=C join <(LC_ALL=C sort <<<"$2") <(LC_ALL=C sort <<<"$3") |
    awk -v cost="${stats_cost[$1]}" '
      BEGIN { n = split(cost, c, " "); for (i = 1; i <= n; i++) { split(c[i], kv, "="); sub_[kv[1]] = kv[2] } }
      { d = $3 - $2 - sub_[$1]; if (d > 0) { tot += d; print d, $1 } }
      END { print tot + 0, "TOTAL" }' |
    sort -k1,1nr | awk '$2 == "TOTAL" {t = $1; next} {s = s " " $2 "=" $1} END {print t s}'
}

# --- The steps. Each prepares (untimed), then times one command with
# `measure`; STEP_NOTE is an extra column of the raw file (the ccache hit rate).
tree_dir() { echo "${lt_dir[$1]}/tree"; }

# unpack DIR: the whole tree into DIR; DIR/cI: client I's part of the tree
# of the N-client rows (DIR ends in N).
unpack() {
  local part="$tarball"
  [[ $1 =~ ([0-9]+)/c([0-9]+)$ ]] && part="$inputs/tree-${BASH_REMATCH[1]}-c${BASH_REMATCH[2]}.tar"
  mkdir -p "$1" && tar xf "$part" -C "$1"
}
find_stat() { find "$1" -type f -print0 | xargs -0 -r stat >/dev/null; }
rm_tree() { rm -rf "$1"; }
# clients N FUNC DIR: FUNC DIR/c1 ... FUNC DIR/cN at once; fails if any does.
clients() {
  local n=$1 f=$2 d=$3 i pids=() rc=0
  for ((i = 1; i <= n; i++)); do
    $f "$d/c$i" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  return $rc
}

cc_build() {  # DIR: compile the fixed subset, 2 at a time, objects in DIR/obj
  (cd "$1/src" && tr ' ' '\n' <<<"$cc_files" | CCACHE_DIR="$1/cache" xargs -P2 -I{} \
    bash -c 'o="../obj/${1//\//_}.o"; exec ccache g++ $2 -c "$1" -o "$o"' _ {} "$cxxflags")
}
cc_hit_rate() {
  CCACHE_DIR="$1/cache" ccache --print-stats |
    awk '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {h += $2} $1 == "cache_miss" {m += $2}
         END {printf "hit %.0f%% (%d/%d)", h + m ? 100 * h / (h + m) : 0, h, h + m}'
}

step() {  # STEP TARGET: prepares and runs one step; sets STEP_SECS, STEP_NOTE
  local s=$1 t=$2 d=${lt_dir[$2]}
  STEP_NOTE=""
  case $s in
    tar_xf) measure "$t" unpack "$d/tree" ;;
    du_s) measure "$t" du -s "$d/tree" ;;
    find_stat) measure "$t" find_stat "$d/tree" ;;
    rm_rf) measure "$t" rm -rf "$d/tree" ;;
    tar_xf_*c) measure "$t" clients "${s//[^0-9]/}" unpack "$d/tree${s//[^0-9]/}" ;;
    find_stat_*c) measure "$t" clients "${s//[^0-9]/}" find_stat "$d/tree${s//[^0-9]/}" ;;
    rm_rf_*c)
      measure "$t" clients "${s//[^0-9]/}" rm_tree "$d/tree${s//[^0-9]/}"
      rm -rf "$d/tree${s//[^0-9]/}"
      ;;
    git_clone) measure "$t" git clone -q --no-hardlinks "$src_repo" "$d/clone" ;;
    git_status_cold)
      lt_drop_caches
      measure "$t" git -C "$d/clone" status
      ;;
    git_status_warm) measure "$t" git -C "$d/clone" status ;;
    git_checkout)
      measure "$t" bash -c 'git -C "$1" checkout -q "$2" && git -C "$1" checkout -q -' _ "$d/clone" "$mid"
      rm -rf "$d/clone"
      ;;
    ccache_cold)
      rm -rf "$d/cc"
      mkdir -p "$d/cc/src" "$d/cc/obj" "$d/cc/cache"
      tar xf "$inputs/src.tar" -C "$d/cc/src"
      sync
      measure "$t" cc_build "$d/cc"
      STEP_NOTE=$(cc_hit_rate "$d/cc")
      ;;
    ccache_warm)
      rm -rf "$d/cc/obj"
      mkdir -p "$d/cc/obj"
      CCACHE_DIR="$d/cc/cache" ccache -z >/dev/null
      sync
      measure "$t" cc_build "$d/cc"
      STEP_NOTE=$(cc_hit_rate "$d/cc")
      rm -rf "$d/cc"
      ;;
  esac
  sync
}

# measure TARGET CMD...: times CMD (wall clock); STEP_SECS is "fail" if CMD
# failed (its output is shown); STEP_REQ the FUSE requests it cost.
measure() {
  local t=$1 before="" after t0 t1
  shift
  ismx "$t" && before=$(lt_requests "$t")
  t0=$EPOCHREALTIME
  if "$@" >"$LT_WORK/step.out" 2>&1; then
    t1=$EPOCHREALTIME
    STEP_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
  else
    STEP_SECS=fail
    echo "fs_workloads.sh: on $t, '$*' failed:" >&2
    tail -20 "$LT_WORK/step.out" >&2
  fi
  STEP_REQ=""
  if ismx "$t"; then
    after=$(lt_requests "$t")
    STEP_REQ=$(requests_diff "$t" "$before" "$after")
  fi
}

declare -A steps_of=(
  [tree]="tar_xf du_s find_stat rm_rf"
  [git]="git_clone git_status_cold git_status_warm git_checkout"
  [ccache]="ccache_cold ccache_warm"
  [tree2]="tar_xf_2c find_stat_2c rm_rf_2c"
  [tree4]="tar_xf_4c find_stat_4c rm_rf_4c"
)
# git_status_warm must follow git_status_cold on the same target before
# another target drops the caches: the two run as one step pair.
printf 'round\tstep\ttarget\tseconds\trequests\tnote\n' >"$tsv"
n=${#targets[@]}
for ((r = 1; r <= reps; r++)); do
  order=()
  for ((i = 0; i < n; i++)); do order+=("${targets[$(((i + r - 1) % n))]}"); done
  for g in "${groups[@]}"; do
    set -- ${steps_of[$g]}
    while [ $# -gt 0 ]; do
      pair=("$1")
      [ "$1" = git_status_cold ] && [ "${2:-}" = git_status_warm ] && pair+=("$2") && shift
      shift
      for t in "${order[@]}"; do
        for s in "${pair[@]}"; do
          step "$s" "$t"
          echo "round $r/$reps $s $t: $STEP_SECS s${STEP_REQ:+, requests $STEP_REQ}${STEP_NOTE:+, $STEP_NOTE}" >&2
          printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$s" "$t" "$STEP_SECS" "$STEP_REQ" "$STEP_NOTE" >>"$tsv"
        done
      done
    done
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# --- Report.
echo
echo "fs_workloads.sh at $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?'), $start_utc;" \
  "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, kernel $(uname -r); $reps round(s), interleaved"
echo "load average (1/5/15 min): start $load_start, end $load_end"
echo "tree: ${tree_src[*]:2} from ${tree_src[1]}, $tree_entries entries, $tree_mib MiB tarball"
[ -n "${src_repo:-}" ] && echo "repository: $repo_desc, $repo_commits commits, $repo_files files, $repo_mib MiB;" \
  "checkout to HEAD~$((repo_commits / 2)) and back ($mid_changes)"
[ -n "${cc_count:-}" ] && echo "ccache: $cc_count .cc files of $cc_dirs, g++ $cxxflags, 2 at a time"
for t in "${targets[@]}"; do ismx "$t" && echo "$t: matrixfs -o format,pool${mode_opts[$t]:+,${mode_opts[$t]}}"; done
echo "raw times: $tsv"
echo
python3 - "$tsv" "${targets[@]}" <<'EOF'
import csv, statistics, sys
path, targets = sys.argv[1], sys.argv[2:]
rows = list(csv.DictReader(open(path), delimiter='\t'))
steps = list(dict.fromkeys(r['step'] for r in rows))
secs, reqs, notes = {}, {}, {}
for r in rows:
    k = (r['step'], r['target'])
    if r['seconds'] != 'fail':
        secs.setdefault(k, []).append(float(r['seconds']))
    else:
        secs.setdefault(k, [])
    if r['requests']:
        reqs.setdefault(k, []).append(r['requests'])
    if r['note']:
        notes[k] = r['note']
med = {k: statistics.median(v) for k, v in secs.items() if v}
mx = [t for t in targets if t.startswith('matrixfs')]
ratios = []
if 'ext4' in targets:
    ratios += [(t, 'ext4') for t in targets if t != 'ext4']
if 'passthrough_ll' in targets:
    ratios += [(t, 'passthrough_ll') for t in mx]
head = ['step'] + targets + ['%s vs %s' % (t, b) for t, b in ratios]
print('| ' + ' | '.join(head) + ' |')
print('|---|' + '---:|' * (len(head) - 1))
def cell(k):
    v = secs.get(k)
    if v is None:
        return ''
    if not v:
        return 'fail'
    fails = sum(1 for r in rows if (r['step'], r['target']) == k and r['seconds'] == 'fail')
    s = '%.2f' % statistics.median(v)
    if len(v) > 1:
        s += ' (%.2f-%.2f)' % (min(v), max(v))
    return s + (' %d fail' % fails if fails else '')
for s in steps:
    line = [s] + [cell((s, t)) for t in targets]
    for t, b in ratios:
        a, c = med.get((s, b)), med.get((s, t))
        line.append('%.2fx' % (a / c) if a and c else 'n/a')
    print('| ' + ' | '.join(line) + ' |')
if mx:
    print()
    print('FUSE requests per step (median total over the rounds; the opcodes of that round, largest first):')
    print()
    print('| step | target | requests | largest opcodes |')
    print('|---|---|---:|---|')
    for s in steps:
        for t in mx:
            v = reqs.get((s, t))
            if not v:
                continue
            v.sort(key=lambda x: int(x.split()[0]))
            m = v[len(v) // 2].split()
            print('| %s | %s | %s | %s |' % (s, t, m[0], ' '.join(x.replace('=', ' ') for x in m[1:6])))
hits = [(k, n) for k, n in notes.items()]
if hits:
    print()
    print('ccache (last round): ' + '; '.join('%s %s %s' % (k[0], k[1], n) for k, n in sorted(hits)))
EOF
failed=$(awk -F'\t' '$4 == "fail"' "$tsv" | wc -l)
[ "$failed" -eq 0 ] || { echo "fs_workloads.sh: $failed step(s) failed (see above and $tsv)" >&2; exit 1; }
