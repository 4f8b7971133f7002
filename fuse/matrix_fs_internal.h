// The parts of MatrixFs's implementation that its files share: the private
// nested classes (InodeLocks, Txn, DirHandle), the .matrixfs layout, and the
// small free helpers (time, errno, caller credentials, names). Only the
// fuse/matrix_fs*.cc files include this; the facade, and the list of those
// files by concern, is fuse/matrix_fs.h.
//
// Thread-safety: as MatrixFs (fuse/matrix_fs.h); InodeLocks and Txn belong
// to one operation on one thread, a DirHandle is read-only after its open.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/lock_check.h"
#include "base/status.h"
#include "fuse/matrix_fs.h"
#include "fuse/schema.h"
#include "kvcore/include/options.h"
#include "kvcore/include/write_batch.h"

namespace mxfs {

// Read options for a scan of the keys of one prefix (a directory's dentries,
// a file's blocks or xattrs): MatrixKV leaves out what holds none of them.
inline ReadOptions ScanOf(std::string prefix) {
  ReadOptions r;
  r.prefix = std::move(prefix);
  return r;
}

// fuse_file_info.fh of a regular file's open the kernel serves through
// passthrough; kWritableFh of another open for writing (a GETATTR on it
// while the data directory is full is a buffered write(2) asking, and gets
// ENOSPC); the others have 0.
inline constexpr uint64_t kPassthroughFh = 1;
inline constexpr uint64_t kWritableFh = 2;
// What a new directory entry and inode may take in the database (Admit).
inline constexpr uint64_t kNewEntryBytes = 512;
inline constexpr char kMatrixDirName[] = ".matrixfs";
inline constexpr uint64_t kVirtDir = kFirstVirtualIno;
struct VirtualFile {
  const char* name;
  const char* property;  // DB property, or nullptr for the control file
};
inline constexpr VirtualFile kVirtualFiles[] = {
    {"stats", "matrixkv.stats"},
    {"levels", "matrixkv.levels"},
    {"container", "matrixkv.container"},
    {"compactions", "matrixkv.compactions"},
    {"control", nullptr},
};
inline constexpr size_t kNumVirtualFiles = sizeof(kVirtualFiles) / sizeof(kVirtualFiles[0]);
inline constexpr uint64_t kControlIno = kVirtDir + kNumVirtualFiles;  // the last one

// The daemon's timestamps come from the same clock the kernel stamps a FUSE
// inode with (current_time(): the coarse clock, one tick, 4 ms here; FUSE
// has no multigrain timestamps). Under the writeback cache the kernel owns
// a regular file's c/mtime; when a write lands in the tick the file was
// created in, its times are unchanged, the inode stays clean, and close
// sends no SETATTR of the times: one round trip less per small file
// (BENCHMARKS.md). Values are still stored in nanoseconds; ext4 stamps from
// the same coarse clock. (Tried once before and reverted when the crash
// torture lost writes: the cause was the missing FLUSH, see Flush.)

int64_t NowNs();
struct timespec ToTimespec(int64_t ns);
int64_t FromTimespec(const struct timespec& ts);
// A Status carrying errno e (what says where).
Status Errno(int e, std::string_view what = "");
WriteOptions SyncWrite();
// Replies ToErrno(s).
void ReplyStatus(fuse_req_t req, const Status& s);
// Whether the caller of req has gid as its group or a supplementary group.
bool CallerInGroup(fuse_req_t req, gid_t gid);
// The set-id bits the kernel's kill flag (FUSE_HANDLE_KILLPRIV_V2) takes
// from a non-directory, by the Linux VFS rules (setattr_should_drop_suidgid):
// set-user-ID always; set-group-ID when the file is group-executable, or when
// the caller is neither in the file's group (its group before a chgrp) nor
// privileged. On write and truncate the kernel sets the flag only for a
// caller without CAP_FSETID, so may_be_privileged is false there; on chown it
// sets it for everyone, and uid 0 stands in for CAP_FSETID. The group check
// (fuse_req_getgroups reads /proc) runs only for a set-gid file without group
// execute whose group is not the caller's primary one.

uint32_t KilledSetIdBits(fuse_req_t req, const InodeAttr& a, bool may_be_privileged);
// A name of a new or looked-up entry: 1..255 bytes (ENOENT, ENAMETOOLONG).
Status CheckName(const char* name);

// -o daemon_perms (fuse/matrix_fs_perm.cc): PermErrno is 0 or EACCES for
// the caller asking mask (R_OK | W_OK | X_OK) of an inode with this mode,
// owner and group (uid 0 passes all but exec of a file without x bits);
// OpenMask is what an open with these flags asks.
int PermErrno(fuse_req_t req, uint32_t mode, uint32_t uid, uint32_t gid, int mask);
int OpenMask(int flags);
// Names the calling libfuse worker "mxfs-fuse" at its first request.
void NameThread();

inline void MatrixFs::AssertHeld(uint64_t ino) const {
  if (!LockHeldByMe(stripes_[StripeOf(ino)].mu)) LockNotHeld("MatrixFs", "the stripe of the inode it uses");
}

// Locks the stripes of a set of inodes in stripe order (duplicates once).
class MatrixFs::InodeLocks {
 public:
  InodeLocks(MatrixFs* fs, std::initializer_list<uint64_t> inos) : fs_(fs) {
    for (uint64_t ino : inos) {
      if (ino != 0) idx_.push_back(StripeOf(ino));
    }
    std::sort(idx_.begin(), idx_.end());
    idx_.erase(std::unique(idx_.begin(), idx_.end()), idx_.end());
    for (size_t i : idx_) fs_->stripes_[i].mu.lock();
  }
  ~InodeLocks() {
    for (auto it = idx_.rbegin(); it != idx_.rend(); ++it) fs_->stripes_[*it].mu.unlock();
  }
  // Adds ino's stripe without ever waiting out of stripe order: a stripe
  // above every held one is locked (the order holds), one below them only
  // tried. False: not taken; the caller starts over with one InodeLocks
  // over all its inodes.
  bool TryAdd(uint64_t ino) {
    const size_t i = StripeOf(ino);
    auto pos = std::lower_bound(idx_.begin(), idx_.end(), i);
    if (pos != idx_.end() && *pos == i) return true;
    if (pos == idx_.end()) {
      fs_->stripes_[i].mu.lock();
    } else if (!fs_->stripes_[i].mu.try_lock()) {
      return false;
    }
    idx_.insert(pos, i);
    return true;
  }
  InodeLocks(const InodeLocks&) = delete;
  InodeLocks& operator=(const InodeLocks&) = delete;

 private:
  MatrixFs* fs_;
  std::vector<size_t> idx_;
};

// One operation's batch plus the attributes it changes; Commit writes the
// batch and then refreshes the inode table. Used under the inodes' locks.
//
// An object a Txn creates (MigrateToObject) belongs to the Txn until Commit
// succeeds: a Txn that ends uncommitted (an error on the way, a refused
// commit) removes it, so no failure path leaves an object that no inode
// points to. The caller holds the stripes of the inodes it changes for the
// Txn's whole life (declare the InodeLocks before the Txn).
class MatrixFs::Txn {
 public:
  explicit Txn(MatrixFs* fs) : fs_(fs) {}
  ~Txn() {
    if (committed_) return;
    for (uint64_t ino : new_objects_) fs_->DropNewObject(ino);
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  // The attributes of ino, loaded once and written back at commit.
  Result<InodeAttr*> Attr(uint64_t ino) {
    auto it = attrs_.find(ino);
    if (it != attrs_.end()) return &it->second;
    auto a = fs_->LoadAttr(ino);
    if (!a) return Err(a.error());
    return &attrs_.emplace(ino, std::move(*a)).first->second;
  }
  // Adds an attribute record that is not loaded (a new inode).
  InodeAttr* NewAttr(uint64_t ino, InodeAttr a) { return &(attrs_[ino] = std::move(a)); }
  void Delete(uint64_t ino) { deleted_.insert(ino); }
  // ino's object was created by this Txn: removed unless Commit succeeds.
  void CreatedObject(uint64_t ino) { new_objects_.insert(ino); }
  WriteBatch batch;

 private:
  friend class MatrixFs;
  MatrixFs* fs_;
  bool committed_ = false;
  std::set<uint64_t> new_objects_;
  std::map<uint64_t, InodeAttr> attrs_;
  std::set<uint64_t> deleted_;
};

// Per open .matrixfs file: the content, taken at open, that its reads
// return (directories need no handle: "readdir" in fuse/matrix_fs.h).
struct MatrixFs::DirHandle {
  std::string content;
};

}  // namespace mxfs
