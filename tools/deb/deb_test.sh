#!/usr/bin/env bash
# deb_test.sh: installs the MatrixFS .deb on this machine and uses it the way
# an administrator would, then removes it and checks that nothing is left.
# It installs a package and edits /etc/fstab (restored at the end), so it is
# not part of `make test`: run it by hand, as root, on a machine where the
# package is not installed.
#
#   tools/deb/deb_test.sh [DEB]          (default: the newest build/deb/*.deb)
#
# 1. Lists /usr, /etc and /var/lib/dpkg/info, then dpkg -i DEB; the programs,
#    man mount.matrixfs and the example mount unit (systemd-analyze verify)
#    are there.
# 2. mkfs.matrixfs a small instance (pool on /dev/shm), mounts it with
#    mount -t matrixfs, and through an /etc/fstab line with `mount MNT`;
#    checks that /usr/sbin/matrixfs serves it, writes and reads a file, unmounts,
#    waits for the daemon to exit, and runs fsck.matrixfs -n (exit 0).
# 3. dpkg -r, then dpkg -P: every file dpkg -L listed is gone, dpkg forgets
#    the package, and the listing equals the one before for every name
#    holding "matrixfs" or "kvbench".
# 4. lintian DEB when lintian is installed: no errors (warnings listed).
# Prints each step and "deb test: OK", or "deb test: FAILED: ..." and exits 1.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
deb=${1:-$(ls -t "$top"/build/deb/*.deb 2>/dev/null | head -1)}
[ -n "$deb" ] && [ -f "$deb" ] || { echo "deb test: no package (make deb builds one)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "deb test: needs root (dpkg, mount, /etc/fstab)" >&2; exit 1; }
pkg=$(dpkg-deb -f "$deb" Package)
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then
  echo "deb test: $pkg is already installed; remove it first (dpkg -P $pkg)" >&2
  exit 1
fi

work=$(mktemp -d /var/tmp/mxfs-deb-test.XXXXXX)
data=$work/data
pool=/dev/shm/mxfs-deb-test-$$.pool
mnt=/mnt/mxfs-deb-test-$$
fstab_line="$data $mnt matrixfs defaults,noauto 0 0"
fstab_edited=0
failed=0
step() { echo "== $*"; }
run() { echo "+ $*"; "$@"; }
fail() { echo "deb test: FAILED: $*" >&2; failed=1; }

cleanup() {
  mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
  if [ "$fstab_edited" = 1 ]; then
    # Take out exactly the line we added (the file keeps its inode).
    grep -vxF "$fstab_line" /etc/fstab >"$work/fstab.new"
    cat "$work/fstab.new" >/etc/fstab
    cmp -s /etc/fstab "$work/fstab.orig" && echo "/etc/fstab restored" ||
      echo "deb test: /etc/fstab differs from the copy taken before: $work/fstab.orig" >&2
  fi
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then dpkg -P "$pkg" >/dev/null; fi
  rmdir "$mnt" 2>/dev/null
  rm -f "$pool"
  [ "$failed" = 0 ] && rm -rf "$work"
}
trap cleanup EXIT

listing() { find /usr /etc /var/lib/dpkg/info -xdev 2>/dev/null | grep -E 'matrixfs|kvbench' | sort; }

# The pid of the daemon serving $data, by its executable and arguments.
daemon_pid() {
  local p a
  # The daemon's command line is "matrixfs [-o OPTS] [--] DATA MNT": look
  # for DATA among its arguments rather than at a fixed place.
  for p in /proc/[0-9]*; do
    mapfile -d '' a 2>/dev/null <"$p/cmdline" || continue
    [ "${#a[@]}" -ge 3 ] && [ "${a[0]##*/}" = matrixfs ] || continue
    for x in "${a[@]:1}"; do
      [ "$x" = "$data" ] && { echo "${p#/proc/}"; return; }
    done
  done
}
wait_daemon_exit() {
  local pid=$1
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  return 1
}

# use_mount HOW: the mount at $mnt is served by the packaged daemon; write,
# read back, unmount, fsck.
use_mount() {
  local pid exe
  findmnt -n -o FSTYPE --mountpoint "$mnt" | grep -qx fuse.matrixfs || { fail "$1: nothing mounted at $mnt"; return; }
  pid=$(daemon_pid)
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null)
  echo "daemon pid $pid runs $exe"
  [ "$exe" = /usr/sbin/matrixfs ] || fail "$1: the daemon is $exe, not the packaged /usr/sbin/matrixfs"
  head -c 200000 /dev/urandom >"$work/sample"
  run cp "$work/sample" "$mnt/sample-$1" && run sync
  cmp "$work/sample" "$mnt/sample-$1" && echo "read back $mnt/sample-$1: same bytes" || fail "$1: read back differs"
  run umount "$mnt" || fail "$1: umount"
  wait_daemon_exit "$pid" || fail "$1: the daemon did not exit after umount"
  run fsck.matrixfs -n "$data"
  local rc=$?
  echo "fsck.matrixfs -n: exit $rc"
  [ "$rc" -eq 0 ] || fail "$1: fsck.matrixfs -n exited $rc"
}

step "package $(basename "$deb")"
dpkg-deb -f "$deb" Version Depends Installed-Size
listing >"$work/before.txt"

step "install"
run dpkg -i "$deb" || { fail "dpkg -i"; exit 1; }
for f in /usr/sbin/matrixfs /sbin/mount.matrixfs /usr/sbin/mkfs.matrixfs /usr/sbin/fsck.matrixfs /usr/bin/matrixfs-stat \
         /usr/share/man/man8/mount.matrixfs.8.gz /usr/share/doc/$pkg/examples/mnt-matrixfs.mount; do
  [ -e "$f" ] || fail "$f is not there after dpkg -i"
done
dpkg -L "$pkg" >"$work/files.txt"
echo "$(wc -l <"$work/files.txt") paths in dpkg -L $pkg"
run man -w mount.matrixfs || fail "man mount.matrixfs finds no page"
if command -v systemd-analyze >/dev/null; then
  # The example unit is valid (its name must match Where=; Documentation= pages exist).
  mkdir -p "$work/unit"
  cp /usr/share/doc/$pkg/examples/mnt-matrixfs.mount "$work/unit/"
  (cd "$work/unit" && run systemd-analyze verify ./mnt-matrixfs.mount) && echo "the example mount unit verifies" ||
    fail "systemd-analyze verify of the example mount unit"
fi

step "mkfs"
run mkfs.matrixfs -L debtest --pool "$pool" --pool-size 64M "$data" || fail "mkfs.matrixfs"
mkdir -p "$mnt"

step "mount -t matrixfs"
run mount -t matrixfs "$data" "$mnt" || fail "mount -t matrixfs"
use_mount mount-t

step "/etc/fstab"
cp -p /etc/fstab "$work/fstab.orig"
echo "$fstab_line" >>/etc/fstab
fstab_edited=1
echo "added: $fstab_line"
run mount "$mnt" || fail "mount $mnt (fstab)"
use_mount fstab
run mount "$mnt" && ls -l "$mnt"/sample-* && run umount "$mnt"
wait_daemon_exit "$(daemon_pid)" 2>/dev/null

step "remove and purge"
run dpkg -r "$pkg" || fail "dpkg -r"
for f in /usr/sbin/matrixfs /sbin/mount.matrixfs /usr/sbin/mkfs.matrixfs /usr/sbin/fsck.matrixfs /usr/bin/matrixfs-stat; do
  [ -e "$f" ] && fail "$f is still there after dpkg -r"
done
run dpkg -P "$pkg" || fail "dpkg -P"
dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q installed && fail "dpkg still lists $pkg"
left=0
while read -r f; do
  # Directories the package shares with others (/usr/sbin, ...) stay; its
  # own (/usr/share/doc/matrixfs) are caught by the listing below.
  if [ -e "$f" ] && [ ! -d "$f" ]; then echo "left behind: $f"; left=1; fi
done <"$work/files.txt"
[ "$left" = 0 ] || fail "files of dpkg -L $pkg are left after purge"
listing >"$work/after.txt"
if diff "$work/before.txt" "$work/after.txt"; then
  echo "no name holding matrixfs or kvbench under /usr, /etc, /var/lib/dpkg/info differs from before"
else
  fail "the listing differs from before (above)"
fi

if command -v lintian >/dev/null; then
  step "lintian"
  lintian --info "$deb" >"$work/lintian.txt" 2>&1
  cat "$work/lintian.txt"
  grep -q '^E:' "$work/lintian.txt" && fail "lintian reports errors"
  echo "lintian: $(grep -c '^E:' "$work/lintian.txt") errors, $(grep -c '^W:' "$work/lintian.txt") warnings"
else
  echo "lintian is not installed (apt-get install lintian); not checked"
fi

if [ "$failed" = 0 ]; then
  echo "deb test: OK"
  exit 0
fi
echo "deb test: FAILED (work files kept in $work)"
exit 1
