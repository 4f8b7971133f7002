// CompactionRunner: the steps every compaction that writes tables shares,
// whoever picked it (leveled compaction, blob GC, manual compaction, or
// L0's own compactor merging a column of the container into L1):
//   Describe: its input bytes and key range, for "matrixkv.compactions";
//   Merge:    its inputs (plus any extra ones, such as the container's rows
//             of a column) into new tables of its output level, dropping
//             entries no snapshot can see, moving large values into blob
//             files and relocating values out of blob files due for GC;
//             each finished output starts its fdatasync at once on an
//             mxfs-outsync thread, and the db directory's sync joins the
//             last ones (so the MANIFEST edit skips its own); Merge waits
//             for them, or leaves them running for the caller (a column
//             compactor committing one column while it merges the next);
//   Install:  one MANIFEST edit that deletes its inputs and adds the new
//             tables and blob files (or, on failure, removes them).
// Run does all three for one compaction; an L0 compactor that merges
// sub-ranges in parallel calls Merge once per sub-range and Install once.
//
// Every file number Merge takes is in the pending-outputs set (shared with
// DBImpl's flushes and obsolete-file sweep) until Install removes it.
//
// Thread-safety: Describe, Install and stats() with the DB mutex held;
// Merge without it (it takes the mutex for file numbers), from several
// threads at once on different compactions.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/iterator.h"
#include "base/status.h"
#include "kvcore/dbformat.h"
#include "kvcore/version_edit.h"

namespace mxfs {

class Compaction;
class VersionSet;
struct DbContext;

// One line of "matrixkv.compactions".
struct CompactionRecord {
  std::string kind;
  std::string smallest, largest;  // user keys, escaped
  uint64_t bytes_in = 0, bytes_out = 0, micros = 0;
};

class OutputSyncer;

// What a merge wrote: tables, blob files (with every number used, so that a
// failure can remove them) and the blob records it stopped referencing.
struct CompactionOutput {
  CompactionOutput();
  ~CompactionOutput();  // waits for syncs still running (their files are closed)
  CompactionOutput(CompactionOutput&&) noexcept;
  CompactionOutput& operator=(CompactionOutput&&) noexcept;

  std::vector<FileMetaData> tables;
  std::vector<uint64_t> table_numbers;
  std::vector<BlobFileMeta> blobs;
  std::vector<uint64_t> blob_numbers;
  std::map<uint64_t, BlobGarbage> garbage;
  uint64_t blob_bytes_relocated = 0;
  // Every file named here has a durable directory entry (Merge syncs the
  // directory with its outputs), so the MANIFEST edit naming them need not
  // sync it again (VersionEdit::set_new_files_dir_synced).
  bool dir_synced = true;
  // The syncs of the outputs (and the directory) a merge left running
  // (Merge with wait_for_syncs false).
  std::vector<std::unique_ptr<OutputSyncer>> syncs;
  // Waits for syncs; returns the first failure.
  [[nodiscard]] Status FinishSyncs();
  // Appends o (the output of the next sub-range).
  void Append(CompactionOutput&& o);
};

// Counters of installed compactions (the compaction.* and blob.* lines of
// "matrixkv.stats").
struct CompactionStats {
  uint64_t compactions = 0;
  uint64_t bytes_read = 0, bytes_written = 0;
  uint64_t blob_files = 0, blob_bytes_written = 0, blob_bytes_relocated = 0;
};

class CompactionRunner {
 public:
  // mu is the DB mutex; pending_outputs and stats are guarded by it.
  // shutting_down interrupts a merge.
  CompactionRunner(const DbContext* ctx, VersionSet* versions, std::mutex* mu, std::set<uint64_t>* pending_outputs,
                   const std::atomic<bool>* shutting_down)
      : ctx_(ctx), versions_(versions), mu_(mu), pending_outputs_(pending_outputs), shutting_down_(shutting_down) {}
  CompactionRunner(const CompactionRunner&) = delete;
  CompactionRunner& operator=(const CompactionRunner&) = delete;

  // Describe, Merge and Install for c (l holds the DB mutex; released while
  // merging). extra: further inputs merged with c's files; non-empty means
  // an L0 compaction (its kill points, kvcore.column.*).
  [[nodiscard]] Status Run(Compaction* c, std::unique_lock<std::mutex>& l, SequenceNumber smallest_snapshot,
                           CompactionRecord* rec, std::vector<std::unique_ptr<Iterator>> extra = {});

  // rec's input bytes and key range.
  void Describe(Compaction* c, CompactionRecord* rec) const;
  // input into new tables of c's output level, appended to out; every file
  // number it used goes to out (also on failure). from_level0: an L0
  // compaction (kill point kvcore.column.mid_merge). Each finished output
  // starts syncing at once; the directory sync joins them at the end.
  // wait_for_syncs: returns once they are done; else they may still run
  // (out->syncs) and the caller calls out->FinishSyncs before Install.
  [[nodiscard]] Status Merge(Compaction* c, Iterator* input, bool from_level0, SequenceNumber smallest_snapshot,
                             CompactionOutput* out, bool wait_for_syncs = true);
  // With s ok, one MANIFEST edit (c's) deletes c's inputs and adds out
  // (whose syncs must be finished); else the files in out are removed. Returns the final status; on success
  // rec->bytes_out is what it wrote.
  [[nodiscard]] Status Install(Compaction* c, std::unique_lock<std::mutex>& l, CompactionRecord* rec,
                               bool from_level0, Status s, const CompactionOutput& out);

  const CompactionStats& stats() const;

 private:
  const DbContext* const ctx_;
  VersionSet* const versions_;
  std::mutex* const mu_;
  std::set<uint64_t>* const pending_outputs_;
  const std::atomic<bool>* const shutting_down_;
  CompactionStats stats_;
};

}  // namespace mxfs
