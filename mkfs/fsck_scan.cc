// fsck, the filesystem graph as the key scan finds it: one pass over every
// key through the public DB API fills the checker's nodes, entries, data,
// xattr and orphan keys; the helpers here name and edit that graph
// (fsck_checker.h).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <string>

#include "base/coding.h"
#include "mkfs/fsck_checker.h"

namespace mxfs {
namespace fsck {

bool Checker::Scan(DB* db) {
  ReadOptions ro;
  ro.fill_cache = false;
  auto it = db->NewIterator(ro);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ++keys_;
    if (o_.progress && keys_ % 65536 == 0) {
      std::fprintf(stderr, "\rscanning keys: %" PRIu64, keys_);
      std::fflush(stderr);
    }
    Slice k = it->key();
    Slice v = it->value();
    const std::string place = "key " + k.ToEscaped();
    switch (k.empty() ? 0 : k[0]) {
      case kTagInode: {
        if (k.size() != 9) {
          if (Problem(place + ": inode key of " + std::to_string(k.size()) + " bytes (expected 9)", Fix::kPreen,
                      "deleted")) {
            batch_.Delete(k);
          }
          break;
        }
        uint64_t ino = KeyIno(k);
        Node n;
        Status s = DecodeInodeAttr(ino, v, &n.a);
        if (!s.ok()) {
          Problem(place + ": " + s.ToString(), Fix::kNever);
          break;
        }
        nodes_[ino] = std::move(n);
        break;
      }
      case kTagDentry: {
        DirEntry e;
        Status s = k.size() > 9 ? DecodeDirEntry(k, v, &e) : Status::Corruption("dentry key shorter than 10 bytes");
        if (!s.ok()) {
          if (Problem(place + ": " + s.ToString(), Fix::kRepair, "deleted")) batch_.Delete(k);
          break;
        }
        dents_.push_back(Dent{KeyIno(k), KeyName(k).ToString(), e, true});
        break;
      }
      case kTagBlock:
        if (k.size() != 17) {
          if (Problem(place + ": data key of " + std::to_string(k.size()) + " bytes (expected 17)", Fix::kPreen,
                      "deleted")) {
            batch_.Delete(k);
          }
          break;
        }
        blocks_[KeyIno(k)].push_back(BlockKeyBlock(k));
        break;
      case kTagXattr:
        xattrs_[KeyIno(k)].push_back(k.ToString());
        break;
      case kTagOrphan:
        orphan_keys_.insert(KeyIno(k));
        break;
      case kTagSystem:
        if (k == Slice(SystemKey("state"))) {
          clean_ = v == Slice(kStateClean);
        } else if (k == Slice(SystemKey("next_ino"))) {
          if (v.size() == 8) {
            next_ino_ = DecodeFixed64(v.data());
            have_next_ino_ = true;
          } else {
            Problem(place + ": value of " + std::to_string(v.size()) + " bytes (expected 8)", Fix::kPreen,
                    "rewritten");
          }
        }
        break;
      default:
        if (Problem(place + ": unknown key tag", Fix::kRepair, "deleted")) batch_.Delete(k);
    }
  }
  if (o_.progress && keys_ >= 65536) std::fprintf(stderr, "\r\n");
  if (!it->status().ok()) {
    Problem("key scan stopped after " + std::to_string(keys_) + " keys: " + it->status().ToString() +
                "; the filesystem graph was not checked",
            Fix::kNever);
    return false;
  }
  Verbose("key scan: " + std::to_string(keys_) + " keys, " + std::to_string(nodes_.size()) + " inodes, " +
          std::to_string(dents_.size()) + " directory entries");
  return true;
}

std::string Checker::PathOf(uint64_t ino) const {
  if (ino == kRootIno) return "/";
  std::map<uint64_t, const Dent*> up;
  for (const Dent& d : dents_) {
    if (d.live && !up.count(d.e.ino)) up[d.e.ino] = &d;
  }
  std::string path;
  std::set<uint64_t> seen;
  uint64_t cur = ino;
  while (cur != kRootIno) {
    auto it = up.find(cur);
    if (it == up.end() || !seen.insert(cur).second) return "(unreachable)" + path;
    path = "/" + it->second->name + path;
    cur = it->second->parent;
  }
  return path;
}

std::string Checker::DentPlace(const Dent& d) const {
  std::string parent = PathOf(d.parent);
  return "dentry " + (parent == "/" ? "" : parent) + "/" + d.name + " (key " +
         Slice(DentryKey(d.parent, d.name)).ToEscaped() + ")";
}

void Checker::Reclaim(uint64_t ino) {
  Node& n = nodes_[ino];
  n.deleted = true;
  batch_.Delete(InodeKey(ino));
  batch_.Delete(OrphanKey(ino));
  for (uint64_t b : blocks_[ino]) batch_.Delete(BlockKey(ino, b));
  blocks_.erase(ino);
  for (const std::string& k : xattrs_[ino]) batch_.Delete(k);
  xattrs_.erase(ino);
  if (n.a.storage == Storage::kObject) remove_objects_.push_back(DataPath(datadir_) + "/" + Hex16(ino));
}

uint64_t Checker::LostAndFound() {
  for (const Dent& d : dents_) {
    if (d.live && d.parent == kRootIno && d.name == "lost+found") {
      Node* n = Find(d.e.ino);
      if (n != nullptr && n->a.IsDir()) return d.e.ino;
    }
  }
  uint64_t ino = std::max<uint64_t>(next_ino_, kFirstIno);
  for (const auto& [i, n] : nodes_) {
    if (i < kFirstVirtualIno && i >= ino) ino = i + 1;
  }
  next_ino_ = ino + 1;
  have_next_ino_ = false;  // rewritten below
  Node n;
  n.a.mode = S_IFDIR | 0700;
  n.a.nlink = 2;
  n.a.parent = kRootIno;
  n.a.generation = 1;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  n.a.atime_ns = n.a.mtime_ns = n.a.ctime_ns = n.a.crtime_ns =
      static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  n.dirty = true;
  nodes_[ino] = n;
  AddDent(kRootIno, "lost+found", ino, DT_DIR);
  std::fprintf(o_.out, "created /lost+found (inode %" PRIu64 ")\n", ino);
  return ino;
}

}  // namespace fsck
}  // namespace mxfs
