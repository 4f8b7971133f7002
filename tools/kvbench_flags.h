// kvbench's command line: the flags with db_bench's names and defaults
// (man/kvbench.1 lists them), their parsing and validation.
//
// Thread-safety: Flags is written by ParseFlags and ValidateFlags before any
// benchmark thread starts, then read-only.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "kvcore/include/options.h"

namespace mxfs::kvbench {

// The names --benchmarks accepts (man/kvbench.1 describes each).
inline constexpr const char* kBenchmarkNames =
    "fillseq, fillrandom, overwrite, readrandom, readseq, seekrandom, deleterandom, readwhilewriting, "
    "seekrandomwhilewriting, readrandomwriterandom, updaterandom, ycsba, ycsbb, ycsbc, ycsbd, ycsbe, ycsbf, fschurn, "
    "stats";

// The command-line flags, with db_bench's defaults where db_bench has the
// flag. Thread-safety: written by ParseFlags before any thread starts, then
// read-only.
struct Flags {
  std::string benchmarks = "fillrandom,readrandom,stats";
  int64_t num = 1000000;
  int64_t reads = -1;
  int64_t writes = -1;
  int64_t readwritepercent = 90;
  int64_t key_size = 16;
  int64_t value_size = 100;
  int64_t threads = 1;
  bool histogram = false;
  std::string db;
  bool use_existing_db = false;
  int64_t write_buffer_size = 64ll << 20;
  double memtable_bloom_size_ratio = 0;
  int64_t max_write_buffer_number = 2;
  uint64_t max_bytes_for_level_base = 256ull << 20;
  double max_bytes_for_level_multiplier = 10.0;
  int64_t target_file_size_base = 64ll << 20;
  int64_t num_levels = 7;
  int64_t level0_file_num_compaction_trigger = 4;
  int64_t level0_slowdown_writes_trigger = 20;
  int64_t level0_stop_writes_trigger = 36;
  int64_t max_background_compactions = 1;
  int64_t bloom_bits = -1;
  int64_t block_size = 4096;
  int64_t cache_size = 8ll << 20;
  bool verify_checksum = true;
  bool sync = false;
  int64_t report_interval_seconds = 0;
  std::string report_file = "report.csv";
  int64_t seed = 0;
  int64_t seek_nexts = 0;
  uint64_t benchmark_write_rate_limit = 0;
  std::string compression_type = "none";
  bool use_direct_io = false;
  bool use_direct_reads = false;
  bool use_direct_io_for_flush_and_compaction = false;
  bool use_io_uring = true;
  bool mmap_read = false;  // db_bench's default (Options::mmap_reads is true)
  bool pin_slice = true;  // readrandom's Get into a PinnableSlice, as db_bench's ReadRandom
  std::string nvm_path;
  uint64_t nvm_size = 0;
  double container_share = 0.6;
  int64_t container_max_receiver_rows = Options().container_max_receiver_rows;
  double container_tombstone_share = Options().container_tombstone_share;
  bool use_hints = true;
  bool use_row_blooms = true;
  int64_t prefix_length = 0;
  bool prefix_scans = true;
  int64_t column_compaction_threads = 1;
  bool container_pacing = false;
  uint64_t min_blob_size = Options().min_blob_size;
  uint64_t blob_file_size = Options().blob_file_size;
  double blob_gc_garbage_ratio = Options().blob_gc_garbage_ratio;
  int64_t churn_cycles = 10;
  int64_t churn_files = 9000;
  int64_t churn_files_per_dir = 30;
  std::string churn_csv;
};

// Parses argv into *f. Accepts -flag and --flag, --flag=value, --flag value,
// and for booleans --flag and --noflag. --help prints the flags and exits 0.
// Exits 1 naming the flag on error.
void ParseFlags(int argc, char** argv, Flags* f);
// Checks the ranges (exits 1 naming the flag) and fills in derived values.
void ValidateFlags(Flags* f);

// Prints "kvbench: msg" on stderr and exits 1.
[[noreturn]] void Fail(const std::string& msg);

// A whole string as a number of type T (unsigned: no sign accepted).
template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  if constexpr (std::is_unsigned_v<T>) {
    if (s[0] == '-') return false;
  }
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

}  // namespace mxfs::kvbench
