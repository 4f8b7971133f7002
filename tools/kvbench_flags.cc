// kvbench's flag table, parser and checks (kvbench_flags.h).
#include "tools/kvbench_flags.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/cli_util.h"

namespace mxfs::kvbench {
namespace {

enum class FlagType { kBool, kInt, kUint, kDouble, kString };

// One row of the flag table: name, type, where the value goes, help text.
// Thread-safety: a value type.
struct FlagSpec {
  const char* name;
  FlagType type;
  void* target;
  const char* help;
};

std::vector<FlagSpec> FlagTable(Flags* f) {
  return {
      {"benchmarks", FlagType::kString, &f->benchmarks, "comma-separated list, run in order (listed above)"},
      {"num", FlagType::kInt, &f->num, "number of key/values to place in the database (key range [0, num))"},
      {"reads", FlagType::kInt, &f->reads, "read operations per thread; negative: num"},
      {"writes", FlagType::kInt, &f->writes,
       "write operations per thread of fillseq, fillrandom and overwrite; 0 or negative: num"},
      {"readwritepercent", FlagType::kInt, &f->readwritepercent,
       "percentage of reads among the operations of readrandomwriterandom"},
      {"key_size", FlagType::kInt, &f->key_size, "size of each key in bytes"},
      {"value_size", FlagType::kInt, &f->value_size, "size of each value in bytes"},
      {"threads", FlagType::kInt, &f->threads,
       "concurrent threads, each running the whole benchmark (the *whilewriting benchmarks add a writer)"},
      {"histogram", FlagType::kBool, &f->histogram, "print a histogram of operation latencies"},
      {"db", FlagType::kString, &f->db, "database directory (default /tmp/kvbench-<uid>/dbbench)"},
      {"use_existing_db", FlagType::kBool, &f->use_existing_db,
       "do not destroy the database first; fill benchmarks are skipped"},
      {"write_buffer_size", FlagType::kInt, &f->write_buffer_size, "memtable size in bytes"},
      {"memtable_bloom_size_ratio", FlagType::kDouble, &f->memtable_bloom_size_ratio,
       "a bloom filter of each memtable's keys of this fraction of write_buffer_size (0: none; as db_bench's "
       "with --memtable_whole_key_filtering)"},
      {"max_write_buffer_number", FlagType::kInt, &f->max_write_buffer_number,
       "memtables (active + immutable) before writers wait"},
      {"max_bytes_for_level_base", FlagType::kUint, &f->max_bytes_for_level_base, "target size of level 1 in bytes"},
      {"max_bytes_for_level_multiplier", FlagType::kDouble, &f->max_bytes_for_level_multiplier,
       "growth factor between levels"},
      {"target_file_size_base", FlagType::kInt, &f->target_file_size_base, "target SSTable size in bytes"},
      {"num_levels", FlagType::kInt, &f->num_levels, "levels in the tree"},
      {"level0_file_num_compaction_trigger", FlagType::kInt, &f->level0_file_num_compaction_trigger,
       "L0 files that start a compaction (no NVM pool)"},
      {"level0_slowdown_writes_trigger", FlagType::kInt, &f->level0_slowdown_writes_trigger,
       "L0 files that slow writers down (no NVM pool)"},
      {"level0_stop_writes_trigger", FlagType::kInt, &f->level0_stop_writes_trigger,
       "L0 files that stop writers (no NVM pool)"},
      {"max_background_compactions", FlagType::kInt, &f->max_background_compactions, "compaction threads"},
      {"bloom_bits", FlagType::kInt, &f->bloom_bits, "bloom filter bits per key; negative: engine default; 0: none"},
      {"block_size", FlagType::kInt, &f->block_size, "SSTable block size in bytes"},
      {"cache_size", FlagType::kInt, &f->cache_size, "block cache capacity in bytes; 0 or negative: none"},
      {"verify_checksum", FlagType::kBool, &f->verify_checksum, "verify block checksums on reads"},
      {"sync", FlagType::kBool, &f->sync, "sync every write (WriteOptions::sync)"},
      {"report_interval_seconds", FlagType::kInt, &f->report_interval_seconds,
       "if > 0, write secs_elapsed,interval_qps to --report_file every N seconds"},
      {"report_file", FlagType::kString, &f->report_file, "CSV file for --report_interval_seconds"},
      {"seed", FlagType::kInt, &f->seed, "seed base for the key generators; 0: derived from the time"},
      {"benchmark_write_rate_limit", FlagType::kUint, &f->benchmark_write_rate_limit,
       "bytes per second (key and value) the background writer of readwhilewriting and "
       "seekrandomwhilewriting keeps to, as db_bench's (0: no limit)"},
      {"seek_nexts", FlagType::kInt, &f->seek_nexts,
       "Next() calls after each Seek in seekrandom, seekrandomwhilewriting and ycsbe"},
      {"compression_type", FlagType::kString, &f->compression_type,
       "accepted for db_bench compatibility; MatrixKV does not compress, only 'none' is valid"},
      {"use_direct_io", FlagType::kBool, &f->use_direct_io, "O_DIRECT for table reads, flush and compaction"},
      {"use_direct_reads", FlagType::kBool, &f->use_direct_reads, "db_bench spelling; same as --use_direct_io"},
      {"use_direct_io_for_flush_and_compaction", FlagType::kBool, &f->use_direct_io_for_flush_and_compaction,
       "db_bench spelling; same as --use_direct_io"},
      {"use_io_uring", FlagType::kBool, &f->use_io_uring, "io_uring for SSD I/O (0: pread/pwrite)"},
      {"mmap_read", FlagType::kBool, &f->mmap_read,
       "reads of tables and blob files copy out of a mapping of the file instead of pread (db_bench's flag of "
       "that name)"},
      {"pin_slice", FlagType::kBool, &f->pin_slice,
       "readrandom, readwhilewriting's readers and ycsbc Get into a PinnableSlice (no copy of a value pinned in a "
       "mapped blob file), as db_bench's ReadRandom; 0: into a std::string"},
      {"nvm_path", FlagType::kString, &f->nvm_path, "persistent-memory pool (empty: L0 and WAL on SSD)"},
      {"nvm_size", FlagType::kUint, &f->nvm_size, "pool size in bytes when it is created"},
      {"container_share", FlagType::kDouble, &f->container_share,
       "matrix container share the receiver fills before it becomes the compactor"},
      {"container_max_receiver_rows", FlagType::kInt, &f->container_max_receiver_rows,
       "rows at which the receiver becomes the compactor (0: no limit)"},
      {"container_tombstone_share", FlagType::kDouble, &f->container_tombstone_share,
       "share of deletions at which a receiver of 2 rows or more becomes the compactor (0: never)"},
      {"use_hints", FlagType::kBool, &f->use_hints, "cross-row hints in the matrix container"},
      {"use_row_blooms", FlagType::kBool, &f->use_row_blooms, "DRAM bloom filter per RowTable"},
      {"prefix_length", FlagType::kInt, &f->prefix_length,
       "bytes of each key in a container row's prefix bloom (0: none; MatrixFS: 9)"},
      {"prefix_scans", FlagType::kBool, &f->prefix_scans,
       "fschurn: list a directory with ReadOptions::prefix (rows and tables without it are left out)"},
      {"column_compaction_threads", FlagType::kInt, &f->column_compaction_threads, "column compaction threads"},
      {"container_pacing", FlagType::kBool, &f->container_pacing,
       "writers keep to column compaction's drain rate near a full container"},
      {"min_blob_size", FlagType::kUint, &f->min_blob_size,
       "values of at least this many bytes go to blob files at their first compaction (0: no separation)"},
      {"blob_file_size", FlagType::kUint, &f->blob_file_size, "bytes per blob file"},
      {"blob_gc_garbage_ratio", FlagType::kDouble, &f->blob_gc_garbage_ratio,
       "compactions move live values out of blob files with this share of garbage"},
      {"churn_cycles", FlagType::kInt, &f->churn_cycles, "fschurn: create/remove cycles of the tree"},
      {"churn_files", FlagType::kInt, &f->churn_files, "fschurn: files in the tree (--value_size bytes each)"},
      {"churn_files_per_dir", FlagType::kInt, &f->churn_files_per_dir, "fschurn: files per directory"},
      {"churn_csv", FlagType::kString, &f->churn_csv, "fschurn: also write one CSV line per cycle to this file"},
  };
}

bool ParseBool(std::string_view s, bool* out) {
  if (s == "1" || s == "true" || s == "t" || s == "yes" || s == "y") {
    *out = true;
    return true;
  }
  if (s == "0" || s == "false" || s == "f" || s == "no" || s == "n") {
    *out = false;
    return true;
  }
  return false;
}

void PrintHelp(const std::vector<FlagSpec>& table) {
  std::printf(
      "usage: kvbench [--flag=value ...]\n"
      "MatrixKV benchmark with db_bench's flags and output (see kvbench(1)).\n\nbenchmarks: %s\n\nflags:\n",
      kBenchmarkNames);
  Flags defaults;
  auto dtable = FlagTable(&defaults);
  for (size_t i = 0; i < table.size(); i++) {
    const FlagSpec& d = dtable[i];
    std::string def;
    switch (d.type) {
      case FlagType::kBool: def = *static_cast<bool*>(d.target) ? "true" : "false"; break;
      case FlagType::kInt: def = std::to_string(*static_cast<int64_t*>(d.target)); break;
      case FlagType::kUint: def = std::to_string(*static_cast<uint64_t*>(d.target)); break;
      case FlagType::kDouble: {
        char b[64];
        std::snprintf(b, sizeof(b), "%g", *static_cast<double*>(d.target));
        def = b;
        break;
      }
      case FlagType::kString: def = "\"" + *static_cast<std::string*>(d.target) + "\""; break;
    }
    std::printf("  --%s (%s) default: %s\n", d.name, d.help, def.c_str());
  }
}

}  // namespace

[[noreturn]] void Fail(const std::string& msg) {
  std::fflush(stdout);
  std::fprintf(stderr, "kvbench: %s\n", msg.c_str());
  std::_Exit(1);
}

namespace {

// A bad command line: named, exit 2 as every program (base/cli_util.h).
[[noreturn]] void UsageError(const std::string& msg) {
  std::fflush(stdout);
  std::fprintf(stderr, "kvbench: %s\n", msg.c_str());
  std::_Exit(Cli::kUsageExit);
}

}  // namespace

void ParseFlags(int argc, char** argv, Flags* f) {
  auto table = FlagTable(f);
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; i++) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0 ||
        std::strcmp(argv[i], "-help") == 0 || std::strcmp(argv[i], "--h") == 0) {
      PrintHelp(table);
      std::exit(0);
    }
  }
  auto find = [&](std::string_view name) -> const FlagSpec* {
    for (const FlagSpec& s : table) {
      if (name == s.name) return &s;
    }
    return nullptr;
  };
  for (int i = 1; i < argc; i++) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      UsageError("unexpected argument '" + std::string(arg) + "': every argument is a --flag=value (see --help)");
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    const FlagSpec* spec = find(name);
    if (spec == nullptr && !has_value && name.starts_with("no")) {
      const FlagSpec* neg = find(name.substr(2));
      if (neg != nullptr && neg->type == FlagType::kBool) {
        *static_cast<bool*>(neg->target) = false;
        continue;
      }
    }
    if (spec == nullptr) UsageError("unknown flag --" + std::string(name) + " (kvbench --help lists the flags)");
    if (!has_value) {
      if (spec->type == FlagType::kBool) {
        *static_cast<bool*>(spec->target) = true;
        continue;
      }
      if (i + 1 >= argc) UsageError("flag --" + std::string(name) + " needs a value (--" + std::string(name) + "=VALUE)");
      if (Cli::IsOption(argv[i + 1])) {
        UsageError("flag --" + std::string(name) + " needs a value, not the option " + argv[i + 1]);
      }
      value = argv[++i];
    }
    const std::string shown = "--" + std::string(name) + ": ";
    switch (spec->type) {
      case FlagType::kBool:
        if (!ParseBool(value, static_cast<bool*>(spec->target))) {
          UsageError(shown + "expected a boolean (1, 0, true, false), got '" + std::string(value) + "'");
        }
        break;
      case FlagType::kInt:
        if (!ParseNumber(value, static_cast<int64_t*>(spec->target))) {
          UsageError(shown + "expected an integer, got '" + std::string(value) + "'");
        }
        break;
      case FlagType::kUint:
        if (!ParseNumber(value, static_cast<uint64_t*>(spec->target))) {
          UsageError(shown + "expected a non-negative integer, got '" + std::string(value) + "'");
        }
        break;
      case FlagType::kDouble:
        if (!ParseNumber(value, static_cast<double*>(spec->target))) {
          UsageError(shown + "expected a number, got '" + std::string(value) + "'");
        }
        break;
      case FlagType::kString: *static_cast<std::string*>(spec->target) = std::string(value); break;
    }
  }
}

void ValidateFlags(Flags* f) {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) UsageError(msg);
  };
  need(f->num >= 1, "--num: must be at least 1, got " + std::to_string(f->num));
  need(f->key_size >= 1 && f->key_size <= (1 << 20),
       "--key_size: must be in [1, 1048576], got " + std::to_string(f->key_size));
  need(f->value_size >= 0 && f->value_size <= (64 << 20),
       "--value_size: must be in [0, 67108864], got " + std::to_string(f->value_size));
  need(f->threads >= 1 && f->threads <= 1024, "--threads: must be in [1, 1024], got " + std::to_string(f->threads));
  need(f->write_buffer_size > 0, "--write_buffer_size: must be positive, got " + std::to_string(f->write_buffer_size));
  need(f->max_write_buffer_number >= 1,
       "--max_write_buffer_number: must be at least 1, got " + std::to_string(f->max_write_buffer_number));
  need(f->max_bytes_for_level_base > 0, "--max_bytes_for_level_base: must be positive, got 0");
  need(f->target_file_size_base > 0,
       "--target_file_size_base: must be positive, got " + std::to_string(f->target_file_size_base));
  need(f->num_levels >= 2 && f->num_levels <= 64, "--num_levels: must be in [2, 64], got " + std::to_string(f->num_levels));
  need(f->block_size >= 256, "--block_size: must be at least 256, got " + std::to_string(f->block_size));
  need(f->report_interval_seconds >= 0,
       "--report_interval_seconds: must not be negative, got " + std::to_string(f->report_interval_seconds));
  need(f->readwritepercent >= 0 && f->readwritepercent <= 100,
       "--readwritepercent: must be in [0, 100], got " + std::to_string(f->readwritepercent));
  need(f->seek_nexts >= 0, "--seek_nexts: must not be negative, got " + std::to_string(f->seek_nexts));
  need(f->container_share > 0 && f->container_share <= 1, "--container_share: must be in (0, 1]");
  need(f->column_compaction_threads >= 1, "--column_compaction_threads: must be at least 1");
  need(f->container_max_receiver_rows == 0 || (f->container_max_receiver_rows >= 2 &&
                                               f->container_max_receiver_rows <= (1 << 20)),
       "--container_max_receiver_rows: must be 0 or in [2, 1048576], got " +
           std::to_string(f->container_max_receiver_rows));
  need(f->container_tombstone_share >= 0 && f->container_tombstone_share <= 1,
       "--container_tombstone_share: must be in [0, 1]");
  need(f->churn_cycles >= 1, "--churn_cycles: must be at least 1, got " + std::to_string(f->churn_cycles));
  need(f->churn_files >= 1, "--churn_files: must be at least 1, got " + std::to_string(f->churn_files));
  need(f->prefix_length >= 0 && f->prefix_length <= 4096,
       "--prefix_length: must be 0..4096, got " + std::to_string(f->prefix_length));
  need(f->churn_files_per_dir >= 1,
       "--churn_files_per_dir: must be at least 1, got " + std::to_string(f->churn_files_per_dir));
  need(f->compression_type == "none" || f->compression_type == "NoCompression",
       "--compression_type: MatrixKV does not compress; only 'none' is supported, got '" + f->compression_type + "'");
  if (f->cache_size < 0) f->cache_size = 0;
  if (f->use_direct_reads || f->use_direct_io_for_flush_and_compaction) f->use_direct_io = true;
  if (f->db.empty()) f->db = "/tmp/kvbench-" + std::to_string(geteuid()) + "/dbbench";
}

}  // namespace mxfs::kvbench
