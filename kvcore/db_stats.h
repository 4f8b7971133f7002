// DbStats: the engine's counters, and the text of the "matrixkv.*"
// properties built from them and from the tree (see db.h for the list).
// DBImpl counts and gathers; the formats live here, one place for every
// line name that tools and tests read.
//
// Thread-safety: DbStats is guarded by the DB mutex, except gets (atomic,
// counted without it); the functions are pure.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <string>

#include "kvcore/compaction_runner.h"
#include "kvcore/dbformat.h"
#include "kvcore/level0.h"

namespace mxfs {

class BlockCache;
class PinnedBlockBudget;
class Version;

struct DbStats {
  std::atomic<uint64_t> gets{0};
  uint64_t records = 0, batches = 0, groups = 0, syncs = 0;
  uint64_t user_bytes = 0, wal_bytes = 0;
  uint64_t flushes = 0, flush_bytes = 0, nvm_flush_bytes = 0;
  uint64_t trivial_moves = 0;
  uint64_t gc_compactions = 0;  // blob GC compactions (background and manual)
  // Writer stalls by cause.
  uint64_t stall_slowdown_us = 0, stall_stop_us = 0, stall_memtable_us = 0, stall_container_us = 0;
  uint64_t stall_pacing_us = 0;
  uint64_t pacing_waits = 0;  // writes that waited for the pacing (each once)

  uint64_t StallMicros() const {
    return stall_slowdown_us + stall_stop_us + stall_memtable_us + stall_container_us + stall_pacing_us;
  }
  // Bytes written to the SSD (flushes and compactions), and their ratio to
  // the user bytes written (0 before any).
  uint64_t SsdBytes(const CompactionStats& c) const { return flush_bytes + c.bytes_written; }
  double WriteAmp(const CompactionStats& c) const {
    return user_bytes ? static_cast<double>(SsdBytes(c)) / static_cast<double>(user_bytes) : 0.0;
  }
};

// What "matrixkv.stats" shows besides the counters.
struct StatsInputs {
  const CompactionStats* compactions = nullptr;
  Level0CompactionStats level0;
  const Version* current = nullptr;
  SequenceNumber last_sequence = 0;
  std::string level_summary;  // VersionSet::LevelSummary
  uint64_t immutables = 0;    // memtables waiting for a flush
  const BlockCache* block_cache = nullptr;
  const PinnedBlockBudget* pinned_blob_index = nullptr;
  std::string background_error;  // "none" or "<where>: <status>"
  // The flush and leveled compaction threads' share (low while pure
  // readers are active: background.h, ReaderPresence) and its changes.
  std::string background_share = "normal";
  uint64_t background_share_changes = 0;
  bool readers_active = false;
};

// "matrixkv.stats": one "name value" line per counter.
std::string StatsText(const DbStats& s, const StatsInputs& in);
// "matrixkv.levels": files and bytes per level of v.
std::string LevelsText(const Version& v);
// "matrixkv.blob-files": each live blob file of v and its garbage.
std::string BlobFilesText(const Version& v);
// "matrixkv.compactions": the recent compactions, oldest first.
std::string CompactionsText(const std::deque<CompactionRecord>& recent);
// A ratio as the stats and option messages print it (two decimals).
std::string FormatRatio(double v);

}  // namespace mxfs
