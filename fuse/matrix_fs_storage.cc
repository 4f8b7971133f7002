// Where MatrixFs keeps a file's bytes: small files inline as F blocks in
// the KV, large ones in an object under data/ (MigrateToObject switches a
// file over, Truncate cuts or grows either kind), and the passthrough
// bookkeeping that takes the object's size and mtime back into the inode
// (ReconcileObject, CommitReconciled, PassthroughOpen).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "base/logging.h"
#include "fuse/kernel_channel.h"
#include "fuse/matrix_fs_internal.h"

namespace mxfs {

namespace {

// One block of size bs that a byte range [off, end) touches: its number b,
// its first byte start, and the part [lo, hi) of it (offsets in the block)
// inside the range.
struct BlockSpan {
  uint64_t b, start, lo, hi;
};

// Calls fn(span) for each block [off, end) touches, in order; stops at the
// first error fn returns.
template <typename Fn>
Status ForEachBlockSpan(uint64_t off, uint64_t end, uint64_t bs, Fn&& fn) {
  for (uint64_t b = off / bs; b * bs < end; ++b) {
    const uint64_t start = b * bs;
    MXFS_RETURN_IF_ERROR(fn(BlockSpan{b, start, std::max(off, start) - start, std::min(end, start + bs) - start}));
  }
  return Status::OK();
}

}  // namespace

std::string MatrixFs::ObjectPath(uint64_t ino) const {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "/%016" PRIx64, ino);
  return DataPath(datadir_) + buf;
}

void MatrixFs::RemoveObject(uint64_t ino) {
  // A failure leaves garbage that the next mount collects.
  ::unlink(ObjectPath(ino).c_str());
}

void MatrixFs::RemoveDeletedObject(uint64_t ino) {
  // Full: the space is wanted now.
  if (reaper_ == nullptr || space_.Full()) return RemoveObject(ino);
  reaper_->Add(ObjectPath(ino));
}

bool MatrixFs::ReapObjects() {
  // Drain returns after the reaper's on_idle (Freed) has reread the space.
  return reaper_ != nullptr && reaper_->Drain();
}

void MatrixFs::DropNewObject(uint64_t ino) {
  if (Node* n = FindNode(ino)) n->object.reset();
  RemoveObject(ino);
}

Status MatrixFs::Admit(uint64_t bytes) {
  Status s = space_.Admit(bytes);
  // Queued objects of deleted files hold space that is as good as free.
  if (!s.ok() && ReapObjects()) s = space_.Admit(bytes);
  if (space_.TakeBecameFull()) {
    ReapObjects();  // the queued objects may be all it takes
    if (space_.Full()) InvalidateOpenAttrs();
  }
  return s;
}

void MatrixFs::Consumed(uint64_t bytes) {
  space_.Consume(bytes);
  if (space_.TakeBecameFull()) {
    ReapObjects();  // the queued objects may be all it takes
    if (space_.Full()) InvalidateOpenAttrs();
  }
}

void MatrixFs::Freed() {
  space_.Refresh();
  // DATADIR/reserve again, once it fits twice over beside the guard's reserve.
  if (cfg_.read_only || space_.available() < 2 * reserve_file_bytes_ ||
      !reserve_file_missing_.exchange(false, std::memory_order_relaxed)) {
    return;
  }
  const std::string path = ReservePath(datadir_);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  int err = fd < 0 ? errno : ::posix_fallocate(fd, 0, static_cast<off_t>(reserve_file_bytes_));
  if (fd >= 0 && err == 0 && ::fsync(fd) != 0) err = errno;
  if (fd >= 0) ::close(fd);
  if (err != 0) {
    ::unlink(path.c_str());
    reserve_file_missing_.store(true, std::memory_order_relaxed);
    MXFS_LOG_WARN("%s: cannot make %s (%" PRIu64 " bytes): %s", datadir_.c_str(), path.c_str(), reserve_file_bytes_,
                  std::strerror(err));
  }
  space_.Refresh();
}

// The guard just turned full: every open file's cached attributes are
// dropped, so the next buffered write(2) to it asks GETATTR (which GetAttr
// refuses with ENOSPC while full) instead of trusting a day-long timeout.
void MatrixFs::InvalidateOpenAttrs() {
  if (!inval_) return;
  std::vector<uint64_t> open;
  for (auto& st : stripes_) {
    std::lock_guard<std::mutex> l(st.mu);
    for (const auto& [ino, n] : st.nodes) {
      if (InUse(n)) open.push_back(ino);
    }
  }
  // Attributes only (offset -1): queued, not waited for.
  for (uint64_t ino : open) inval_->Invalidate(ino, -1, 0, std::chrono::milliseconds(0));
  MXFS_LOG_WARN("%s: the filesystem is full (%s): new data gets ENOSPC until space is freed",
                datadir_.c_str(), space_.Describe().c_str());
}

Result<std::shared_ptr<RandomRWFile>> MatrixFs::ObjectFor(uint64_t ino, bool create) {
  Node& n = NodeFor(ino);
  if (n.object) return n.object;
  auto f = fs_->NewRandomRWFile(ObjectPath(ino), create);
  if (!f) return Err(f.error());
  n.object = std::shared_ptr<RandomRWFile>(std::move(*f));
  return n.object;
}

Status MatrixFs::ReadInline(uint64_t ino, const InodeAttr&, uint64_t off, size_t n, std::string* out) {
  AssertHeld(ino);
  out->assign(n, '\0');
  if (n == 0) return Status::OK();
  const uint64_t bs = sb_.block_size;
  const uint64_t end = off + n;
  std::string prefix = BlockPrefix(ino);
  auto it = db_->NewIterator(ScanOf(prefix));
  for (it->Seek(BlockKey(ino, off / bs)); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    uint64_t bstart = BlockKeyBlock(it->key()) * bs;
    if (bstart >= end) break;
    Slice v = it->value();
    uint64_t lo = std::max(off, bstart);
    uint64_t hi = std::min(end, bstart + v.size());
    if (hi > lo) std::memcpy(out->data() + (lo - off), v.data() + (lo - bstart), hi - lo);
  }
  return it->status();
}

Status MatrixFs::WriteInline(Txn* txn, uint64_t ino, InodeAttr* a, uint64_t off, const Slice& data) {
  AssertHeld(ino);
  const uint64_t bs = sb_.block_size;
  const uint64_t end = off + data.size();
  MXFS_RETURN_IF_ERROR(ForEachBlockSpan(off, end, bs, [&](const BlockSpan& sp) -> Status {
    std::string key = BlockKey(ino, sp.b);
    if (sp.lo != 0 || sp.hi != bs) {
      std::string block;
      Status s = db_->Get(ReadOptions(), key, &block);
      if (!s.ok() && !s.IsNotFound()) return s;
      if (block.size() < sp.hi) block.resize(sp.hi, '\0');
      std::memcpy(block.data() + sp.lo, data.data() + (sp.start + sp.lo - off), sp.hi - sp.lo);
      txn->batch.Put(key, block);
    } else {
      txn->batch.Put(key, Slice(data.data() + (sp.start - off), bs));
    }
    return Status::OK();
  }));
  a->size = std::max(a->size, end);
  return Status::OK();
}

Status MatrixFs::MigrateToObject(Txn* txn, uint64_t ino, InodeAttr* a, std::shared_ptr<RandomRWFile>* out) {
  Node& n = NodeFor(ino);
  n.object.reset();
  auto f = fs_->NewRandomRWFile(ObjectPath(ino), true);
  if (!f) return f.error();
  // From here on the object is the Txn's: removed unless the Txn commits.
  txn->CreatedObject(ino);
  std::shared_ptr<RandomRWFile> obj(std::move(*f));
  Status s = obj->Truncate(0);
  if (!s.ok()) return s;
  const uint64_t bs = sb_.block_size;
  std::string prefix = BlockPrefix(ino);
  auto it = db_->NewIterator(ScanOf(prefix));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    s = obj->Write(BlockKeyBlock(it->key()) * bs, it->value());
    if (!s.ok()) return s;
    txn->batch.Delete(it->key());
  }
  if (!it->status().ok()) return it->status();
  s = obj->Truncate(a->size);
  if (!s.ok()) return s;
  a->storage = Storage::kObject;
  n.object = obj;
  *out = std::move(obj);
  return Status::OK();
}

Status MatrixFs::Truncate(Txn* txn, uint64_t ino, InodeAttr* a, uint64_t size,
                          std::vector<uint64_t>* drop_objects) {
  const uint64_t bs = sb_.block_size;
  if (a->storage == Storage::kInline) {
    if (size <= sb_.inline_limit) {
      if (size < a->size) {
        std::string prefix = BlockPrefix(ino);
        auto it = db_->NewIterator(ScanOf(prefix));
        for (it->Seek(BlockKey(ino, (size + bs - 1) / bs)); it->Valid() && it->key().starts_with(prefix);
             it->Next()) {
          txn->batch.Delete(it->key());
        }
        MXFS_RETURN_IF_ERROR(it->status());
        if (size % bs != 0) {
          std::string key = BlockKey(ino, size / bs);
          std::string block;
          Status s = db_->Get(ReadOptions(), key, &block);
          if (s.ok() && block.size() > size % bs) {
            block.resize(size % bs);
            txn->batch.Put(key, block);
          } else if (!s.ok() && !s.IsNotFound()) {
            return s;
          }
        }
      }
      a->size = size;
      return Status::OK();
    }
    std::shared_ptr<RandomRWFile> obj;
    MXFS_RETURN_IF_ERROR(MigrateToObject(txn, ino, a, &obj));
    MXFS_RETURN_IF_ERROR(obj->Truncate(size));
    MXFS_RETURN_IF_ERROR(obj->Sync());
    a->size = size;
    return Status::OK();
  }
  const Node* pn = FindNode(ino);
  if (size == 0 && (pn == nullptr || pn->pt_opens == 0)) {
    // Back to inline; the object goes after the commit. (Not while the
    // kernel writes the object itself through passthrough: then it is cut.)
    a->storage = Storage::kInline;
    a->size = 0;
    drop_objects->push_back(ino);
    return Status::OK();
  }
  if (size > a->size) {
    // Growing: the object first, then the size commits.
    auto obj = ObjectFor(ino, false);
    if (!obj) return obj.error();
    MXFS_RETURN_IF_ERROR((*obj)->Truncate(size));
    MXFS_RETURN_IF_ERROR((*obj)->Sync());
  }
  // Shrinking: DoSetAttr cuts the object after the smaller size is
  // committed, so a crash in between leaves bytes past the end (Startup cuts
  // them off), never an object shorter than its inode says.
  a->size = size;
  return Status::OK();
}

Status MatrixFs::PunchInline(Txn* txn, uint64_t ino, const InodeAttr& a, uint64_t off, uint64_t len) {
  AssertHeld(ino);
  const uint64_t bs = sb_.block_size;
  const uint64_t end = std::min(a.size, off + len);
  return ForEachBlockSpan(off, end, bs, [&](const BlockSpan& sp) -> Status {
    std::string key = BlockKey(ino, sp.b);
    std::string block;
    Status s = db_->Get(ReadOptions(), key, &block);
    if (s.IsNotFound()) return Status::OK();
    MXFS_RETURN_IF_ERROR(s);
    if (sp.lo == 0 && sp.hi >= block.size()) {
      txn->batch.Delete(key);
    } else if (sp.lo < block.size()) {
      std::memset(block.data() + sp.lo, 0, std::min<uint64_t>(sp.hi, block.size()) - sp.lo);
      txn->batch.Put(key, block);
    }
    return Status::OK();
  });
}

void MatrixFs::ReconcileObject(Node* n) {
  if (!n->object || n->attr.storage != Storage::kObject) return;
  struct stat ost;
  if (::fstat(n->object->fd(), &ost) != 0) return;  // the attributes stay as recorded
  if (static_cast<uint64_t>(ost.st_size) > n->attr.size) {
    n->attr.size = static_cast<uint64_t>(ost.st_size);
    n->pt_dirty = true;
  }
  const int64_t mtime = FromTimespec(ost.st_mtim);
  if (mtime != n->pt_mtime_ns) {
    // Written through the kernel since we last looked (or cut by Truncate,
    // which sets mtime to about the same time anyway).
    n->pt_mtime_ns = mtime;
    n->attr.mtime_ns = n->attr.ctime_ns = mtime;
    n->pt_dirty = true;
  }
}

Status MatrixFs::CommitReconciled(uint64_t ino) {
  Node* n = FindNode(ino);
  if (n == nullptr || n->deleted || !n->have_attr) return Status::OK();
  if (n->pt_opens > 0) ReconcileObject(n);
  if (!n->pt_dirty) return Status::OK();
  Txn txn(this);
  auto a = txn.Attr(ino);
  if (!a) return a.error();
  return Commit(&txn);
}

int32_t MatrixFs::PassthroughOpen(uint64_t ino, const InodeAttr& a) {
  Node* n = FindNode(ino);
  if (n == nullptr) return 0;
  if (n->pt_opens > 0) {
    // Every open of an inode in passthrough mode must be (the kernel refuses
    // a cached open meanwhile, and the other way round).
    n->pt_opens++;
    return n->backing_id;
  }
  if (!cfg_.passthrough || !channel_.PassthroughGranted() || passthrough_off_.load() || !a.IsReg() ||
      a.storage != Storage::kObject || n->open_count != 1) {
    return 0;  // not a large file, or normal opens are there: the normal path
  }
  // The data directory is full: the kernel's writes into the object would
  // pass the space guard by and use up its reserve, so the open takes the
  // normal path, where a write gets ENOSPC (fuse/space_guard.h).
  if (space_.Full()) return 0;
  auto obj = ObjectFor(ino, false);
  if (!obj) {
    MXFS_LOG_WARN("inode %" PRIu64 ": no object for passthrough (%s); normal path", ino, obj.error().ToString().c_str());
    return 0;
  }
  struct stat ost;
  if (::fstat((*obj)->fd(), &ost) != 0) return 0;
  auto id = channel_.BackingOpen((*obj)->fd());
  if (!id) {
    if (!passthrough_off_.exchange(true)) {
      MXFS_LOG_ERROR("passthrough off for this mount: %s", id.error().ToString().c_str());
    }
    return 0;
  }
  n->backing_id = *id;
  n->pt_opens = 1;
  n->pt_mtime_ns = FromTimespec(ost.st_mtim);
  return n->backing_id;
}

}  // namespace mxfs
