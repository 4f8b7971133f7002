// MatrixFs's directory handles and readdir/readdirplus (fuse/matrix_fs.h,
// "readdir"): a listing walks a DB iterator over the directory's D prefix
// and continues after the name behind the kernel's offset.
#include <sys/stat.h>

#include <cstring>

#include "fuse/matrix_fs_internal.h"

namespace mxfs {

uint64_t MatrixFs::AddHandle(std::unique_ptr<DirHandle> h) {
  std::lock_guard<std::mutex> l(handles_mu_);
  uint64_t fh = next_fh_++;
  handles_[fh] = std::move(h);
  return fh;
}

MatrixFs::DirHandle* MatrixFs::GetHandle(uint64_t fh) {
  std::lock_guard<std::mutex> l(handles_mu_);
  auto it = handles_.find(fh);
  return it == handles_.end() ? nullptr : it->second.get();
}

void MatrixFs::DropHandle(uint64_t fh) {
  std::unique_ptr<DirHandle> h;
  std::lock_guard<std::mutex> l(handles_mu_);
  auto it = handles_.find(fh);
  if (it != handles_.end()) {
    h = std::move(it->second);
    handles_.erase(it);
  }
}

void MatrixFs::OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(kOpOpen);
  if (!IsVirtual(ino)) {
    Status s;
    {
      InodeLocks locks(this, {ino});
      auto a = LoadAttr(ino);
      if (!a) s = a.error();
      else if (!a->IsDir()) s = Errno(ENOTDIR);
    }
    if (!s.ok()) return ReplyStatus(req, s);
  } else if (ino != kVirtDir) {
    return (void)fuse_reply_err(req, ENOTDIR);
  }
  fi->fh = AddHandle(std::make_unique<DirHandle>());
  fi->cache_readdir = 0;
  if (fuse_reply_open(req, fi) != 0) DropHandle(fi->fh);
}

void MatrixFs::ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi, bool plus) {
  Count(kOpReadDir);
  DirHandle* h = GetHandle(fi->fh);
  if (h == nullptr) return (void)fuse_reply_err(req, EBADF);
  std::string buf(size, '\0');
  size_t pos = 0;
  Status s;
  {
    // The handle's lock is released before the reply: the kernel may send
    // RELEASEDIR (which frees the handle) as soon as it has the reply.
    std::lock_guard<std::mutex> hl(h->mu);
    s = FillDir(req, ino, size, off, h, plus, &buf, &pos);
  }
  if (!s.ok() && pos == 0) return ReplyStatus(req, s);
  fuse_reply_buf(req, buf.data(), pos);
}

Status MatrixFs::FillDir(fuse_req_t req, uint64_t ino, size_t size, off_t off, DirHandle* h, bool plus,
                         std::string* out, size_t* out_pos) {
  std::string& buf = *out;
  size_t& pos = *out_pos;
  bool full = false;
  // Adds one entry; false (and full) when it does not fit.
  auto add = [&](const char* name, const fuse_entry_param& e, uint64_t next_off) -> bool {
    size_t need = plus ? fuse_add_direntry_plus(req, nullptr, 0, name, nullptr, 0)
                       : fuse_add_direntry(req, nullptr, 0, name, nullptr, 0);
    if (pos + need > size) {
      full = true;
      return false;
    }
    if (plus) fuse_add_direntry_plus(req, buf.data() + pos, size - pos, name, &e, static_cast<off_t>(next_off));
    else fuse_add_direntry(req, buf.data() + pos, size - pos, name, &e.attr, static_cast<off_t>(next_off));
    pos += need;
    return true;
  };
  auto dot = [&](uint64_t dino, uint32_t mode) {
    fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));  // ino 0: no lookup count for '.' and '..'
    e.attr.st_ino = dino;
    e.attr.st_mode = mode;
    return e;
  };

  // Synthetic entries.
  std::vector<std::pair<std::string, fuse_entry_param>> synth;
  if (IsVirtual(ino)) {
    synth.emplace_back(".", dot(kVirtDir, S_IFDIR));
    synth.emplace_back("..", dot(kRootIno, S_IFDIR));
    for (size_t i = 0; i < kNumVirtualFiles; ++i) {
      synth.emplace_back(kVirtualFiles[i].name, dot(kVirtDir + 1 + i, S_IFREG));
    }
  } else {
    uint64_t parent = kRootIno;
    {
      InodeLocks locks(this, {ino});
      auto a = LoadAttr(ino);
      if (a) parent = a->parent;
    }
    synth.emplace_back(".", dot(ino, S_IFDIR));
    synth.emplace_back("..", dot(parent, S_IFDIR));
    // .matrixfs is reachable by name (Lookup) but not listed: tools that
    // compare or copy a whole mount (diff -r, rsync, cp -a, tar) would
    // otherwise trip over it, as over any filesystem's control files.
  }
  const uint64_t nsynth = synth.size();
  uint64_t o = static_cast<uint64_t>(off);
  for (; o < nsynth; ++o) {
    if (!add(synth[o].first.c_str(), synth[o].second, o + 1)) break;
  }
  if (full || IsVirtual(ino)) return Status::OK();

  std::string prefix = DentryPrefix(ino);
  auto it = db_->NewIterator(ReadOptions());
  uint64_t next_off;
  if (o <= nsynth) {
    it->Seek(prefix);
    next_off = nsynth + 1;
    o = nsynth;
  } else {
    next_off = o + 1;
    const std::string* name = nullptr;
    for (const auto& [d_off, n] : h->last) {
      if (d_off == o) name = &n;
    }
    if (name != nullptr) {
      std::string key = DentryKey(ino, *name);
      it->Seek(key);
      if (it->Valid() && it->key() == Slice(key)) it->Next();
    } else {
      // An offset from an older batch (seekdir): count entries from the start.
      it->Seek(prefix);
      for (uint64_t k = nsynth; k < o && it->Valid() && it->key().starts_with(prefix); ++k) it->Next();
    }
  }
  std::vector<std::pair<uint64_t, std::string>> batch;
  batch.emplace_back(o, "");
  bool have_anchor = false;
  for (const auto& [d_off, n] : h->last) {
    if (d_off == o) {
      batch.back().second = n;
      have_anchor = true;
    }
  }
  if (!have_anchor) batch.clear();
  Status s;
  for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
    DirEntry de;
    s = DecodeDirEntry(it->key(), it->value(), &de);
    if (!s.ok()) break;
    std::string name = KeyName(it->key()).ToString();
    fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));
    if (plus) {
      size_t need = fuse_add_direntry_plus(req, nullptr, 0, name.c_str(), nullptr, 0);
      if (pos + need > size) break;
      InodeLocks locks(this, {de.ino});
      auto a = LoadAttr(de.ino);
      if (!a) continue;  // removed meanwhile
      FillEntry(de.ino, *a, &e);
      Node& n = NodeFor(de.ino);
      n.nlookup++;
      n.attr = *a;
      n.have_attr = true;
      add(name.c_str(), e, next_off);
    } else {
      e.attr.st_ino = de.ino;
      e.attr.st_mode = static_cast<mode_t>(de.type) << 12;
      if (!add(name.c_str(), e, next_off)) break;
    }
    batch.emplace_back(next_off, std::move(name));
    ++next_off;
  }
  if (s.ok()) s = it->status();
  if (batch.size() > (have_anchor ? 1u : 0u)) h->last = std::move(batch);
  return s;
}

void MatrixFs::ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  DropHandle(fi->fh);
  fuse_reply_err(req, 0);
}

void MatrixFs::FsyncDir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) {
  // Directory entries are durable when their operation returns.
  fuse_reply_err(req, 0);
}

}  // namespace mxfs
