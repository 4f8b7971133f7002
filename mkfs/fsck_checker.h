// fsck::Checker: the state of one fsck run and its checks (fsck.h says what
// is checked and what is repaired), split by layer over mkfs/fsck*.cc:
//   fsck.cc        the run, problem reporting, InstanceInUse, RunFsck
//   fsck_pool.cc   the superblock, the pool header, the PM WAL, the rows
//   fsck_files.cc  CURRENT, the MANIFEST, SSTables, blob files, SSD WALs
//   fsck_scan.cc   the key scan that loads the graph, paths, lost+found
//   fsck_graph.cc  the graph checks and the commit of the repairs
// The layers below the graph are read in their on-media formats directly
// (nvm/, ssd/ and kvcore/ internals; ARCHITECTURE.md says why).
//
// Thread-safety: not thread-safe; one Checker per run, used by one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fuse/schema.h"
#include "fuse/superblock.h"
#include "kvcore/include/db.h"
#include "kvcore/include/file_system.h"
#include "kvcore/version_edit.h"
#include "mkfs/fsck.h"

namespace mxfs {

class Pool;
class Table;

namespace fsck {

std::string Hex16(uint64_t v);
// True if the database in DATADIR/kv was made with the superblock's pool.
bool UsesPool(const std::string& datadir, const Superblock& sb);

// How a problem may be repaired: never, by -p and -y, or by -y only.
enum class Fix { kNever, kPreen, kRepair };

class Checker {
 public:
  Checker(std::string datadir, const FsckOptions& o) : datadir_(std::move(datadir)), o_(o) {}

  FsckResult Run();

 private:
  struct Node {
    InodeAttr a;
    bool orphan = false;   // has an O key
    bool deleted = false;  // reclaimed by this run
    bool dirty = false;    // attributes to rewrite
  };
  struct Dent {
    uint64_t parent;
    std::string name;
    DirEntry e;
    bool live = true;
  };
  struct BlobState {
    BlobFileMeta meta;
    BlobGarbage garbage;
  };
  // Indexes into dents_ of the live entries naming each inode.
  using EntriesByInode = std::map<uint64_t, std::vector<size_t>>;

  bool Allowed(Fix f) const {
    if (f == Fix::kNever) return false;
    if (o_.mode == FsckMode::kRepair) return true;
    return o_.mode == FsckMode::kPreen && f == Fix::kPreen;
  }
  // Reports a problem; returns true when the caller should repair it.
  bool Problem(const std::string& what, Fix fix, const std::string& action = "");
  // A leftover of an operation a crash interrupted, of a kind the next mount
  // collects by itself (an orphan inode, an object no inode owns). After an
  // unclean shutdown that is the expected state, like a journal to replay:
  // it is reported as pending recovery and is not an error; -p/-y collect it
  // now. On a cleanly unmounted instance it is a problem like any other.
  // Returns true when the caller should collect it.
  bool Leftover(const std::string& what, const std::string& action);
  void Verbose(const std::string& what) {
    if (o_.verbose) std::fprintf(o_.out, "%s\n", what.c_str());
  }
  void OperationalError(const std::string& what) {
    res_.operational_error = true;
    std::fprintf(o_.out, "fsck.matrixfs: %s\n", what.c_str());
  }

  // fsck_pool.cc
  void CheckSuperblock();
  void CheckPool();
  void CheckPmWal(Pool* pool);
  void CheckContainer(Pool* pool);
  // Every live row's entries, through the opened container.
  void CheckContainerEntries(Pool* pool, const char* data, uint32_t rows);

  // fsck_files.cc
  void CheckDatabaseFiles();
  void CheckTables(const std::map<int, std::map<uint64_t, FileMetaData>>& levels,
                   const std::map<uint64_t, BlobState>& blobs);
  // One table: false if it cannot be read (it is then left out of the
  // level's overlap check). Adds the blob records it references to *refs.
  bool CheckTable(int level, const FileMetaData& f, const std::map<uint64_t, BlobState>& blobs,
                  std::map<uint64_t, BlobGarbage>* refs);
  void CheckBlobReferences(const std::string& path, Table* table, const FileMetaData& f,
                           const std::map<uint64_t, BlobState>& blobs, std::map<uint64_t, BlobGarbage>* refs);
  void CheckLevelOverlaps(int level, std::vector<const FileMetaData*> files);
  void CheckBlobFile(const BlobState& b, const BlobGarbage& refs);
  void CheckWals(uint64_t log_number);

  // fsck_scan.cc
  bool Scan(DB* db);
  std::string PathOf(uint64_t ino) const;
  std::string DentPlace(const Dent& d) const;
  Node* Find(uint64_t ino) {
    auto it = nodes_.find(ino);
    return it == nodes_.end() || it->second.deleted ? nullptr : &it->second;
  }
  void Reclaim(uint64_t ino);
  void KillDent(size_t i) {
    dents_[i].live = false;
    batch_.Delete(DentryKey(dents_[i].parent, dents_[i].name));
  }
  void AddDent(uint64_t parent, const std::string& name, uint64_t ino, uint8_t type) {
    Dent d{parent, name, DirEntry{ino, type}, true};
    batch_.Put(DentryKey(parent, name), EncodeDirEntry(d.e));
    dents_.push_back(std::move(d));
  }
  uint64_t LostAndFound();

  // fsck_graph.cc, in the order CheckGraph runs them.
  void CheckGraph();
  std::unique_ptr<DB> OpenDatabase();
  bool CheckRoot();
  void CheckOrphans();
  void CheckDentries();
  EntriesByInode LiveEntriesByInode() const;
  void CheckDirectoryParents(const EntriesByInode& refs);
  // Links what the root does not reach into /lost+found; returns its inode
  // (0 if it was not needed).
  uint64_t LinkUnreachable(EntriesByInode* refs);
  void CheckLinkCounts();
  void CheckDataKeys();
  void CheckObjects();
  void CheckAllocator(uint64_t lost);
  void Commit(DB* db);

  const std::string datadir_;
  const FsckOptions o_;
  FsckResult res_;
  uint64_t pending_ = 0;  // repairs decided, not yet committed
  uint64_t collect_ = 0;  // leftovers to collect (not repairs: no error was found)
  bool clean_ = false;    // S state says the last unmount was clean
  std::unique_ptr<FileLock> lock_;
  bool have_sb_ = false;
  Superblock sb_;

  // The graph.
  std::map<uint64_t, Node> nodes_;
  std::vector<Dent> dents_;
  std::map<uint64_t, std::vector<uint64_t>> blocks_;       // F keys: ino -> blocks
  std::map<uint64_t, std::vector<std::string>> xattrs_;   // X keys: ino -> keys
  std::set<uint64_t> orphan_keys_;
  uint64_t next_ino_ = 0;
  bool have_next_ino_ = false;
  uint64_t keys_ = 0;
  WriteBatch batch_;
  std::vector<std::string> remove_objects_;
  std::vector<std::pair<std::string, uint64_t>> extend_objects_;
};

}  // namespace fsck
}  // namespace mxfs
