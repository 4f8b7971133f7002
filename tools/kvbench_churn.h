// kvbench's fschurn benchmark: filesystem churn at the engine level, the
// create/delete cycles of a tree (issue 8's unpack and rm -rf loop) in the
// key shapes MatrixFS writes (fuse/schema.h), so that how reads age with
// the rows and tombstones left in the matrix container can be measured
// without a mount.
//
// One cycle: create a tree of --churn_files files, --churn_files_per_dir to
// a directory, each file one WriteBatch (its dentry `D` parent name, its
// inode `I` ino, one data block `F` ino 0 of --value_size bytes and the
// parent's inode), then remove it as rm -rf does: list each directory (a
// prefix scan of its `D` keys, with ReadOptions::prefix unless
// --noprefix_scans), look each entry's inode up (a Get), delete
// the file's keys and update the parent in one batch, then the directory.
// Inode numbers grow across cycles, as the filesystem's allocator's do.
//
// After each cycle one line:
//   fschurn cycle C: create S s, rm S s, rows R (receiver r + compactor c),
//   get p50/p99 U/U us, scan p50/p99 U/U us, rss M MB, anon M MB
// rows from "matrixkv.container" (0 without a pool), get and scan over the
// rm phase's Gets and directory listings, rss/anon the process's VmRSS and
// RssAnon (/proc/self/status). --churn_csv also writes them as CSV, one
// line per cycle, for plotting.
//
// Thread-safety: RunFsChurn runs on one thread; it uses the DB (thread-safe).
#pragma once

#include <cstdint>

#include "kvcore/include/db.h"
#include "tools/kvbench_flags.h"

namespace mxfs::kvbench {

// Runs the cycles; returns the operations done (creates + removals + Gets
// + listings), for the result line. Exits through Fail on an engine error.
uint64_t RunFsChurn(DB* db, const Flags& flags, const ReadOptions& ro, const WriteOptions& wo);

}  // namespace mxfs::kvbench
