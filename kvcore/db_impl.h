// DBImpl: the MatrixKV engine behind the DB interface.
//
// Write path: writers queue in writers_; the front writer (leader) merges
// the queued batches into one group, appends it to the WAL as one record
// (syncing once if any writer asked), inserts it into the memtable without
// the mutex (the memtable has one writer: the leader), publishes the new
// last sequence and releases the group (WriteWaiter, outside the mutex).
// While writers wait behind it, the leader writes their group as well (at
// most kMaxGroupsLed groups), then makes the front writer the next leader.
//
// Background: the flush thread (mxfs-flush) turns immutable memtables into
// L0 through Level0; the compaction thread (mxfs-compact) runs leveled
// compactions; an L0 with a compactor of its own (the container's column
// compaction) gets a third thread that runs it (Level0Compactor), beside
// leveled compaction but never on the same L1 table (busy_l1_; DBImpl is
// the compactor's CompactionHost). Both kinds merge and install through one
// CompactionRunner. A background error is sticky: the DB becomes read-only
// and every write returns ReadOnly naming the cause; "matrixkv.stats" shows
// it.
//
// Files: db_impl.cc (writes, reads, background threads, control), db_open.cc
// (open, recovery, the lock against a second open), db_stats.cc (properties).
//
// Reads: Get and NewIterator never take mu_. What they read (the active
// and immutable memtables and the current Version) is one immutable
// ReadView, replaced under mu_ whenever one of them changes
// (PublishReadView) and copied under its own small mutex held only for the
// pointer copy (PublishedView), then the last sequence (see
// PublishReadView). Before, every read took mu_ and copied the memtable
// list, and queued behind writers, flushes and column picks holding it
// (readwhilewriting, issue 16).
//
// Lock order: DBImpl::mu_ before TableCache/BlockCache internal mutexes.
// mu_ is never held across file I/O: LogAndApply, table building, WAL
// appends, log creation and obsolete-file deletion all release it. Methods
// documented "mu_ held" check it (MXFS_ASSERT_HELD, base/lock_check.h).
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kvcore/background.h"
#include "kvcore/blob_store.h"
#include "kvcore/compaction_runner.h"
#include "kvcore/db_context.h"
#include "kvcore/db_stats.h"
#include "kvcore/include/db.h"
#include "kvcore/level0.h"
#include "kvcore/memtable.h"
#include "kvcore/nvm_backend.h"
#include "kvcore/table_cache.h"
#include "kvcore/version_set.h"
#include "kvcore/wal.h"
#include "kvcore/wal_store.h"

namespace mxfs {

class DBImpl final : public DB, private CompactionHost {
 public:
  DBImpl(const Options& options, const std::string& dbname);
  ~DBImpl() override;

  // Recovery: directory checks, LOCK, MANIFEST, WAL replay, threads.
  [[nodiscard]] Status Open();

  Status Put(const WriteOptions& options, const Slice& key, const Slice& value) override;
  Status Delete(const WriteOptions& options, const Slice& key) override;
  Status Write(const WriteOptions& options, WriteBatch* batch) override;
  Status Get(const ReadOptions& options, const Slice& key, std::string* value) override;
  Status Get(const ReadOptions& options, const Slice& key, PinnableSlice* value) override;
  std::unique_ptr<Iterator> NewIterator(const ReadOptions& options) override;
  const Snapshot* GetSnapshot() override;
  void ReleaseSnapshot(const Snapshot* snapshot) override;
  bool GetProperty(std::string_view name, std::string* value) override;
  Status CompactRange(const Slice* begin, const Slice* end) override;
  Status Flush() override;
  Status WaitForIdle() override;
  Status Close() override;

 private:
  struct Writer;
  struct ManualCompaction;
  class SnapshotImpl;

  // Get into a std::string or a PinnableSlice.
  template <typename Value>
  Status GetImpl(const ReadOptions& options, const Slice& key, Value* value);
  Status OpenLocked(std::unique_lock<std::mutex>& l);
  Status RecoverLog(uint64_t number, VersionEdit* edit, SequenceNumber* max_sequence);
  // PM WAL replay: records newer than the flushed sequence become immutable
  // memtables (flushed by the flush thread once it runs).
  Status RecoverPmWal(SequenceNumber* max_sequence);
  // Drops lock_key_ from the process-wide set of open databases.
  void ReleaseOpenPath();
  Status NewLog(std::unique_lock<std::mutex>* l, uint64_t* number, std::unique_ptr<WalWriter>* log);
  Status WriteImpl(const WriteOptions& options, WriteBatch* batch);  // batch nullptr: force a memtable switch
  Status MakeRoomForWrite(std::unique_lock<std::mutex>& l, bool force);
  // A writer waits for the flush (a full memtable, a full PM WAL) until the
  // background signals, at most at_most if it is not zero; the wait counts
  // as a container-full stall if a flush waited for room meanwhile, else as
  // a memtable-full stall (mu_ held).
  void WaitForFlush(std::unique_lock<std::mutex>& l, std::chrono::milliseconds at_most);
  // The memtables as Level0's writer pacing sees them (mu_ held).
  MemTableLoad Load() const;
  WriteBatch* BuildBatchGroup(Writer** last_writer, bool* sync);
  // Writes the group at the front of writers_ (WAL, then memtable, without
  // mu_ in between) and sets *last_writer to its last member (mu_ held
  // through l).
  Status WriteGroup(std::unique_lock<std::mutex>& l, Writer** last_writer);
  Status WritableStatus() const;  // OK or why writes are refused (mu_ held)
  void RecordBackgroundError(const Status& s, const char* where);
  void FlushThreadMain();
  void CompactThreadMain();
  // Moves the flush, compaction and L0 compactor threads to the share that
  // readers_ and flush_urgent_ call for (without mu_: system calls).
  void UpdateBackgroundShares();
  // An empty memtable with the options' bloom (memtable_bloom_size_ratio).
  std::shared_ptr<MemTable> NewMemTable() const;
  // Sets flush_urgent_ from imms_ (mu_ held through l; released around the
  // system calls when the share changes).
  void UpdateFlushUrgency(std::unique_lock<std::mutex>& l);
  // Turns readers_ off after a quiet window and restores the shares, and
  // settles the calling background thread's io_uring workers
  // (ThreadGroupShare::SettleCallingThread) (mu_ held through l; released
  // around the system calls).
  void ExpireReaders(std::unique_lock<std::mutex>& l);
  Status FlushOldestMemTable(std::unique_lock<std::mutex>& l);
  // Replaces read_view_ with mem_, imms_ and the current Version (mu_ held;
  // a no-op until Open has finished). Called after every change of any of
  // them. Get loads the view, then the last sequence, as RocksDB's
  // SuperVersion does:
  // - A write acknowledged before the Get went into a memtable whose view
  //   was published before the write, so the Get's view holds that
  //   memtable or a later view holding its data.
  // - Writes into memtables newer than the view carry sequences above every
  //   entry of the view, so a sequence beyond the view only reads the view
  //   as it is.
  // - The view's tables were written by compactions that dropped only
  //   entries shadowed at a sequence no later than the one loaded after
  //   it. (The other order is wrong: a view newer than the sequence may
  //   lack an entry visible at it, dropped by a compaction since; the test
  //   "a Get sees every write acknowledged before it" caught that.)
  void PublishReadView();
  Status BackgroundCompaction(std::unique_lock<std::mutex>& l);
  // Runs lc's compactions (the thread of an L0 with its own compactor).
  void Level0CompactThreadMain(Level0Compactor* lc);
  void DeleteObsoleteFiles(std::unique_lock<std::mutex>& l);
  // CompactionHost (mu_ held).
  VersionSet* versions() override { return versions_.get(); }
  CompactionRunner* runner() override { return runner_.get(); }
  SequenceNumber OldestSnapshot() const override;
  bool L1Busy(uint64_t number) const override;
  void SetL1Busy(const std::vector<uint64_t>& numbers, bool busy) override;
  void L0CompactionDone(CompactionRecord rec, std::unique_lock<std::mutex>& l) override;
  bool L0MayContinue(std::unique_lock<std::mutex>& l) override;
  void AddRecord(CompactionRecord rec);

  DbContext ctx_;
  std::unique_ptr<NvmBackend> nvm_;  // nullptr without Options.nvm_path
  std::unique_ptr<TableCache> table_cache_;
  std::unique_ptr<BlobStore> blob_store_;
  std::unique_ptr<Level0> level0_;
  std::unique_ptr<WalStore> wal_store_;
  std::unique_ptr<FileLock> file_lock_;
  std::string lock_key_;  // registered in the process-wide set of open DBs

  mutable std::mutex mu_;
  std::condition_variable bg_cv_;  // background progress, errors, shutdown
  std::unique_ptr<VersionSet> versions_;
  std::unique_ptr<CompactionRunner> runner_;
  // The memtables' arena chunks, reused from one memtable to the next
  // (arena.h): one write buffer's worth.
  const std::shared_ptr<ChunkPool> chunk_pool_;
  std::shared_ptr<MemTable> mem_;
  std::deque<std::shared_ptr<MemTable>> imms_;  // oldest first
  std::unique_ptr<WalWriter> log_;              // used by the leader outside mu_
  uint64_t log_number_ = 0;
  std::deque<Writer*> writers_;
  WriteBatch tmp_batch_;
  std::set<uint64_t> pending_outputs_;
  std::list<std::unique_ptr<SnapshotImpl>> snapshots_;
  ManualCompaction* manual_ = nullptr;
  // CompactRange calls in their leveled steps (mu_): no automatic leveled
  // compaction runs meanwhile, so none moves a table below the deepest
  // level the calls compact (RocksDB's exclusive manual compaction).
  int exclusive_manual_ = 0;
  Status bg_error_;
  std::string bg_error_where_;
  bool opened_ = false;
  bool closing_ = false;  // Close is waiting for the writer queue to drain
  bool closed_ = false;
  std::atomic<bool> shutting_down_{false};
  bool flushing_ = false;
  std::thread flush_thread_;
  std::thread compact_thread_;
  std::thread l0_compact_thread_;  // with Level0::compactor()
  // Threads that only read (Get, NewIterator) and the shares of the flush
  // and leveled compaction threads, low while such readers are active
  // (background.h: ReaderPresence). shares_mu_ orders the updates.
  ReaderPresence readers_;
  // The flush is urgent while the immutable memtables are at
  // max_write_buffer_number - 1: the next switch would stall the writers
  // until it ends, so it runs at the high share (ahead of CPU-bound
  // processes), readers_ or not (StepBackFor). Written under mu_, read by
  // UpdateBackgroundShares without it.
  std::atomic<bool> flush_urgent_{false};
  std::mutex shares_mu_;
  ThreadGroupShare flush_share_, compact_share_;
  bool leveled_running_ = false;   // a leveled compaction runs (mu_)
  bool l0_running_ = false;        // an L0 compaction (Level0Compactor) runs (mu_)
  // L1 tables that a running compaction (leveled or L0) reads: the two
  // kinds run side by side but never share an L1 input (mu_).
  std::set<uint64_t> busy_l1_;
  // Bumped when a leveled / L0 compaction ends (mu_): a thread that found
  // its inputs busy waits for the other kind's counter to move.
  uint64_t leveled_done_ = 0, l0_done_ = 0;
  uint64_t leveled_blocked_at_ = UINT64_MAX, l0_blocked_at_ = UINT64_MAX;

  // What Get and NewIterator read, without mu_ (see PublishReadView);
  // nullptr while the DB is not open.
  struct ReadView {
    std::shared_ptr<MemTable> mem;
    std::vector<std::shared_ptr<MemTable>> imms;  // newest first
    std::shared_ptr<Version> version;
  };
  // The published ReadView behind a mutex of its own, held only to copy or
  // swap the pointer (never mu_). Not std::atomic<std::shared_ptr>: in
  // libstdc++ 12 that is a spin lock whose load() unlocks with relaxed order,
  // so the reader's copy is not ordered before the next store's write by the
  // memory model (only x86's locked instructions order it); ThreadSanitizer
  // reports it as a race (google/sanitizers#1558). A mutex costs the same
  // uncontended and is ordered on every machine.
  class PublishedView {
   public:
    std::shared_ptr<const ReadView> Load() const {
      std::lock_guard<std::mutex> l(mu_);
      return view_;
    }
    void Store(std::shared_ptr<const ReadView> view) {
      {
        std::lock_guard<std::mutex> l(mu_);
        view_.swap(view);
      }
      // The old view (now in view) is released here, outside the lock.
    }

   private:
    mutable std::mutex mu_;
    std::shared_ptr<const ReadView> view_;
  };
  PublishedView read_view_;

  DbStats stats_;  // mu_ (gets: atomic)
  uint64_t last_switch_us_ = 0;  // when the active memtable was switched in (mu_)
  std::deque<CompactionRecord> recent_;
};

}  // namespace mxfs
