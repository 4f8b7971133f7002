#!/usr/bin/env bash
# `make run`: formats a default MatrixFS instance under var/ (pool on
# /dev/shm) if there is none, mounts it at var/mnt and says where it is.
# While the filesystem program is not built, runs a short kvbench on a
# default MatrixKV instance under var/ instead.
set -euo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
var="$top/var"
mkdir -p "$var"
bin="$top/$build/bin"

if [ -x "$bin/matrixfs" ]; then
  data="$var/instance"
  mnt="$var/mnt"
  mkdir -p "$mnt"
  if mountpoint -q "$mnt"; then
    echo "MatrixFS is already mounted at $mnt"
    echo "unmount with: umount $mnt"
    exit 0
  fi
  fmt=()
  if [ ! -e "$data" ] || [ -z "$(ls -A "$data" 2>/dev/null)" ]; then
    mkdir -p "$data"
    fmt=(-o format,pool)
    echo "formatting a new instance in $data"
  fi
  "$bin/matrixfs" "$data" "$mnt" "${fmt[@]}"
  echo "MatrixFS is mounted at $mnt (data directory $data)"
  echo "engine state: ls $mnt/.matrixfs/"
  echo "unmount with: umount $mnt"
else
  db="$var/kvbench-db"
  rm -rf "$db"
  "$bin/kvbench" --benchmarks=fillrandom,readrandom,stats --num=100000 --value_size=1024 --db="$db" --histogram=1
  echo "MatrixKV instance left in $db"
fi
