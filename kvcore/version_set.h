// Version and VersionSet: the tree's shape (which table files sit at which
// level) and its history in the MANIFEST.
//
// A Version is immutable once installed; readers pin it with a shared_ptr
// and read without the DB mutex. VersionSet::LogAndApply appends an edit to
// the MANIFEST, syncs it and only then installs the resulting Version. The
// crash-consistency order is: new table files are synced (BuildTable,
// compaction), the directory is synced, the MANIFEST record is written and
// synced, and for a new MANIFEST, CURRENT is replaced atomically
// (WriteFileAtomic: temp file, sync, rename, directory sync).
//
// Each Open starts a new MANIFEST holding a snapshot of the recovered state;
// the old one becomes obsolete.
//
// Thread-safety: VersionSet methods are called with the DB mutex held
// (LogAndApply, PickCompaction and ReinstallCurrent check it), except
// Recover, which Open calls before any other thread can see the DB.
// LogAndApply releases the mutex while writing and serialises concurrent
// callers (the flush and compaction threads) itself. Versions are immutable.
#pragma once

#include <condition_variable>
#include <map>
#include <cstdint>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/iterator.h"
#include "base/pinned.h"
#include "base/status.h"
#include "kvcore/db_context.h"
#include "kvcore/dbformat.h"
#include "kvcore/include/pinnable_slice.h"
#include "kvcore/log_writer.h"
#include "kvcore/version_edit.h"

namespace mxfs {

class Level0;

using FileList = std::vector<std::shared_ptr<FileMetaData>>;

// A live blob file and how much of it is garbage (see blob_store.h).
struct BlobFileState {
  BlobFileMeta meta;
  BlobGarbage garbage;
  double GarbageRatio() const {
    return meta.record_bytes == 0 ? 1.0 : static_cast<double>(garbage.bytes) / static_cast<double>(meta.record_bytes);
  }
};
using BlobFileMap = std::map<uint64_t, std::shared_ptr<const BlobFileState>>;

class Version {
 public:
  Version(const DbContext* ctx, Level0* level0, int num_levels) : ctx_(ctx), level0_(level0), files_(num_levels) {}

  // Searches L0 (through Level0) then L1..Ln. NotFound if absent or deleted.
  [[nodiscard]] Status Get(const ReadOptions& options, const LookupKey& key, std::string* value) const;
  // The same into a PinnableSlice: a value from a mapped blob file is pinned
  // (BlobStore::Read), every other value copied into its buffer.
  [[nodiscard]] Status Get(const ReadOptions& options, const LookupKey& key, PinnableSlice* value) const;
  // Appends iterators over every level to iters.
  void AddIterators(const ReadOptions& options, std::vector<std::unique_ptr<Iterator>>* iters) const;

  int num_levels() const { return static_cast<int>(files_.size()); }
  const FileList& files(int level) const { return files_[level]; }
  // Blob files with at least one referenced record, by number.
  const BlobFileMap& blob_files() const { return blob_files_; }
  int NumFiles(int level) const { return static_cast<int>(files_[level].size()); }
  uint64_t NumBytes(int level) const;
  // Files of level overlapping the user-key range [begin, end] (nullptr:
  // unbounded). For level 0 the range grows to cover overlapping files.
  void GetOverlappingInputs(int level, const InternalKey* begin, const InternalKey* end, FileList* inputs) const;
  bool OverlapInLevel(int level, const Slice* smallest_user, const Slice* largest_user) const;
  // Searches level >= 1 for key: sets *found/*deleted as Level0::Get does.
  // Value is std::string or PinnableSlice.
  template <typename Value>
  [[nodiscard]] Status GetFromLevel(int level, const ReadOptions& options, const LookupKey& key, Value* value,
                                    bool* found, bool* deleted) const;

  // Table::Get on one file: *found/*deleted for key's user key. Value is
  // std::string or PinnableSlice.
  template <typename Value>
  [[nodiscard]] static Status GetFromFile(const DbContext* ctx, const ReadOptions& options, const FileMetaData& f,
                                          const LookupKey& key, Value* value, bool* found, bool* deleted);

  // What Level0::Pin returned when this Version was installed.
  const std::shared_ptr<const void>& level0_pin() const { return level0_pin_; }

  double compaction_score() const { return compaction_score_; }
  int compaction_level() const { return compaction_level_; }
  // Blob garbage collection (VersionSet::Finalize): the live blob file with
  // the largest garbage ratio at or above Options.blob_gc_garbage_ratio that
  // a table of L1 or below may still point into, and the adjacent tables of
  // one level to rewrite in place for it (empty: none due). gc_score() is
  // that file's ratio divided by the threshold (>= 1 when due, else 0).
  const FileList& gc_inputs() const { return gc_inputs_; }
  int gc_level() const { return gc_level_; }
  uint64_t gc_blob() const { return gc_blob_; }
  double gc_score() const { return gc_score_; }

 private:
  friend class VersionSet;
  // Both Gets: Value is std::string or PinnableSlice; only the L0 step
  // differs (L0 values are copied into a PinnableSlice's own buffer).
  template <typename Value>
  [[nodiscard]] Status GetImpl(const ReadOptions& options, const LookupKey& key, Value* value) const;

  const DbContext* ctx_;
  Level0* level0_;
  std::vector<FileList> files_;  // L0 sorted by file number ascending, others by smallest key
  BlobFileMap blob_files_;
  std::shared_ptr<const void> level0_pin_;
  double compaction_score_ = -1;
  int compaction_level_ = -1;
  FileList gc_inputs_;
  int gc_level_ = -1;
  uint64_t gc_blob_ = 0;
  double gc_score_ = 0;
};

// One compaction: inputs[0] at level, inputs[1] at level + 1, output into
// level + 1. A blob garbage-collection compaction (is_gc) instead rewrites
// the adjacent tables inputs[0] of one level in place: output_level() ==
// level(), inputs[1] empty, never a trivial move.
class Compaction {
 public:
  Compaction(const DbContext* ctx, int level, std::shared_ptr<Version> input_version);

  int level() const { return level_; }
  int output_level() const { return output_level_; }
  bool is_gc() const { return gc_blob_ != 0; }
  // The blob file whose garbage made this a GC compaction (0: none).
  uint64_t gc_blob() const { return gc_blob_; }
  VersionEdit* edit() { return &edit_; }
  const FileList& inputs(int which) const { return inputs_[which]; }
  FileList* mutable_inputs(int which) { return &inputs_[which]; }
  uint64_t MaxOutputFileSize() const { return max_output_file_size_; }
  // Smaller output tables than target_file_size_base (column compaction:
  // L1 tables it can cut its next columns at).
  void set_max_output_file_size(uint64_t bytes) { max_output_file_size_ = bytes; }
  const std::shared_ptr<Version>& input_version() const { return input_version_; }
  // A single input file with nothing to merge: moved by an edit alone.
  bool IsTrivialMove() const;
  void AddInputDeletions(VersionEdit* edit) const;
  // True if no level below the output holds user_key (tombstones may go).
  bool IsBaseLevelForKey(const Slice& user_key);
  // True if the current output should end before internal_key (it would
  // overlap too many grandparent bytes).
  bool ShouldStopBefore(const Slice& internal_key);
  uint64_t InputBytes() const;

 private:
  friend class VersionSet;
  const DbContext* ctx_;
  int level_;
  int output_level_;
  uint64_t gc_blob_ = 0;
  uint64_t max_output_file_size_;
  std::shared_ptr<Version> input_version_;
  VersionEdit edit_;
  FileList inputs_[2];
  FileList grandparents_;
  size_t grandparent_index_ = 0;
  bool seen_key_ = false;
  uint64_t overlapped_bytes_ = 0;
  std::vector<size_t> level_ptrs_;
};

class VersionSet {
 public:
  VersionSet(const DbContext* ctx, Level0* level0);
  VersionSet(const VersionSet&) = delete;
  VersionSet& operator=(const VersionSet&) = delete;
  ~VersionSet();

  // Reads CURRENT and replays its MANIFEST. Errors name the file and offset.
  [[nodiscard]] Status Recover();
  // Writes edit to the MANIFEST (creating a new one holding a snapshot first
  // if needed) and installs the new Version. lock must hold the DB mutex; it
  // is released during I/O. On error the current Version is unchanged.
  // The directory is synced before the record when the edit adds files,
  // unless edit->new_files_dir_synced() (and the MANIFEST is not new).
  [[nodiscard]] Status LogAndApply(VersionEdit* edit, std::unique_lock<std::mutex>& lock);

  // The current Version, held by the caller (see base/pinned.h).
  Pinned<Version> current() const { return Pinned<Version>(current_); }
  uint64_t NewFileNumber() { return next_file_number_++; }
  uint64_t PeekNextFileNumber() const { return next_file_number_; }
  void MarkFileNumberUsed(uint64_t n) {
    if (next_file_number_ <= n) next_file_number_ = n + 1;
  }
  // Atomic, so that Get reads it without the DB mutex (release/acquire:
  // see DBImpl::PublishReadView).
  SequenceNumber LastSequence() const { return last_sequence_.load(std::memory_order_acquire); }
  void SetLastSequence(SequenceNumber s) { last_sequence_.store(s, std::memory_order_release); }
  // Called (DB mutex held) after every Version installed from then on.
  void SetOnNewVersion(std::function<void()> f) { on_new_version_ = std::move(f); }
  uint64_t LogNumber() const { return log_number_; }
  uint64_t ManifestFileNumber() const { return manifest_file_number_; }
  Level0* level0() const { return level0_; }
  // The latest level0 state recorded in the MANIFEST (empty if none).
  const std::string& level0_state() const { return level0_state_; }
  // Installs a copy of the current Version with a fresh Level0::Pin (after
  // the L0 changed without a MANIFEST edit, e.g. a column was freed).
  void ReinstallCurrent();

  // Table and blob files referenced by any Version still pinned.
  void AddLiveFiles(std::set<uint64_t>* live);
  // A size compaction or a blob GC compaction is due.
  bool NeedsCompaction() const;
  // The most urgent size compaction or the due blob GC compaction, or
  // nullptr. When both are due they take turns, so that neither starves the
  // other: a GC compaction rewrites a bounded set of tables and each one
  // strictly shrinks the set of tables that may point into its blob file.
  std::unique_ptr<Compaction> PickCompaction();
  // The leveled compaction of level starting from its compaction pointer (used by SsdLevel0 for L0).
  std::unique_ptr<Compaction> PickLeveledCompaction(int level, const std::shared_ptr<Version>& v);
  // A manual compaction of [begin, end] at level, or nullptr if nothing overlaps.
  std::unique_ptr<Compaction> CompactRange(int level, const InternalKey* begin, const InternalKey* end);
  // A GC compaction (as PickCompaction's) of tables of L1 or below that
  // overlap [begin, end] (nullptr: unbounded), or nullptr if no table there
  // may point into a blob file at or above the garbage threshold. Used by a
  // manual compaction after its size steps, the last level included.
  std::unique_ptr<Compaction> CompactRangeGc(const InternalKey* begin, const InternalKey* end);
  // An iterator over all inputs of c (internal keys).
  std::unique_ptr<Iterator> MakeInputIterator(Compaction* c);

  uint64_t MaxBytesForLevel(int level) const;
  std::string LevelSummary() const;

 private:
  class Builder;
  void Finalize(Version* v) const;
  // The GC pick in v within [begin, end] (nullptr: unbounded): sets
  // *level, *inputs, *blob and *score; false if none is due.
  bool FindGcInputs(const Version& v, const InternalKey* begin, const InternalKey* end, int* level,
                    FileList* inputs, uint64_t* blob, double* score) const;
  std::unique_ptr<Compaction> NewGcCompaction(const std::shared_ptr<Version>& v, int level, FileList inputs,
                                              uint64_t blob);
  void SetupOtherInputs(Compaction* c);
  void GetRange(const FileList& inputs, InternalKey* smallest, InternalKey* largest) const;
  void GetRange2(const FileList& a, const FileList& b, InternalKey* smallest, InternalKey* largest) const;
  Status WriteSnapshot(LogWriter* log);
  void AppendVersion(std::shared_ptr<Version> v);

  const DbContext* const ctx_;
  Level0* const level0_;
  const int num_levels_;
  uint64_t next_file_number_ = 2;
  uint64_t manifest_file_number_ = 0;
  std::atomic<SequenceNumber> last_sequence_{0};
  std::function<void()> on_new_version_;
  uint64_t log_number_ = 0;
  std::string level0_state_;

  std::unique_ptr<LogWriter> manifest_;
  bool manifest_busy_ = false;         // a LogAndApply is writing
  std::condition_variable manifest_cv_;
  std::shared_ptr<Version> current_;
  std::vector<std::weak_ptr<Version>> live_versions_;
  std::vector<std::string> compact_pointer_;  // per level: the largest key of the last compaction
  bool last_pick_gc_ = false;                 // PickCompaction's last pick was a GC compaction
};

}  // namespace mxfs
