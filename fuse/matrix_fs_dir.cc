// MatrixFs's .matrixfs file handles and opendir/readdir/readdirplus
// (fuse/matrix_fs.h, "readdir"): a listing walks a DB iterator over the
// directory's D prefix and continues after the name behind the kernel's
// offset (a cookie).
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
  // The first answer ENOSYS makes the kernel stop sending OPENDIR and
  // RELEASEDIR and cache listings ("readdir" in fuse/matrix_fs.h).
  if (no_opendir_.load(std::memory_order_relaxed)) return (void)fuse_reply_err(req, ENOSYS);
  if (!IsVirtual(ino)) {
    Status s;
    {
      InodeLocks locks(this, {ino});
      auto a = LoadAttr(ino);
      if (!a) s = a.error();
      else if (!a->IsDir()) s = Errno(ENOTDIR);
      else s = CheckPerm(req, *a, R_OK);
    }
    if (!s.ok()) return ReplyStatus(req, s);
  } else if (ino != kVirtDir) {
    return (void)fuse_reply_err(req, ENOTDIR);
  }
  fi->fh = 0;
  fi->cache_readdir = 0;
  fuse_reply_open(req, fi);
}

void MatrixFs::ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*, bool plus) {
  Count(kOpReadDir);
  // Without OPENDIR (dircache) the listing's first READDIR is where read
  // permission is checked (-o daemon_perms).
  if (off == 0) {
    if (Status p = CheckPermOf(req, ino, R_OK); !p.ok()) return ReplyStatus(req, p);
  }
  std::string buf(size, '\0');
  size_t pos = 0;
  Status s = FillDir(req, ino, size, off, plus, &buf, &pos);
  if (!s.ok() && pos == 0) return ReplyStatus(req, s);
  fuse_reply_buf(req, buf.data(), pos);
}

uint64_t MatrixFs::NextCookie(uint64_t dir, uint64_t k, const std::string& name) {
  std::lock_guard<std::mutex> l(cookies_mu_);
  uint64_t cookie = (k << 32) | ++cookie_seq_;
  if (cookies_.insert_or_assign(cookie, std::make_pair(dir, name)).second) cookie_order_.push_back(cookie);
  while (cookie_order_.size() > kMaxCookies) {
    cookies_.erase(cookie_order_.front());
    cookie_order_.pop_front();
  }
  return cookie;
}

bool MatrixFs::CookieName(uint64_t dir, uint64_t cookie, std::string* name) {
  std::lock_guard<std::mutex> l(cookies_mu_);
  auto it = cookies_.find(cookie);
  if (it == cookies_.end() || it->second.first != dir) return false;
  *name = it->second.second;
  return true;
}

Status MatrixFs::FillDir(fuse_req_t req, uint64_t ino, size_t size, off_t off, bool plus, std::string* out,
                         size_t* out_pos) {
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
  const uint64_t o = static_cast<uint64_t>(off);
  // Cookies below 2^32 are the synthetic entries' (1 to nsynth).
  if (o < (1ull << 32)) {
    for (uint64_t i = o; i < synth.size(); ++i) {
      if (!add(synth[i].first.c_str(), synth[i].second, i + 1)) break;
    }
  }
  if (full || IsVirtual(ino)) return Status::OK();

  std::string prefix = DentryPrefix(ino);
  auto it = db_->NewIterator(ScanOf(prefix));
  uint64_t k = 0;  // entries before the next one
  std::string name;
  if (o < (1ull << 32)) {
    it->Seek(prefix);
  } else if (k = o >> 32; CookieName(ino, o, &name)) {
    std::string key = DentryKey(ino, name);
    it->Seek(key);
    if (it->Valid() && it->key() == Slice(key)) it->Next();
  } else {
    // A cookie that left the table: resume after the first k entries.
    it->Seek(prefix);
    for (uint64_t i = 0; i < k && it->Valid() && it->key().starts_with(prefix); ++i) it->Next();
  }
  Status s;
  for (; it->Valid() && it->key().starts_with(prefix); it->Next(), ++k) {
    DirEntry de;
    s = DecodeDirEntry(it->key(), it->value(), &de);
    if (!s.ok()) break;
    name = KeyName(it->key()).ToString();
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
      add(name.c_str(), e, NextCookie(ino, k + 1, name));
    } else {
      e.attr.st_ino = de.ino;
      e.attr.st_mode = static_cast<mode_t>(de.type) << 12;
      size_t need = fuse_add_direntry(req, nullptr, 0, name.c_str(), nullptr, 0);
      if (pos + need > size) break;
      add(name.c_str(), e, NextCookie(ino, k + 1, name));
    }
  }
  if (s.ok()) s = it->status();
  return s;
}

void MatrixFs::ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info*) {
  fuse_reply_err(req, 0);
}

void MatrixFs::FsyncDir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) {
  // Directory entries are durable when their operation returns.
  fuse_reply_err(req, 0);
}

}  // namespace mxfs
