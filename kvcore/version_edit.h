// VersionEdit: one MANIFEST record, the difference between two versions of
// the tree (files added and removed per level, counters, compaction cursors).
//
// Encoding: a sequence of tagged fields, each varint32(tag) then the field:
//   1 comparator       varstring
//   2 log number       varint64   (WALs older than this are obsolete)
//   3 next file number varint64
//   4 last sequence    varint64
//   5 compact pointer  varint32 level, varstring internal key
//   6 deleted file     varint32 level, varint64 number
//   7 new file         varint32 level, varint64 number, varint64 size,
//                      varstring smallest, varstring largest (internal keys),
//                      varint64 smallest seq, varint64 largest seq
//   8 level0 state     varstring (opaque state of an NVM L0, see level0.h)
//   9 new blob file    varint64 number, varint64 file size, varint64 records,
//                      varint64 record bytes
//  10 blob garbage     varint64 number, varint64 records, varint64 bytes: so
//                      many more of the file's records are no longer
//                      referenced (added to what earlier edits said)
//  11 new file with    the fields of 7, then varint32 count and count
//     blob references  varint64s: the blob files the table's blob indexes
//                      point into, ascending, the first as a number and
//                      each later one as its difference from the one
//                      before (> 0). A table whose references are known is
//                      written with 11 (count 0: none), any other with 7.
// Unknown tags are corruption (a newer format), reported with the tag.
// MANIFESTs written before tag 11 existed hold only tag 7: their tables
// decode with blob_refs_known false, "may point into any blob file", and
// blob garbage collection treats them so until a compaction rewrites them.
//
// Thread-safety: a value type.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kvcore/dbformat.h"

namespace mxfs {

struct FileMetaData {
  uint64_t number = 0;
  uint64_t file_size = 0;
  InternalKey smallest;
  InternalKey largest;
  SequenceNumber smallest_seq = 0;
  SequenceNumber largest_seq = 0;
  // The blob files this table's kTypeBlobIndex entries point into, ascending
  // and distinct (empty: none), when blob_refs_known. Unknown only for a
  // table named by a MANIFEST field of tag 7 (an older MANIFEST): it may
  // point into any blob file.
  std::vector<uint64_t> blob_refs;
  bool blob_refs_known = false;
  bool being_compacted = false;  // guarded by the DB mutex

  // False only if the table certainly holds no index into blob file number.
  bool MayReferenceBlob(uint64_t number) const {
    return !blob_refs_known || std::binary_search(blob_refs.begin(), blob_refs.end(), number);
  }
};

// A blob file as a compaction finished it (blob_store.h).
struct BlobFileMeta {
  uint64_t number = 0;
  uint64_t file_size = 0;
  uint64_t records = 0;
  uint64_t record_bytes = 0;
};

// Records of a blob file that no SSTable entry references any more.
struct BlobGarbage {
  uint64_t records = 0;
  uint64_t bytes = 0;
};

class VersionEdit {
 public:
  void Clear() { *this = VersionEdit(); }

  void SetComparatorName(const Slice& name) { comparator_ = name.ToString(); }
  void SetLogNumber(uint64_t n) { log_number_ = n; }
  void SetNextFile(uint64_t n) { next_file_number_ = n; }
  void SetLastSequence(SequenceNumber s) { last_sequence_ = s; }
  void SetCompactPointer(int level, const InternalKey& key) { compact_pointers_.emplace_back(level, key); }
  void SetLevel0State(std::string state) { level0_state_ = std::move(state); }
  void AddFile(int level, const FileMetaData& f) {
    FileMetaData copy = f;
    copy.being_compacted = false;
    new_files_.emplace_back(level, copy);
  }
  void RemoveFile(int level, uint64_t number) { deleted_files_.insert({level, number}); }
  void AddBlobFile(const BlobFileMeta& b) { new_blob_files_.push_back(b); }
  void AddBlobGarbage(uint64_t number, const BlobGarbage& g) {
    BlobGarbage& sum = blob_garbage_[number];
    sum.records += g.records;
    sum.bytes += g.bytes;
  }

  // Not persisted: the directory entries of the new files (tables and blob
  // files) are already durable, so LogAndApply need not sync the directory
  // before the record naming them (a compaction that synced the directory
  // together with its outputs; CompactionRunner::Merge).
  void set_new_files_dir_synced(bool synced) { new_files_dir_synced_ = synced; }
  bool new_files_dir_synced() const { return new_files_dir_synced_; }

  void EncodeTo(std::string* dst) const;
  // Corruption naming the field and the byte offset where decoding failed.
  [[nodiscard]] Status DecodeFrom(const Slice& src);
  std::string DebugString() const;

  const std::optional<std::string>& comparator() const { return comparator_; }
  const std::optional<uint64_t>& log_number() const { return log_number_; }
  const std::optional<uint64_t>& next_file_number() const { return next_file_number_; }
  const std::optional<SequenceNumber>& last_sequence() const { return last_sequence_; }
  const std::optional<std::string>& level0_state() const { return level0_state_; }
  const std::vector<std::pair<int, InternalKey>>& compact_pointers() const { return compact_pointers_; }
  const std::set<std::pair<int, uint64_t>>& deleted_files() const { return deleted_files_; }
  const std::vector<std::pair<int, FileMetaData>>& new_files() const { return new_files_; }
  const std::vector<BlobFileMeta>& new_blob_files() const { return new_blob_files_; }
  const std::map<uint64_t, BlobGarbage>& blob_garbage() const { return blob_garbage_; }

 private:
  std::optional<std::string> comparator_;
  std::optional<uint64_t> log_number_;
  std::optional<uint64_t> next_file_number_;
  std::optional<SequenceNumber> last_sequence_;
  std::optional<std::string> level0_state_;
  std::vector<std::pair<int, InternalKey>> compact_pointers_;
  std::set<std::pair<int, uint64_t>> deleted_files_;
  std::vector<std::pair<int, FileMetaData>> new_files_;
  std::vector<BlobFileMeta> new_blob_files_;
  std::map<uint64_t, BlobGarbage> blob_garbage_;
  bool new_files_dir_synced_ = false;
};

}  // namespace mxfs
