// MatrixContainer: MatrixKV's L0 in persistent memory. Flushed memtables
// become RowTables in the *receiver*; when the receiver holds its share of
// the container (default 60% of the pages), or max_receiver_rows rows, or
// rows of which tombstone_share or more of the entries are tombstones, and
// the *compactor* is empty, the receiver becomes the compactor without
// moving data and a new receiver starts (bounding the rows bounds what a
// read pays: a Get probes one bloom per row, a scan merges every row; and
// a receiver of deletions holds little but costs every read the same).
// kvcore's column compaction reads a key range (a column) across
// every compactor row, writes it to L1, then calls MarkColumnCompacted, which
// frees the pages wholly below the column's end.
//
// Container region (offsets from the pool header's container_offset; also
// in man/matrixfs.5):
//   page 0, the root:
//     0  u64 magic "MXFSMTRX"   8  u32 version (1)   12 u32 root pages (24)
//     16 u32 data pages         20 u32 row slots (1024)
//     24 u32 Checksum32 of bytes 0..23
//     64  u64 boundary word: every live row with id <= it is in the
//         compactor, every other live row in the receiver (0: none yet)
//     128 u64 compacted word: bits 63..32 the boundary it belongs to,
//         bit 31 valid, bit 16 which compaction record; it only counts
//         while its boundary equals the boundary word
//   pages 1..6, 7..12: compaction records 0 and 1, each:
//     0 u32 Checksum32 of the record from byte 4 to its end
//     4 u32 key length (<= 4096)   8 u32 row count   12 u32 zero
//     16 the compacted-up-to key (entries with key < it are in L1),
//        zero-padded to a multiple of 8; then per compactor row 16 bytes:
//        u64 row id, u32 first live entry (entry count: wholly compacted),
//        u32 zero
//   pages 13..16: 1024 row slots of 16 bytes:
//     0 u64 location: the row's header page (bits 31..0), its page count
//       over all extents (63..32)
//     8 u64 commit word: the row id (0: empty slot)
//   page 24 on: the data pages, where RowTable extents live (a row takes
//   one run of pages when it can, else several; see row_table.h).
//
// Commit points (a crash leaves the state before or after each, never
// between): a row is written in place into free pages that no slot names
// (RowTableBuilder::WriteInPlace, each entry copied once from the
// memtable), flushed per extent, drained once, its slot's location
// persisted, then it is published by
// persisting the slot's commit word. The receiver->compactor switch is one
// persisted boundary word. A column compaction writes a record (the key and
// every compactor row's first live entry) into the idle record buffer,
// persists it, then persists the compacted word; the pages it frees and the
// rows it empties follow from that record, so they are recomputed at open
// (the page allocator is rebuilt from the live rows every time). The record
// stores positions, not just the key, because keys below a row's start may
// sit on pages already reused by newer rows and must never be read again.
//
// Readers take a ContainerVersion (an immutable snapshot of the rows). Pages
// freed by a column compaction return to the allocator only when every
// version that could still read them is gone.
//
// Thread-safety: thread-safe. AddRow calls are serialised among themselves
// (one flusher), as are MarkColumnCompacted calls; readers never block them
// except for a short internal mutex, which is never held across a copy of a
// whole row or a syscall.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/comparator.h"
#include "base/iterator.h"
#include "base/pinned.h"
#include "base/slice.h"
#include "base/status.h"
#include "nvm/page_allocator.h"
#include "nvm/pool.h"
#include "nvm/row_table.h"

namespace mxfs {

inline constexpr uint32_t kContainerRootPages = 24;
inline constexpr uint32_t kCompactionRecordPages = 6;
inline constexpr uint32_t kContainerRowSlots = 1024;
inline constexpr uint32_t kMaxCompactedKey = 4096;

struct ContainerOptions {
  const Comparator* comparator = BytewiseComparator();
  std::function<Slice(const Slice&)> filter_key;  // see RowTableOptions
  int bloom_bits_per_key = 10;
  size_t prefix_length = 0;  // see RowTableOptions
  double receiver_share = 0.6;  // of the data pages
  // The receiver also becomes the compactor (when the compactor is empty)
  // at this many rows (0: no limit), or at 2 rows or more when at least
  // tombstone_share of its entries are tombstones (0: never);
  // is_tombstone tells them (see RowTableOptions). kvcore sets both
  // (Options.container_max_receiver_rows, container_tombstone_share).
  uint32_t max_receiver_rows = 0;
  double tombstone_share = 0;
  std::function<bool(const Slice&)> is_tombstone;
  bool key_fences = false;  // see RowTableOptions
  // Benchmark switches: false searches every row fully / ignores blooms.
  bool use_hints = true;
  bool use_blooms = true;
};

struct ContainerStats {
  uint32_t receiver_rows = 0;
  uint32_t compactor_rows = 0;
  uint64_t receiver_bytes = 0;   // data + metadata bytes of live entries
  uint64_t compactor_bytes = 0;  // not yet compacted
  uint32_t pages_total = 0;
  uint32_t pages_used = 0;
  uint32_t pages_free = 0;
  uint32_t receiver_pages = 0;
  uint64_t columns_compacted = 0;  // since open
  uint64_t switches = 0;           // since open
  uint64_t switches_by_rows = 0;   // of those, for max_receiver_rows
  uint64_t switches_by_tombstones = 0;  // for tombstone_share
  std::string compacted_key;       // the compactor's compacted-up-to key
  std::string ToString() const;
};

// One row as a version sees it.
struct RowRef {
  std::shared_ptr<const RowTable> table;
  uint32_t start = 0;  // first live entry (a compactor row's compacted prefix is skipped)
  uint32_t freed_data_pages = 0;
  bool compactor = false;
};

// An immutable snapshot of the container's rows, newest first (receiver rows,
// then compactor rows).
class ContainerVersion {
 public:
  ~ContainerVersion();
  const std::vector<RowRef>& rows() const { return rows_; }

  // Point lookup, rows newest to oldest. In each row not ruled out by its
  // bloom filter (on filter_key(target), hashed once), finds the first entry with key >=
  // target and calls found(key, value); found returns true to stop (kvcore:
  // the user key matched). With hints, the position in one row narrows the
  // binary search in the next older one to the window its forward pointers
  // give.
  // A template, so the hot path holds no std::function (no allocation, no
  // indirect call per row); it reads the rows' metadata in place.
  template <typename Found>
  void Get(const Slice& target, Found&& found) const;
  // For every row, the index of the first live entry >= target (hinted).
  std::vector<uint32_t> Locate(const Slice& target) const;
  // All of v's rows merged into one iterator in cmp's order (ties newest
  // row first), whose Seek places every row at once with Locate's hints;
  // the iterator keeps v alive.
  static std::unique_ptr<Iterator> NewMergedIterator(std::shared_ptr<const ContainerVersion> v, const Comparator* cmp);

 private:
  friend class MatrixContainer;
  ContainerVersion() = default;

  std::vector<RowRef> rows_;
  const Comparator* comparator_ = nullptr;
  bool use_hints_ = true;
  bool use_blooms_ = true;
  std::string compacted_key_;
  bool has_compacted_key_ = false;
  // Set under the container mutex when this version is superseded; read only
  // by the destructor.
  mutable std::shared_ptr<const ContainerVersion> next_;
  mutable std::vector<std::pair<uint32_t, uint32_t>> release_;  // (first page, count)
  std::shared_ptr<PageAllocator> allocator_;
};

class MatrixContainer {
 public:
  // Writes an empty container root into the pool's container region.
  [[nodiscard]] static Status Format(Pool* pool);
  // Reads the root, opens every committed row, rebuilds the page
  // allocator and the blooms, finishes an interrupted column compaction.
  static Result<std::unique_ptr<MatrixContainer>> Open(Pool* pool, const ContainerOptions& options);
  ~MatrixContainer();
  MatrixContainer(const MatrixContainer&) = delete;
  MatrixContainer& operator=(const MatrixContainer&) = delete;

  // Flush: the entries of it (from SeekToFirst, strictly increasing) become
  // a new receiver row, durable and visible when this returns. Returns the
  // row id. max_sequence is stored in the row's header (kvcore: the highest
  // sequence number in the memtable; see MaxRowSequence). Busy when the
  // container has no room (wait for column compaction); no row is added
  // then, and if the compactor was empty the receiver becomes the compactor
  // so that compaction can make room. InvalidArgument if the row is larger
  // than the whole container. *pm_bytes (if given) gets the bytes of pool
  // the row occupies, so that the caller need not look the row up again.
  Result<uint64_t> AddRow(Iterator* it, uint64_t max_sequence = 0, uint64_t* pm_bytes = nullptr);
  // What AddRow's first pass over its input saw (filled even when AddRow
  // then fails, e.g. Busy), and what the row takes.
  struct RowInput {
    uint64_t entries = 0;
    uint64_t bytes = 0;         // keys and values
    uint64_t max_sequence = 0;  // the highest sequence_of(key)
    uint64_t pm_bytes = 0;      // pool bytes of the row (on success)
  };
  // As above, with the row's max_sequence computed by sequence_of over its
  // keys in the same pass that sizes the row, so that a flush reads its
  // memtable twice in all (that pass and the copy), not three times.
  Result<uint64_t> AddRow(Iterator* it, const std::function<uint64_t(const Slice& key)>& sequence_of,
                          RowInput* input);
  // The highest max_sequence of any live row (0 if none): after a crash,
  // WAL records at or below it are already in the container.
  uint64_t MaxRowSequence() const;

  // Makes the receiver the compactor if the compactor is empty and the
  // receiver is not (AddRow and MarkColumnCompacted call it automatically
  // once the receiver holds its share). Returns true if it switched.
  Result<bool> SwitchReceiverToCompactor();

  // The current version, held by the caller (see base/pinned.h).
  Pinned<const ContainerVersion> Current() const;
  template <typename Found>
  void Get(const Slice& target, Found&& found) const {
    const auto v = Current();
    v->Get(target, std::forward<Found>(found));
  }
  // A merging iterator over every live entry of every row (ties: newer row
  // first); Seek positions all rows with the cross-row hints.
  std::unique_ptr<Iterator> NewIterator() const;
  // One iterator per row, newest first, over [row start, end): for kvcore,
  // which merges them with its other sources. Each holds the version it
  // came from.
  std::vector<std::unique_ptr<Iterator>> NewRowIterators() const;

  // Column API. The compactor's live entries with lo <= key < hi (lo empty:
  // from the compacted key), merged across rows, newest first on ties.
  std::unique_ptr<Iterator> NewColumnIterator(const Slice& lo, const Slice& hi) const;
  // Per-row iterators over the same column.
  std::vector<std::unique_ptr<Iterator>> NewColumnRowIterators(const Slice& lo, const Slice& hi) const;
  // Bytes (data + metadata) the column [lo, hi) holds in the compactor.
  uint64_t ColumnBytes(const Slice& lo, const Slice& hi) const;
  // The smallest live key in the compactor; NotFound if it is empty.
  Result<std::string> CompactorSmallestKey() const;
  bool CompactorEmpty() const;
  // Records that every compactor entry with key < hi is in L1: persists hi
  // as the compacted-up-to key, frees the data pages wholly below it (once
  // no reader can use them) and unlinks rows that became empty. hi must not
  // be below the current compacted key.
  [[nodiscard]] Status MarkColumnCompacted(const Slice& hi);

  ContainerStats GetStats() const;
  // Column compactions since open (cheap: for waiting on progress).
  uint64_t ColumnsCompacted() const {
    std::lock_guard<std::mutex> l(mu_);
    return columns_compacted_;
  }
  void SetSearchMode(bool use_hints, bool use_blooms);
  const PageAllocator& allocator() const { return *allocator_; }

 private:
  MatrixContainer(Pool* pool, const ContainerOptions& options);
  char* Root() const { return root_; }
  uint64_t* BoundaryWord() const { return reinterpret_cast<uint64_t*>(root_ + 64); }
  uint64_t* CompactedWord() const { return reinterpret_cast<uint64_t*>(root_ + 128); }
  char* CompactionRecord(int i) const { return root_ + (1 + i * kCompactionRecordPages) * kPoolPageSize; }
  uint64_t* SlotLocation(uint32_t s) const {
    return reinterpret_cast<uint64_t*>(root_ + (1 + 2 * kCompactionRecordPages) * kPoolPageSize + s * 16);
  }
  uint64_t* SlotCommit(uint32_t s) const { return SlotLocation(s) + 1; }
  char* DataPage(uint32_t p) const { return data_ + uint64_t{p} * kPoolPageSize; }
  std::string Where(uint32_t first_page) const;
  // Installs v as current; the old version keeps v alive and carries release.
  void InstallLocked(std::shared_ptr<ContainerVersion> v, std::vector<std::pair<uint32_t, uint32_t>> release);
  std::shared_ptr<ContainerVersion> CopyCurrentLocked() const;
  Result<bool> MaybeSwitchLocked(bool force);

  Pool* const pool_;
  ContainerOptions options_;
  RowTableOptions row_options_;
  char* root_ = nullptr;
  char* data_ = nullptr;
  uint32_t data_pages_ = 0;
  std::shared_ptr<PageAllocator> allocator_;

  std::mutex flush_mu_;    // serialises AddRow
  // AddRow's metadata array (flush_mu_), kept between rows so that building
  // one takes no page faults; the rest of a row goes straight to the pool.
  std::string scratch_meta_;
  std::mutex compact_mu_;  // serialises MarkColumnCompacted
  mutable std::mutex mu_;  // guards everything below
  std::shared_ptr<ContainerVersion> current_;
  std::vector<uint64_t> slot_row_;  // row id per slot (0 free), DRAM mirror
  std::vector<bool> slot_reserved_;
  uint64_t boundary_ = 0;
  uint64_t next_row_id_ = 1;
  int key_buffer_ = 0;  // the buffer the compacted word points to
  uint64_t columns_compacted_ = 0;
  uint64_t switches_ = 0;
  uint64_t switches_by_rows_ = 0;
  uint64_t switches_by_tombstones_ = 0;
};

// The search in row i is confined to its live entries [start, n); with
// hints, the position found in row i narrows row i+1's search to the window
// its forward pointers give (see Locate in matrix_container.cc).
template <typename Found>
void ContainerVersion::Get(const Slice& target, Found&& found) const {
  bool have_hint = false;
  uint32_t wlo = 0, whi = 0;
  const size_t nrows = rows_.size();
  // Every row has the container's RowTableOptions: one hash for all blooms.
  const uint64_t h = use_blooms_ && nrows > 0 ? rows_[0].table->FilterHash(target) : 0;
  if (use_blooms_) {
    for (size_t i = 0; i < nrows; i++) rows_[i].table->PrefetchHash(h);
  }
  for (size_t i = 0; i < nrows; i++) {
    const RowTable& t = *rows_[i].table;
    const uint32_t n = t.num_entries(), start = rows_[i].start;
    if (use_blooms_ && !t.HashMayMatch(h)) {
      have_hint = false;
      continue;
    }
    uint32_t lo = start, hi = n;
    if (have_hint) {
      lo = std::max(start, std::min(wlo, n));
      hi = std::max(lo, std::min(whi, n));
    }
    const uint32_t p = t.LowerBound(target, lo, hi);
    if (p < n && found(t.Key(p), t.Value(p))) return;
    have_hint = use_hints_ && i + 1 < nrows && rows_[i + 1].table->row_id() == t.prev_row_id();
    if (have_hint) {
      wlo = p > start ? t.Forward(p - 1) : 0;
      whi = p < n ? t.Forward(p) : rows_[i + 1].table->num_entries();
    }
  }
}

}  // namespace mxfs
