#include "kvcore/db_stats.h"

#include <cstdio>

#include "kvcore/version_set.h"
#include "ssd/block_cache.h"
#include "ssd/table.h"

namespace mxfs {

namespace {

std::string Num(uint64_t v) { return std::to_string(v); }
std::string Num(double v) { return FormatRatio(v); }

}  // namespace

std::string FormatRatio(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

std::string StatsText(const DbStats& s, const StatsInputs& in) {
  const CompactionStats& cs = *in.compactions;
  std::string r;
  r += "records.written " + Num(s.records) + "\n";
  r += "batches.written " + Num(s.batches) + "\n";
  r += "write.groups " + Num(s.groups) + "\n";
  r += "wal.syncs " + Num(s.syncs) + "\n";
  r += "wal.bytes " + Num(s.wal_bytes) + "\n";
  r += "gets " + Num(s.gets.load()) + "\n";
  r += "user.bytes.written " + Num(s.user_bytes) + "\n";
  r += "flushes " + Num(s.flushes) + "\n";
  r += "flush.bytes.written " + Num(s.flush_bytes) + "\n";
  r += "compactions " + Num(cs.compactions) + "\n";
  r += "trivial.moves " + Num(s.trivial_moves) + "\n";
  r += "compaction.bytes.read " + Num(cs.bytes_read) + "\n";
  r += "compaction.bytes.written " + Num(cs.bytes_written) + "\n";
  r += "ssd.bytes.written " + Num(s.SsdBytes(cs)) + "\n";
  r += "write.amplification " + Num(s.WriteAmp(cs)) + "\n";
  r += "stall.micros.l0-slowdown " + Num(s.stall_slowdown_us) + "\n";
  r += "stall.micros.l0-stop " + Num(s.stall_stop_us) + "\n";
  r += "stall.micros.memtable-full " + Num(s.stall_memtable_us) + "\n";
  r += "stall.micros.container-full " + Num(s.stall_container_us) + "\n";
  r += "stall.micros.write-pacing " + Num(s.stall_pacing_us) + "\n";
  r += "stall.count.write-pacing " + Num(s.pacing_waits) + "\n";
  r += "stall.micros.total " + Num(s.StallMicros()) + "\n";
  r += "nvm.flush.bytes.written " + Num(s.nvm_flush_bytes) + "\n";
  in.level0.AppendTo(&r);
  r += "readers.active " + Num(uint64_t{in.readers_active}) + "\n";
  r += "background.share " + in.background_share + "\n";
  r += "background.share.changes " + Num(in.background_share_changes) + "\n";
  uint64_t files = 0, bytes = 0, garbage = 0;
  for (const auto& [number, b] : in.current->blob_files()) {
    files++;
    bytes += b->meta.record_bytes;
    garbage += b->garbage.bytes;
  }
  r += "blob.files " + Num(files) + "\n";
  r += "blob.bytes " + Num(bytes) + "\n";
  r += "blob.garbage.bytes " + Num(garbage) + "\n";
  r += "blob.files.written " + Num(cs.blob_files) + "\n";
  r += "blob.bytes.written " + Num(cs.blob_bytes_written) + "\n";
  r += "blob.bytes.relocated " + Num(cs.blob_bytes_relocated) + "\n";
  r += "blob.gc.compactions " + Num(s.gc_compactions) + "\n";
  r += "blob.gc.score " + Num(in.current->gc_score()) + "\n";
  r += "memtables.immutable " + Num(in.immutables) + "\n";
  r += "last.sequence " + Num(in.last_sequence) + "\n";
  r += "levels " + in.level_summary + "\n";
  if (in.block_cache) {
    r += "block.cache.hits " + Num(in.block_cache->Hits()) + "\n";
    r += "block.cache.misses " + Num(in.block_cache->Misses()) + "\n";
    r += "block.cache.usage " + Num(static_cast<uint64_t>(in.block_cache->Usage())) + "\n";
  }
  if (in.pinned_blob_index) {
    r += "table.pinned.bytes " + Num(static_cast<uint64_t>(in.pinned_blob_index->Used())) + "\n";
  }
  r += "background.error " + in.background_error + "\n";
  return r;
}

std::string LevelsText(const Version& v) {
  std::string r = "level  files  bytes\n";
  for (int level = 0; level < v.num_levels(); level++) {
    char line[96];
    std::snprintf(line, sizeof(line), "L%-5d %5d  %llu\n", level, v.NumFiles(level),
                  static_cast<unsigned long long>(v.NumBytes(level)));
    r += line;
  }
  return r;
}

std::string BlobFilesText(const Version& v) {
  std::string r = "number  records  record_bytes  garbage_records  garbage_bytes  garbage_ratio  file_size\n";
  for (const auto& [number, b] : v.blob_files()) {
    r += Num(number) + "  " + Num(b->meta.records) + "  " + Num(b->meta.record_bytes) + "  " +
         Num(b->garbage.records) + "  " + Num(b->garbage.bytes) + "  " + Num(b->GarbageRatio()) + "  " +
         Num(b->meta.file_size) + "\n";
  }
  return r;
}

std::string CompactionsText(const std::deque<CompactionRecord>& recent) {
  std::string r = "kind  smallest  largest  bytes_in  bytes_out  micros\n";
  for (const auto& c : recent) {
    r += c.kind + "  " + c.smallest + "  " + c.largest + "  " + Num(c.bytes_in) + "  " + Num(c.bytes_out) + "  " +
         Num(c.micros) + "\n";
  }
  return r;
}

}  // namespace mxfs
