#!/bin/bash
# Sequential buffered write of 1 GiB (dd bs=1M conv=fsync) to a MatrixFS
# mount on the root filesystem, with the bdi as TuneBdi now sets it
# (strict_limit=1, max_bytes=256 MiB) and as it set it before (strict_limit=0,
# max_ratio=100), alternating, 3 runs each, in one invocation (as root).
#
#   flock /tmp/bench.lock tools/bench/dirty_limit.sh [BUILD/bin]
set -e
B=${1:-build/bin}
D=$(mktemp -d /tmp/mxfs-bench-XXXXXX)
trap 'umount $D/mnt 2>/dev/null || true; sleep 1; rm -rf $D' EXIT
$B/mkfs.matrixfs $D/data >/dev/null
mkdir $D/mnt
$B/matrixfs $D/data $D/mnt
dev=$(mountpoint -d $D/mnt)
grep -E "^bdi|^space" $D/mnt/.matrixfs/stats
uptime
for rep in 1 2 3; do
  for cfg in new old; do
    if [ $cfg = old ]; then
      echo 0 > /sys/class/bdi/$dev/strict_limit; echo 100 > /sys/class/bdi/$dev/max_ratio
    else
      echo 1 > /sys/class/bdi/$dev/strict_limit; echo $((256 << 20)) > /sys/class/bdi/$dev/max_bytes
    fi
    sync
    t0=$(date +%s.%N)
    dd if=/dev/zero of=$D/mnt/f bs=1M count=1024 conv=fsync status=none
    t1=$(date +%s.%N)
    echo "$cfg run $rep: $(echo "1024/($t1-$t0)" | bc -l | cut -c1-6) MiB/s"
    rm $D/mnt/f
  done
done
uptime
