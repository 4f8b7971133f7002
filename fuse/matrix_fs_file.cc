// MatrixFs's file operations: open (O_TRUNC, passthrough), read, write,
// flush, release, fsync, fallocate and lseek, including the .matrixfs
// files' reads and control writes.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <utility>

#include "base/kill_point.h"
#include "base/logging.h"
#include "fuse/kernel_channel.h"
#include "fuse/matrix_fs_internal.h"

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10
#endif

namespace mxfs {

void MatrixFs::Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(kOpOpen);
  // -o noopen: the first OPEN is refused with ENOSYS and the kernel sends
  // no OPEN or RELEASE again ("noopen" in fuse/matrix_fs.h).
  if (NoOpen()) return (void)fuse_reply_err(req, ENOSYS);
  if (IsVirtual(ino)) {
    if (ino != kControlIno && (fi->flags & O_ACCMODE) != O_RDONLY) return (void)fuse_reply_err(req, EACCES);
    auto h = std::make_unique<DirHandle>();
    if (ino != kControlIno) h->content = VirtualContent(ino);
    fi->fh = AddHandle(std::move(h));
    fi->direct_io = 1;
    fi->nonseekable = 0;
    fi->noflush = 1;  // nothing cached, nothing to flush
    if (fuse_reply_open(req, fi) != 0) DropHandle(fi->fh);
    return;
  }
  Status s;
  bool drop_cache = false;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) {
      s = a.error();
    } else if (a->IsDir() && (fi->flags & O_ACCMODE) != O_RDONLY) {
      s = Errno(EISDIR);
    } else if (Status p = CheckPerm(req, *a, OpenMask(fi->flags)); !p.ok()) {
      s = p;
    } else {
      Node& n = NodeFor(ino);
      n.open_count++;
      drop_cache = std::exchange(n.direct_written, false);
    }
  }
  if (s.ok() && (fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY) {
    if (cfg_.read_only) {
      s = Errno(EROFS);
    } else {
      struct stat st;
      std::memset(&st, 0, sizeof(st));
      InodeAttr out;
      s = DoSetAttr(req, ino, &st, FUSE_SET_ATTR_SIZE, KernelChannel::KillSuidGid(KernelChannel::Op::kOpen), &out);
    }
    if (!s.ok()) DropOpen(ino, fi->fh);
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fi->fh = (fi->flags & O_ACCMODE) != O_RDONLY ? kWritableFh : 0;
  // Opened for writing while the data directory is full: the attributes
  // the kernel holds (from before) must not spare write(2) its GETATTR.
  // (Attributes only: the kernel waits for no page, so the wait is short.)
  if (fi->fh == kWritableFh && space_.Full() && inval_) {
    inval_->Invalidate(ino, -1, 0, std::chrono::milliseconds(100));
  }
  fi->keep_cache = !drop_cache;
  fi->noflush = NoFlush();
  if (cfg_.passthrough && !cfg_.read_only) {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    int32_t id = a ? PassthroughOpen(ino, *a) : 0;
    if (id != 0) {
      fi->fh = kPassthroughFh;
      fi->keep_cache = 0;
      KernelChannel::SetOpenBackingId(id);
    }
  }
  if (fuse_reply_open(req, fi) != 0) DropOpen(ino, fi->fh);
}

void MatrixFs::Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Count(kOpRead);
  // A READ without O_DIRECT fills the kernel's page cache (also an mmap's
  // fault: one of an O_DIRECT descriptor's mappings is not told apart).
  if (!IsVirtual(ino) && (fi == nullptr || (fi->flags & O_DIRECT) == 0)) CacheTraffic(ino);
  if (IsVirtual(ino)) {
    std::string content;
    if (IsSnapshot(ino)) {
      SnapshotContent(ino, &content);  // a snapshot gone reads empty
    } else {
      DirHandle* h = GetHandle(fi->fh);
      if (h == nullptr) return (void)fuse_reply_err(req, EBADF);
      content = h->content;
    }
    std::string chunk;
    if (static_cast<uint64_t>(off) < content.size()) chunk = content.substr(off, size);
    fuse_reply_buf(req, chunk.data(), chunk.size());
    return;
  }
  std::string data;
  std::shared_ptr<RandomRWFile> obj;
  uint64_t n = 0;
  Status s;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) {
      // An unlinked inode the kernel still reads: gone means zeros.
      Node* node = FindNode(ino);
      if (node == nullptr || !node->deleted) s = a.error();
    } else if (a->IsDir()) {
      s = Errno(EISDIR);
    } else if (static_cast<uint64_t>(off) < a->size) {
      n = std::min<uint64_t>(size, a->size - off);
      if (a->storage == Storage::kInline) {
        s = ReadInline(ino, *a, off, n, &data);
      } else {
        auto o = ObjectFor(ino, false);
        if (o) obj = *o;
        else s = o.error();
      }
    }
  }
  // Object reads go into a buffer that is not zero-filled first (up to
  // 1 MiB per request): only a short read's tail is cleared.
  std::unique_ptr<char[]> scratch;
  const char* reply = data.data();
  size_t reply_len = data.size();
  if (s.ok() && obj) {
    scratch = std::make_unique_for_overwrite<char[]>(n);
    Slice result;
    s = obj->Read(off, n, &result, scratch.get());
    if (s.ok()) {
      if (result.data() != scratch.get()) std::memmove(scratch.get(), result.data(), result.size());
      if (result.size() < n) std::memset(scratch.get() + result.size(), 0, n - result.size());
      reply = scratch.get();
      reply_len = n;
    }
  }
  if (!s.ok()) return ReplyStatus(req, s);
  bytes_read_.fetch_add(reply_len, std::memory_order_relaxed);
  fuse_reply_buf(req, reply, reply_len);
}

Status MatrixFs::DoWrite(fuse_req_t req, uint64_t ino, const char* buf, size_t size, uint64_t off,
                         bool kill_suidgid, bool writeback) {
  if (off + size < off || off + size > (1ull << 50)) return Errno(EFBIG);
  InodeLocks locks(this, {ino});
  Txn txn(this);
  auto ar = txn.Attr(ino);
  if (!ar) return ar.error();
  InodeAttr* a = *ar;
  if (!a->IsReg()) return Errno(EINVAL);
  const uint64_t end = off + size;
  const int64_t now = NowNs();
  // A write by a caller without CAP_FSETID drops set-id bits in its own batch.
  const uint32_t killed = kill_suidgid ? KilledSetIdBits(req, *a, false) : 0;
  a->mode &= ~killed;
  // The write-back of cached pages (FUSE_WRITE_CACHE) leaves c/mtime as they
  // are: the kernel stamped them at write(2) and sends them in a SETATTR when
  // they moved. Stamping the write-back's own time, which can come seconds
  // later (at close, or from the flusher), made the times change across a
  // remount for a write in the create's clock tick, whose times stay clean.
  const auto stamp = [&](InodeAttr* t) {
    if (!writeback || killed != 0) t->mtime_ns = t->ctime_ns = now;
  };
  if (a->storage == Storage::kInline && end <= sb_.inline_limit) {
    MXFS_RETURN_IF_ERROR(WriteInline(&txn, ino, a, off, Slice(buf, size)));
    stamp(a);
    return Commit(&txn);
  }
  std::shared_ptr<RandomRWFile> obj;
  bool migrated = false;
  if (a->storage == Storage::kInline) {
    MXFS_RETURN_IF_ERROR(MigrateToObject(&txn, ino, a, &obj));
    migrated = true;
  } else {
    auto o = ObjectFor(ino, false);
    if (!o) return o.error();
    obj = *o;
  }
  // A new object (migrated) is removed by the Txn unless it commits.
  Status s = obj->Write(off, Slice(buf, size));
  if (s.ok() && migrated) s = obj->Sync();
  if (!s.ok()) return s;
  if (!migrated && end <= a->size && killed == 0 && writeback_cache_.load(std::memory_order_relaxed)) {
    // No visible metadata change the kernel does not track itself (with the
    // writeback cache it owns mtime and sends it in a later setattr).
    // Without it (-o passthrough) the kernel takes the times from the daemon,
    // so they are committed below like any other change.
    if (Node* n = FindNode(ino)) stamp(&n->attr);
    return Status::OK();
  }
  a->size = std::max(a->size, end);
  stamp(a);
  return Commit(&txn);
}

void MatrixFs::Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  Count(kOpWrite);
  if (IsVirtual(ino)) {
    if (VirtualFileOf(ino) != kControlIno) return (void)fuse_reply_err(req, EACCES);
    Status s = ControlCommand(req, Slice(buf, size));
    if (!s.ok()) return ReplyStatus(req, s);
    fuse_reply_write(req, size);
    return;
  }
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  // A write(2) the kernel sends itself may be refused for want of space; the
  // write-back of cached pages was acknowledged already: the reserve holds it.
  const bool writeback = fi != nullptr && fi->writepage;
  Status s = writeback ? Status::OK() : Admit(size);
  if (s.ok()) {
    s = DoWrite(req, ino, buf, size, static_cast<uint64_t>(off), KernelChannel::KillSuidGid(KernelChannel::Op::kWrite),
                writeback);
  }
  if (writeback) Consumed(size);
  if (!s.ok()) return ReplyStatus(req, s);
  bytes_written_.fetch_add(size, std::memory_order_relaxed);
  // A direct write, in every mode: a buffered write is FUSE_WRITE_CACHE
  // (writeback cache) or written through pages the kernel keeps current.
  if (fi != nullptr && !fi->writepage && (fi->flags & O_DIRECT) != 0) {
    DirectWritten(ino, off, size);
  } else {
    CacheTraffic(ino);
  }
  fuse_reply_write(req, size);
}

void MatrixFs::CacheTraffic(uint64_t ino) {
  InodeLocks locks(this, {ino});
  if (Node* n = FindNode(ino)) n->cache_gen++;
}

void MatrixFs::DirectWritten(uint64_t ino, uint64_t, size_t) {
  uint64_t gen = 0;
  {
    InodeLocks locks(this, {ino});
    Node* n = FindNode(ino);
    if (n == nullptr || n->cache_gen == n->clean_gen) return;  // nothing cached
    n->direct_written = true;
    gen = n->cache_gen;
  }
  // The whole file, not only the range written: once that is done with no
  // page-cache traffic meanwhile, the kernel caches nothing of the inode and
  // the next direct writes need nothing (Node::cache_gen). Long enough for
  // the kernel to drop the pages however busy the machine is, short enough
  // that a worker is not held long if the kernel waits for a READ no worker
  // is free to serve (fuse/page_cache_inval.h).
  constexpr std::chrono::milliseconds kWait{200};
  if (!inval_ || !inval_->Invalidate(ino, 0, 0, kWait)) return;
  InodeLocks locks(this, {ino});
  Node* n = FindNode(ino);
  if (n != nullptr && n->cache_gen == gen) n->clean_gen = gen;
}

// Every WRITE was committed before its reply, and the kernel sends FLUSH
// only after the writeback of the file's dirty pages has been answered, so
// there is nothing left to do here. FLUSH is still answered, not refused
// with ENOSYS: its reply is the only thing that tells close(2) the daemon
// got the data. Linux (6.13-6.18 at least, fuse_send_writepage) drops a
// writeback WRITE it cannot queue on a broken connection without recording
// an error, so when the daemon dies during a close, close would return 0
// for data that never arrived; a FLUSH that fails with ENOTCONN makes it
// return the error (RELIABILITY.md, 2026-11-23).
//
// Without the writeback cache (-o passthrough, ro) there is no write-back
// WRITE: every write(2) had its reply before it returned. The OPEN and
// CREATE replies then carry FOPEN_NOFLUSH and close(2) sends nothing (the
// kernel honours the flag only without the writeback cache, fuse_flush).
//
// -o noflush (unsafe, off by default) refuses the first FLUSH with ENOSYS,
// after which the kernel sends none: close(2) still waits for the
// write-back and reports the errors the daemon answered, but no longer a
// daemon that died during it (see above). fsync(2) still does.
void MatrixFs::Flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, cfg_.no_flush ? ENOSYS : 0); }

void MatrixFs::DropOpen(uint64_t ino, uint64_t fh) {
  if (IsVirtual(ino)) {
    DropHandle(fh);
  } else {
    InodeLocks locks(this, {ino});
    Node* n = FindNode(ino);
    if (n != nullptr && fh == kPassthroughFh && n->pt_opens == 1) {
      // The last passthrough open: what the kernel wrote becomes the inode's
      // size and mtime (reconciled while pt_opens still counts this open),
      // then the backing id goes (files the kernel still holds keep their
      // own reference to the backing file).
      Status s = CommitReconciled(ino);
      if (!s.ok()) {
        MXFS_LOG_ERROR("inode %" PRIu64 ": committing the size written through passthrough: %s (the next mount "
                       "takes it from the object)", ino, s.ToString().c_str());
      }
      s = channel_.BackingClose(n->backing_id);
      if (!s.ok()) MXFS_LOG_WARN("inode %" PRIu64 ": %s", ino, s.ToString().c_str());
      n->backing_id = 0;
      n->pt_opens = 0;
    } else if (n != nullptr && fh == kPassthroughFh && n->pt_opens > 1) {
      n->pt_opens--;
    }
    if (n != nullptr && n->open_count > 0) {
      n->open_count--;
      if (n->open_count == 0) {
        MaybeReclaim(ino);
        if (n->deleted) n->object.reset();
        if (n->nlookup == 0) StripeFor(ino).nodes.erase(ino);
      }
    }
  }
}

void MatrixFs::Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  DropOpen(ino, fi->fh);
  fuse_reply_err(req, 0);
}

void MatrixFs::Fsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
  Count(kOpFsync);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, 0);
  std::shared_ptr<RandomRWFile> obj;
  Status s;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (a && a->storage == Storage::kObject) {
      auto o = ObjectFor(ino, false);
      if (o) obj = *o;
      else s = o.error();
    }
  }
  // Inline data and all metadata are durable when their operation returns.
  // The kernel does not forward fsync to a passthrough file's backing file:
  // this Sync (the object's whole page cache) makes its data durable, then
  // the size and mtime it reached are committed.
  if (s.ok() && obj) s = obj->Sync();
  if (s.ok() && obj && cfg_.passthrough) {
    InodeLocks locks(this, {ino});
    s = CommitReconciled(ino);
  }
  fuse_reply_err(req, ToErrno(s));
}

// fallocate modes (as on ext4): 0 allocates and may grow the file;
// KEEP_SIZE allocates without changing the size (beyond the end too);
// PUNCH_HOLE|KEEP_SIZE makes a hole; ZERO_RANGE (with or without
// KEEP_SIZE) makes the range read as zeros and, without KEEP_SIZE, grows
// the file to its end. Inline files have no allocation to speak of:
// allocating is only the size change there, and zeroing drops their blocks
// (a hole, as ext4's unwritten extents are for SEEK_DATA). The object of a
// large file is changed first and the inode committed after, as for a
// write: a crash in between leaves an object at least as large as the
// inode, which the next mount takes over (Startup).
void MatrixFs::Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, fuse_file_info*) {
  Count(kOpFallocate);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, EOPNOTSUPP);
  const bool keep = (mode & FALLOC_FL_KEEP_SIZE) != 0;
  const int kind = mode & ~FALLOC_FL_KEEP_SIZE;
  if (kind != 0 && kind != FALLOC_FL_ZERO_RANGE && mode != (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
    return (void)fuse_reply_err(req, EOPNOTSUPP);
  }
  if (offset < 0 || length <= 0) return (void)fuse_reply_err(req, EINVAL);
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  if (mode == 0) {
    if (Status s = Admit(static_cast<uint64_t>(length)); !s.ok()) return ReplyStatus(req, s);
  }
  Status s = [&]() -> Status {
    uint64_t off = static_cast<uint64_t>(offset), len = static_cast<uint64_t>(length);
    if (off + len > (1ull << 50)) return Errno(EFBIG);
    const uint64_t end = off + len;
    InodeLocks locks(this, {ino});
    Txn txn(this);
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    InodeAttr* a = *ar;
    if (!a->IsReg()) return Errno(a->IsDir() ? EISDIR : ENODEV);
    std::vector<uint64_t> drop;
    const int64_t now = NowNs();
    const uint64_t old_size = a->size;
    const bool had_object = a->storage == Storage::kObject;
    // Growing first: it may move an inline file into its object, which
    // copies the blocks as committed, so the zeroing below must come after.
    if (!keep && kind != FALLOC_FL_PUNCH_HOLE && end > a->size) {
      MXFS_RETURN_IF_ERROR(Truncate(&txn, ino, a, end, &drop));
    }
    if (kind == 0) {
      if (a->storage == Storage::kObject) {
        auto o = ObjectFor(ino, false);
        if (!o) return o.error();
        Status as = (*o)->Allocate(mode, off, len);
        if (!as.ok()) {
          // Refused (ENOSPC, EFBIG): an object this Txn made goes with it;
          // one that grew for nothing is cut back to the size its inode keeps.
          if (had_object && a->size > old_size) (*o)->Truncate(old_size).IgnoreError();
          return as;
        }
        // The object is allocated (and maybe longer), the inode not yet
        // committed: the next mount takes the object's size over.
        MXFS_KILL_POINT("fuse.fallocate.after_object");
      }
      if (a->size != old_size) a->mtime_ns = now;
      a->ctime_ns = now;
    } else {
      // PUNCH_HOLE and ZERO_RANGE: the bytes inside the old size read as
      // zeros (past it they already do).
      const uint64_t zend = std::min(end, old_size);
      if (off < zend) {
        if (a->storage == Storage::kInline) {
          MXFS_RETURN_IF_ERROR(PunchInline(&txn, ino, *a, off, zend - off));
        } else {
          auto o = ObjectFor(ino, false);
          if (!o) return o.error();
          MXFS_RETURN_IF_ERROR((*o)->Allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, zend - off));
          // Punch or zero range: the object's range is a hole (and it may
          // have grown), the inode not yet committed.
          MXFS_KILL_POINT("fuse.hole.after_object");
        }
      }
      a->mtime_ns = a->ctime_ns = now;
    }
    return Commit(&txn);
  }();
  if (s.ok() && mode != 0) Freed();
  fuse_reply_err(req, ToErrno(s));
}

void MatrixFs::Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info*) {
  Count(kOpOther);
  if (whence != SEEK_DATA && whence != SEEK_HOLE) return (void)fuse_reply_err(req, EINVAL);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, ENXIO);
  // Under the writeback cache, bytes written since the last write-back are
  // only in the kernel's pages (the size too): have the kernel write back
  // the file from off on before answering (fuse/page_cache_inval.h; the
  // wait is bounded for the reason given there).
  if (writeback_cache_.load(std::memory_order_relaxed) && inval_ && off >= 0) {
    inval_->Invalidate(ino, off, 0, std::chrono::seconds(2));
  }
  std::shared_ptr<RandomRWFile> obj;
  off_t result = -1;
  Status s;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) {
      s = a.error();
    } else if (off < 0 || static_cast<uint64_t>(off) >= a->size) {
      s = Errno(ENXIO);
    } else if (a->storage == Storage::kObject) {
      auto o = ObjectFor(ino, false);
      if (o) obj = *o;
      else s = o.error();
    } else {
      const uint64_t bs = sb_.block_size;
      const uint64_t pos = static_cast<uint64_t>(off);
      std::string prefix = BlockPrefix(ino);
      auto it = db_->NewIterator(ScanOf(prefix));
      it->Seek(BlockKey(ino, pos / bs));
      if (whence == SEEK_DATA) {
        s = Errno(ENXIO);
        for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
          uint64_t bstart = BlockKeyBlock(it->key()) * bs;
          if (bstart + it->value().size() > pos && it->value().size() > 0) {
            result = static_cast<off_t>(std::max(pos, bstart));
            s = Status::OK();
            break;
          }
        }
      } else {
        uint64_t p = pos;
        for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
          uint64_t bstart = BlockKeyBlock(it->key()) * bs;
          if (bstart > p) break;
          uint64_t bend = bstart + bs;
          if (bend > p) p = bend;
        }
        result = static_cast<off_t>(std::min(p, a->size));
      }
      if (s.ok() && !it->status().ok()) s = it->status();
    }
  }
  if (s.ok() && obj) {
    result = ::lseek(obj->fd(), off, whence);
    if (result < 0) s = Errno(errno);
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_lseek(req, result);
}

}  // namespace mxfs
