// MatrixFs's attribute operations: getattr, setattr (chmod, chown,
// truncate, utimes, with the set-id rules), access, statfs, and the struct
// stat the kernel is sent.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "fuse/kernel_channel.h"
#include "fuse/matrix_fs_internal.h"

namespace mxfs {

void MatrixFs::FillStat(uint64_t ino, const InodeAttr& a, struct stat* st) const {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  st->st_mode = a.mode;
  st->st_nlink = a.nlink;
  st->st_uid = a.uid;
  st->st_gid = a.gid;
  st->st_rdev = a.rdev;
  st->st_size = static_cast<off_t>(a.size);
  st->st_blksize = sb_.block_size;
  st->st_blocks = static_cast<blkcnt_t>((a.size + 511) / 512);
  if (a.storage == Storage::kObject) {
    // Sparse large files: report what their object really occupies.
    struct stat ost;
    if (::stat(ObjectPath(ino).c_str(), &ost) == 0) st->st_blocks = ost.st_blocks;
  }
  st->st_atim = ToTimespec(a.atime_ns);
  st->st_mtim = ToTimespec(a.mtime_ns);
  st->st_ctim = ToTimespec(a.ctime_ns);
}

void MatrixFs::FillEntry(uint64_t ino, const InodeAttr& a, fuse_entry_param* e) const {
  std::memset(e, 0, sizeof(*e));
  e->ino = ino;
  e->generation = a.generation;
  FillStat(ino, a, &e->attr);
  e->attr_timeout = AttrTimeout();
  e->entry_timeout = cfg_.entry_timeout;
}

void MatrixFs::GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(kOpGetAttr);
  struct stat st;
  if (IsVirtual(ino)) {
    VirtualStat(ino, &st);
    fuse_reply_attr(req, &st, 1.0);
    return;
  }
  // With the writeback cache a buffered write(2) asks for the attributes of
  // its open file (fuse_cache_write_iter) once they have expired, which they
  // do at once while the data directory is full (AttrTimeout): refusing
  // that request is how write(2) gets ENOSPC as on ext4 (fuse/space_guard.h).
  if (fi != nullptr && fi->fh == kWritableFh && space_.Full() && writeback_cache_.load(std::memory_order_relaxed)) {
    if (!ReapObjects()) space_.Refresh();
    if (space_.Full()) return (void)fuse_reply_err(req, ENOSPC);
  }
  Status s;
  {
    InodeLocks locks(this, {ino});
    Node* n = FindNode(ino);
    if (n != nullptr && n->deleted) {
      FillStat(ino, n->attr, &st);
    } else {
      auto a = LoadAttr(ino);
      if (a) FillStat(ino, *a, &st);
      else s = a.error();
    }
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_attr(req, &st, AttrTimeout());
}

Status MatrixFs::DoSetAttr(fuse_req_t req, uint64_t ino, const struct stat* in, int to_set, bool kill_suidgid,
                           InodeAttr* out, bool check_perm, bool by_fd) {
  InodeLocks locks(this, {ino});
  Txn txn(this);
  auto ar = txn.Attr(ino);
  if (!ar) return ar.error();
  InodeAttr* a = *ar;
  if (check_perm) MXFS_RETURN_IF_ERROR(CheckSetAttrPerm(req, *a, in, to_set, by_fd));
  int64_t now = NowNs();
  std::vector<uint64_t> drop_objects;
  if (to_set & FUSE_SET_ATTR_MODE) {
    uint32_t mode = (a->mode & S_IFMT) | (in->st_mode & 07777);
    // Linux: a non-member without CAP_FSETID cannot keep set-group-ID on chmod.
    const fuse_ctx* ctx = fuse_req_ctx(req);
    if (ctx->uid != 0 && (mode & S_ISGID) && !CallerInGroup(req, (to_set & FUSE_SET_ATTR_GID) ? in->st_gid : a->gid)) {
      mode &= ~S_ISGID;
    }
    a->mode = mode;
    if (AclsOn()) MXFS_RETURN_IF_ERROR(ChmodAcl(ino, mode, &txn.batch));
  } else if (kill_suidgid) {
    // Truncate or open(O_TRUNC) by a caller without CAP_FSETID, or chown
    // (judged on the group the file has before it changes).
    const bool chown = (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) || to_set == FUSE_SET_ATTR_CTIME;
    a->mode &= ~KilledSetIdBits(req, *a, chown);
  }
  if (to_set & FUSE_SET_ATTR_UID) a->uid = in->st_uid;
  if (to_set & FUSE_SET_ATTR_GID) a->gid = in->st_gid;
  if ((to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) && !(to_set & FUSE_SET_ATTR_MODE) &&
      !a->IsDir()) {
    // chown clears set-user-ID, and set-group-ID when group-executable.
    a->mode &= ~S_ISUID;
    if (a->mode & S_IXGRP) a->mode &= ~S_ISGID;
  }
  const uint64_t old_size = a->size;
  if (to_set & FUSE_SET_ATTR_SIZE) {
    if (a->IsDir()) return Errno(EISDIR);
    if (!a->IsReg()) return Errno(EINVAL);
    if (static_cast<uint64_t>(in->st_size) != a->size) {
      MXFS_RETURN_IF_ERROR(Truncate(&txn, ino, a, static_cast<uint64_t>(in->st_size), &drop_objects));
    }
    if (!(to_set & FUSE_SET_ATTR_MTIME)) a->mtime_ns = now;
  }
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) a->atime_ns = now;
  else if (to_set & FUSE_SET_ATTR_ATIME) a->atime_ns = FromTimespec(in->st_atim);
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) a->mtime_ns = now;
  else if (to_set & FUSE_SET_ATTR_MTIME) a->mtime_ns = FromTimespec(in->st_mtim);
  if (to_set & FUSE_SET_ATTR_CTIME) a->ctime_ns = FromTimespec(in->st_ctim);
  else a->ctime_ns = now;
  MXFS_RETURN_IF_ERROR(Commit(&txn));
  for (uint64_t o : drop_objects) {
    if (Node* n = FindNode(o)) n->object.reset();
    RemoveObject(o);
  }
  if (a->storage == Storage::kObject && a->size < old_size) {
    // A shrunk large file: its object is cut only now (see Truncate).
    auto obj = ObjectFor(ino, false);
    if (!obj) return obj.error();
    MXFS_RETURN_IF_ERROR((*obj)->Truncate(a->size));
  }
  *out = *a;
  return Status::OK();
}

void MatrixFs::SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  Count(kOpSetAttr);
  if (IsVirtual(ino)) {
    // -o noopen: an open of the control file with O_TRUNC (no atomic O_TRUNC
    // then) truncates it, and the write-back of what was written to it sets
    // its times: both are accepted and change nothing.
    constexpr int kAllowed = FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
                             FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
    if (IsSnapshot(ino) && VirtualFileOf(ino) == kControlIno && (to_set & ~kAllowed) == 0 &&
        ((to_set & FUSE_SET_ATTR_SIZE) == 0 || attr->st_size == 0)) {
      struct stat st;
      VirtualStat(ino, &st);
      return (void)fuse_reply_attr(req, &st, 0.0);
    }
    return (void)fuse_reply_err(req, EPERM);
  }
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  // Times alone for an inode the last unlink deleted (nobody had it open):
  // the kernel writes back the times it kept (writeback cache) when it
  // evicts the inode (fuse_write_inode), after the UNLINK. Nobody can see
  // them any more, so they are accepted and dropped, as GetAttr answers
  // such an inode from its Node. Refused (ENOENT), the kernel kept the
  // error as a write-back error of the file system, and the next syncfs(2)
  // on the mount failed with it (`sync -f` after tar unpacked a symlink).
  constexpr int kTimes = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
                         FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
  if ((to_set & ~kTimes) == 0) {
    InodeLocks locks(this, {ino});
    const Node* n = FindNode(ino);
    if (n != nullptr && n->deleted) {
      struct stat st;
      FillStat(ino, n->attr, &st);
      return (void)fuse_reply_attr(req, &st, AttrTimeout());
    }
  }
  // With FUSE_HANDLE_KILLPRIV_V2 the kernel's fuse_setattr drops the VFS's
  // ATTR_KILL_SUID/SGID (and the mode change they imply) before it sends
  // anything, and flags only chowns that name an owner or a group and
  // truncates. Two setattrs are left of the other kills, and nothing else
  // sends them: ctime alone is chown(f, -1, -1) (writes and utimes send
  // mtime with it), and nothing at all is file_remove_privs of a fallocate
  // or a write-through write, which the kernel asks only for callers
  // without CAP_FSETID (uid 0 stands in for it: root's kill of a file
  // capability alone sends one too, and must keep the set-id bits).
  bool kill = KernelChannel::KillSuidGid(KernelChannel::Op::kSetAttr);
  if (!kill && channel_.KillPrivV2Granted()) {
    kill = to_set == FUSE_SET_ATTR_CTIME || (to_set == 0 && fuse_req_ctx(req)->uid != 0);
  }
  InodeAttr a;
  Status s = DoSetAttr(req, ino, attr, to_set, kill, &a, cfg_.daemon_perms, fi != nullptr);
  if (!s.ok()) return ReplyStatus(req, s);
  if (to_set & FUSE_SET_ATTR_SIZE) Freed();
  struct stat st;
  FillStat(ino, a, &st);
  fuse_reply_attr(req, &st, AttrTimeout());
}

void MatrixFs::Access(fuse_req_t req, fuse_ino_t ino, int mask) {
  Count(kOpOther);
  struct stat st;
  if (IsVirtual(ino)) {
    VirtualStat(ino, &st);
  } else {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) return ReplyStatus(req, a.error());
    FillStat(ino, *a, &st);
  }
  // The kernel sends ACCESS only without default_permissions (-o
  // daemon_perms), for access(2) and chdir(2).
  if (mask == F_OK) return (void)fuse_reply_err(req, 0);
  fuse_reply_err(req, PermErrno(req, st.st_mode, st.st_uid, st.st_gid, mask));
}

void MatrixFs::StatFs(fuse_req_t req, fuse_ino_t) {
  Count(kOpStatFs);
  struct statvfs host;
  if (::statvfs(datadir_.c_str(), &host) != 0) return (void)fuse_reply_err(req, errno);
  struct statvfs st;
  std::memset(&st, 0, sizeof(st));
  const uint64_t bs = sb_.block_size;
  st.f_bsize = bs;
  st.f_frsize = bs;
  // Honest: what files can still take is the data directory's free space
  // less the guard's reserve (what the engine and the kernel may still
  // write for data already acknowledged). The pool adds no capacity: what
  // its WAL and container hold moves to the data directory.
  space_.Refresh();
  const uint64_t reserve = space_.reserve();
  const uint64_t host_free = host.f_bfree * host.f_frsize, host_avail = host.f_bavail * host.f_frsize;
  st.f_blocks = static_cast<fsblkcnt_t>(host.f_blocks * host.f_frsize / bs);
  st.f_bfree = static_cast<fsblkcnt_t>((host_free > reserve ? host_free - reserve : 0) / bs);
  st.f_bavail = static_cast<fsblkcnt_t>((host_avail > reserve ? host_avail - reserve : 0) / bs);
  uint64_t used = inode_count_.load(std::memory_order_relaxed);
  // Inodes cost KV space only: offer as many as the space could hold at ~256 bytes each.
  uint64_t free_inodes = std::max<uint64_t>(1 << 20, host.f_bavail * host.f_frsize / 256);
  st.f_files = static_cast<fsfilcnt_t>(used + free_inodes);
  st.f_ffree = static_cast<fsfilcnt_t>(free_inodes);
  st.f_favail = st.f_ffree;
  st.f_fsid = 0x4d584653;
  st.f_namemax = kMaxNameLen;
  fuse_reply_statfs(req, &st);
}

}  // namespace mxfs
