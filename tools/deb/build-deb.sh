#!/usr/bin/env bash
# build-deb.sh: the MatrixFS Debian package, built with Debian's own tools
# over a staged `make install`:
#
#   tools/deb/build-deb.sh OUTDIR MAKE-COMMAND...      (make deb: OUTDIR build/deb)
#
# 1. MAKE-COMMAND builds into OUTDIR/build with Debian's hardening flags
#    (dpkg-buildflags, hardening=+all) and runs
#    `make install DESTDIR=OUTDIR/stage PREFIX=/usr`: /usr/sbin/{matrixfs,mount.matrixfs,mkfs.matrixfs,fsck.matrixfs},
#    /usr/bin/{matrixfs-stat,kvbench}, the man pages. On a merged-/usr system
#    (Debian 12) /sbin/mount.matrixfs is the same file, so `mount -t
#    matrixfs` and /etc/fstab lines find the helper; its link
#    mount.fuse.matrixfs is what `mount -o remount` runs for a mount that
#    is not in /etc/fstab.
# 2. Strips the programs, compresses the man pages, adds
#    /usr/share/doc/matrixfs/{copyright,changelog.gz} and the example systemd
#    mount unit in /usr/share/doc/matrixfs/examples/ (not enabled).
# 3. Writes DEBIAN/control (Depends from dpkg-shlibdeps, plus fuse3) and
#    DEBIAN/md5sums, and builds OUTDIR/matrixfs_VERSION_ARCH.deb with
#    dpkg-deb. VERSION is 0.0~gitYYYYMMDD.HASH from the checked-out commit
#    (DEB_VERSION overrides it); the maintainer is DEB_MAINTAINER, else the
#    commit's author.
# 4. Runs lintian on it when lintian is installed; exits 1 on a lintian error.
set -euo pipefail
umask 022
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
out=${1:?usage: build-deb.sh OUTDIR MAKE-COMMAND...}
shift
[ $# -gt 0 ] || set -- make
for t in dpkg-deb dpkg-shlibdeps dpkg-buildflags; do
  command -v $t >/dev/null || { echo "build-deb.sh: $t not found (apt-get install dpkg-dev)" >&2; exit 1; }
done
pkg=matrixfs
arch=$(dpkg --print-architecture)
if git rev-parse HEAD >/dev/null 2>&1; then
  version=${DEB_VERSION:-0.0~git$(git log -1 --format=%cd --date=format:%Y%m%d).$(git rev-parse --short=7 HEAD)}
  maint=${DEB_MAINTAINER:-$(git log -1 --format='%an <%ae>')}
  date=$(git log -1 --format=%cd --date=rfc2822)
  what="the MatrixFS repository at $(git rev-parse --short=7 HEAD)"
  [ -z "$(git status --porcelain --untracked-files=no)" ] || what="$what, with uncommitted changes"
else
  version=${DEB_VERSION:-0.0~$(date +%Y%m%d)}
  maint=${DEB_MAINTAINER:-MatrixFS maintainers <matrixfs@localhost>}
  date=$(date -R)
  what="a MatrixFS source tree"
fi

# Debian's hardening flags, all of them (bindnow included).
export DEB_BUILD_MAINT_OPTIONS=${DEB_BUILD_MAINT_OPTIONS:-hardening=+all}
cxxflags="$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
ldflags=$(dpkg-buildflags --get LDFLAGS)
bdir=$out/build
stage=$out/stage
# make does not track flags: a build made with other ones starts over.
if [ "$(cat "$bdir/flags" 2>/dev/null)" != "$cxxflags | $ldflags" ]; then
  rm -rf "$bdir"
  mkdir -p "$bdir"
  echo "$cxxflags | $ldflags" >"$bdir/flags"
fi
rm -rf "$stage"
mkdir -p "$stage/DEBIAN"
"$@" BUILD="$bdir" EXTRA_CXXFLAGS="$cxxflags" EXTRA_LDFLAGS="$ldflags" install DESTDIR="$stage" PREFIX=/usr

# Programs: strip the ELF ones (as dh_strip does).
for f in "$stage"/usr/sbin/* "$stage"/usr/bin/*; do
  if [ "$(head -c 4 "$f" | tr -d '\0')" = $'\x7fELF' ]; then
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f"
  fi
done
# Man pages: compressed, links pointing at the compressed files.
for f in "$stage"/usr/share/man/man*/*; do
  if [ -L "$f" ]; then
    ln -sf "$(readlink "$f").gz" "$f.gz"
    rm "$f"
  else
    gzip -9n "$f"
  fi
done
doc=$stage/usr/share/doc/$pkg
install -d "$doc/examples"
install -m 0644 tools/deb/copyright "$doc/copyright"
install -m 0644 tools/deb/mnt-matrixfs.mount "$doc/examples/"
cat >"$out/changelog" <<CL
$pkg ($version) unstable; urgency=medium

  * Built from $what.

 -- $maint  $date
CL
gzip -9nc "$out/changelog" >"$doc/changelog.gz"

# Depends: the shared libraries the programs link (dpkg-shlibdeps reads a
# debian/control, so it runs in a scratch directory that has one).
elves=()
for f in "$stage"/usr/sbin/* "$stage"/usr/bin/*; do
  [ "$(head -c 4 "$f" | tr -d '\0')" = $'\x7fELF' ] && elves+=("-e$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$pkg" "$pkg" >"$scratch/debian/control"
shlibs=$(cd "$scratch" && dpkg-shlibdeps -O "${elves[@]}" 2>"$scratch/shlibdeps.err" | sed -n 's/^shlibs:Depends=//p') || {
  cat "$scratch/shlibdeps.err" >&2
  exit 1
}

cat >"$stage/DEBIAN/control" <<CTL
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: $maint
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $shlibs, fuse3
Section: admin
Priority: optional
Description: FUSE filesystem whose metadata lives in an LSM-tree key-value store
 MatrixFS is a Linux filesystem in user space. Every file's metadata, every
 directory entry and the data of small files live in MatrixKV, an LSM-tree
 key-value engine whose first level is a matrix container in a
 persistent-memory pool (libpmem2); large files live beside it on disk.
 .
 This package holds the daemon (matrixfs) and its mount(8) helper, so that
 "mount -t matrixfs" and /etc/fstab lines work, mkfs.matrixfs,
 fsck.matrixfs, matrixfs-stat (a live view of a mount) and kvbench (a
 db_bench-compatible benchmark of the engine), with their manual pages and
 an example systemd mount unit.
CTL
(cd "$stage" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

deb=$out/${pkg}_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "built $deb ($(du -h "$deb" | cut -f1))"
if command -v lintian >/dev/null; then
  lintian --info --display-info "$deb" >"$out/lintian.txt" 2>&1 || true
  echo "lintian: $(grep -c '^E:' "$out/lintian.txt") errors, $(grep -c '^W:' "$out/lintian.txt") warnings ($out/lintian.txt)"
  grep -E '^(E|W):' "$out/lintian.txt" || true
  ! grep -q '^E:' "$out/lintian.txt"
else
  echo "lintian is not installed (apt-get install lintian) to check it"
fi
