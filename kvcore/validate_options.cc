#include "kvcore/validate_options.h"

#include <cmath>
#include <string>

#include "kvcore/db_stats.h"
#include "nvm/pool.h"

namespace mxfs {

Status ValidateOptions(const Options& o) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument("invalid option " + what); };
  if (o.write_buffer_size < 4096 || o.write_buffer_size > (1ull << 36)) {
    return bad("write_buffer_size = " + std::to_string(o.write_buffer_size) +
               ": must be between 4096 and 2^36 bytes");
  }
  if (o.max_write_buffer_number < 2 || o.max_write_buffer_number > 64) {
    return bad("max_write_buffer_number = " + std::to_string(o.max_write_buffer_number) + ": must be 2..64");
  }
  if (!(o.memtable_bloom_size_ratio >= 0 && o.memtable_bloom_size_ratio <= 0.25)) {
    return bad("memtable_bloom_size_ratio = " + FormatRatio(o.memtable_bloom_size_ratio) + ": must be 0..0.25");
  }
  if (o.num_levels < 2 || o.num_levels > 20) {
    return bad("num_levels = " + std::to_string(o.num_levels) + ": must be 2..20");
  }
  if (o.max_bytes_for_level_base < 1024) {
    return bad("max_bytes_for_level_base = " + std::to_string(o.max_bytes_for_level_base) + ": must be at least 1024");
  }
  if (!(o.max_bytes_for_level_multiplier > 1.0) || !std::isfinite(o.max_bytes_for_level_multiplier)) {
    return bad("max_bytes_for_level_multiplier = " + FormatRatio(o.max_bytes_for_level_multiplier) +
               ": must be a finite number greater than 1");
  }
  if (o.target_file_size_base < 1024) {
    return bad("target_file_size_base = " + std::to_string(o.target_file_size_base) + ": must be at least 1024");
  }
  if (o.level0_file_num_compaction_trigger < 1) {
    return bad("level0_file_num_compaction_trigger = " + std::to_string(o.level0_file_num_compaction_trigger) +
               ": must be at least 1");
  }
  if (o.level0_slowdown_writes_trigger < o.level0_file_num_compaction_trigger) {
    return bad("level0_slowdown_writes_trigger = " + std::to_string(o.level0_slowdown_writes_trigger) +
               ": must be >= level0_file_num_compaction_trigger (" +
               std::to_string(o.level0_file_num_compaction_trigger) + ")");
  }
  if (o.level0_stop_writes_trigger < o.level0_slowdown_writes_trigger) {
    return bad("level0_stop_writes_trigger = " + std::to_string(o.level0_stop_writes_trigger) +
               ": must be >= level0_slowdown_writes_trigger (" + std::to_string(o.level0_slowdown_writes_trigger) +
               ")");
  }
  if (o.max_background_compactions < 1) {
    return bad("max_background_compactions = " + std::to_string(o.max_background_compactions) +
               ": must be at least 1");
  }
  if (o.bloom_bits_per_key < 0 || o.bloom_bits_per_key > 64) {
    return bad("bloom_bits_per_key = " + std::to_string(o.bloom_bits_per_key) + ": must be 0..64");
  }
  if (o.prefix_length > 4096) {
    return bad("prefix_length = " + std::to_string(o.prefix_length) + ": must be 0..4096");
  }
  if (o.block_size < 256 || o.block_size > (16u << 20)) {
    return bad("block_size = " + std::to_string(o.block_size) + ": must be 256..16777216");
  }
  if (!(o.container_share > 0.0 && o.container_share < 1.0)) {
    return bad("container_share = " + FormatRatio(o.container_share) + ": must be strictly between 0 and 1");
  }
  if (!(o.container_tombstone_share >= 0.0 && o.container_tombstone_share <= 1.0)) {
    return bad("container_tombstone_share = " + FormatRatio(o.container_tombstone_share) + ": must be in [0, 1]");
  }
  if (o.container_max_receiver_rows == 1) {
    return bad("container_max_receiver_rows = 1: must be 0 (no limit) or at least 2");
  }
  if (o.column_compaction_threads < 1) {
    return bad("column_compaction_threads = " + std::to_string(o.column_compaction_threads) +
               ": must be at least 1");
  }
  if (o.blob_file_size < 4096) {
    return bad("blob_file_size = " + std::to_string(o.blob_file_size) + ": must be at least 4096");
  }
  if (!(o.blob_gc_garbage_ratio > 0.0 && o.blob_gc_garbage_ratio <= 1.0)) {
    return bad("blob_gc_garbage_ratio = " + FormatRatio(o.blob_gc_garbage_ratio) + ": must be in (0, 1]");
  }
  if (!o.nvm_path.empty() && o.nvm_size != 0 && o.nvm_size < (8ull << 20)) {
    return bad("nvm_size = " + std::to_string(o.nvm_size) + ": must be 0 (256 MiB) or at least 8 MiB");
  }
  if (!o.nvm_uuid.empty() && !ParsePoolUuid(o.nvm_uuid)) {
    return bad("nvm_uuid = \"" + o.nvm_uuid + "\": not a UUID in 8-4-4-4-12 form");
  }
  return Status::OK();
}

}  // namespace mxfs
