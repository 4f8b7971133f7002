# lib-targets.sh — the filesystems the benchmark scripts compare, mounted side
# by side; sourced (not run) by fs_vs_ext4.sh and fs_workloads.sh.
#
#   lt_init WORK SHM BIN     WORK: a fresh directory on the disk under test
#                            (ext4 directory, passthrough_ll's source, the
#                            MatrixFS data directories, logs); SHM: a fresh
#                            directory on /dev/shm (tmpfs target, MatrixFS
#                            pools); BIN: the build's bin/ (matrixfs).
#   lt_add_ext4 NAME         a directory in WORK
#   lt_add_tmpfs NAME        a directory in SHM
#   lt_add_passthrough NAME  libfuse's passthrough_ll example, compiled here
#                            from libfuse3-dev's copy, over a directory in WORK
#   lt_add_matrixfs NAME [OPTS]  a freshly formatted MatrixFS, pool in SHM,
#                            data in WORK, with "-o format,pool=...,OPTS"
#   lt_cleanup               unmounts everything lt_add_* mounted, waits for
#                            the daemons to exit, removes WORK and SHM
#   lt_requests NAME         the MatrixFS mount's FUSE request counters (the
#                            "requests" line of .matrixfs/stats), "op count"
#                            per line
#   lt_requests_total NAME   their sum
#   lt_drop_caches           sync, then drop the page, dentry and inode caches
#
# After lt_add_*, lt_dir[NAME] is the directory the workloads use. The
# daemons run in the foreground as children of the script (logs in
# WORK/NAME.log), so lt_cleanup knows exactly which processes to wait for.
# passthrough_ll keeps one O_PATH fd per inode the kernel knows; it runs with
# its open-file limit at LT_NOFILE, the hard limit, so a workload must keep
# fewer inodes than that alive on it. Needs root.

declare -gA lt_dir=()
lt_mounts=()
lt_pids=()
LT_NOFILE=$(ulimit -Hn)

lt_init() {
  LT_WORK=$1
  LT_SHM=$2
  LT_BIN=$3
}

lt_add_ext4() {
  mkdir -p "$LT_WORK/$1"
  lt_dir[$1]="$LT_WORK/$1"
}

lt_add_tmpfs() {
  mkdir -p "$LT_SHM/$1"
  lt_dir[$1]="$LT_SHM/$1"
}

# lt_serve NAME MNT CMD...: starts a FUSE daemon CMD in the foreground, in the
# background, and waits until MNT is mounted (30 s at most).
lt_serve() {
  local name=$1 mnt=$2
  shift 2
  "$@" >"$LT_WORK/$name.log" 2>&1 &
  local pid=$!
  lt_pids+=("$pid")
  local i
  for ((i = 0; i < 300; i++)); do
    if mountpoint -q "$mnt"; then
      lt_mounts+=("$mnt")
      lt_dir[$name]="$mnt"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "lib-targets: $name did not mount on $mnt; its log:" >&2
  cat "$LT_WORK/$name.log" >&2
  return 1
}

lt_add_passthrough() {
  local src=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
  [ -f "$src" ] || { echo "lib-targets: $src not found (apt-get install libfuse3-dev)" >&2; return 1; }
  [ -x "$LT_WORK/passthrough_ll" ] ||
    cc -O2 -Wall "$src" -o "$LT_WORK/passthrough_ll" $(pkg-config --cflags --libs fuse3)
  mkdir -p "$LT_WORK/$1-src" "$LT_WORK/$1-mnt"
  # Its defaults (cache=auto, timeout 1 s) as shipped; writeback on to be fair.
  lt_serve "$1" "$LT_WORK/$1-mnt" bash -c 'ulimit -n "$1" && exec "${@:2}"' _ "$LT_NOFILE" \
    "$LT_WORK/passthrough_ll" -f -o source="$LT_WORK/$1-src",writeback "$LT_WORK/$1-mnt"
}

lt_add_matrixfs() {
  local name=$1 opts=${2:-}
  mkdir -p "$LT_WORK/$name-data" "$LT_WORK/$name-mnt"
  lt_serve "$name" "$LT_WORK/$name-mnt" "$LT_BIN/matrixfs" -f "$LT_WORK/$name-data" "$LT_WORK/$name-mnt" \
    -o format,pool="$LT_SHM/$name.pool${opts:+,$opts}"
}

lt_cleanup() {
  local m p i
  for m in "${lt_mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  # An unmounted daemon ends by itself; give it 30 s, then ask it to.
  for p in "${lt_pids[@]}"; do
    for ((i = 0; i < 300; i++)); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  lt_mounts=()
  lt_pids=()
  rm -rf "$LT_WORK" "$LT_SHM"
}

lt_requests() {
  grep '^requests' "${lt_dir[$1]}/.matrixfs/stats" | tr ' ' '\n' | awk -F= 'NF == 2 {print $1, $2}'
}

lt_requests_total() {
  lt_requests "$1" | awk '{s += $2} END {print s + 0}'
}

lt_drop_caches() {
  sync
  echo 3 >/proc/sys/vm/drop_caches
}
