// MatrixFs's permission checks for -o daemon_perms (fuse/matrix_fs.h,
// MountConfig::daemon_perms): the mount has no default_permissions, so the
// kernel checks no mode bits (fs/fuse/dir.c, fuse_permission: without it
// only access(2) and chdir(2) ask the daemon, as FUSE_ACCESS, and exec
// needs some x bit), and skips setattr_prepare (fuse_do_setattr sets
// ATTR_FORCE). Each handler that the VFS would have guarded asks here
// instead: search (x) on the parent at LOOKUP, write and search on the
// parent to create, link, remove or rename, write on a directory that moves
// to another parent, read/write/exec at OPEN by the open flags, read at
// READDIR and OPENDIR, the owner rules of chmod/chown/utimes, write for
// truncate(2) and user.* xattrs, read for getting user.* xattrs.
//
// Why the mode is single-user (no allow_other; main.cc refuses the two
// together, and refuses noopen, which would send no OPEN to check) and has
// no POSIX ACLs: the kernel never asks the daemon again
// for what it caches -- a dentry found in the dcache is walked without a
// LOOKUP, a cached listing is read without a READDIR -- so a check made for
// one caller would let every later caller through. With one principal that
// is the mount owner's own view of its own files; between users it would be
// a hole. And FUSE_POSIX_ACL makes the kernel turn default_permissions back
// on (process_init_reply), so the mode is -o noacl.
//
// Root (uid 0) is treated as having CAP_DAC_OVERRIDE: FUSE requests carry
// no capabilities, so a root process that dropped them is not seen.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse/matrix_fs_internal.h"

namespace mxfs {

namespace {

// The mode bits that apply to the caller (rwx in the low three bits),
// asking for the supplementary groups only when the group and other bits
// differ in what is wanted.
unsigned CallerBits(fuse_req_t req, uint32_t mode, uint32_t uid, uint32_t gid, unsigned want) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (ctx->uid == uid) return (mode >> 6) & 7;
  const unsigned group = (mode >> 3) & 7, other = mode & 7;
  if ((group & want) == (other & want)) return other;
  return CallerInGroup(req, gid) ? group : other;
}

}  // namespace

int PermErrno(fuse_req_t req, uint32_t mode, uint32_t uid, uint32_t gid, int mask) {
  const unsigned want = static_cast<unsigned>(mask) & 7;
  if (want == 0) return 0;
  if (fuse_req_ctx(req)->uid == 0) {
    // CAP_DAC_OVERRIDE: all but executing a file nobody may execute.
    return (want & X_OK) && !S_ISDIR(mode) && !(mode & 0111) ? EACCES : 0;
  }
  return (want & ~CallerBits(req, mode, uid, gid, want)) == 0 ? 0 : EACCES;
}

Status MatrixFs::CheckPerm(fuse_req_t req, const InodeAttr& a, int mask) const {
  if (!cfg_.daemon_perms) return Status::OK();
  if (PermErrno(req, a.mode, a.uid, a.gid, mask) == 0) return Status::OK();
  return Errno(EACCES, "permission denied");
}

Status MatrixFs::CheckPermOf(fuse_req_t req, uint64_t ino, int mask) {
  if (!cfg_.daemon_perms || fuse_req_ctx(req)->uid == 0) return Status::OK();  // dirs only: root passes
  if (IsVirtual(ino)) return Status::OK();
  InodeLocks locks(this, {ino});
  auto a = LoadAttr(ino);
  if (!a) return a.error();
  return CheckPerm(req, *a, mask);
}

bool MatrixFs::OwnerOrRoot(fuse_req_t req, const InodeAttr& a) const {
  const uint32_t uid = fuse_req_ctx(req)->uid;
  return uid == 0 || uid == a.uid;
}

int OpenMask(int flags) {
  int mask = 0;
  switch (flags & O_ACCMODE) {
    case O_RDONLY: mask = R_OK; break;
    case O_WRONLY: mask = W_OK; break;
    default: mask = R_OK | W_OK; break;
  }
  if (flags & O_TRUNC) mask |= W_OK;
  // __FMODE_EXEC (execve's open; the kernel passes f_flags through).
  if (flags & 040) mask |= X_OK;
  return mask;
}

Status MatrixFs::CheckSetAttrPerm(fuse_req_t req, const InodeAttr& a, const struct stat* in, int to_set,
                                  bool by_fd) const {
  if (!cfg_.daemon_perms) return Status::OK();
  const bool owner = OwnerOrRoot(req, a);
  const bool root = fuse_req_ctx(req)->uid == 0;
  if ((to_set & FUSE_SET_ATTR_MODE) && !owner) return Errno(EPERM, "chmod by a non-owner");
  if ((to_set & FUSE_SET_ATTR_UID) && !root && !(owner && in->st_uid == a.uid)) {
    return Errno(EPERM, "chown to another user");
  }
  if ((to_set & FUSE_SET_ATTR_GID) && !root &&
      !(owner && (in->st_gid == a.gid || CallerInGroup(req, in->st_gid)))) {
    return Errno(EPERM, "chgrp to a group the caller is not in");
  }
  // truncate(2) by name needs write permission; ftruncate(2) was checked by
  // the kernel against the descriptor.
  if ((to_set & FUSE_SET_ATTR_SIZE) && !by_fd) MXFS_RETURN_IF_ERROR(CheckPerm(req, a, W_OK));
  const int times = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME;
  if ((to_set & times) && !owner) {
    // Explicit times need the owner. Under the writeback cache the kernel
    // sends its own c/mtime as explicit values with FUSE_SET_ATTR_CTIME
    // (write-back of a writer's mtime, utimes(NULL)): those need write
    // permission, as setting the times to now does.
    const bool explicit_times = ((to_set & FUSE_SET_ATTR_ATIME) && !(to_set & FUSE_SET_ATTR_ATIME_NOW)) ||
                                ((to_set & FUSE_SET_ATTR_MTIME) && !(to_set & FUSE_SET_ATTR_MTIME_NOW));
    if (explicit_times && !(to_set & FUSE_SET_ATTR_CTIME)) return Errno(EPERM, "explicit times by a non-owner");
    if (!by_fd) MXFS_RETURN_IF_ERROR(CheckPerm(req, a, W_OK));
  }
  return Status::OK();
}

Status MatrixFs::CheckXattrPerm(fuse_req_t req, uint64_t ino, const char* name, bool write) {
  if (!cfg_.daemon_perms || fuse_req_ctx(req)->uid == 0) return Status::OK();
  if (std::strncmp(name, "user.", 5) != 0) return Status::OK();  // the kernel guards the others
  InodeLocks locks(this, {ino});
  auto a = LoadAttr(ino);
  if (!a) return a.error();
  // xattr_permission: the sticky-directory rule for user.* on directories.
  if (write && a->IsDir() && (a->mode & S_ISVTX) && !OwnerOrRoot(req, *a)) return Errno(EPERM);
  return CheckPerm(req, *a, write ? W_OK : R_OK);
}

}  // namespace mxfs
