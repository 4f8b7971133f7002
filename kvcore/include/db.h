// DB: the MatrixKV public interface. A persistent ordered map from byte
// strings to byte strings with atomic batches, snapshots and iterators.
//
// Thread-safety: every DB method is thread-safe. Iterators and snapshots may
// be used from any one thread at a time and must be released before the DB
// is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/iterator.h"
#include "base/slice.h"
#include "base/status.h"
#include "kvcore/include/options.h"
#include "kvcore/include/pinnable_slice.h"
#include "kvcore/include/write_batch.h"

namespace mxfs {

// A consistent point-in-time view; obtained from DB::GetSnapshot.
class Snapshot {
 protected:
  virtual ~Snapshot() = default;
};

class DB {
 public:
  // Opens (or, with create_if_missing, creates) the database in directory
  // path. On failure the Status says what is wrong: the path is a file, the
  // directory is unreadable, another process holds the LOCK, the MANIFEST or
  // a table is corrupt (naming the file and offset), the NVM pool is missing,
  // foreign or too small.
  static Result<std::unique_ptr<DB>> Open(const Options& options, const std::string& path);

  DB() = default;
  DB(const DB&) = delete;
  DB& operator=(const DB&) = delete;
  // Closes cleanly (waits for background work) if Close was not called.
  virtual ~DB();

  virtual Status Put(const WriteOptions& options, const Slice& key, const Slice& value) = 0;
  virtual Status Delete(const WriteOptions& options, const Slice& key) = 0;
  // Applies the batch atomically. Once it returns OK the batch is durable as
  // WriteOptions says.
  virtual Status Write(const WriteOptions& options, WriteBatch* batch) = 0;
  // NotFound if the key has no value.
  virtual Status Get(const ReadOptions& options, const Slice& key, std::string* value) = 0;
  // The same without a copy where the engine can pin the value: a value in
  // a mapped blob file (Options.mmap_reads) stays where it is, held by
  // *value until its Reset or next use (pinnable_slice.h, also for what an
  // I/O error then means); others are copied into *value's buffer, which a
  // reused PinnableSlice keeps. As RocksDB's Get into a PinnableSlice.
  virtual Status Get(const ReadOptions& options, const Slice& key, PinnableSlice* value) = 0;
  virtual std::unique_ptr<Iterator> NewIterator(const ReadOptions& options) = 0;

  virtual const Snapshot* GetSnapshot() = 0;
  virtual void ReleaseSnapshot(const Snapshot* snapshot) = 0;

  // Properties (text unless noted):
  //   "matrixkv.stats"        ops, bytes, write amplification, stall time per cause, background error
  //   "matrixkv.levels"       files and bytes per level
  //   "matrixkv.container"    matrix container rows, bytes, columns compacted (when a pool is used)
  //   "matrixkv.compactions"  recent compactions: kind, key range, bytes in/out, duration
  //   "matrixkv.blob-files"   live blob files: records, bytes, garbage, garbage ratio, file size
  //   "matrixkv.num-files-at-level<N>", "matrixkv.write-amp", "matrixkv.stall-micros",
  //   "matrixkv.bytes-written-ssd", "matrixkv.user-bytes-written"   (numbers as text)
  virtual bool GetProperty(std::string_view name, std::string* value) = 0;

  // Compacts the key range [begin, end] (nullptr: unbounded) down the tree.
  virtual Status CompactRange(const Slice* begin, const Slice* end) = 0;
  // Flushes the memtable and waits until it is persisted below.
  virtual Status Flush() = 0;
  // Waits until background work is idle: no memtable waiting for a flush,
  // no flush or compaction running, none due (size or blob garbage), and
  // with a pool no column of the compactor left. Writes that go on
  // meanwhile may keep it waiting. IOError naming the cause after a
  // background error; InvalidArgument once closed.
  virtual Status WaitForIdle() = 0;
  // Waits for background work, flushes nothing that the WAL already holds,
  // releases files. Further calls fail with InvalidArgument.
  virtual Status Close() = 0;
};

}  // namespace mxfs
