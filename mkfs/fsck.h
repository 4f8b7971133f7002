// Fsck: checks a MatrixFS instance layer by layer and repairs what it can
// (fsck.matrixfs, man/fsck.matrixfs.8).
//
// Layers, in order; each problem is reported with its place:
//   1. the superblock (DATADIR/superblock: magic, checksum, geometry) and,
//      with a pool, the pair pool header <-> superblock (UUID for version 2
//      instances, kv/POOL-IDENTITY, pool size), every PM WAL record
//      (segment, pool offset, sequence: checksum, batch header agreeing with
//      the record's sequence, sequences not decreasing), and every RowTable,
//      read directly from the container's row slots (commit word and
//      location, header, extent table and metadata checksums, entries inside
//      the data area), then through the container: every live entry's key
//      order and forward pointer (within the older row and pointing at the
//      first key not below it), each named by row, pool offset and key;
//   2. the database files in kv/: CURRENT and every MANIFEST record (record
//      offset), every live SSTable (exists, size as recorded, Table::VerifyAll
//      block checksums and key order, smallest/largest as declared in the
//      MANIFEST, no overlapping tables within a level >= 1), every SSD WAL
//      record (file, offset);
//   3. the filesystem graph from one full key scan through the public DB
//      API: the root directory; every dentry names an existing inode of the
//      same type inside an existing directory; every directory has exactly
//      one parent entry and its parent field agrees; nlink equals the
//      references (directories: 2 + subdirectories); everything is
//      reachable from the root; O keys (orphans); F and X keys belong to an
//      existing inode (F keys: an inline file, inside its size); the
//      inode allocator (S next_ino) is above every ino; large-file objects in
//      data/ belong to an object inode and are at least the inode's size.
//
// Repairs (-y) go into one WriteBatch written with sync; object files are
// removed or extended afterwards. Nothing a user could read is thrown away:
// unreachable inodes are linked into /lost+found (created if missing) as
// "#INO"; dentries to missing inodes are removed; link counts and parent
// fields are set from the references; data keys and objects of inodes that
// do not exist are deleted; orphans (nlink 0 and an O key) are reclaimed.
// -p (preen) applies only the repairs that never change the namespace: link
// counts, parent fields, dentry types, leaked keys and objects, orphans,
// the allocator. Damage below the graph (SSTables, MANIFEST, WAL) is
// reported, never repaired.
//
// -n changes nothing: the pool is mapped copy-on-write and the database is
// opened with Options.read_only (the WALs are replayed into memory only, no
// file is written, no background thread runs). -p and -y open it normally,
// which replays the WAL into new files as a mount does.
//
// Thread-safety: RunFsck is a free function; one call per instance at a time
// (it takes the database lock).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace mxfs {

enum class FsckMode { kCheck, kPreen, kRepair };  // -n, -p, -y

struct FsckOptions {
  FsckMode mode = FsckMode::kCheck;
  bool verbose = false;   // -v: say what is checked, and the counts
  bool force = false;     // -f: accepted for fsck(8) compatibility; every check always runs
  bool progress = false;  // progress on stderr (the program sets it when stderr is a terminal)
  FILE* out = stdout;     // problems and repairs, one per line
};

struct FsckResult {
  uint64_t problems = 0;   // found
  uint64_t repaired = 0;   // of those, repaired
  uint64_t leftovers = 0;  // crash leftovers the next mount collects (not problems)
  uint64_t collected = 0;  // of those, collected by this run (-p, -y)
  bool operational_error = false;  // could not check (mounted, unreadable, ...)
  bool mounted = false;

  // fsck(8): 0 clean, 1 corrected, 4 left uncorrected, 8 operational error.
  int ExitCode() const {
    if (operational_error) return 8;
    if (problems > repaired) return 4;
    if (repaired > 0) return 1;
    return 0;
  }
};

// True (and a description in *what) if DATADIR is mounted: a fuse.matrixfs
// entry in /proc/self/mountinfo whose source is DATADIR, or kv/LOCK held.
bool InstanceInUse(const std::string& datadir, std::string* what);

FsckResult RunFsck(const std::string& datadir, const FsckOptions& options);

}  // namespace mxfs
