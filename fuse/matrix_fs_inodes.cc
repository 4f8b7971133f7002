// MatrixFs's inode table (fuse/matrix_fs.h, "In-memory inode table"): the
// stripes and their Nodes, the Txn commit that writes one batch and then
// refreshes the table, attribute loading, inode allocation, and what
// happens to an inode whose last link goes (deleted in the batch, or an
// orphan until its last release).
#include <cinttypes>

#include "base/coding.h"
#include "base/logging.h"
#include "fuse/matrix_fs_internal.h"

namespace mxfs {

namespace {

constexpr uint64_t kInoChunk = 1024;

}  // namespace

size_t MatrixFs::StripeOf(uint64_t ino) {
  return static_cast<size_t>((ino * 0x9E3779B97F4A7C15ull) >> 56) % kStripes;
}

MatrixFs::Node* MatrixFs::FindNode(uint64_t ino) {
  AssertHeld(ino);
  auto& m = StripeFor(ino).nodes;
  auto it = m.find(ino);
  return it == m.end() ? nullptr : &it->second;
}

MatrixFs::Node& MatrixFs::NodeFor(uint64_t ino) {
  AssertHeld(ino);
  return StripeFor(ino).nodes[ino];
}

Result<uint64_t> MatrixFs::AllocIno() {
  std::lock_guard<std::mutex> l(alloc_mu_);
  if (next_ino_ >= ino_limit_) {
    uint64_t limit = ino_limit_ + kInoChunk;
    std::string v;
    PutFixed64(&v, limit);
    Status s = db_->Put(CommitOptions(), SystemKey("next_ino"), v);
    if (!s.ok()) return Err(std::move(s));
    ino_limit_ = limit;
  }
  if (next_ino_ >= kFirstVirtualIno) return Err(Errno(ENOSPC, "inode numbers exhausted"));
  return next_ino_++;
}

Result<InodeAttr> MatrixFs::LoadAttr(uint64_t ino) {
  Node* n = FindNode(ino);
  if (n != nullptr && n->have_attr) {
    if (n->deleted) return Err(Errno(ENOENT, "inode deleted"));
    if (n->pt_opens > 0) ReconcileObject(n);
    return n->attr;
  }
  std::string v;
  Status s = db_->Get(ReadOptions(), InodeKey(ino), &v);
  if (!s.ok()) {
    if (s.IsNotFound()) return Err(Errno(ENOENT, "no inode " + std::to_string(ino)));
    return Err(std::move(s));
  }
  InodeAttr a;
  s = DecodeInodeAttr(ino, v, &a);
  if (!s.ok()) return Err(std::move(s));
  if (n != nullptr) {
    n->attr = a;
    n->have_attr = true;
    if (n->pt_opens > 0) {
      ReconcileObject(n);
      return n->attr;
    }
  }
  return a;
}

Result<DirEntry> MatrixFs::LookupEntry(uint64_t parent, const std::string& name) {
  std::string key = DentryKey(parent, name);
  std::string v;
  Status s = db_->Get(ReadOptions(), key, &v);
  if (!s.ok()) {
    if (s.IsNotFound()) return Err(Errno(ENOENT, "no entry"));
    return Err(std::move(s));
  }
  DirEntry e;
  s = DecodeDirEntry(key, v, &e);
  if (!s.ok()) return Err(std::move(s));
  return e;
}

Status MatrixFs::DeleteInodeKeys(uint64_t ino, WriteBatch* batch, bool orphan) {
  batch->Delete(InodeKey(ino));
  if (orphan) batch->Delete(OrphanKey(ino));
  // One prefix scan each (ScanOf): each ends at its prefix instead of
  // walking the tombstones of the files removed before this one.
  for (const std::string& prefix : {BlockPrefix(ino), XattrPrefix(ino)}) {
    auto it = db_->NewIterator(ScanOf(prefix));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      batch->Delete(it->key());
    }
    MXFS_RETURN_IF_ERROR(it->status());
  }
  return Status::OK();
}

Status MatrixFs::Commit(Txn* txn) {
  for (auto& [ino, a] : txn->attrs_) {
    if (!txn->deleted_.count(ino)) txn->batch.Put(InodeKey(ino), EncodeInodeAttr(a));
  }
  // The last link of these went in this batch (DropLink); an inode with a
  // link has no O key (one is written only with nlink 0, and Link deletes
  // it), so there is none to delete.
  for (uint64_t ino : txn->deleted_) MXFS_RETURN_IF_ERROR(DeleteInodeKeys(ino, &txn->batch, false));
  MXFS_RETURN_IF_ERROR(db_->Write(CommitOptions(), &txn->batch));
  txn->committed_ = true;
  for (auto& [ino, a] : txn->attrs_) {
    if (Node* n = FindNode(ino)) {
      n->attr = a;
      n->have_attr = true;
      n->pt_dirty = false;
      if (txn->deleted_.count(ino)) {
        n->deleted = true;
        n->attr.nlink = 0;
      }
    }
  }
  for (uint64_t ino : txn->deleted_) {
    auto it = txn->attrs_.find(ino);
    if (it != txn->attrs_.end() && it->second.storage == Storage::kObject) {
      if (Node* n = FindNode(ino)) n->object.reset();
      RemoveDeletedObject(ino);
    }
    inode_count_.fetch_sub(1, std::memory_order_relaxed);
  }
  return Status::OK();
}

// Drops one link of ino (its attributes in txn already): at zero links the
// inode is deleted in the same batch, or becomes an orphan while open.
Status MatrixFs::DropLink(Txn* txn, uint64_t ino, InodeAttr* a) {
  if (a->IsDir()) {
    a->nlink = 0;
  } else if (a->nlink > 0) {
    a->nlink--;
  }
  a->ctime_ns = NowNs();
  if (a->nlink > 0) return Status::OK();
  Node* n = FindNode(ino);
  if (n != nullptr && InUse(*n)) {
    txn->batch.Put(OrphanKey(ino), Slice());
  } else {
    txn->Delete(ino);
  }
  return Status::OK();
}

Status MatrixFs::ReclaimInode(uint64_t ino) {
  std::string v;
  bool object = false;
  if (db_->Get(ReadOptions(), InodeKey(ino), &v).ok()) {
    InodeAttr a;
    if (DecodeInodeAttr(ino, v, &a).ok()) object = a.storage == Storage::kObject;
  }
  WriteBatch b;
  MXFS_RETURN_IF_ERROR(DeleteInodeKeys(ino, &b, true));
  MXFS_RETURN_IF_ERROR(db_->Write(CommitOptions(), &b));
  if (object) RemoveDeletedObject(ino);
  return Status::OK();
}

// Caller holds ino's stripe: an unlinked inode whose last user went away.
void MatrixFs::MaybeReclaim(uint64_t ino) {
  Node* n = FindNode(ino);
  if (n == nullptr || n->deleted || !n->have_attr || n->attr.nlink > 0 || InUse(*n)) return;
  n->object.reset();
  Status s = ReclaimInode(ino);
  if (!s.ok()) {
    MXFS_LOG_ERROR("reclaiming orphan inode %" PRIu64 ": %s (left for the next mount)", ino,
                   s.ToString().c_str());
    return;
  }
  n->deleted = true;
  inode_count_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace mxfs
