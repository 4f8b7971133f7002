// DBImpl: the MatrixKV engine behind the DB interface.
//
// Write path: writers queue in writers_; the front writer (leader) merges
// the queued batches into one group, appends it to the WAL as one record
// (syncing once if any writer asked), inserts it into the memtable without
// the mutex (the memtable has one writer: the leader), publishes the new
// last sequence and wakes the group.
//
// Background: the flush thread (mxfs-flush) turns immutable memtables into
// L0 through Level0; the compaction thread (mxfs-compact) runs leveled
// compactions. A background error is sticky: the DB becomes read-only and
// every write returns ReadOnly naming the cause; "matrixkv.stats" shows it.
//
// Lock order: DBImpl::mu_ before TableCache/BlockCache internal mutexes.
// mu_ is never held across file I/O: LogAndApply, table building, WAL
// appends, log creation and obsolete-file deletion all release it.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <atomic>
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

#include "kvcore/blob_store.h"
#include "kvcore/container_pacer.h"
#include "kvcore/db_context.h"
#include "kvcore/include/db.h"
#include "kvcore/level0.h"
#include "kvcore/memtable.h"
#include "kvcore/nvm_backend.h"
#include "kvcore/table_cache.h"
#include "kvcore/version_set.h"
#include "kvcore/wal.h"
#include "kvcore/wal_store.h"

namespace mxfs {

// Checks every option: InvalidArgument naming the option and its value.
[[nodiscard]] Status ValidateOptions(const Options& options);

class DBImpl final : public DB {
 public:
  DBImpl(const Options& options, const std::string& dbname);
  ~DBImpl() override;

  // Recovery: directory checks, LOCK, MANIFEST, WAL replay, threads.
  [[nodiscard]] Status Open();

  Status Put(const WriteOptions& options, const Slice& key, const Slice& value) override;
  Status Delete(const WriteOptions& options, const Slice& key) override;
  Status Write(const WriteOptions& options, WriteBatch* batch) override;
  Status Get(const ReadOptions& options, const Slice& key, std::string* value) override;
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
  struct CompactionRecord {
    std::string kind;
    std::string smallest, largest;  // user keys, escaped
    uint64_t bytes_in = 0, bytes_out = 0, micros = 0;
  };

  Status OpenLocked(std::unique_lock<std::mutex>& l);
  Status RecoverLog(uint64_t number, VersionEdit* edit, SequenceNumber* max_sequence);
  // PM WAL replay: records newer than the flushed sequence become immutable
  // memtables (flushed by the flush thread once it runs).
  Status RecoverPmWal(SequenceNumber* max_sequence);
  Status NewLog(std::unique_lock<std::mutex>* l, uint64_t* number, std::unique_ptr<WalWriter>* log);
  Status WriteImpl(const WriteOptions& options, WriteBatch* batch);  // batch nullptr: force a memtable switch
  Status MakeRoomForWrite(std::unique_lock<std::mutex>& l, bool force);
  // With a pool: how long a writer ahead of the pending flush waits (mu_).
  uint64_t PacingDelayMicros() const;
  // With a pool: the rate (bytes/us) writers may keep while the container is
  // close to full, 0 when unlimited (ContainerPacer; mu_).
  double ContainerPaceRate() const;
  // How long the leader waits for the container's pace now (mu_).
  uint64_t ContainerPaceDelay() const;
  WriteBatch* BuildBatchGroup(Writer** last_writer, bool* sync);
  Status WritableStatus() const;  // OK or why writes are refused (mu_ held)
  void RecordBackgroundError(const Status& s, const char* where);
  void FlushThreadMain();
  void CompactThreadMain();
  Status FlushOldestMemTable(std::unique_lock<std::mutex>& l);
  Status BackgroundCompaction(std::unique_lock<std::mutex>& l);
  // extra: further inputs merged with c's files (a column of the container).
  Status DoCompactionWork(Compaction* c, std::unique_lock<std::mutex>& l, CompactionRecord* rec,
                          std::vector<std::unique_ptr<Iterator>> extra = {});
  // The parts of DoCompactionWork. DescribeCompaction: rec's input bytes and
  // key range (mu_ held). MergeIntoTables (without mu_): input into new
  // tables of c's output level, appended to outputs; every file number it
  // used goes to numbers (also on failure). InstallCompaction (mu_ held):
  // with s ok, one MANIFEST edit deletes c's inputs and adds outputs; else
  // the files in numbers are removed; returns the final status.
  // What a compaction wrote: tables, blob files (with every number used, so
  // a failure can remove them) and the blob records it stopped referencing.
  struct CompactionOutput {
    std::vector<FileMetaData> tables;
    std::vector<uint64_t> table_numbers;
    std::vector<BlobFileMeta> blobs;
    std::vector<uint64_t> blob_numbers;
    std::map<uint64_t, BlobGarbage> garbage;
    uint64_t blob_bytes_relocated = 0;
    void Append(CompactionOutput&& o);
  };
  void DescribeCompaction(Compaction* c, CompactionRecord* rec) const;
  Status MergeIntoTables(Compaction* c, Iterator* input, bool column, SequenceNumber smallest_snapshot,
                         CompactionOutput* out);
  Status InstallCompaction(Compaction* c, std::unique_lock<std::mutex>& l, CompactionRecord* rec, bool column,
                           Status s, const CompactionOutput& out);
  void ColumnCompactThreadMain();
  // One column compaction: the next key range of the container's compactor
  // merged with the overlapping L1 tables into new L1 tables.
  Status ColumnCompaction(std::unique_lock<std::mutex>& l);
  std::string ContainerString() const;
  void DeleteObsoleteFiles(std::unique_lock<std::mutex>& l);
  SequenceNumber OldestSnapshot() const;
  void AddRecord(CompactionRecord rec);
  std::string StatsString() const;
  std::string LevelsString() const;

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
  std::shared_ptr<MemTable> mem_;
  std::deque<std::shared_ptr<MemTable>> imms_;  // oldest first
  std::unique_ptr<WalWriter> log_;              // used by the leader outside mu_
  uint64_t log_number_ = 0;
  std::deque<Writer*> writers_;
  WriteBatch tmp_batch_;
  std::set<uint64_t> pending_outputs_;
  std::list<std::unique_ptr<SnapshotImpl>> snapshots_;
  ManualCompaction* manual_ = nullptr;
  Status bg_error_;
  std::string bg_error_where_;
  bool opened_ = false;
  bool closing_ = false;  // Close is waiting for the writer queue to drain
  bool closed_ = false;
  std::atomic<bool> shutting_down_{false};
  bool flushing_ = false;
  std::thread flush_thread_;
  std::thread compact_thread_;
  std::thread colcomp_thread_;
  bool leveled_running_ = false;  // a leveled compaction runs (mu_)
  bool column_running_ = false;   // a column compaction runs (mu_)
  // L1 tables that a running compaction (leveled or column) reads: the two
  // kinds run side by side but never share an L1 input (mu_).
  std::set<uint64_t> busy_l1_;
  // Bumped when a leveled / column compaction ends (mu_): a thread that
  // found its inputs busy waits for the other kind's counter to move.
  uint64_t leveled_done_ = 0, column_done_ = 0;
  uint64_t leveled_blocked_at_ = UINT64_MAX, column_blocked_at_ = UINT64_MAX;

  // Statistics (mu_ unless atomic).
  std::atomic<uint64_t> stat_gets_{0};
  uint64_t stat_records_ = 0, stat_batches_ = 0, stat_groups_ = 0, stat_syncs_ = 0;
  uint64_t stat_user_bytes_ = 0, stat_wal_bytes_ = 0;
  uint64_t stat_flush_bytes_ = 0, stat_flushes_ = 0;
  uint64_t stat_compaction_bytes_read_ = 0, stat_compaction_bytes_written_ = 0, stat_compactions_ = 0,
           stat_trivial_moves_ = 0;
  uint64_t stat_blob_files_ = 0, stat_blob_bytes_written_ = 0, stat_blob_bytes_relocated_ = 0;
  uint64_t stat_gc_compactions_ = 0;  // blob GC compactions (background and manual)
  uint64_t stall_slowdown_us_ = 0, stall_stop_us_ = 0, stall_memtable_us_ = 0, stall_container_us_ = 0;
  uint64_t stall_pacing_us_ = 0;
  // Write pacing with a pool (mu_): when the last memtable was switched, and
  // a moving average of how long a flush takes.
  uint64_t last_switch_us_ = 0;
  double flush_est_us_ = 0;
  // Container pacing (mu_): the drain rate of column compaction and the
  // writers' virtual clock; when the last column compaction ended.
  ContainerPacer pacer_;
  uint64_t last_column_end_us_ = 0;
  uint64_t stat_nvm_flush_bytes_ = 0, stat_columns_ = 0, stat_column_bytes_in_ = 0;
  uint64_t stat_column_bytes_out_ = 0;  // L1 bytes column compactions wrote (part of compaction.bytes.written)
  // Time column compaction waited for a leveled compaction that held the
  // L1 table its next column starts in (mu_).
  uint64_t stat_column_blocked_us_ = 0, column_blocked_since_us_ = 0;
  uint64_t stat_column_parallel_ = 0;  // columns merged as parallel sub-ranges
  std::deque<CompactionRecord> recent_;
};

}  // namespace mxfs
