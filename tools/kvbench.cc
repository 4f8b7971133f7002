// kvbench: MatrixKV's benchmark, command-line and output compatible with
// RocksDB's db_bench for the benchmarks and flags it supports, so that the
// two can run the same workload and their output can be compared line by
// line (tools/bench/kv_vs_rocksdb.sh does exactly that). man/kvbench.1 lists
// every benchmark, flag and output line.
//
// Workload (as db_bench; the generators are in kvbench_gen.h):
//  - Keys are db_bench's (8 big-endian bytes of the key number, padded with
//    '0'); every random benchmark draws key numbers uniformly from [0, num)
//    with replacement (so fillrandom stores about 63% of num distinct keys).
//  - --threads N starts N threads that each run the whole benchmark (N times
//    --writes writes, N times --reads reads); readwhilewriting and
//    seekrandomwhilewriting add a thread 0 that writes until the others
//    are done and is left out of the result line, as db_bench's BGWriter.
//    micros/op is the sum of the threads' times over the operations,
//    ops/sec and MB/s use the wall-clock time.
//  - Each thread's generator is seeded with seed + a counter that grows by
//    one per thread per benchmark, so two runs with the same --seed draw the
//    same keys.
//  - readrandomwriterandom, updaterandom and the YCSB presets ycsba..ycsbf
//    run max(--reads, --writes) operations per thread (--num if neither is
//    set), as db_bench's readwrites_. ycsbd and ycsbe, which db_bench does
//    not have, insert new key numbers from num upwards.
//
// After each benchmark that writes, two lines of our own follow the
// db_bench lines:
//   Write amplification: W (SSD S MB / user U MB during this benchmark; ...)
//   Stall time: T seconds during this benchmark (...)
// computed from the DB properties "matrixkv.bytes-written-ssd",
// "matrixkv.user-bytes-written" and "matrixkv.stall-micros" read before and
// after the benchmark (the last memtable and pending compactions are not
// waited for, as in db_bench).
//
// Thread-safety: the benchmark threads share only the DB (thread-safe), the
// start/finish rendezvous under SharedState::mu, the reporter's atomic
// counter and the atomic next_insert_; each owns its Stats, generators and
// buffers.
//
// The flags are in kvbench_flags.h, the measurement in kvbench_stats.h.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/random.h"
#include "base/slice.h"
#include "base/status.h"
#include "kvcore/include/db.h"
#include "kvcore/include/options.h"
#include "kvcore/include/pinnable_slice.h"
#include "kvcore/include/write_batch.h"
#include "tools/kvbench_churn.h"
#include "tools/kvbench_flags.h"
#include "tools/kvbench_gen.h"
#include "tools/kvbench_stats.h"

namespace mxfs::kvbench {
namespace {

// Start/finish rendezvous of one benchmark's threads, as in db_bench: the
// threads start timing together once all are ready. num_done changes under
// mu (the waits need that) but is atomic so that a background writer can
// poll it without taking the lock on every write.
struct SharedState {
  std::mutex mu;
  std::condition_variable cv;
  int64_t total = 0;
  int64_t num_initialized = 0;
  std::atomic<int64_t> num_done{0};
  bool start = false;
  ReporterAgent* reporter = nullptr;
};

// What one benchmark thread owns. Thread-safety: used by that thread only
// (shared points to the rendezvous, which has its own lock).
struct ThreadState {
  ThreadState(int index, uint64_t seed) : tid(index), rand(seed) {}
  int tid;
  Random rand;
  Stats stats;
  SharedState* shared = nullptr;
};

// Deletes the database at path (and the NVM pool file, if it is a regular
// file) for a fresh run. Refuses directories that do not look like a
// database, so a mistyped --db cannot wipe unrelated files.
Status DestroyDatabase(const std::string& path, const std::string& nvm_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) {
    // Nothing to delete.
  } else if (!fs::is_directory(st)) {
    return Status::InvalidArgument("--db " + path + " exists and is not a directory");
  } else {
    bool looks_like_db = fs::exists(path + "/CURRENT", ec) || fs::exists(path + "/LOCK", ec);
    bool empty = fs::is_empty(path, ec);
    if (!empty && !looks_like_db) {
      return Status::InvalidArgument("refusing to delete --db " + path +
                                     ": it is not empty and has no CURRENT or LOCK file, so it is not a "
                                     "database; choose another --db or pass --use_existing_db=1");
    }
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      fs::remove_all(entry.path(), ec);
      if (ec) return Status::FromErrno("deleting " + entry.path().string(), ec.value());
    }
    if (ec) return Status::FromErrno("listing " + path, ec.value());
  }
  if (!nvm_path.empty()) {
    struct stat sb;
    if (::lstat(nvm_path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode) && ::unlink(nvm_path.c_str()) != 0) {
      return Status::FromErrno("deleting --nvm_path " + nvm_path, errno);
    }
  }
  return Status::OK();
}

bool ReadNumberProperty(DB* db, std::string_view name, uint64_t* out) {
  std::string v;
  if (!db->GetProperty(name, &v)) return false;
  return ParseNumber(std::string_view(v).substr(0, v.find_first_of(" \n")), out);
}

// The engine counters that the write-effect lines are computed from.
// Thread-safety: a value type.
struct EngineCounters {
  bool have_ssd = false, have_user = false, have_stall = false;
  uint64_t ssd = 0, user = 0, stall = 0;
};

EngineCounters ReadCounters(DB* db) {
  EngineCounters c;
  c.have_ssd = ReadNumberProperty(db, "matrixkv.bytes-written-ssd", &c.ssd);
  c.have_user = ReadNumberProperty(db, "matrixkv.user-bytes-written", &c.user);
  c.have_stall = ReadNumberProperty(db, "matrixkv.stall-micros", &c.stall);
  return c;
}

// ---------------------------------------------------------------- benchmark

// Runs the --benchmarks list against one DB, as db_bench's Benchmark does:
// opens (and for fill benchmarks first destroys) the DB, starts the threads
// of each benchmark, merges and prints their Stats.
// Thread-safety: Run is called once from main; the benchmark methods run on
// the worker threads and touch only the DB and their ThreadState.
class Benchmark {
 public:
  explicit Benchmark(const Flags& flags) : flags_(flags), next_insert_(static_cast<uint64_t>(flags.num)) {
    write_options_.sync = flags_.sync;
    read_options_.verify_checksums = flags_.verify_checksum;
  }

  // Runs every benchmark in --benchmarks; returns the process exit code.
  int Run();

 private:
  using Method = std::function<void(ThreadState*)>;

  // One entry of --benchmarks. Thread-safety: a value type.
  struct Step {
    std::string name;
    Method method;                   // empty for "stats"
    bool fresh_db = false;           // destroys the database first
    bool writes = false;             // prints the write-effect lines after it
    bool background_writer = false;  // adds thread 0, BackgroundWriter
  };
  // The step for a --benchmarks name; false if there is none.
  bool MakeStep(const std::string& name, Step* step);

  void PrintEnvironment();
  void PrintHeader();
  void Open();
  void Close();
  void RunBenchmark(const Step& step);
  void PrintWriteEffects(const EngineCounters& before);
  void PrintStats();

  void DoWrite(ThreadState* t, bool sequential);
  void ReadRandom(ThreadState* t);
  void ReadSequential(ThreadState* t);
  void SeekRandom(ThreadState* t);
  void DeleteRandom(ThreadState* t);
  void BackgroundWriter(ThreadState* t);
  void ReadRandomWriteRandom(ThreadState* t, int64_t read_percent);
  void UpdateRandom(ThreadState* t);
  void ReadOrScanLatestAndInsert(ThreadState* t, bool scans);

  // Draws a key number uniformly from [0, num) and writes its key into
  // *key (already key_size bytes long); returns the number.
  uint64_t RandomKey(ThreadState* t, std::string* key) const;
  // Gets key number k into *value; false if it is not there.
  bool GetOrFail(uint64_t k, const std::string& key, std::string* value);
  // GetOrFail that adds a found key and value to t's bytes.
  bool GetAndCount(ThreadState* t, uint64_t k, const std::string& key, std::string* value);
  // The same into a PinnableSlice (--pin_slice).
  bool GetAndCount(ThreadState* t, uint64_t k, const std::string& key, PinnableSlice* value);
  void PutOrFail(uint64_t k, const std::string& key, const Slice& value);
  // One seekrandom operation on key number k (see SeekRandom); true if the
  // seek landed on the key itself.
  bool SeekAndScan(ThreadState* t, uint64_t k, const std::string& key);

  uint64_t Reads() const { return flags_.reads < 0 ? static_cast<uint64_t>(flags_.num) : static_cast<uint64_t>(flags_.reads); }
  // db_bench's writes_: --writes, or --num when it is negative or 0.
  uint64_t Writes() const { return flags_.writes <= 0 ? static_cast<uint64_t>(flags_.num) : static_cast<uint64_t>(flags_.writes); }
  // db_bench's readwrites_: the operations of each thread of the mixed
  // benchmarks, --num unless --reads or --writes is set, else the larger.
  uint64_t ReadWrites() const {
    if (flags_.reads < 0 && flags_.writes < 0) return static_cast<uint64_t>(flags_.num);
    return static_cast<uint64_t>(std::max(flags_.reads, flags_.writes));
  }

  const Flags flags_;
  WriteOptions write_options_;
  ReadOptions read_options_;
  uint64_t seed_base_ = 0;
  uint64_t thread_counter_ = 0;
  // The next new key number of ycsbd and ycsbe; num at first, so it grows
  // past every key the fill benchmarks write.
  std::atomic<uint64_t> next_insert_;
  // Zipfian::Zeta(0, num, 0), computed once before the first ycsbd.
  double zeta_num_ = 0;
  std::unique_ptr<DB> db_;
};

void Benchmark::PrintEnvironment() {
  std::printf("MatrixKV:   kvbench (db_bench-compatible output)\n");
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", std::localtime(&now));
  std::printf("Date:       %s\n", date);
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model, cache;
  int cpus = 0;
  while (std::getline(cpuinfo, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string val = line.substr(colon + 1);
    while (!val.empty() && val.front() == ' ') val.erase(0, 1);
    if (key == "model name") {
      cpus++;
      model = val;
    } else if (key == "cache size") {
      cache = val;
    }
  }
  if (cpus > 0) {
    std::printf("CPU:        %d * %s\n", cpus, model.c_str());
    std::printf("CPUCache:   %s\n", cache.c_str());
  }
}

void Benchmark::PrintHeader() {
  const double ks = static_cast<double>(flags_.key_size);
  const double vs = static_cast<double>(flags_.value_size);
  const double n = static_cast<double>(flags_.num);
  std::printf("Keys:       %" PRId64 " bytes each (+ 0 bytes user-defined timestamp)\n", flags_.key_size);
  std::printf("Values:     %" PRId64 " bytes each (%d bytes after compression)\n", flags_.value_size,
              static_cast<int>(vs * kCompressionRatio + 0.5));
  std::printf("Entries:    %" PRId64 "\n", flags_.num);
  std::printf("Prefix:    0 bytes\n");
  std::printf("Keys per prefix:    0\n");
  std::printf("RawSize:    %.1f MB (estimated)\n", (ks + vs) * n / 1048576.0);
  std::printf("FileSize:   %.1f MB (estimated)\n", (ks + vs * kCompressionRatio) * n / 1048576.0);
  std::printf("Write rate: 0 bytes/second\n");
  std::printf("Read rate: 0 ops/second\n");
  std::printf("Compression: NoCompression\n");
  std::printf("Threads:    %" PRId64 "\n", flags_.threads);
  std::printf("Sync:       %s\n", flags_.sync ? "yes" : "no");
  std::printf("Direct I/O: %s\n", flags_.use_direct_io ? "yes" : "no");
  std::printf("io_uring:   %s\n", flags_.use_io_uring ? "yes" : "no");
  std::printf("mmap reads: %s\n", flags_.mmap_read && !flags_.use_direct_io ? "yes" : "no");
  std::printf("Pin slice:  %s\n", flags_.pin_slice ? "yes" : "no");
  if (flags_.nvm_path.empty()) {
    std::printf("NVM pool:   none (L0 and WAL on SSD)\n");
  } else {
    std::printf("NVM pool:   %s (%" PRIu64 " bytes if created, container share %.2f, hints %s)\n",
                flags_.nvm_path.c_str(), flags_.nvm_size, flags_.container_share, flags_.use_hints ? "on" : "off");
  }
  std::printf("------------------------------------------------\n");
  std::fflush(stdout);
}

void Benchmark::Open() {
  Options o;
  o.create_if_missing = !flags_.use_existing_db;
  o.write_buffer_size = static_cast<size_t>(flags_.write_buffer_size);
  o.memtable_bloom_size_ratio = flags_.memtable_bloom_size_ratio;
  o.max_write_buffer_number = static_cast<int>(flags_.max_write_buffer_number);
  o.max_bytes_for_level_base = flags_.max_bytes_for_level_base;
  o.max_bytes_for_level_multiplier = flags_.max_bytes_for_level_multiplier;
  o.target_file_size_base = static_cast<uint64_t>(flags_.target_file_size_base);
  o.num_levels = static_cast<int>(flags_.num_levels);
  o.level0_file_num_compaction_trigger = static_cast<int>(flags_.level0_file_num_compaction_trigger);
  o.level0_slowdown_writes_trigger = static_cast<int>(flags_.level0_slowdown_writes_trigger);
  o.level0_stop_writes_trigger = static_cast<int>(flags_.level0_stop_writes_trigger);
  o.max_background_compactions = static_cast<int>(flags_.max_background_compactions);
  if (flags_.bloom_bits >= 0) o.bloom_bits_per_key = static_cast<int>(flags_.bloom_bits);
  o.block_size = static_cast<size_t>(flags_.block_size);
  o.block_cache_size = static_cast<size_t>(flags_.cache_size);
  o.use_direct_io = flags_.use_direct_io;
  o.use_io_uring = flags_.use_io_uring;
  o.mmap_reads = flags_.mmap_read;
  o.nvm_path = flags_.nvm_path;
  o.nvm_size = flags_.nvm_size;
  o.container_share = flags_.container_share;
  o.container_max_receiver_rows = static_cast<uint32_t>(flags_.container_max_receiver_rows);
  o.container_tombstone_share = flags_.container_tombstone_share;
  o.column_compaction_threads = static_cast<int>(flags_.column_compaction_threads);
  o.pace_writers_to_container = flags_.container_pacing;
  o.min_blob_size = flags_.min_blob_size;
  o.blob_file_size = flags_.blob_file_size;
  o.blob_gc_garbage_ratio = flags_.blob_gc_garbage_ratio;
  o.use_cross_row_hints = flags_.use_hints;
  o.use_row_blooms = flags_.use_row_blooms;
  o.prefix_length = static_cast<size_t>(flags_.prefix_length);
  if (!flags_.use_existing_db) {
    std::error_code ec;
    std::filesystem::create_directories(flags_.db, ec);
    if (ec) Fail("creating --db " + flags_.db + ": " + ec.message());
  }
  auto r = DB::Open(o, flags_.db);
  if (!r) Fail("cannot open --db " + flags_.db + ": " + r.error().ToString());
  db_ = std::move(*r);
  if (!flags_.nvm_path.empty()) {
    // How the pool is split between the PM WAL and the matrix container.
    std::string c, wal, cont;
    if (db_->GetProperty("matrixkv.container", &c)) {
      auto field = [&c](std::string_view name) {
        const size_t at = c.find("\n" + std::string(name) + " ");
        if (at == std::string::npos) return std::string("?");
        const size_t from = at + name.size() + 2;
        return c.substr(from, c.find('\n', from) - from);
      };
      wal = field("wal.capacity");
      cont = field("container.capacity");
    }
    std::printf("NVM split:  WAL %s bytes, container %s bytes; column compaction threads %d\n", wal.c_str(),
                cont.c_str(), o.column_compaction_threads);
    std::fflush(stdout);
  }
}

void Benchmark::Close() {
  if (!db_) return;
  Status s = db_->Close();
  if (!s.ok()) Fail("closing --db " + flags_.db + ": " + s.ToString());
  db_.reset();
}

bool Benchmark::MakeStep(const std::string& name, Step* step) {
  Step s;
  s.name = name;
  auto with = [this](void (Benchmark::*m)(ThreadState*)) { return [this, m](ThreadState* t) { (this->*m)(t); }; };
  if (name == "fillseq" || name == "fillrandom" || name == "overwrite") {
    const bool sequential = name == "fillseq";
    s.method = [this, sequential](ThreadState* t) { DoWrite(t, sequential); };
    s.fresh_db = name != "overwrite";
    s.writes = true;
  } else if (name == "readrandom" || name == "ycsbc") {
    s.method = with(&Benchmark::ReadRandom);
  } else if (name == "readseq") {
    s.method = with(&Benchmark::ReadSequential);
  } else if (name == "seekrandom") {
    s.method = with(&Benchmark::SeekRandom);
  } else if (name == "deleterandom") {
    s.method = with(&Benchmark::DeleteRandom);
    s.writes = true;
  } else if (name == "readwhilewriting" || name == "seekrandomwhilewriting") {
    const bool seek = name == "seekrandomwhilewriting";
    s.method = [this, seek](ThreadState* t) {
      if (t->tid == 0) BackgroundWriter(t);
      else if (seek) SeekRandom(t);
      else ReadRandom(t);
    };
    s.writes = true;
    s.background_writer = true;
  } else if (name == "readrandomwriterandom" || name == "ycsba" || name == "ycsbb") {
    const int64_t percent = name == "ycsba" ? 50 : name == "ycsbb" ? 95 : flags_.readwritepercent;
    s.method = [this, percent](ThreadState* t) { ReadRandomWriteRandom(t, percent); };
    s.writes = true;
  } else if (name == "updaterandom" || name == "ycsbf") {
    s.method = with(&Benchmark::UpdateRandom);
    s.writes = true;
  } else if (name == "ycsbd" || name == "ycsbe") {
    const bool scans = name == "ycsbe";
    s.method = [this, scans](ThreadState* t) { ReadOrScanLatestAndInsert(t, scans); };
    s.writes = true;
  } else if (name == "fschurn") {
    s.method = [this](ThreadState* t) {  // one tree: thread 0 only (kvbench_churn.h)
      if (t->tid != 0) return;
      t->stats.FinishedOps(nullptr, RunFsChurn(db_.get(), flags_, read_options_, write_options_), OpType::kWrite);
    };
    s.writes = true;
  } else if (name != "stats") {
    return false;
  }
  *step = std::move(s);
  return true;
}

int Benchmark::Run() {
  // Check the whole list before running anything.
  std::vector<Step> steps;
  std::string_view list = flags_.benchmarks;
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string name(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (name.empty()) continue;
    Step step;
    if (!MakeStep(name, &step)) {
      Fail("--benchmarks: unknown benchmark '" + name + "' (supported: " + kBenchmarkNames + ")");
    }
    if (name == "ycsbd" && zeta_num_ == 0) zeta_num_ = Zipfian::Zeta(0, static_cast<uint64_t>(flags_.num), 0);
    steps.push_back(std::move(step));
  }

  PrintEnvironment();
  seed_base_ = static_cast<uint64_t>(flags_.seed);
  if (seed_base_ == 0) {
    seed_base_ = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) / 1000;
    std::printf("Set seed to %" PRIu64 " because --seed was 0\n", seed_base_);
  }
  PrintHeader();

  if (!flags_.use_existing_db) {
    Status s = DestroyDatabase(flags_.db, flags_.nvm_path);
    if (!s.ok()) Fail(s.ToString());
  }
  Open();

  for (const Step& step : steps) {
    if (step.fresh_db) {
      if (flags_.use_existing_db) {
        std::printf("%-12s : skipped (--use_existing_db is true)\n", step.name.c_str());
        continue;
      }
      Close();
      Status s = DestroyDatabase(flags_.db, flags_.nvm_path);
      if (!s.ok()) Fail(s.ToString());
      Open();
    }
    if (!step.method) {
      PrintStats();
      continue;
    }
    std::printf("DB path: [%s]\n", flags_.db.c_str());
    std::fflush(stdout);
    const EngineCounters before = ReadCounters(db_.get());
    RunBenchmark(step);
    if (step.writes) PrintWriteEffects(before);
  }
  Close();
  return 0;
}

void Benchmark::RunBenchmark(const Step& step) {
  SharedState shared;
  shared.total = flags_.threads + (step.background_writer ? 1 : 0);
  std::unique_ptr<ReporterAgent> reporter;
  if (flags_.report_interval_seconds > 0) {
    auto r = ReporterAgent::Start(flags_.report_file, flags_.report_interval_seconds);
    if (!r) Fail(r.error().ToString());
    reporter = std::move(*r);
    shared.reporter = reporter.get();
  }
  std::vector<std::unique_ptr<ThreadState>> states;
  for (int64_t i = 0; i < shared.total; i++) {
    states.push_back(std::make_unique<ThreadState>(static_cast<int>(i), seed_base_ + ++thread_counter_));
    states.back()->shared = &shared;
  }
  std::vector<std::thread> threads;
  for (auto& st : states) {
    ThreadState* t = st.get();
    threads.emplace_back([this, t, &step] {
      SharedState* sh = t->shared;
      {
        std::unique_lock<std::mutex> l(sh->mu);
        sh->num_initialized++;
        if (sh->num_initialized >= sh->total) sh->cv.notify_all();
        sh->cv.wait(l, [sh] { return sh->start; });
      }
      t->stats.Start(flags_.histogram);
      step.method(t);
      t->stats.Stop();
      {
        std::lock_guard<std::mutex> l(sh->mu);
        sh->num_done++;
        if (sh->num_done >= sh->total) sh->cv.notify_all();
      }
    });
  }
  {
    std::unique_lock<std::mutex> l(shared.mu);
    shared.cv.wait(l, [&] { return shared.num_initialized >= shared.total; });
    shared.start = true;
    shared.cv.notify_all();
    shared.cv.wait(l, [&] { return shared.num_done >= shared.total; });
  }
  for (auto& th : threads) th.join();
  reporter.reset();
  // As db_bench: the background writer's Stats stay out of the result line.
  const size_t first = step.background_writer ? 1 : 0;
  for (size_t i = first + 1; i < states.size(); i++) states[first]->stats.Merge(states[i]->stats);
  states[first]->stats.Report(step.name);
  if (step.background_writer) states[0]->stats.ReportBackgroundWriter();
}

void Benchmark::PrintWriteEffects(const EngineCounters& before) {
  const EngineCounters after = ReadCounters(db_.get());
  std::string total_wa;
  if (!db_->GetProperty("matrixkv.write-amp", &total_wa)) total_wa = "n/a";
  while (!total_wa.empty() && (total_wa.back() == '\n' || total_wa.back() == ' ')) total_wa.pop_back();
  if (after.have_ssd && after.have_user && before.have_ssd && before.have_user) {
    const double ssd = static_cast<double>(after.ssd - before.ssd);
    const double user = static_cast<double>(after.user - before.user);
    char wa[32] = "n/a";
    if (user > 0) std::snprintf(wa, sizeof(wa), "%.3f", ssd / user);
    std::printf("Write amplification: %s (SSD %.1f MB / user %.1f MB during this benchmark; matrixkv.write-amp "
                "since open: %s)\n",
                wa, ssd / 1048576.0, user / 1048576.0, total_wa.c_str());
  } else {
    std::printf("Write amplification: n/a (property matrixkv.bytes-written-ssd or matrixkv.user-bytes-written "
                "missing; matrixkv.write-amp since open: %s)\n",
                total_wa.c_str());
  }
  if (after.have_stall && before.have_stall) {
    const uint64_t micros = after.stall - before.stall;
    std::printf("Stall time: %.3f seconds during this benchmark (matrixkv.stall-micros since open: %" PRIu64 ")\n",
                static_cast<double>(micros) * 1e-6, after.stall);
  } else {
    std::printf("Stall time: n/a (property matrixkv.stall-micros missing)\n");
  }
  std::fflush(stdout);
}

void Benchmark::PrintStats() {
  for (const char* name : {"matrixkv.stats", "matrixkv.levels", "matrixkv.container", "matrixkv.compactions"}) {
    std::string v;
    if (db_->GetProperty(name, &v)) {
      std::printf("\n%s\n", v.c_str());
    } else {
      std::printf("\n(property %s not supported)\n", name);
    }
  }
  std::fflush(stdout);
}

// CPU time the calling thread has used, in microseconds.
double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

uint64_t Benchmark::RandomKey(ThreadState* t, std::string* key) const {
  const uint64_t k = t->rand.Uniform(static_cast<uint64_t>(flags_.num));
  GenerateKey(k, key->data(), key->size());
  return k;
}

bool Benchmark::GetOrFail(uint64_t k, const std::string& key, std::string* value) {
  Status s = db_->Get(read_options_, key, value);
  if (!s.ok() && !s.IsNotFound()) Fail("get error: key number " + std::to_string(k) + ": " + s.ToString());
  return s.ok();
}

bool Benchmark::GetAndCount(ThreadState* t, uint64_t k, const std::string& key, std::string* value) {
  if (!GetOrFail(k, key, value)) return false;
  t->stats.AddBytes(key.size() + value->size());
  return true;
}

bool Benchmark::GetAndCount(ThreadState* t, uint64_t k, const std::string& key, PinnableSlice* value) {
  Status s = db_->Get(read_options_, key, value);
  if (!s.ok() && !s.IsNotFound()) Fail("get error: key number " + std::to_string(k) + ": " + s.ToString());
  if (!s.ok()) return false;
  t->stats.AddBytes(key.size() + value->size());
  return true;
}

void Benchmark::PutOrFail(uint64_t k, const std::string& key, const Slice& value) {
  Status s = db_->Put(write_options_, key, value);
  if (!s.ok()) Fail("put error: key number " + std::to_string(k) + ": " + s.ToString());
}

void Benchmark::DoWrite(ThreadState* t, bool sequential) {
  const uint64_t num = static_cast<uint64_t>(flags_.num);
  const uint64_t writes = Writes();
  const size_t key_size = static_cast<size_t>(flags_.key_size);
  const size_t value_size = static_cast<size_t>(flags_.value_size);
  ValueGenerator gen(value_size);
  std::string key(key_size, '\0');
  WriteBatch batch;
  for (uint64_t i = 0; i < writes; i++) {
    const uint64_t k = sequential ? i : t->rand.Uniform(num);
    GenerateKey(k, key.data(), key_size);
    batch.Clear();
    batch.Put(key, gen.Generate(value_size));
    Status s = db_->Write(write_options_, &batch);
    if (!s.ok()) Fail("put error: key number " + std::to_string(k) + ": " + s.ToString());
    t->stats.AddBytes(key_size + value_size);
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kWrite);
  }
}

// As db_bench's ReadRandom, which Gets into a PinnableSlice, released
// (Reset) before the next Get; --pin_slice=0 Gets into a std::string.
// readrandomwriterandom and updaterandom Get into a std::string, as
// db_bench's do.
void Benchmark::ReadRandom(ThreadState* t) {
  const uint64_t reads = Reads();
  std::string key(static_cast<size_t>(flags_.key_size), '\0');
  std::string value;
  PinnableSlice pinnable;
  uint64_t found = 0;
  const double cpu_start = ThreadCpuMicros();
  for (uint64_t i = 0; i < reads; i++) {
    const uint64_t k = RandomKey(t, &key);
    bool got;
    if (flags_.pin_slice) {
      pinnable.Reset();
      got = GetAndCount(t, k, key, &pinnable);
    } else {
      got = GetAndCount(t, k, key, &value);
    }
    if (got) found++;
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kRead);
  }
  // This thread's CPU per Get: unlike ops/s, next to nothing of the
  // machine's other load (the other threads, other processes) enters it.
  std::printf("Reader CPU: %.3f micros per Get (thread %d, %" PRIu64 " Gets)\n",
              (ThreadCpuMicros() - cpu_start) / static_cast<double>(reads == 0 ? 1 : reads), t->tid, reads);
  t->stats.AddMessage("(" + std::to_string(found) + " of " + std::to_string(reads) + " found)\n");
}

void Benchmark::ReadSequential(ThreadState* t) {
  const uint64_t reads = Reads();
  std::unique_ptr<Iterator> it = db_->NewIterator(read_options_);
  uint64_t i = 0;
  for (it->SeekToFirst(); i < reads && it->Valid(); it->Next()) {
    t->stats.AddBytes(it->key().size() + it->value().size());
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kRead);
    i++;
  }
  if (!it->status().ok()) Fail("iterator error: " + it->status().ToString());
}

// As db_bench's SeekRandom without --use_tailing_iterator: a new iterator
// for every seek, so that each seek sees every write before it (which
// matters beside a writer), then --seek_nexts Next calls that copy out up to
// 256 bytes of each value so that the value is really read.
bool Benchmark::SeekAndScan(ThreadState* t, uint64_t k, const std::string& key) {
  std::unique_ptr<Iterator> it = db_->NewIterator(read_options_);
  it->Seek(key);
  const bool found = it->Valid() && it->key() == Slice(key);
  char value_buffer[256];
  for (int64_t j = 0; j < flags_.seek_nexts && it->Valid(); j++) {
    const Slice v = it->value();
    std::memcpy(value_buffer, v.data(), std::min(v.size(), sizeof(value_buffer)));
    t->stats.AddBytes(it->key().size() + v.size());
    it->Next();
  }
  if (!it->status().ok()) Fail("iterator error: key number " + std::to_string(k) + ": " + it->status().ToString());
  return found;
}

void Benchmark::SeekRandom(ThreadState* t) {
  const uint64_t reads = Reads();
  std::string key(static_cast<size_t>(flags_.key_size), '\0');
  uint64_t found = 0;
  for (uint64_t i = 0; i < reads; i++) {
    const uint64_t k = RandomKey(t, &key);
    if (SeekAndScan(t, k, key)) found++;
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kSeek);
  }
  t->stats.AddMessage("(" + std::to_string(found) + " of " + std::to_string(reads) + " found)\n");
}

void Benchmark::DeleteRandom(ThreadState* t) {
  const uint64_t num = static_cast<uint64_t>(flags_.num);
  std::string key(static_cast<size_t>(flags_.key_size), '\0');
  WriteBatch batch;
  for (uint64_t i = 0; i < num; i++) {
    const uint64_t k = RandomKey(t, &key);
    batch.Clear();
    batch.Delete(key);
    Status s = db_->Write(write_options_, &batch);
    if (!s.ok()) Fail("del error: key number " + std::to_string(k) + ": " + s.ToString());
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kDelete);
  }
}

// Thread 0 of readwhilewriting and seekrandomwhilewriting, as db_bench's
// BGWriter: puts of random keys in [0, num) at full speed until every other
// thread has finished. Its Stats are excluded from the result line.
void Benchmark::BackgroundWriter(ThreadState* t) {
  const size_t value_size = static_cast<size_t>(flags_.value_size);
  ValueGenerator gen(value_size);
  std::string key(static_cast<size_t>(flags_.key_size), '\0');
  SharedState* sh = t->shared;
  // --benchmark_write_rate_limit: the bytes written so far may not run ahead
  // of limit * elapsed; the writer sleeps off any lead (so that both tools'
  // writers can be held to the same load beside the readers).
  const double limit = static_cast<double>(flags_.benchmark_write_rate_limit);
  const auto start = std::chrono::steady_clock::now();
  double bytes = 0;
  // How evenly it wrote: the longest time between two puts, and the puts of
  // each whole second since the start (the slowest one is reported).
  auto last_put = start;
  std::chrono::steady_clock::duration longest_gap{};
  std::vector<uint64_t> per_second;
  while (sh->num_done.load(std::memory_order_acquire) + 1 < sh->total) {
    if (limit > 0) {
      const auto due = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(bytes / limit));
      if (due > std::chrono::steady_clock::now()) {
        // Short naps, so that the end of the readers is noticed soon.
        std::this_thread::sleep_until(std::min(due, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
        continue;
      }
    }
    const uint64_t k = RandomKey(t, &key);
    PutOrFail(k, key, gen.Generate(value_size));
    bytes += static_cast<double>(key.size() + value_size);
    t->stats.AddBytes(key.size() + value_size);
    t->stats.FinishedOps(sh->reporter, 1, OpType::kWrite);
    const auto now = std::chrono::steady_clock::now();
    longest_gap = std::max(longest_gap, now - last_put);
    last_put = now;
    const auto second = static_cast<size_t>(std::chrono::duration_cast<std::chrono::seconds>(now - start).count());
    if (per_second.size() <= second) per_second.resize(second + 1, 0);
    per_second[second]++;
  }
  // The last second is partial: only whole seconds count for the slowest.
  const size_t whole = static_cast<size_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count());
  per_second.resize(whole, 0);  // seconds without a put count as 0
  const uint64_t slowest = per_second.empty() ? 0 : *std::min_element(per_second.begin(), per_second.end());
  std::printf("Background writer pauses: longest %.1f ms between two puts; slowest whole second %" PRIu64
              " writes (of %zu whole seconds)\n",
              std::chrono::duration<double, std::milli>(longest_gap).count(), slowest, per_second.size());
  std::fflush(stdout);
}

// db_bench's readrandomwriterandom, one thread doing both: in every 100
// operations, read_percent Gets first, then the rest Puts, of random keys.
void Benchmark::ReadRandomWriteRandom(ThreadState* t, int64_t read_percent) {
  const uint64_t ops = ReadWrites();
  const size_t value_size = static_cast<size_t>(flags_.value_size);
  ValueGenerator gen(value_size);
  std::string key(static_cast<size_t>(flags_.key_size), '\0');
  std::string value;
  uint64_t reads = 0, writes = 0, found = 0;
  int64_t get_weight = 0, put_weight = 0;
  for (uint64_t i = 0; i < ops; i++) {
    const uint64_t k = RandomKey(t, &key);
    if (get_weight == 0 && put_weight == 0) {
      get_weight = read_percent;
      put_weight = 100 - read_percent;
    }
    if (get_weight > 0) {
      if (GetOrFail(k, key, &value)) found++;
      get_weight--;
      reads++;
      t->stats.FinishedOps(t->shared->reporter, 1, OpType::kRead);
    } else {
      PutOrFail(k, key, gen.Generate(value_size));
      put_weight--;
      writes++;
      t->stats.FinishedOps(t->shared->reporter, 1, OpType::kWrite);
    }
  }
  // db_bench's message, spaces and all; no bytes, so no MB/s.
  t->stats.AddMessage("( reads:" + std::to_string(reads) + " writes:" + std::to_string(writes) +
                      " total:" + std::to_string(ops) + " found:" + std::to_string(found) + ")");
}

// db_bench's updaterandom: read-modify-write of random keys, a Get and then
// a Put of a new value, counted as one "update".
void Benchmark::UpdateRandom(ThreadState* t) {
  const uint64_t ops = ReadWrites();
  const size_t value_size = static_cast<size_t>(flags_.value_size);
  ValueGenerator gen(value_size);
  std::string key(static_cast<size_t>(flags_.key_size), '\0');
  std::string value;
  uint64_t found = 0;
  for (uint64_t i = 0; i < ops; i++) {
    const uint64_t k = RandomKey(t, &key);
    if (GetAndCount(t, k, key, &value)) found++;
    PutOrFail(k, key, gen.Generate(value_size));
    t->stats.AddBytes(key.size() + value_size);
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kUpdate);
  }
  t->stats.AddMessage("( updates:" + std::to_string(ops) + " found:" + std::to_string(found) + ")");
}

// YCSB D (scans false) and E (scans true), which db_bench does not have: in
// every 100 operations 95 reads first, then 5 inserts of new key numbers
// (next_insert_, from num upwards, shared by the threads). D's read is a Get
// of a key drawn from YCSB's "latest" distribution, Zipfian over the key
// numbers with the newest the most likely; E's is a SeekAndScan from a key
// number drawn uniformly from all those written so far.
void Benchmark::ReadOrScanLatestAndInsert(ThreadState* t, bool scans) {
  const uint64_t ops = ReadWrites();
  const size_t value_size = static_cast<size_t>(flags_.value_size);
  ValueGenerator gen(value_size);
  Zipfian latest(static_cast<uint64_t>(flags_.num), zeta_num_);
  std::string key(static_cast<size_t>(flags_.key_size), '\0');
  std::string value;
  uint64_t reads = 0, inserts = 0, found = 0;
  int64_t read_weight = 0, insert_weight = 0;
  for (uint64_t i = 0; i < ops; i++) {
    if (read_weight == 0 && insert_weight == 0) {
      read_weight = 95;
      insert_weight = 5;
    }
    if (read_weight > 0) {
      const uint64_t keys = next_insert_.load(std::memory_order_relaxed);
      const uint64_t k = scans ? t->rand.Uniform(keys) : keys - 1 - latest.Next(t->rand, keys);
      GenerateKey(k, key.data(), key.size());
      if (scans) {
        if (SeekAndScan(t, k, key)) found++;
      } else {
        if (GetAndCount(t, k, key, &value)) found++;
      }
      read_weight--;
      reads++;
      t->stats.FinishedOps(t->shared->reporter, 1, scans ? OpType::kSeek : OpType::kRead);
    } else {
      const uint64_t k = next_insert_.fetch_add(1, std::memory_order_relaxed);
      GenerateKey(k, key.data(), key.size());
      PutOrFail(k, key, gen.Generate(value_size));
      t->stats.AddBytes(key.size() + value_size);
      insert_weight--;
      inserts++;
      t->stats.FinishedOps(t->shared->reporter, 1, OpType::kWrite);
    }
  }
  t->stats.AddMessage(std::string("( ") + (scans ? "scans:" : "reads:") + std::to_string(reads) +
                      " inserts:" + std::to_string(inserts) + " found:" + std::to_string(found) + ")");
}

}  // namespace
}  // namespace mxfs::kvbench

int main(int argc, char** argv) {
  mxfs::kvbench::Flags flags;
  mxfs::kvbench::ParseFlags(argc, argv, &flags);
  mxfs::kvbench::ValidateFlags(&flags);
  mxfs::kvbench::Benchmark bench(flags);
  return bench.Run();
}
