// fsck, the filesystem graph: the checks that follow the key scan, in the
// order they run, and the one batch that commits their repairs
// (fsck_checker.h).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/coding.h"
#include "mkfs/fsck_checker.h"

namespace mxfs {
namespace fsck {

void Checker::CheckGraph() {
  std::unique_ptr<DB> db = OpenDatabase();
  if (db == nullptr) return;
  if (!Scan(db.get()) || !CheckRoot()) {
    (void)db->Close();
    return;
  }
  CheckOrphans();
  CheckDentries();
  EntriesByInode refs = LiveEntriesByInode();
  CheckDirectoryParents(refs);
  const uint64_t lost = LinkUnreachable(&refs);
  CheckLinkCounts();
  CheckDataKeys();
  CheckObjects();
  CheckAllocator(lost);
  Commit(db.get());
}

// The database as a mount opens it (-n: read-only); nullptr if it cannot be.
std::unique_ptr<DB> Checker::OpenDatabase() {
  const std::string kv = KvPath(datadir_);
  Options opts;
  opts.create_if_missing = false;
  // -n: replay the WALs into memory only; nothing in kv/ or the pool changes.
  opts.read_only = o_.mode == FsckMode::kCheck;
  if (have_sb_ && UsesPool(datadir_, sb_)) {
    opts.nvm_path = sb_.pool_path;
    opts.nvm_size = sb_.pool_size;
  }
  auto db = DB::Open(opts, kv);
  if (!db) {
    if (db.error().IsBusy()) {
      res_.mounted = true;
      OperationalError(datadir_ + " is in use (mounted?): " + db.error().ToString());
      return nullptr;
    }
    Problem("the database " + kv + " cannot be opened: " + db.error().ToString(), Fix::kNever);
    return nullptr;
  }
  return std::move(*db);
}

bool Checker::CheckRoot() {
  Node* root = Find(kRootIno);
  if (root == nullptr || !root->a.IsDir()) {
    Problem(std::string("inode 1 (the root directory, key ") + Slice(InodeKey(kRootIno)).ToEscaped() + ") is " +
                (root == nullptr ? "missing" : "not a directory") + "; the graph cannot be checked",
            Fix::kNever);
    return false;
  }
  return true;
}

void Checker::CheckOrphans() {
  for (uint64_t ino : orphan_keys_) {
    Node* n = Find(ino);
    std::string place = "orphan record " + Slice(OrphanKey(ino)).ToEscaped();
    if (n == nullptr) {
      if (Problem(place + ": inode " + std::to_string(ino) + " does not exist", Fix::kPreen, "record deleted")) {
        batch_.Delete(OrphanKey(ino));
      }
    } else if (n->a.nlink == 0) {
      if (Leftover(place + ": inode " + std::to_string(ino) + " was unlinked while open and never reclaimed",
                   "reclaimed")) {
        Reclaim(ino);
      } else {
        n->orphan = true;
      }
    } else {
      if (Problem(place + ": inode " + std::to_string(ino) + " has nlink " + std::to_string(n->a.nlink),
                  Fix::kPreen, "record deleted")) {
        batch_.Delete(OrphanKey(ino));
      }
    }
  }
}

void Checker::CheckDentries() {
  for (size_t i = 0; i < dents_.size(); ++i) {
    Dent& d = dents_[i];
    Node* parent = Find(d.parent);
    Node* child = Find(d.e.ino);
    if (parent == nullptr || !parent->a.IsDir()) {
      if (Problem(DentPlace(d) + ": its directory (inode " + std::to_string(d.parent) + ") " +
                      (parent == nullptr ? "does not exist" : "is not a directory"),
                  Fix::kRepair, "entry deleted")) {
        KillDent(i);
      }
    } else if (child == nullptr || d.e.ino == kRootIno) {
      if (Problem(DentPlace(d) + ": names inode " + std::to_string(d.e.ino) +
                      (d.e.ino == kRootIno ? ", the root directory" : ", which does not exist (key " +
                                                                           Slice(InodeKey(d.e.ino)).ToEscaped() + ")"),
                  Fix::kRepair, "entry deleted")) {
        KillDent(i);
      }
    } else if (d.e.type != ModeToDirType(child->a.mode)) {
      if (Problem(DentPlace(d) + ": type " + std::to_string(d.e.type) + ", inode " + std::to_string(d.e.ino) +
                      " has type " + std::to_string(ModeToDirType(child->a.mode)),
                  Fix::kPreen, "entry type corrected")) {
        d.e.type = ModeToDirType(child->a.mode);
        batch_.Put(DentryKey(d.parent, d.name), EncodeDirEntry(d.e));
      }
    }
  }
}

Checker::EntriesByInode Checker::LiveEntriesByInode() const {
  std::map<uint64_t, std::vector<size_t>> refs;
  for (size_t i = 0; i < dents_.size(); ++i) {
    if (dents_[i].live) refs[dents_[i].e.ino].push_back(i);
  }
  return refs;
}

// Each directory: exactly one parent entry.
void Checker::CheckDirectoryParents(const EntriesByInode& refs) {
  for (auto& [ino, list] : refs) {
    Node* n = Find(ino);
    if (n == nullptr || !n->a.IsDir() || list.size() < 2) continue;
    size_t keep = list[0];
    for (size_t i : list) {
      if (dents_[i].parent == n->a.parent) keep = i;
    }
    for (size_t i : list) {
      if (i == keep) continue;
      if (Problem(DentPlace(dents_[i]) + ": directory inode " + std::to_string(ino) + " is also " +
                      DentPlace(dents_[keep]),
                  Fix::kRepair, "extra entry deleted")) {
        KillDent(i);
      }
    }
  }
}

// Reachability from the root.
uint64_t Checker::LinkUnreachable(EntriesByInode* refs) {
  std::map<uint64_t, std::vector<size_t>> children;
  auto rebuild_children = [&] {
    children.clear();
    for (size_t i = 0; i < dents_.size(); ++i) {
      if (dents_[i].live) children[dents_[i].parent].push_back(i);
    }
  };
  rebuild_children();
  std::set<uint64_t> reached;
  auto reach_from = [&](uint64_t start) {
    std::vector<uint64_t> stack{start};
    reached.insert(start);
    while (!stack.empty()) {
      uint64_t cur = stack.back();
      stack.pop_back();
      auto it = children.find(cur);
      if (it == children.end()) continue;
      for (size_t i : it->second) {
        if (!dents_[i].live) continue;
        uint64_t c = dents_[i].e.ino;
        if (Find(c) != nullptr && reached.insert(c).second) stack.push_back(c);
      }
    }
  };
  reach_from(kRootIno);
  uint64_t lost = 0;
  for (bool progress = true; progress;) {
    progress = false;
    // Top-level pieces first (no live entry anywhere), then cycles.
    uint64_t pick = 0;
    for (int pass = 0; pass < 2 && pick == 0; ++pass) {
      for (auto& [ino, n] : nodes_) {
        if (n.deleted || n.orphan || reached.count(ino) || ino >= kFirstVirtualIno) continue;
        auto r = refs->find(ino);
        bool has_ref = false;  // an entry that could connect it (in an existing directory)
        if (r != refs->end()) {
          for (size_t i : r->second) {
            Node* p = Find(dents_[i].parent);
            has_ref |= dents_[i].live && p != nullptr && p->a.IsDir();
          }
        }
        if (pass == 0 ? !has_ref : n.a.IsDir()) {
          pick = ino;
          break;
        }
      }
    }
    if (pick == 0) break;
    Node& n = nodes_[pick];
    std::string what = "inode " + std::to_string(pick) + " (" + (n.a.IsDir() ? "directory" : "file") + ", " +
                       std::to_string(n.a.size) + " bytes, key " + Slice(InodeKey(pick)).ToEscaped() +
                       ") is not reachable from the root";
    if (!Problem(what, Fix::kRepair, "linked into /lost+found")) {
      // Report the rest of its piece as part of it.
      reach_from(pick);
      progress = true;
      continue;
    }
    if (lost == 0) {
      lost = LostAndFound();
      reached.insert(lost);
    }
    if (n.a.IsDir()) {
      for (size_t i : (*refs)[pick]) {
        if (dents_[i].live) KillDent(i);
      }
    }
    std::string name = "#" + std::to_string(pick);
    AddDent(lost, name, pick, ModeToDirType(n.a.mode));
    (*refs)[pick].push_back(dents_.size() - 1);
    rebuild_children();
    reach_from(pick);
    progress = true;
  }
  return lost;
}

// Link counts and parent fields from the (repaired) entries.
void Checker::CheckLinkCounts() {
  std::map<uint64_t, uint32_t> counted;
  std::map<uint64_t, uint64_t> parent_of;
  for (const Dent& d : dents_) {
    if (!d.live) continue;
    Node* c = Find(d.e.ino);
    if (c == nullptr) continue;
    if (c->a.IsDir()) {
      counted[d.parent] += 1;  // the child's ".."
      parent_of[d.e.ino] = d.parent;
    } else {
      counted[d.e.ino] += 1;
    }
  }
  parent_of[kRootIno] = kRootIno;
  for (auto& [ino, n] : nodes_) {
    if (n.deleted || n.orphan) continue;
    uint32_t want = counted[ino] + (n.a.IsDir() ? 2 : 0);
    if (n.a.nlink != want) {
      if (Problem("inode " + std::to_string(ino) + " " + PathOf(ino) + ": nlink " + std::to_string(n.a.nlink) +
                      ", " + std::to_string(want) + " references",
                  Fix::kPreen, "nlink set to " + std::to_string(want))) {
        n.a.nlink = want;
        n.dirty = true;
      }
    }
    if (n.a.IsDir() && parent_of.count(ino) && n.a.parent != parent_of[ino]) {
      if (Problem("directory inode " + std::to_string(ino) + " " + PathOf(ino) + ": parent field " +
                      std::to_string(n.a.parent) + ", its entry is in directory " + std::to_string(parent_of[ino]),
                  Fix::kPreen, "parent field corrected")) {
        n.a.parent = parent_of[ino];
        n.dirty = true;
      }
    }
  }
}

// Data and xattr keys.
void Checker::CheckDataKeys() {
  for (auto& [ino, list] : blocks_) {
    Node* n = Find(ino);
    std::string why;
    if (n == nullptr) {
      why = "inode " + std::to_string(ino) + " does not exist";
    } else if (!n->a.IsReg()) {
      why = "inode " + std::to_string(ino) + " is not a regular file";
    } else if (n->a.storage == Storage::kObject) {
      why = "inode " + std::to_string(ino) + " keeps its data in an object";
    }
    if (why.empty()) continue;
    if (Problem(std::to_string(list.size()) + " data keys " + Slice(BlockKey(ino, list.front())).ToEscaped() +
                    "..: " + why,
                Fix::kPreen, "deleted")) {
      for (uint64_t b : list) batch_.Delete(BlockKey(ino, b));
    }
  }
  for (auto& [ino, list] : xattrs_) {
    if (Find(ino) != nullptr) continue;
    if (Problem(std::to_string(list.size()) + " extended attribute keys " + Slice(list.front()).ToEscaped() +
                    "..: inode " + std::to_string(ino) + " does not exist",
                Fix::kPreen, "deleted")) {
      for (const std::string& k : list) batch_.Delete(k);
    }
  }
}

// Large-file objects.
void Checker::CheckObjects() {
  const std::string data = DataPath(datadir_);
  std::set<uint64_t> objects;
  if (DIR* d = ::opendir(data.c_str())) {
    while (struct dirent* de = ::readdir(d)) {
      std::string name = de->d_name;
      if (name == "." || name == "..") continue;
      char* end = nullptr;
      uint64_t ino = std::strtoull(name.c_str(), &end, 16);
      if (name.size() != 16 || *end != '\0') {
        Verbose(data + "/" + name + ": not an object name; ignored");
        continue;
      }
      objects.insert(ino);
      Node* n = Find(ino);
      if (n == nullptr || n->a.storage != Storage::kObject) {
        if (Leftover("object " + data + "/" + name + ": inode " + std::to_string(ino) +
                         (n == nullptr ? " does not exist" : " keeps its data inline"),
                     "removed")) {
          remove_objects_.push_back(data + "/" + name);
        }
      }
    }
    ::closedir(d);
  } else {
    Problem(data + ": " + std::strerror(errno), Fix::kNever);
  }
  for (auto& [ino, n] : nodes_) {
    if (n.deleted || n.a.storage != Storage::kObject) continue;
    const std::string path = data + "/" + Hex16(ino);
    struct stat st;
    if (!objects.count(ino) || ::stat(path.c_str(), &st) != 0) {
      if (Problem("inode " + std::to_string(ino) + " " + PathOf(ino) + ": its object " + path + " is missing (" +
                      std::to_string(n.a.size) + " bytes of data lost)",
                  Fix::kRepair, "an empty object of that size was created; the file reads as zeros")) {
        extend_objects_.emplace_back(path, n.a.size);
      }
    } else if (static_cast<uint64_t>(st.st_size) < n.a.size) {
      if (Problem("inode " + std::to_string(ino) + " " + PathOf(ino) + ": object " + path + " has " +
                      std::to_string(st.st_size) + " bytes, the inode says " + std::to_string(n.a.size),
                  Fix::kRepair, "object extended; the missing part reads as zeros")) {
        extend_objects_.emplace_back(path, n.a.size);
      }
    } else if (static_cast<uint64_t>(st.st_size) > n.a.size && !clean_) {
      // After a crash: bytes a FUSE passthrough writer put into the object
      // whose size was not committed yet, or an interrupted shrink, growth or
      // write (MatrixFs::Startup). The mount takes the object's size over;
      // -p/-y do it now. On a cleanly unmounted instance the mount cuts the
      // object instead, as it always did, so that is not reported.
      if (Leftover("inode " + std::to_string(ino) + " " + PathOf(ino) + ": object " + path + " has " +
                       std::to_string(st.st_size) + " bytes, the inode says " + std::to_string(n.a.size),
                   "the inode takes the object's size")) {
        n.a.size = static_cast<uint64_t>(st.st_size);
        n.dirty = true;
      }
    }
  }
}

// The inode allocator.
void Checker::CheckAllocator(uint64_t lost) {
  uint64_t max_ino = 0;
  for (auto& [ino, n] : nodes_) {
    if (!n.deleted && ino < kFirstVirtualIno) max_ino = std::max(max_ino, ino);
  }
  if (!have_next_ino_ && lost == 0) {
    if (Problem("record " + Slice(SystemKey("next_ino")).ToEscaped() + " is missing or malformed", Fix::kPreen,
                "rewritten")) {
      next_ino_ = std::max<uint64_t>(max_ino + 1, kFirstIno);
      have_next_ino_ = false;
    }
  } else if (have_next_ino_ && next_ino_ <= max_ino) {
    if (Problem("record " + Slice(SystemKey("next_ino")).ToEscaped() + " = " + std::to_string(next_ino_) +
                    ", but inode " + std::to_string(max_ino) + " exists",
                Fix::kPreen, "set to " + std::to_string(max_ino + 1))) {
      next_ino_ = max_ino + 1;
      have_next_ino_ = false;
    }
  }
  if (!have_next_ino_ && pending_ > 0) {
    std::string v;
    PutFixed64(&v, std::max<uint64_t>(next_ino_, kFirstIno));
    batch_.Put(SystemKey("next_ino"), v);
  }
}

void Checker::Commit(DB* db) {
  for (auto& [ino, n] : nodes_) {
    if (n.dirty && !n.deleted) batch_.Put(InodeKey(ino), EncodeInodeAttr(n.a));
  }
  if (pending_ + collect_ > 0) {
    WriteOptions wo;
    wo.sync = true;
    Status s = db->Write(wo, &batch_);
    if (!s.ok()) {
      OperationalError("writing the repairs: " + s.ToString());
      (void)db->Close();
      return;
    }
    for (const std::string& p : remove_objects_) {
      if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
        OperationalError("cannot remove " + p + ": " + std::strerror(errno));
      }
    }
    for (const auto& [p, size] : extend_objects_) {
      int fd = ::open(p.c_str(), O_WRONLY | O_CREAT, 0600);
      if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0 || ::fsync(fd) != 0) {
        OperationalError("cannot extend " + p + ": " + std::strerror(errno));
      }
      if (fd >= 0) ::close(fd);
    }
    res_.repaired += pending_;
    res_.collected += collect_;
    pending_ = 0;
    collect_ = 0;
  }
  Status s = db->Close();
  if (!s.ok()) OperationalError("closing the database: " + s.ToString());
}

}  // namespace fsck
}  // namespace mxfs
