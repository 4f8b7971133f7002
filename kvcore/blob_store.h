// Key-value separation in the engine: the blob index that an SSTable holds
// in place of a separated value, and BlobStore, the open blob files (see
// ssd/blob_file.h for their format).
//
// Which values are separated: a compaction that meets a put whose value is
// at least Options.min_blob_size bytes appends the value to one of its own
// blob files and writes a kTypeBlobIndex entry instead. The memtable and the
// matrix container always hold values inline, so separation happens once per
// value, at the first compaction that merges it: the column compaction that
// takes it out of the container, or (without a pool) the first L0->L1 merge;
// an SSD L0 table moved down whole by a trivial move keeps its values inline
// until a compaction merges it. Later compactions copy the 10–20 byte index,
// not the value.
//
// Every blob record is referenced by exactly one SSTable entry. When a
// compaction drops that entry (overwritten, deleted, or relocated) it counts
// the record as garbage of its file in the same MANIFEST edit; a file whose
// records are all garbage leaves the Version and is deleted once no older
// Version is pinned. Compactions relocate the live values of files whose
// garbage ratio reaches Options.blob_gc_garbage_ratio, so rewritten data
// frees its space.
//
// Garbage collection: the MANIFEST records per table which blob files it
// points into (version_edit.h, tag 11). A live file at the garbage
// threshold makes the tables that may point into it due for a GC
// compaction (VersionSet::FindGcInputs), which rewrites them in place in
// their level, the last level included, so the file's live values move
// and the file leaves the tree even where no size compaction goes.
// CompactRange ends with such steps over its range.
//
// Thread-safety: BlobIndex is a value type; BlobStore is thread-safe (its
// FileLru's mutex, never held across I/O).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/slice.h"
#include "base/status.h"
#include "kvcore/db_context.h"
#include "kvcore/file_lru.h"
#include "kvcore/include/pinnable_slice.h"
#include "ssd/blob_file.h"

namespace mxfs {

// Encoding: varint64 file number, varint64 record offset, varint64 value size.
struct BlobIndex {
  uint64_t file_number = 0;
  uint64_t offset = 0;  // of the record header in the file
  uint64_t value_size = 0;

  void EncodeTo(std::string* dst) const;
  // Corruption (quoting the bytes) if src is not exactly one blob index.
  [[nodiscard]] Status DecodeFrom(const Slice& src);
};

// Keeps at most max_open_files blob files open (least recently read first
// out, kvcore/file_lru.h), so a large database does not run into
// RLIMIT_NOFILE.
class BlobStore {
 public:
  BlobStore(const DbContext* ctx, size_t max_open_files) : ctx_(ctx), readers_(max_open_files) {}
  BlobStore(const BlobStore&) = delete;
  BlobStore& operator=(const BlobStore&) = delete;

  // Resolves the blob index stored for user_key into *value. Errors name the
  // blob file and offset.
  [[nodiscard]] Status Read(const Slice& user_key, const Slice& encoded_index, std::string* value);
  // The same for an index already decoded.
  [[nodiscard]] Status Read(const Slice& user_key, const BlobIndex& index, std::string* value);
  // The same into a PinnableSlice: where the file is mapped (mmap_reads)
  // the record is checked in place and the value pinned there, holding the
  // file's reader (and so its mapping) until the PinnableSlice lets go;
  // otherwise it is read into the PinnableSlice's buffer, not moved within
  // it.
  [[nodiscard]] Status Read(const Slice& user_key, const BlobIndex& index, PinnableSlice* value);
  // Forgets the reader of a file that is being deleted (a pinned value keeps
  // it open until released).
  void Evict(uint64_t number) { readers_.Evict(number); }
  // Blob files open now (at most max_open_files).
  size_t OpenFiles() { return readers_.Size(); }

 private:
  Result<std::shared_ptr<BlobFileReader>> Open(uint64_t number);

  const DbContext* const ctx_;
  FileLru<BlobFileReader> readers_;
};

}  // namespace mxfs
