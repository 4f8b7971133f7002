// ColumnCompactor: the matrix container's compactions (MatrixKV's column
// compaction), the Level0Compactor of ContainerLevel0. DBImpl runs it on the
// mxfs-colcomp thread beside leveled compaction.
//
// Its share of the machine follows the container's fill (ColumnShareFor):
// idle (SCHED_IDLE, idle I/O class) only while most of the container is
// free and it holds few rows, normal in between, high (nice -10) when little is left or a flush
// waits for room. While threads that only read are active
// (ReaderPresence), at most low (nice 10), even while a flush waits for
// room: the writers then stall and the readers keep their CPU
// (ColumnShareBehindReaders). On a busy machine an idle or even a normal compactor
// gets too little CPU beside CPU-bound processes; the container then fills
// and every writer stalls (issue 16: fill rate -55% beside two compilers).
// The share is re-evaluated after every flush (ContainerLevel0 calls
// UpdateShare) and every column, and applied to the compactor's threads by
// tid, so a thread in the middle of a long merge is raised at once.
//
// One compaction: the column starts at the compactor's smallest key and
// ends at the smallest key of an L1 table: L1's key space is cut at its
// tables' bounds, and the column widened table by table until it holds at
// least min_bytes of the container, where min_bytes is an eighth of the
// compactor's bytes (about eight columns drain it, so a column spans
// several L1 tables once the compactor is large: fewer, fuller output
// tables, one MANIFEST edit per column) and at least half a target file;
// while a flush waits for room (container full) only half a target file,
// so that pages come back soon. The column and its overlapping L1 tables
// are merged into new L1 tables (CompactionHost::runner; at most
// ColumnOutputFileSize each, so that the next drain has bounds to cut
// columns at), recorded in the
// MANIFEST with the compacted-up-to key (Level0State), and only then are
// the column's pages freed (MatrixContainer::MarkColumnCompacted).
//
// With Options.column_compaction_threads > 1 a column spanning several L1
// tables is cut at those tables' bounds into that many sub-ranges (whole
// tables per sub-range, so no user key is in two), merged in parallel on
// helper threads (also named mxfs-colcomp) into their own output tables and
// installed by one MANIFEST edit.
//
// Leveled compaction never shares an L1 input table with a column
// (CompactionHost::L1Busy): a table a leveled compaction reads ends the
// column before it, or, if the column starts in it, the column waits for
// that compaction (the time waited is column.blocked.micros).
//
// Columns are pipelined, depth 1: while column k commits on the
// mxfs-colcommit thread (its outputs' syncs, started as each output was
// finished, then its MANIFEST edit, MarkColumnCompacted, the new Version
// and the pacer's drain rate), column k+1 merges on mxfs-colcomp. Column
// k+1 starts at k's end explicitly (the container's compacted key moves
// only when k's pages are freed), its L1 tables come from the Version
// current at its pick and stay busy until its commit. At most one column
// commits at a time, in column order: k+1 is handed over only after k's
// commit ended; if that failed, k+1's outputs are removed and k's error
// is CompactNext's. One CompactNext call runs columns back to back while
// the host lets it (CompactionHost::L0MayContinue) and waits for the last
// commit before it returns; when nothing is left after k's end it waits
// for k's commit, which may switch the receiver to the compactor.
//
// After each column the drain rate (container bytes freed per second,
// back-to-back columns counting the gap between them, pipelined ones the
// time between two commits) goes to the ContainerPacer that paces writers
// (container_level0.h).
//
// Kill points: kvcore.column.{mid_merge,after_sub_merges,before_manifest,
// after_manifest,after_free,pipelined} (pipelined: column k+1's outputs
// are written while column k's commit may be anywhere).
//
// Thread-safety: CompactNext and stats with the DB mutex held, one
// CompactNext at a time (the mxfs-colcomp thread; it joins the commit
// thread before it returns); HasWork, MakeAllCompactable and UpdateShare
// from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kvcore/background.h"
#include "kvcore/level0.h"

namespace mxfs {

class ContainerPacer;
class NvmBackend;
struct DbContext;

// The share column compaction gets with free_pages of total_pages free in
// the container (full: a flush waits for room): idle from 60% free, normal
// from 25%, high below. many_rows (the container holds at least
// Options.container_max_receiver_rows rows): never idle, since every read
// pays for every row and an idle compactor on a busy machine never drains
// them.
BackgroundShare ColumnShareFor(uint64_t free_pages, uint64_t total_pages, bool full, bool many_rows);

// The share column compaction gets instead of want (ColumnShareFor) while
// threads that only read are active (ReaderPresence): at most low (nice
// 10), even while the container is nearly full or a flush waits for room.
// Under an unlimited writer both hold nearly all the time, and the
// compactor at nice -10 took a CPU while the reader shared the other with
// the writer (issue 16 session 6: readwhilewriting's reader 56-66k Gets/s
// with it for a nearly full container, 76-80k without; session 11, for a
// flush waiting for room: 195-233k against 138-139k, the writer's puts/s
// not lower). Held back, it lets the writer stall instead.
BackgroundShare ColumnShareBehindReaders(BackgroundShare want, bool readers_active);

// The largest L1 table a column writes when L1 holds l1_bytes: a
// (2 * columns per drain)th of L1, at least 1/64 of target_file_size (and
// 64 KiB), at most target_file_size. With values in blob files L1 is small
// (keys and blob indexes): tables of the target size would leave it one
// table, and every column would then be the whole compactor, its pages
// freed only when all of it is in L1.
uint64_t ColumnOutputFileSize(uint64_t l1_bytes, uint64_t target_file_size);

class ColumnCompactor final : public Level0Compactor {
 public:
  // pacer (guarded by the DB mutex) learns each column's drain rate.
  ColumnCompactor(const DbContext* ctx, NvmBackend* nvm, ContainerPacer* pacer)
      : ctx_(ctx), nvm_(nvm), pacer_(pacer) {}
  ~ColumnCompactor() override;
  ColumnCompactor(const ColumnCompactor&) = delete;
  ColumnCompactor& operator=(const ColumnCompactor&) = delete;

  const char* name() const override { return "column compaction"; }
  const char* thread_name() const override { return "mxfs-colcomp"; }
  void EnterThread() const override;
  void LeaveThread() const override;
  // Sets the compactor threads' share from the container's fill now.
  void UpdateShare();
  void SetReadersActive(bool active) override;
  bool HasWork() const override;
  [[nodiscard]] Status CompactNext(CompactionHost* host, std::unique_lock<std::mutex>& l, bool* blocked) override;
  // Switches the receiver to the compactor (once the compactor is empty).
  [[nodiscard]] Status MakeAllCompactable() override;
  Level0CompactionStats stats() const override;

 private:
  struct Column;
  // DB mutex held throughout. Chooses the next column: from *after (the
  // end of the column still committing) or, with after null, from the
  // compactor's smallest key; its L1 tables become busy. *out stays null
  // if there is nothing to do (or *blocked).
  [[nodiscard]] Status Pick(CompactionHost* host, const std::string* after, bool* blocked,
                            std::unique_ptr<Column>* out);
  // Merges col (l released meanwhile); its outputs may still be syncing.
  [[nodiscard]] Status MergeColumn(CompactionHost* host, std::unique_lock<std::mutex>& l, Column* col);
  // Removes col's outputs after s (a failure) and releases its L1 tables.
  void Abandon(CompactionHost* host, std::unique_lock<std::mutex>& l, Column* col, const Status& s);
  // Commits col on the mxfs-colcommit thread: waits for its outputs'
  // syncs, installs its MANIFEST edit, frees its pages and records it.
  void StartCommit(CompactionHost* host, std::unique_ptr<Column> col);
  // Waits for the commit StartCommit began; returns its status.
  [[nodiscard]] Status WaitCommit(std::unique_lock<std::mutex>& l);
  [[nodiscard]] Status Commit(CompactionHost* host, std::unique_lock<std::mutex>& l, Column* col);

  const DbContext* const ctx_;
  NvmBackend* const nvm_;
  ContainerPacer* const pacer_;
  // The compactor's threads and their share (its own mutex, a leaf).
  mutable ThreadGroupShare share_;
  std::atomic<bool> readers_active_{false};
  // DB mutex: when the last column ended, since when the next one has been
  // waiting for a leveled compaction (0: it is not), and the counters.
  uint64_t last_column_end_us_ = 0;
  uint64_t blocked_since_us_ = 0;
  Level0CompactionStats stats_;
  // The committing column's thread (joined by the mxfs-colcomp thread in
  // WaitCommit, before CompactNext returns) and its result (DB mutex).
  std::thread commit_thread_;
  Status commit_status_;
};

}  // namespace mxfs
