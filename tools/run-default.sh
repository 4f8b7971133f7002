#!/usr/bin/env bash
# The default MatrixFS instance of `make run`, `make stop` and `make clean`.
#
#   tools/run-default.sh start  [BUILD_DIR]   format var/instance if it is empty
#                                            (pool on /dev/shm), mount it at
#                                            var/mnt and say how to use it
#   tools/run-default.sh stop   [BUILD_DIR]   unmount var/mnt and wait for the
#                                            daemon to exit (the data stays)
#   tools/run-default.sh delete [BUILD_DIR]   stop, then delete var/instance and
#                                            the pool its superblock names
#
# BUILD_DIR defaults to build. A mount whose daemon is gone (kill -9) is
# unmounted by start before it mounts again, and by stop.
set -euo pipefail
cmd=${1:-start}
build=${2:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
var="$top/var"
data="$var/instance"
mnt="$var/mnt"
bin="$top/$build/bin"

# mounted: something is mounted at $mnt (alive or not).
mounted() { findmnt -n --mountpoint "$mnt" >/dev/null 2>&1; }
# alive: the mount at $mnt answers (a dead FUSE mount fails stat with ENOTCONN).
alive() { stat -f "$mnt" >/dev/null 2>&1 && [ "$(stat -f -c %t "$mnt")" = 65735546 ]; }

# The pid of the daemon serving this instance ("matrixfs DATADIR MNT ..."),
# found by its exact arguments; empty when there is none.
daemon_pid() {
  local p a
  for p in /proc/[0-9]*; do
    mapfile -d '' -n 3 a 2>/dev/null <"$p/cmdline" || continue
    if [ "${#a[@]}" -eq 3 ] && [ "${a[1]}" = "$data" ] && [ "${a[2]}" = "$mnt" ] && [ "${a[0]##*/}" = matrixfs ]; then
      echo "${p#/proc/}"
      return
    fi
  done
}

# The pool path recorded in the instance's superblock (bytes 120..375, see
# fuse/superblock.h); empty when there is no superblock or no pool.
pool_path() {
  local sb="$data/superblock"
  [ -f "$sb" ] || return 0
  [ "$(head -c 8 "$sb")" = MXFSSUP1 ] || return 0
  dd if="$sb" bs=1 skip=120 count=256 status=none | tr -d '\0'
}

rel() { echo "${1#"$top"/}"; }

# Where the mount is and how to watch, stop and delete it; records the
# daemon's pid in var/matrixfs.pid (for the README's kill -9).
info() {
  local s pid
  s=$(rel "$bin")/matrixfs-stat
  pid=$(daemon_pid)
  echo "$pid" >"$var/matrixfs.pid"
  cat <<EOF
MatrixFS is mounted at $mnt
  data:     $(rel "$data") (pool $(pool_path)); log $(rel "$data")/matrixfs.log
  daemon:   pid $pid (also in $(rel "$var")/matrixfs.pid)
  watch:    $s -i 1 $(rel "$mnt")      (Ctrl-C ends it)
            cat $(rel "$mnt")/.matrixfs/stats     (ls $(rel "$mnt")/.matrixfs/ for the rest)
  unmount:  make stop     (make run mounts it again, with its data)
  delete:   make clean    (unmounts, deletes the instance and its pool, and the build)
EOF
}

stop() {
  local pid
  pid=$(daemon_pid)
  if mounted; then
    if ! umount "$mnt" 2>/dev/null; then
      if alive; then
        echo "cannot unmount $mnt: it is busy. Processes using it:" >&2
        fuser -vm "$mnt" >&2 || true
        exit 1
      fi
      umount -l "$mnt"
    fi
    echo "unmounted $mnt"
  fi
  # The daemon writes its last changes back after the unmount, then exits.
  if [ -n "$pid" ]; then
    for _ in $(seq 1 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "the daemon (pid $pid) is still running 30 s after the unmount; see $(rel "$data")/matrixfs.log" >&2
      exit 1
    fi
  fi
  rm -f "$var/matrixfs.pid"
}

case "$cmd" in
  start)
    [ -x "$bin/matrixfs" ] || { echo "$bin/matrixfs is not built (make run builds it)" >&2; exit 1; }
    mkdir -p "$data" "$mnt"
    if mounted && alive; then
      echo "already mounted"
      info
      exit 0
    fi
    if mounted; then
      echo "the daemon of the mount at $mnt is gone; unmounting it first"
      umount "$mnt" 2>/dev/null || umount -l "$mnt"
    fi
    pool=$(pool_path)
    if [ -n "$pool" ] && [ ! -e "$pool" ]; then
      # /dev/shm is emptied at boot: the instance lost its log and L0.
      echo "the pool of $(rel "$data") ($pool) is gone (a reboot empties /dev/shm);" >&2
      echo "tools/run-default.sh delete deletes the instance (make clean also deletes the build);" \
        "then make run formats a new one" >&2
      exit 1
    fi
    fmt=()
    if [ -z "$(ls -A "$data")" ]; then
      fmt=(-o format,pool)
      echo "formatting a new instance in $(rel "$data") (pool on /dev/shm)"
    fi
    # The daemon detaches once the mount is up and logs to DATADIR/matrixfs.log.
    "$bin/matrixfs" "$data" "$mnt" "${fmt[@]}"
    info
    ;;
  stop)
    stop
    ;;
  delete)
    stop
    pool=$(pool_path)
    if [ -n "$pool" ] && [ -f "$pool" ]; then
      rm -f "$pool"
      echo "deleted the pool $pool"
    fi
    if [ -e "$data" ] || [ -e "$mnt" ]; then
      rm -rf "$data"
      rmdir "$mnt" 2>/dev/null || true
      echo "deleted the default instance $(rel "$data")"
    fi
    ;;
  *)
    echo "usage: $0 start|stop|delete [BUILD_DIR]" >&2
    exit 2
    ;;
esac
