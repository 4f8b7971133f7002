// MatrixFs's namespace operations: lookup and forget, the creation of
// entries (mknod, mkdir, symlink, create, link), their removal (unlink,
// rmdir), rename, readlink, and the sticky-directory rule.
#include <linux/fs.h>
#include <sys/stat.h>

#include <cstring>
#include <optional>

#include "fuse/kernel_channel.h"
#include "fuse/matrix_fs_internal.h"

namespace mxfs {

Status MatrixFs::CheckSticky(fuse_req_t req, const InodeAttr& dir, const InodeAttr& victim) const {
  if (!(dir.mode & S_ISVTX)) return Status::OK();
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (ctx->uid == 0 || ctx->uid == dir.uid || ctx->uid == victim.uid) return Status::OK();
  return Errno(EPERM, "sticky directory");
}

// ---------------------------------------------------------------- lookup

void MatrixFs::Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Count(kOpLookup);
  fuse_entry_param e;
  if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) {
    return LookupDot(req, parent, name[1] == '.');
  }
  if (Status p = CheckPermOf(req, parent, X_OK); !p.ok()) return ReplyStatus(req, p);
  if (parent == kRootIno && std::strcmp(name, kMatrixDirName) == 0) {
    return ReplyVirtualEntry(req, kVirtDir);
  }
  if (IsVirtual(parent)) {
    for (size_t i = 0; i < kNumVirtualFiles; ++i) {
      if (std::strcmp(name, kVirtualFiles[i].name) == 0) {
        const uint64_t file = kVirtDir + 1 + i;
        return ReplyVirtualEntry(req, NoOpen() ? NewSnapshot(file) : file);
      }
    }
    fuse_reply_err(req, ENOENT);
    return;
  }
  Status s = CheckName(name);
  if (!s.ok()) return ReplyStatus(req, s);
  std::string nm(name);
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto de = LookupEntry(parent, nm);
    if (!de) {
      if (ToErrno(de.error()) == ENOENT) {
        // A negative entry the kernel may cache: every create goes through us.
        std::memset(&e, 0, sizeof(e));
        e.entry_timeout = cfg_.entry_timeout;
        fuse_reply_entry(req, &e);
        return;
      }
      return ReplyStatus(req, de.error());
    }
    {
      InodeLocks locks(this, {parent, de->ino});
      auto again = LookupEntry(parent, nm);
      if (!again || again->ino != de->ino) continue;
      auto a = LoadAttr(de->ino);
      if (!a) {
        s = a.error();
      } else {
        Node& n = NodeFor(de->ino);
        n.nlookup++;
        n.attr = *a;
        n.have_attr = true;
        FillEntry(de->ino, *a, &e);
      }
    }
    if (!s.ok()) return ReplyStatus(req, s);
    fuse_reply_entry(req, &e);
    return;
  }
  fuse_reply_err(req, EAGAIN);
}

// The VFS resolves "." and ".." in paths itself; the kernel sends them only
// to decode a file handle whose inode it does not hold (FUSE_EXPORT_SUPPORT,
// fs/fuse/inode.c): "." in the handle's inode number, ".." in a directory's
// to reach its parent. An inode that is gone is ENOENT, which the kernel
// turns into ESTALE; inode numbers are never reused, so a handle never
// finds another file.
// The entry of a file of the control directory (or of the directory itself):
// generation 1 always, attributes from VirtualStat, cached for a second; a
// snapshot's (-o noopen) is not cached, so the next path walk asks again.
void MatrixFs::ReplyVirtualEntry(fuse_req_t req, uint64_t ino) {
  fuse_entry_param e;
  std::memset(&e, 0, sizeof(e));
  e.ino = ino;
  e.generation = 1;
  VirtualStat(ino, &e.attr);
  e.attr_timeout = e.entry_timeout = 1.0;
  if (IsSnapshot(ino)) e.entry_timeout = 0.0;
  if (fuse_reply_entry(req, &e) != 0 && IsSnapshot(ino)) DropSnapshot(ino, 1);
}

void MatrixFs::LookupDot(fuse_req_t req, uint64_t ino, bool dotdot) {
  fuse_entry_param e;
  if (IsVirtual(ino)) {
    if (dotdot && ino == kVirtDir) return Lookup(req, kRootIno, ".");
    if (dotdot) return Lookup(req, kVirtDir, ".");
    if (IsSnapshot(ino) && !HoldSnapshot(ino)) return (void)fuse_reply_err(req, ESTALE);
    return ReplyVirtualEntry(req, ino);
  }
  uint64_t target = ino;
  if (dotdot) {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) return ReplyStatus(req, a.error());
    if (!a->IsDir()) return (void)fuse_reply_err(req, ENOTDIR);
    target = a->parent;
  }
  Status s;
  {
    InodeLocks locks(this, {target});
    auto a = LoadAttr(target);
    if (!a) {
      s = a.error();
    } else if (a->nlink == 0) {
      s = Errno(ENOENT, "inode unlinked");
    } else {
      Node& n = NodeFor(target);
      n.nlookup++;
      n.attr = *a;
      n.have_attr = true;
      FillEntry(target, *a, &e);
    }
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_entry(req, &e);
}

void MatrixFs::DropLookups(uint64_t ino, uint64_t nlookup) {
  if (IsSnapshot(ino)) DropSnapshot(ino, nlookup);
  if (IsVirtual(ino)) return;
  InodeLocks locks(this, {ino});
  Node* n = FindNode(ino);
  if (n == nullptr) return;
  n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
  if (ino == kRootIno && n->nlookup == 0) n->nlookup = 1;
  if (n->nlookup == 0 && n->open_count == 0) {
    MaybeReclaim(ino);
    StripeFor(ino).nodes.erase(ino);
  }
}

void MatrixFs::Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  DropLookups(ino, nlookup);
  fuse_reply_none(req);
}

void MatrixFs::ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) DropLookups(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void MatrixFs::Readlink(fuse_req_t req, fuse_ino_t ino) {
  Count(kOpOther);
  std::string target;
  Status s;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) s = a.error();
    else if (!a->IsSymlink()) s = Errno(EINVAL);
    else target = a->symlink;
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_readlink(req, target.c_str());
}

// ---------------------------------------------------------------- namespace

Status MatrixFs::CheckNewEntryName(uint64_t parent, const char* name) const {
  if (IsVirtual(parent)) return Errno(EPERM);
  if (cfg_.read_only) return Errno(EROFS);
  MXFS_RETURN_IF_ERROR(CheckName(name));
  if (parent == kRootIno && std::strcmp(name, kMatrixDirName) == 0) return Errno(EEXIST);
  return Status::OK();
}

Status MatrixFs::CheckNewEntry(const InodeAttr& p, const std::string& dkey) {
  if (!p.IsDir()) return Errno(ENOTDIR);
  if (p.nlink == 0) return Errno(ENOENT, "directory was removed");
  std::string existing;
  Status s = db_->Get(ReadOptions(), dkey, &existing);
  if (s.ok()) return Errno(EEXIST);
  if (!s.IsNotFound()) return s;
  return Status::OK();
}

Status MatrixFs::MakeNode(fuse_req_t req, uint64_t parent, const char* name, uint32_t mode,
                          uint64_t rdev, const std::string& target, bool open, fuse_entry_param* e,
                          bool tmpfile) {
  MXFS_RETURN_IF_ERROR(CheckNewEntryName(parent, name));  // O_TMPFILE: the kernel names it "/"
  if (target.size() > 4095) return Errno(ENAMETOOLONG);
  MXFS_RETURN_IF_ERROR(Admit(kNewEntryBytes + std::strlen(name) + target.size()));
  auto ino = AllocIno();
  if (!ino) return ino.error();
  const fuse_ctx* ctx = fuse_req_ctx(req);
  InodeLocks locks(this, {parent, *ino});
  Txn txn(this);
  auto pr = txn.Attr(parent);
  if (!pr) return pr.error();
  InodeAttr* p = *pr;
  std::string dkey = DentryKey(parent, name);
  if (tmpfile) {
    // An unnamed inode in parent (O_TMPFILE): no entry to collide with.
    if (!p->IsDir()) return Errno(ENOTDIR);
    if (p->nlink == 0) return Errno(ENOENT, "directory was removed");
  } else {
    MXFS_RETURN_IF_ERROR(CheckNewEntry(*p, dkey));
  }
  MXFS_RETURN_IF_ERROR(CheckPerm(req, *p, W_OK | X_OK));
  int64_t now = NowNs();
  InodeAttr a;
  a.mode = mode;
  a.uid = ctx->uid;
  a.gid = ctx->gid;
  if (p->mode & S_ISGID) {
    a.gid = p->gid;
    if (S_ISDIR(mode)) a.mode |= S_ISGID;
  }
  if (!S_ISDIR(mode) && (a.mode & S_ISGID) && ctx->uid != 0 && !CallerInGroup(req, a.gid)) {
    a.mode &= ~S_ISGID;
  }
  a.nlink = S_ISDIR(mode) ? 2 : 1;
  a.atime_ns = a.mtime_ns = a.ctime_ns = a.crtime_ns = now;
  a.rdev = rdev;
  a.generation = generation_;
  a.parent = parent;
  a.symlink = target;
  a.size = target.size();
  if (AclsOn()) {
    MXFS_RETURN_IF_ERROR(NewInodeAcl(req, parent, *ino, &a, &txn.batch));
  }
  if (tmpfile) {
    // Linked nowhere and open: an orphan from the start, reclaimed at its
    // last release (or, after a crash, at mount) unless linkat names it.
    a.nlink = 0;
    txn.NewAttr(*ino, a);
    txn.batch.Put(OrphanKey(*ino), Slice());
  } else {
    txn.NewAttr(*ino, a);
    txn.batch.Put(dkey, EncodeDirEntry(DirEntry{*ino, ModeToDirType(mode)}));
    p->mtime_ns = p->ctime_ns = now;
    if (S_ISDIR(mode)) p->nlink++;
  }
  MXFS_RETURN_IF_ERROR(Commit(&txn));
  inode_count_.fetch_add(1, std::memory_order_relaxed);
  Node& n = NodeFor(*ino);
  n.nlookup++;
  // -o noopen: the kernel sends no RELEASE at all once OPEN is off, not even
  // for a file CREATE opened (fuse_file_put drops it), so such an open is
  // not counted; the lookup keeps the file InUse while the kernel holds it.
  if (open && !NoOpen()) n.open_count++;
  n.attr = a;
  n.have_attr = true;
  FillEntry(*ino, a, e);
  return Status::OK();
}

void MatrixFs::Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  Count(kOpMknod);
  uint32_t fmt = mode & S_IFMT;
  if (fmt == 0) mode |= S_IFREG;
  else if (fmt != S_IFREG && fmt != S_IFIFO && fmt != S_IFSOCK && fmt != S_IFCHR && fmt != S_IFBLK) {
    return (void)fuse_reply_err(req, EINVAL);
  }
  fuse_entry_param e;
  Status s = MakeNode(req, parent, name, mode, S_ISCHR(mode) || S_ISBLK(mode) ? rdev : 0, "", false, &e);
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_entry(req, &e);
}

void MatrixFs::Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  Count(kOpMkdir);
  fuse_entry_param e;
  Status s = MakeNode(req, parent, name, S_IFDIR | (mode & 07777), 0, "", false, &e);
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_entry(req, &e);
}

void MatrixFs::Symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  Count(kOpSymlink);
  fuse_entry_param e;
  Status s = MakeNode(req, parent, name, S_IFLNK | 0777, 0, link, false, &e);
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_entry(req, &e);
}

void MatrixFs::Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  Count(kOpCreate);
  fuse_entry_param e;
  Status s = MakeNode(req, parent, name, S_IFREG | (mode & 07777), 0, "", true, &e, KernelChannel::IsTmpfile());
  if (!s.ok()) return ReplyStatus(req, s);
  fi->fh = (fi->flags & O_ACCMODE) != O_RDONLY ? kWritableFh : 0;
  fi->keep_cache = 1;
  fi->noflush = NoFlush();
  if (fuse_reply_create(req, &e, fi) != 0) {
    // The kernel did not get the reply: undo the open. (The lookup MakeNode
    // counted stays, so the Node lives until unmount.)
    DropOpen(e.ino, fi->fh);
  }
}

void MatrixFs::Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) {
  Count(kOpLink);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, EPERM);
  Status s = CheckNewEntryName(newparent, newname);
  if (s.ok()) s = Admit(kNewEntryBytes + std::strlen(newname));
  fuse_entry_param e;
  if (s.ok()) {
    InodeLocks locks(this, {ino, newparent});
    Txn txn(this);
    s = [&]() -> Status {
      auto ar = txn.Attr(ino);
      if (!ar) return ar.error();
      auto pr = txn.Attr(newparent);
      if (!pr) return pr.error();
      InodeAttr* a = *ar;
      InodeAttr* p = *pr;
      if (a->IsDir()) return Errno(EPERM);
      if (a->nlink >= 65000) return Errno(EMLINK);
      std::string dkey = DentryKey(newparent, newname);
      MXFS_RETURN_IF_ERROR(CheckNewEntry(*p, dkey));
      MXFS_RETURN_IF_ERROR(CheckPerm(req, *p, W_OK | X_OK));
      if (cfg_.daemon_perms && !OwnerOrRoot(req, *a)) {
        // may_linkat with fs.protected_hardlinks (the default): a caller
        // who does not own the source must be able to read and write a
        // regular file that is not set-id.
        if (!a->IsReg() || (a->mode & S_ISUID) || ((a->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) ||
            !CheckPerm(req, *a, R_OK | W_OK).ok()) {
          return Errno(EPERM, "protected hardlink");
        }
      }
      int64_t now = NowNs();
      if (a->nlink == 0) {
        // Naming an unlinked inode: the kernel allows it only for an
        // O_TMPFILE opened without O_EXCL (I_LINKABLE); it stops being an
        // orphan in the same batch.
        const Node* n = FindNode(ino);
        if (n == nullptr || n->deleted || !InUse(*n)) return Errno(ENOENT);
        txn.batch.Delete(OrphanKey(ino));
      }
      a->nlink++;
      a->ctime_ns = now;
      p->mtime_ns = p->ctime_ns = now;
      txn.batch.Put(dkey, EncodeDirEntry(DirEntry{ino, ModeToDirType(a->mode)}));
      MXFS_RETURN_IF_ERROR(Commit(&txn));
      Node& n = NodeFor(ino);
      n.nlookup++;
      FillEntry(ino, *a, &e);
      return Status::OK();
    }();
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_entry(req, &e);
}

Status MatrixFs::DoRemove(fuse_req_t req, uint64_t parent, const std::string& name, bool dir) {
  if (IsVirtual(parent)) return Errno(EPERM);
  if (parent == kRootIno && name == kMatrixDirName) return Errno(EPERM);
  if (cfg_.read_only) return Errno(EROFS);
  MXFS_RETURN_IF_ERROR(CheckName(name.c_str()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    // Every change of an entry holds its directory's stripe, so under the
    // parent's the entry read is the entry changed: one read, when the
    // inode's stripe can be added without waiting out of order (TryAdd);
    // else both are locked in order and the entry read again.
    std::optional<InodeLocks> locks;
    locks.emplace(this, std::initializer_list<uint64_t>{parent});
    auto de = LookupEntry(parent, name);
    if (!de) return de.error();
    if (!locks->TryAdd(de->ino)) {
      locks.reset();
      locks.emplace(this, std::initializer_list<uint64_t>{parent, de->ino});
      auto again = LookupEntry(parent, name);
      if (!again) return again.error();
      if (again->ino != de->ino) continue;
    }
    uint64_t ino = de->ino;
    Txn txn(this);
    auto pr = txn.Attr(parent);
    if (!pr) return pr.error();
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    InodeAttr* p = *pr;
    InodeAttr* a = *ar;
    MXFS_RETURN_IF_ERROR(CheckPerm(req, *p, W_OK | X_OK));
    if (dir && !a->IsDir()) return Errno(ENOTDIR);
    if (!dir && a->IsDir()) return Errno(EISDIR);
    MXFS_RETURN_IF_ERROR(CheckSticky(req, *p, *a));
    if (dir) {
      std::string prefix = DentryPrefix(ino);
      auto it = db_->NewIterator(ScanOf(prefix));
      it->Seek(prefix);
      if (it->Valid() && it->key().starts_with(prefix)) return Errno(ENOTEMPTY);
      MXFS_RETURN_IF_ERROR(it->status());
      if (p->nlink > 2) p->nlink--;
    }
    txn.batch.Delete(DentryKey(parent, name));
    int64_t now = NowNs();
    p->mtime_ns = p->ctime_ns = now;
    MXFS_RETURN_IF_ERROR(DropLink(&txn, ino, a));
    return Commit(&txn);
  }
  return Errno(EAGAIN);
}

void MatrixFs::Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Count(kOpUnlink);
  Status s = DoRemove(req, parent, name, false);
  if (s.ok()) Freed();
  fuse_reply_err(req, ToErrno(s));
}

void MatrixFs::Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Count(kOpRmdir);
  Status s = DoRemove(req, parent, name, true);
  if (s.ok()) Freed();
  fuse_reply_err(req, ToErrno(s));
}

Status MatrixFs::DoRename(fuse_req_t req, uint64_t parent, const std::string& name,
                          uint64_t newparent, const std::string& newname, unsigned flags) {
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) return Errno(EINVAL);
  if ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT))) return Errno(EINVAL);
  if (IsVirtual(parent) || IsVirtual(newparent)) return Errno(EPERM);
  if ((parent == kRootIno && name == kMatrixDirName) || (newparent == kRootIno && newname == kMatrixDirName)) {
    return Errno(EPERM);
  }
  if (cfg_.read_only) return Errno(EROFS);
  MXFS_RETURN_IF_ERROR(CheckName(name.c_str()));
  MXFS_RETURN_IF_ERROR(CheckName(newname.c_str()));
  // RENAME_WHITEOUT (overlayfs on this filesystem): the old name becomes a
  // whiteout, a character device 0/0, in the rename's batch.
  uint64_t whiteout = 0;
  if (flags & RENAME_WHITEOUT) {
    auto w = AllocIno();
    if (!w) return w.error();
    whiteout = *w;
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    // As DoRemove: the entries read under both parents' stripes are the ones
    // renamed; the inodes' stripes join without waiting out of order, or all
    // are locked in order and the entries read again.
    std::optional<InodeLocks> locks;
    locks.emplace(this, std::initializer_list<uint64_t>{parent, newparent, whiteout});
    auto src = LookupEntry(parent, name);
    if (!src) return src.error();
    auto dst = LookupEntry(newparent, newname);
    if (!dst && ToErrno(dst.error()) != ENOENT) return dst.error();
    uint64_t dst_ino = dst ? dst->ino : 0;
    if (!locks->TryAdd(src->ino) || (dst_ino != 0 && !locks->TryAdd(dst_ino))) {
      locks.reset();
      locks.emplace(this, std::initializer_list<uint64_t>{parent, newparent, src->ino, dst_ino, whiteout});
      auto src2 = LookupEntry(parent, name);
      auto dst2 = LookupEntry(newparent, newname);
      if (!src2 || src2->ino != src->ino) continue;
      if ((dst2 ? dst2->ino : 0) != dst_ino) continue;
    }
    uint64_t ino = src->ino;
    if (dst_ino == ino) {
      return Status::OK();  // both names link the same inode: nothing to do
    }
    Txn txn(this);
    auto ppr = txn.Attr(parent);
    if (!ppr) return ppr.error();
    auto npr = txn.Attr(newparent);
    if (!npr) return npr.error();
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    InodeAttr* pp = *ppr;
    InodeAttr* np = *npr;
    InodeAttr* a = *ar;
    InodeAttr* d = nullptr;
    if (dst_ino != 0) {
      auto dr = txn.Attr(dst_ino);
      if (!dr) return dr.error();
      d = *dr;
    }
    if (!np->IsDir()) return Errno(ENOTDIR);
    if (np->nlink == 0) return Errno(ENOENT);
    // A directory may not move below itself: walk up from the new parent
    // (ancestors outside the locked set are read from the KV, which a commit
    // updates before the cache).
    auto parent_of = [&](uint64_t p) -> Result<uint64_t> {
      if (p == parent) return pp->parent;
      if (p == newparent) return np->parent;
      if (p == ino) return a->parent;
      if (p == dst_ino && d != nullptr) return d->parent;
      std::string v;
      Status g = db_->Get(ReadOptions(), InodeKey(p), &v);
      if (!g.ok()) return Err(std::move(g));
      InodeAttr pa;
      g = DecodeInodeAttr(p, v, &pa);
      if (!g.ok()) return Err(std::move(g));
      return pa.parent;
    };
    auto below = [&](uint64_t moved, uint64_t start) -> Result<bool> {
      uint64_t p = start;
      for (int depth = 0; p != kRootIno && depth < 100000; ++depth) {
        if (p == moved) return true;
        auto up = parent_of(p);
        if (!up) return Err(up.error());
        if (*up == p) break;
        p = *up;
      }
      return false;
    };
    if (a->IsDir() && parent != newparent) {
      auto b = below(ino, newparent);
      if (!b) return b.error();
      if (*b) return Errno(EINVAL, "rename into own subtree");
    }
    if ((flags & RENAME_EXCHANGE) && d != nullptr && d->IsDir() && parent != newparent) {
      auto b = below(dst_ino, parent);
      if (!b) return b.error();
      if (*b) return Errno(EINVAL, "rename into own subtree");
    }
    if ((flags & RENAME_EXCHANGE) && d == nullptr) return Errno(ENOENT);
    MXFS_RETURN_IF_ERROR(CheckPerm(req, *pp, W_OK | X_OK));
    MXFS_RETURN_IF_ERROR(CheckPerm(req, *np, W_OK | X_OK));
    if (parent != newparent) {
      // A directory that changes parent rewrites its "..": write on it.
      if (a->IsDir()) MXFS_RETURN_IF_ERROR(CheckPerm(req, *a, W_OK));
      if ((flags & RENAME_EXCHANGE) && d->IsDir()) MXFS_RETURN_IF_ERROR(CheckPerm(req, *d, W_OK));
    }
    MXFS_RETURN_IF_ERROR(CheckSticky(req, *pp, *a));
    if (d != nullptr) MXFS_RETURN_IF_ERROR(CheckSticky(req, *np, *d));
    int64_t now = NowNs();
    if (flags & RENAME_EXCHANGE) {
      txn.batch.Put(DentryKey(parent, name), EncodeDirEntry(DirEntry{dst_ino, ModeToDirType(d->mode)}));
      txn.batch.Put(DentryKey(newparent, newname), EncodeDirEntry(DirEntry{ino, ModeToDirType(a->mode)}));
      if (parent != newparent) {
        if (a->IsDir()) { pp->nlink--; np->nlink++; a->parent = newparent; }
        if (d->IsDir()) { np->nlink--; pp->nlink++; d->parent = parent; }
      }
      a->ctime_ns = d->ctime_ns = now;
    } else {
      if (d != nullptr) {
        if (flags & RENAME_NOREPLACE) return Errno(EEXIST);
        if (a->IsDir() && !d->IsDir()) return Errno(ENOTDIR);
        if (!a->IsDir() && d->IsDir()) return Errno(EISDIR);
        if (d->IsDir()) {
          std::string prefix = DentryPrefix(dst_ino);
          auto it = db_->NewIterator(ScanOf(prefix));
          it->Seek(prefix);
          if (it->Valid() && it->key().starts_with(prefix)) return Errno(ENOTEMPTY);
          MXFS_RETURN_IF_ERROR(it->status());
          np->nlink--;
        }
        MXFS_RETURN_IF_ERROR(DropLink(&txn, dst_ino, d));
      }
      if (whiteout != 0) {
        const fuse_ctx* ctx = fuse_req_ctx(req);
        InodeAttr w;
        w.mode = S_IFCHR;  // mode 0, device 0/0: the kernel's whiteout
        w.uid = ctx->uid;
        w.gid = ctx->gid;
        w.nlink = 1;
        w.atime_ns = w.mtime_ns = w.ctime_ns = w.crtime_ns = now;
        w.generation = generation_;
        w.parent = parent;
        txn.NewAttr(whiteout, w);
        txn.batch.Put(DentryKey(parent, name), EncodeDirEntry(DirEntry{whiteout, ModeToDirType(w.mode)}));
      } else {
        txn.batch.Delete(DentryKey(parent, name));
      }
      txn.batch.Put(DentryKey(newparent, newname), EncodeDirEntry(DirEntry{ino, ModeToDirType(a->mode)}));
      if (a->IsDir() && parent != newparent) {
        pp->nlink--;
        np->nlink++;
        a->parent = newparent;
      }
      a->ctime_ns = now;
    }
    pp->mtime_ns = pp->ctime_ns = now;
    np->mtime_ns = np->ctime_ns = now;
    MXFS_RETURN_IF_ERROR(Commit(&txn));
    if (whiteout != 0) inode_count_.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }
  return Errno(EAGAIN);
}

void MatrixFs::Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
                      const char* newname, unsigned int flags) {
  Count(kOpRename);
  Status s = DoRename(req, parent, name, newparent, newname, flags);
  fuse_reply_err(req, ToErrno(s));
}

}  // namespace mxfs
