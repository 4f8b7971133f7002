// Level0: where flushed memtables go, how they are read back and how they
// leave for L1, behind one interface: DBImpl flushes, reads, paces writers
// and runs L0's compactions through it and does not know which L0 it has.
// Two implementations exist:
// - SsdLevel0 (ssd_level0.h): L0 is SSTables on the SSD, one per flushed
//   memtable, kept as the Version's level-0 file list and recorded in the
//   MANIFEST as ordinary new-file and deleted-file fields. Its L0->L1
//   compactions are leveled ones: PickCompaction hands them to the
//   compaction thread (mxfs-compact) like any other level's.
// - ContainerLevel0 (container_level0.h): L0 is the matrix container in the
//   persistent-memory pool. Its state belongs to the container version a
//   Version pins (Pin), the MANIFEST records what it must know through
//   VersionEdit::SetLevel0State, PickCompaction returns nothing, and its
//   compactions (columns merged into L1) come from its own Level0Compactor,
//   which DBImpl runs on a thread of its own.
//
// A Level0Compactor picks L0's next compaction and splits it; the engine
// side of the work (merging inputs into new L1 tables, installing them with
// one MANIFEST edit, keeping leveled compaction off the L1 tables it reads)
// it asks of a CompactionHost, which DBImpl implements.
//
// Thread-safety: implementations are thread-safe; WriteMemTable runs in the
// flush thread without the DB mutex, PickCompaction and the pacing calls
// with the DB mutex held, Get/AddIterators from any thread on a pinned
// Version. Level0Compactor and CompactionHost state each method's lock.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"

namespace mxfs {

class Compaction;
class CompactionRunner;
class Iterator;
class LookupKey;
class MemTable;
class Version;
class VersionEdit;
class VersionSet;
struct CompactionRecord;
struct ReadOptions;

struct FlushResult {
  uint64_t bytes_written = 0;  // to the SSD
  uint64_t entries = 0;
  uint64_t nvm_bytes = 0;      // to persistent memory (a container row)
  uint64_t max_sequence = 0;   // highest sequence number written (NVM L0 only)
};

// The memtables waiting to reach L0, as writer pacing sees them (DB mutex
// held while it is used).
struct MemTableLoad {
  const MemTable* active = nullptr;
  const std::deque<std::shared_ptr<MemTable>>* immutable = nullptr;  // oldest first
  uint64_t last_switch_us = 0;  // when the active memtable was switched in (NowMicros)
};

// Counters of L0's own compactions: the column.* lines of "matrixkv.stats",
// zero for an L0 without a compactor (the lines are there either way).
struct Level0CompactionStats {
  uint64_t compactions = 0;
  uint64_t bytes_read = 0;      // L0 bytes merged
  uint64_t bytes_written = 0;   // L1 bytes written (also part of compaction.bytes.written)
  uint64_t blocked_micros = 0;  // waiting for a leveled compaction holding the first L1 table
  uint64_t parallel = 0;        // compactions merged as parallel sub-ranges
  const char* share = "normal";  // the threads' CPU and I/O share now (BackgroundShareName)
  uint64_t share_changes = 0;    // times that share changed since open
  // Appends the stats lines.
  void AppendTo(std::string* out) const;
};

class CompactionHost;
class Level0Compactor;

class Level0 {
 public:
  virtual ~Level0() = default;

  // Writes the internal entries of iter (a memtable, sorted) into L0 and
  // records the new L0 state in edit. file_number is reserved for it.
  [[nodiscard]] virtual Status WriteMemTable(Iterator* iter, uint64_t file_number, VersionEdit* edit,
                                             FlushResult* result) = 0;
  // True if WriteMemTable's result is durable and recoverable by itself, so
  // that a flush needs no MANIFEST edit: the flush thread then only installs
  // a Version that pins the new L0 state (no disk I/O). False: the flush's
  // edit (new file, log number) must be logged before the WAL is released.
  virtual bool FlushCommitsItself() const { return false; }

  // Point lookup in v's L0, newest data first. *found is set when an entry
  // for the user key is visible at the key's sequence: *deleted tells a
  // tombstone from a value.
  [[nodiscard]] virtual Status Get(const Version& v, const ReadOptions& options, const LookupKey& key,
                                   std::string* value, bool* found, bool* deleted) = 0;

  // Appends iterators over v's L0 (internal keys) for a merge.
  virtual void AddIterators(const Version& v, const ReadOptions& options,
                            std::vector<std::unique_ptr<Iterator>>* iters) = 0;

  // Sorted runs in L0 (what the slowdown/stop triggers count).
  virtual int NumRuns(const Version& v) const = 0;
  // Urgency of a leveled L0->L1 compaction: >= 1 means compact now.
  virtual double CompactionScore(const Version& v) const = 0;
  // The next leveled L0->L1 compaction, or nullptr (DB mutex held).
  virtual std::unique_ptr<Compaction> PickCompaction(VersionSet* vset, const std::shared_ptr<Version>& v) = 0;
  // L0's own compactor, run by DBImpl on a thread of its own; nullptr when
  // L0's compactions are leveled ones (PickCompaction).
  virtual Level0Compactor* compactor() { return nullptr; }
  // What a Version installed now must keep alive to read this L0 as it is
  // now (the container's current version); nullptr when the Version's file
  // lists say everything. Called with the DB mutex held.
  virtual std::shared_ptr<const void> Pin() const { return nullptr; }
  // The level0 state to record when an edit carrying update is applied on
  // top of old (VersionSet calls it serialised, in MANIFEST order), so that
  // concurrent flushes and compactions can each record their part.
  virtual std::string MergeState(const std::string& /*old*/, const std::string& update) const { return update; }

  // ---- Writer pacing and stalls (DB mutex held). An L0 whose flushes may
  // have to wait (for room in the container) spreads writers out instead of
  // letting them fill the memtables at once and then wait for whole flushes.

  // How long a writer waits before its write (0: not at all).
  virtual uint64_t PaceDelayMicros(const MemTableLoad& /*load*/) const { return 0; }
  // A write group of `bytes` user bytes went into the active memtable.
  virtual void WriteGroupDone(uint64_t /*bytes*/, const MemTableLoad& /*load*/) {}
  // A flush reached L0 (its MANIFEST edit included, if it logs one) `micros`
  // after it started.
  virtual void FlushDone(uint64_t /*micros*/) {}
  // True if the active memtable (of `bytes`, not empty) should be switched
  // before it is full, so that it still fits in L0 as one run.
  virtual bool WantsEarlySwitch(uint64_t /*bytes*/) const { return false; }
  // A writer stalled behind flushes takes a mark before its wait and asks
  // after it whether a flush waited for room in L0 at any time in between
  // (the stall then counts as "container-full", else as "memtable-full").
  virtual uint64_t RoomWaitMark() const { return 0; }
  virtual bool WaitedForRoomSince(uint64_t /*mark*/) const { return false; }

  // The "matrixkv.container" property: what L0 is and holds.
  virtual std::string Describe() const = 0;
};

// L0's own compactions (the container's columns), run by DBImpl on one
// thread while leveled compactions run on another.
class Level0Compactor {
 public:
  virtual ~Level0Compactor() = default;
  // What errors call its work ("column compaction").
  virtual const char* name() const = 0;
  // The name of the threads that run it (at most 15 bytes).
  virtual const char* thread_name() const = 0;
  // Called first on every thread that runs its work: names the thread and
  // sets its CPU and I/O priority.
  virtual void EnterThread() const = 0;
  // Called last on every such thread, before it exits.
  virtual void LeaveThread() const {}
  // Threads that only read are active (ReaderPresence): the compactor's
  // threads step back behind them unless it must not (from any thread,
  // without the DB mutex).
  virtual void SetReadersActive(bool /*active*/) {}
  // True while L0 holds data this compactor has yet to move down (DB mutex
  // held; cheap).
  virtual bool HasWork() const = 0;
  // Runs the next compaction (DB mutex held through l, released while it
  // merges and frees). *blocked: it did not start because a leveled
  // compaction holds the L1 table it starts in; the caller runs it again
  // after that compaction ends.
  [[nodiscard]] virtual Status CompactNext(CompactionHost* host, std::unique_lock<std::mutex>& l,
                                           bool* blocked) = 0;
  // Makes everything now in L0 work for this compactor (a manual
  // compaction of all of L0). Without the DB mutex.
  [[nodiscard]] virtual Status MakeAllCompactable() = 0;
  virtual Level0CompactionStats stats() const = 0;  // DB mutex held
};

// The engine side of an L0 compaction, implemented by DBImpl. DB mutex held
// for every call.
class CompactionHost {
 public:
  virtual ~CompactionHost() = default;
  virtual VersionSet* versions() = 0;
  // The merge and install steps leveled compactions use too.
  virtual CompactionRunner* runner() = 0;
  // Entries older than this are invisible to every snapshot.
  virtual uint64_t OldestSnapshot() const = 0;
  // Leveled and L0 compactions never read the same L1 table at once: true
  // while one reads table `number`.
  virtual bool L1Busy(uint64_t number) const = 0;
  // Marks (busy) or releases the L1 tables an L0 compaction reads.
  virtual void SetL1Busy(const std::vector<uint64_t>& numbers, bool busy) = 0;
  // An L0 compaction is installed and its L0 data freed: records rec for
  // "matrixkv.compactions", wakes waiting threads and deletes obsolete files
  // (releasing l meanwhile).
  virtual void L0CompactionDone(CompactionRecord rec, std::unique_lock<std::mutex>& l) = 0;
  // Between two compactions of one CompactNext call (a pipeline of
  // columns): true if the L0 compactor may go on without returning first
  // (no shutdown, no background error, no manual compaction waiting for
  // it). May release l meanwhile.
  virtual bool L0MayContinue(std::unique_lock<std::mutex>& l) = 0;
};

}  // namespace mxfs
