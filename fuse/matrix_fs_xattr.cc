// MatrixFs's extended attributes (the X keys, with ext4's namespace rules)
// and POSIX ACLs (fuse/posix_acl.h): validation on setxattr, inheritance at
// create, the mode update on chmod.
#include <sys/stat.h>
#include <sys/xattr.h>

#include <cstring>
#include <string_view>

#include "fuse/matrix_fs_internal.h"
#include "fuse/posix_acl.h"

namespace mxfs {

// ---------------------------------------------------------------- xattrs

namespace {
bool IsAclName(const char* name) {
  return std::strcmp(name, kAclAccessXattr) == 0 || std::strcmp(name, kAclDefaultXattr) == 0;
}

// An xattr name must be 1..kMaxXattrNameLen bytes; otherwise ERANGE, as on Linux.
bool XattrNameValid(const char* name) {
  size_t nlen = std::strlen(name);
  return nlen != 0 && nlen <= kMaxXattrNameLen;
}

// Extended attribute namespaces, as on ext4. Before a request reaches the
// daemon the kernel has already applied the namespace rules of fs/xattr.c
// (trusted.* needs CAP_SYS_ADMIN, setting security.* needs it too, user.*
// only on regular files and directories, the mode bits through
// default_permissions). But FUSE hands every name through, so the daemon
// refuses what a kernel filesystem has no handler for: a bare prefix
// ("user.") is EINVAL, names outside the three namespaces are EOPNOTSUPP,
// and so is system.* but the two POSIX ACL names when ACLs are on (-o noacl
// turns them off). Returns 0 or the errno.
int XattrNamespaceErrno(const char* name, bool posix_acl) {
  if (!XattrNameValid(name)) return ERANGE;
  if (posix_acl && IsAclName(name)) return 0;
  size_t nlen = std::strlen(name);
  for (std::string_view prefix : {"user.", "trusted.", "security."}) {
    if (std::strncmp(name, prefix.data(), prefix.size()) == 0) return nlen == prefix.size() ? EINVAL : 0;
  }
  return EOPNOTSUPP;
}

// listxattr shows trusted.* only to privileged callers, as ext4 does (the
// kernel's CAP_SYS_ADMIN is approximated by uid 0: FUSE passes no caps).
bool XattrListable(fuse_req_t req, const Slice& name) {
  return fuse_req_ctx(req)->uid == 0 || !name.starts_with("trusted.");
}

// All names of an inode, NUL-terminated, must fit the kernel's listxattr
// buffer (XATTR_LIST_MAX); a new name that would not fit is ENOSPC, as ext4
// says when an inode's xattr space is full.
constexpr size_t kMaxXattrListLen = 65536;
}  // namespace

void MatrixFs::SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags) {
  Count(kOpXattr);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, EPERM);
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  // With -o noacl, POSIX ACLs are refused (EOPNOTSUPP, all of system.*):
  // storing them as plain bytes would let tools believe the ACL set the mode
  // (cp -a would then skip its chmod); they fall back to the mode bits.
  if (int e = XattrNamespaceErrno(name, AclsOn()); e != 0) return (void)fuse_reply_err(req, e);
  if (size > kMaxXattrValueLen) return (void)fuse_reply_err(req, E2BIG);
  if (Status s = Admit(std::strlen(name) + size + 64); !s.ok()) return ReplyStatus(req, s);
  if (Status p = CheckXattrPerm(req, ino, name, true); !p.ok()) return ReplyStatus(req, p);
  Status s = [&]() -> Status {
    InodeLocks locks(this, {ino});
    Txn txn(this);
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    if (IsAclName(name)) {
      MXFS_RETURN_IF_ERROR(SetAcl(req, ino, *ar, std::strcmp(name, kAclAccessXattr) == 0, Slice(value, size),
                                  &txn.batch));
      (*ar)->ctime_ns = NowNs();
      return Commit(&txn);
    }
    std::string key = XattrKey(ino, name);
    std::string old;
    Status g = db_->Get(ReadOptions(), key, &old);
    if (!g.ok() && !g.IsNotFound()) return g;
    if ((flags & XATTR_CREATE) && g.ok()) return Errno(EEXIST);
    if ((flags & XATTR_REPLACE) && g.IsNotFound()) return Errno(ENODATA);
    if (g.IsNotFound()) {
      std::string prefix = XattrPrefix(ino);
      size_t list_len = std::strlen(name) + 1;
      auto it = db_->NewIterator(ScanOf(prefix));
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
        list_len += it->key().size() - prefix.size() + 1;
      }
      if (!it->status().ok()) return it->status();
      if (list_len > kMaxXattrListLen) return Errno(ENOSPC, "the inode's xattr names would exceed 64 KiB");
    }
    txn.batch.Put(key, Slice(value, size));
    (*ar)->ctime_ns = NowNs();
    return Commit(&txn);
  }();
  fuse_reply_err(req, ToErrno(s));
}

void MatrixFs::GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  Count(kOpXattr);
  if (int e = XattrNamespaceErrno(name, AclsOn()); e != 0) return (void)fuse_reply_err(req, e);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, ENODATA);
  if (Status p = CheckXattrPerm(req, ino, name, false); !p.ok()) return ReplyStatus(req, p);
  std::string v;
  Status s = db_->Get(ReadOptions(), XattrKey(ino, name), &v);
  if (s.IsNotFound()) return (void)fuse_reply_err(req, ENODATA);
  if (!s.ok()) return ReplyStatus(req, s);
  if (size == 0) return (void)fuse_reply_xattr(req, v.size());
  if (size < v.size()) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, v.data(), v.size());
}

void MatrixFs::ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Count(kOpXattr);
  std::string out;
  if (!IsVirtual(ino)) {
    std::string prefix = XattrPrefix(ino);
    auto it = db_->NewIterator(ScanOf(prefix));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      Slice n = KeyName(it->key());
      if (!XattrListable(req, n)) continue;
      out.append(n.data(), n.size());
      out.push_back('\0');
    }
    if (!it->status().ok()) return ReplyStatus(req, it->status());
  }
  if (size == 0) return (void)fuse_reply_xattr(req, out.size());
  if (size < out.size()) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, out.data(), out.size());
}

void MatrixFs::RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  Count(kOpXattr);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, EPERM);
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  if (int e = XattrNamespaceErrno(name, AclsOn()); e != 0) return (void)fuse_reply_err(req, e);
  if (Status p = CheckXattrPerm(req, ino, name, true); !p.ok()) return ReplyStatus(req, p);
  Status s = [&]() -> Status {
    InodeLocks locks(this, {ino});
    Txn txn(this);
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    std::string key = XattrKey(ino, name);
    std::string old;
    Status g = db_->Get(ReadOptions(), key, &old);
    // Removing an ACL that is not there succeeds, as on ext4 (the kernel
    // sends REMOVEXATTR for setfacl -b and for an ACL the mode now says).
    if (g.IsNotFound() && IsAclName(name)) return Status::OK();
    if (g.IsNotFound()) return Errno(ENODATA);
    if (!g.ok()) return g;
    txn.batch.Delete(key);
    (*ar)->ctime_ns = NowNs();
    return Commit(&txn);
  }();
  fuse_reply_err(req, ToErrno(s));
}

// ---------------------------------------------------------------- POSIX ACLs

// posix_acl_create: a new inode under a directory with a default ACL gets
// the ACL narrowed by the mode it was created with as its access ACL (kept
// only when it says more than the mode), a directory also the default ACL
// itself, and the umask is ignored; without a default ACL the umask the
// kernel sent (FUSE_DONT_MASK) applies. Symlinks keep 0777, as in the VFS.
Status MatrixFs::NewInodeAcl(fuse_req_t req, uint64_t parent, uint64_t ino, InodeAttr* a, WriteBatch* batch) {
  AssertHeld(parent);
  AssertHeld(ino);
  if (S_ISLNK(a->mode)) return Status::OK();
  std::string def;
  Status g = db_->Get(ReadOptions(), XattrKey(parent, kAclDefaultXattr), &def);
  if (g.IsNotFound()) {
    a->mode &= ~(fuse_req_ctx(req)->umask & 0777u);
    return Status::OK();
  }
  if (!g.ok()) return g;
  auto acl = PosixAcl::Decode(def);
  if (!acl) {
    return Status::Corruption("inode " + std::to_string(parent) + ": stored default ACL: " + acl.error().ToString());
  }
  uint32_t mode = a->mode;
  PosixAcl access;
  if (acl->CreateMasq(&mode, &access)) batch->Put(XattrKey(ino, kAclAccessXattr), access.Encode());
  a->mode = mode;
  if (S_ISDIR(a->mode)) batch->Put(XattrKey(ino, kAclDefaultXattr), def);
  return Status::OK();
}

// setxattr of an ACL, as ext4's set_acl: the value is validated (EINVAL); a
// default ACL only on a directory (EACCES); an access ACL sets the mode's
// permission bits (posix_acl_update_mode) and is stored only when it says
// more than them; set-group-ID drops when the caller is neither in the
// file's group nor root (the kernel's FUSE_SETXATTR_ACL_KILL_SGID rule).
Status MatrixFs::SetAcl(fuse_req_t req, uint64_t ino, InodeAttr* a, bool access, const Slice& value,
                        WriteBatch* batch) {
  AssertHeld(ino);
  auto acl = PosixAcl::Decode(value);
  if (!acl) return acl.error();
  if (!access) {
    if (!a->IsDir()) return Errno(EACCES, "a default ACL on a non-directory");
    batch->Put(XattrKey(ino, kAclDefaultXattr), acl->Encode());
    return Status::OK();
  }
  uint32_t mode = (a->mode & ~0777u) | acl->ModeBits();
  if (acl->EquivalentToMode()) batch->Delete(XattrKey(ino, kAclAccessXattr));
  else batch->Put(XattrKey(ino, kAclAccessXattr), acl->Encode());
  if (fuse_req_ctx(req)->uid != 0 && !CallerInGroup(req, a->gid)) mode &= ~S_ISGID;
  a->mode = mode;
  return Status::OK();
}

// posix_acl_chmod: the kernel leaves the ACL to the filesystem on chmod.
Status MatrixFs::ChmodAcl(uint64_t ino, uint32_t mode, WriteBatch* batch) {
  AssertHeld(ino);
  std::string key = XattrKey(ino, kAclAccessXattr);
  std::string v;
  Status g = db_->Get(ReadOptions(), key, &v);
  if (g.IsNotFound()) return Status::OK();
  if (!g.ok()) return g;
  auto acl = PosixAcl::Decode(v);
  if (!acl) {
    return Status::Corruption("inode " + std::to_string(ino) + ": stored access ACL: " + acl.error().ToString());
  }
  acl->Chmod(mode);
  batch->Put(key, acl->Encode());
  return Status::OK();
}

}  // namespace mxfs
