// kvbench: MatrixKV's benchmark, command-line and output compatible with
// RocksDB's db_bench for the benchmarks and flags it supports, so that the
// two can run the same workload and their output can be compared line by
// line (tools/bench/kv_vs_rocksdb.sh does exactly that). man/kvbench.1 lists
// every flag and the output format.
//
// Workload (as db_bench):
//  - A key is key_size bytes: the key number as 8 big-endian bytes (only the
//    low key_size bytes if key_size < 8), padded with '0' characters, so
//    fillseq writes in key order. fillrandom, overwrite, readrandom,
//    seekrandom and deleterandom draw key numbers uniformly from [0, num)
//    with replacement (so fillrandom stores about 63% of num distinct keys).
//  - A value is value_size bytes cut from a 1 MiB buffer of printable bytes
//    built like db_bench's RandomGenerator: every 100-byte piece repeats a
//    random 50-byte string (compression ratio 0.5). MatrixKV does not
//    compress, so this only matters for a db_bench run with compression on.
//  - --threads N starts N threads that each run the whole benchmark (N*num
//    writes or N*reads reads); micros/op is the sum of the threads' times
//    over the operations, ops/sec and MB/s use the wall-clock time.
//  - Each thread's generator is seeded with seed + a counter that grows by
//    one per thread per benchmark, so two runs with the same --seed draw the
//    same keys.
//
// After each write benchmark two lines of our own follow the db_bench lines:
//   Write amplification: W (SSD S MB / user U MB during this benchmark; ...)
//   Stall time: T seconds during this benchmark (...)
// computed from the DB properties "matrixkv.bytes-written-ssd",
// "matrixkv.user-bytes-written" and "matrixkv.stall-micros" read before and
// after the benchmark (the last memtable and pending compactions are not
// waited for, as in db_bench).
//
// Thread-safety: the benchmark threads share only the DB (thread-safe), the
// start/finish rendezvous under SharedState::mu and the reporter's atomic
// counter; each owns its Stats, generator and buffers.
//
// The flags are in kvbench_flags.h, the measurement in kvbench_stats.h.
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
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
#include "kvcore/include/write_batch.h"
#include "tools/kvbench_flags.h"
#include "tools/kvbench_stats.h"

namespace mxfs::kvbench {
namespace {

constexpr double kCompressionRatio = 0.5;  // db_bench's --compression_ratio default

// Writes key number v as described at the top of this file into key[0..size).
void GenerateKey(uint64_t v, char* key, size_t size) {
  const size_t fill = size < 8 ? size : 8;
  for (size_t i = 0; i < fill; i++) key[i] = static_cast<char>((v >> ((fill - i - 1) * 8)) & 0xff);
  if (size > fill) std::memset(key + fill, '0', size - fill);
}

// Printable, half-compressible value bytes (see the top of this file).
// Thread-safety: not thread-safe; one per benchmark thread.
class ValueGenerator {
 public:
  explicit ValueGenerator(size_t value_size) {
    Random rnd(301);
    const size_t total = value_size > (1u << 20) ? value_size : (1u << 20);
    data_.reserve(total + 100);
    std::string piece;
    while (data_.size() < total) {
      const size_t raw = static_cast<size_t>(100 * kCompressionRatio);
      piece.clear();
      for (size_t i = 0; i < raw; i++) piece.push_back(static_cast<char>(' ' + rnd.Uniform(95)));
      for (size_t i = 0; i < 100; i++) data_.push_back(piece[i % raw]);
    }
  }
  Slice Generate(size_t len) {
    if (pos_ + len > data_.size()) pos_ = 0;
    Slice s(data_.data() + pos_, len);
    pos_ += len;
    return s;
  }

 private:
  std::string data_;
  size_t pos_ = 0;
};

// Start/finish rendezvous of one benchmark's threads, as in db_bench: the
// threads start timing together once all are ready.
struct SharedState {
  std::mutex mu;
  std::condition_variable cv;
  int64_t total = 0;
  int64_t num_initialized = 0;
  int64_t num_done = 0;
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
  explicit Benchmark(const Flags& flags) : flags_(flags) {}

  // Runs every benchmark in --benchmarks; returns the process exit code.
  int Run();

 private:
  using Method = void (Benchmark::*)(ThreadState*);

  void PrintEnvironment();
  void PrintHeader();
  void Open();
  void Close();
  void RunBenchmark(std::string_view name, Method method);
  void PrintWriteEffects(const EngineCounters& before);
  void PrintStats();

  void WriteSeq(ThreadState* t) { DoWrite(t, /*sequential=*/true); }
  void WriteRandom(ThreadState* t) { DoWrite(t, /*sequential=*/false); }
  void DoWrite(ThreadState* t, bool sequential);
  void ReadRandom(ThreadState* t);
  void ReadSequential(ThreadState* t);
  void SeekRandom(ThreadState* t);
  void DeleteRandom(ThreadState* t);

  uint64_t Reads() const { return flags_.reads < 0 ? static_cast<uint64_t>(flags_.num) : static_cast<uint64_t>(flags_.reads); }
  ReadOptions MakeReadOptions() const {
    ReadOptions r;
    r.verify_checksums = flags_.verify_checksum;
    return r;
  }

  const Flags flags_;
  uint64_t seed_base_ = 0;
  uint64_t thread_counter_ = 0;
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
  o.nvm_path = flags_.nvm_path;
  o.nvm_size = flags_.nvm_size;
  o.container_share = flags_.container_share;
  o.column_compaction_threads = static_cast<int>(flags_.column_compaction_threads);
  o.pace_writers_to_container = flags_.container_pacing;
  o.min_blob_size = flags_.min_blob_size;
  o.blob_file_size = flags_.blob_file_size;
  o.blob_gc_garbage_ratio = flags_.blob_gc_garbage_ratio;
  o.use_cross_row_hints = flags_.use_hints;
  o.use_row_blooms = flags_.use_row_blooms;
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

int Benchmark::Run() {
  // Check the whole list before running anything.
  struct Step {
    std::string name;
    Method method;
    bool fresh_db;
    bool writes;
  };
  std::vector<Step> steps;
  std::string_view list = flags_.benchmarks;
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string name(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (name.empty()) continue;
    if (name == "fillseq") steps.push_back({name, &Benchmark::WriteSeq, true, true});
    else if (name == "fillrandom") steps.push_back({name, &Benchmark::WriteRandom, true, true});
    else if (name == "overwrite") steps.push_back({name, &Benchmark::WriteRandom, false, true});
    else if (name == "readrandom") steps.push_back({name, &Benchmark::ReadRandom, false, false});
    else if (name == "readseq") steps.push_back({name, &Benchmark::ReadSequential, false, false});
    else if (name == "seekrandom") steps.push_back({name, &Benchmark::SeekRandom, false, false});
    else if (name == "deleterandom") steps.push_back({name, &Benchmark::DeleteRandom, false, true});
    else if (name == "stats") steps.push_back({name, nullptr, false, false});
    else {
      Fail("--benchmarks: unknown benchmark '" + name +
           "' (supported: fillseq, fillrandom, overwrite, readrandom, readseq, seekrandom, deleterandom, stats)");
    }
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
    if (step.method == nullptr) {
      PrintStats();
      continue;
    }
    std::printf("DB path: [%s]\n", flags_.db.c_str());
    std::fflush(stdout);
    const EngineCounters before = ReadCounters(db_.get());
    RunBenchmark(step.name, step.method);
    if (step.writes) PrintWriteEffects(before);
  }
  Close();
  return 0;
}

void Benchmark::RunBenchmark(std::string_view name, Method method) {
  SharedState shared;
  shared.total = flags_.threads;
  std::unique_ptr<ReporterAgent> reporter;
  if (flags_.report_interval_seconds > 0) {
    auto r = ReporterAgent::Start(flags_.report_file, flags_.report_interval_seconds);
    if (!r) Fail(r.error().ToString());
    reporter = std::move(*r);
    shared.reporter = reporter.get();
  }
  std::vector<std::unique_ptr<ThreadState>> states;
  for (int64_t i = 0; i < flags_.threads; i++) {
    states.push_back(std::make_unique<ThreadState>(static_cast<int>(i), seed_base_ + ++thread_counter_));
    states.back()->shared = &shared;
  }
  std::vector<std::thread> threads;
  for (auto& st : states) {
    ThreadState* t = st.get();
    threads.emplace_back([this, t, method] {
      SharedState* sh = t->shared;
      {
        std::unique_lock<std::mutex> l(sh->mu);
        sh->num_initialized++;
        if (sh->num_initialized >= sh->total) sh->cv.notify_all();
        sh->cv.wait(l, [sh] { return sh->start; });
      }
      t->stats.Start(flags_.histogram);
      (this->*method)(t);
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
  for (size_t i = 1; i < states.size(); i++) states[0]->stats.Merge(states[i]->stats);
  states[0]->stats.Report(name);
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

void Benchmark::DoWrite(ThreadState* t, bool sequential) {
  const uint64_t num = static_cast<uint64_t>(flags_.num);
  const size_t key_size = static_cast<size_t>(flags_.key_size);
  const size_t value_size = static_cast<size_t>(flags_.value_size);
  ValueGenerator gen(value_size);
  std::string key(key_size, '\0');
  WriteBatch batch;
  WriteOptions wo;
  wo.sync = flags_.sync;
  for (uint64_t i = 0; i < num; i++) {
    const uint64_t k = sequential ? i : t->rand.Uniform(num);
    GenerateKey(k, key.data(), key_size);
    batch.Clear();
    batch.Put(key, gen.Generate(value_size));
    Status s = db_->Write(wo, &batch);
    if (!s.ok()) Fail("put error: key number " + std::to_string(k) + ": " + s.ToString());
    t->stats.AddBytes(key_size + value_size);
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kWrite);
  }
}

void Benchmark::ReadRandom(ThreadState* t) {
  const uint64_t num = static_cast<uint64_t>(flags_.num);
  const uint64_t reads = Reads();
  const size_t key_size = static_cast<size_t>(flags_.key_size);
  const ReadOptions ro = MakeReadOptions();
  std::string key(key_size, '\0');
  std::string value;
  uint64_t found = 0;
  for (uint64_t i = 0; i < reads; i++) {
    const uint64_t k = t->rand.Uniform(num);
    GenerateKey(k, key.data(), key_size);
    Status s = db_->Get(ro, key, &value);
    if (s.ok()) {
      found++;
      t->stats.AddBytes(key.size() + value.size());
    } else if (!s.IsNotFound()) {
      Fail("get error: key number " + std::to_string(k) + ": " + s.ToString());
    }
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kRead);
  }
  t->stats.AddMessage("(" + std::to_string(found) + " of " + std::to_string(reads) + " found)\n");
}

void Benchmark::ReadSequential(ThreadState* t) {
  const uint64_t reads = Reads();
  std::unique_ptr<Iterator> it = db_->NewIterator(MakeReadOptions());
  uint64_t i = 0;
  for (it->SeekToFirst(); i < reads && it->Valid(); it->Next()) {
    t->stats.AddBytes(it->key().size() + it->value().size());
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kRead);
    i++;
  }
  if (!it->status().ok()) Fail("iterator error: " + it->status().ToString());
}

void Benchmark::SeekRandom(ThreadState* t) {
  const uint64_t num = static_cast<uint64_t>(flags_.num);
  const uint64_t reads = Reads();
  const size_t key_size = static_cast<size_t>(flags_.key_size);
  std::unique_ptr<Iterator> it = db_->NewIterator(MakeReadOptions());
  std::string key(key_size, '\0');
  uint64_t found = 0;
  for (uint64_t i = 0; i < reads; i++) {
    const uint64_t k = t->rand.Uniform(num);
    GenerateKey(k, key.data(), key_size);
    it->Seek(key);
    if (it->Valid() && it->key() == Slice(key)) found++;
    for (int64_t j = 0; j < flags_.seek_nexts && it->Valid(); j++) {
      t->stats.AddBytes(it->key().size() + it->value().size());
      it->Next();
    }
    if (!it->status().ok()) Fail("iterator error: key number " + std::to_string(k) + ": " + it->status().ToString());
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kSeek);
  }
  t->stats.AddMessage("(" + std::to_string(found) + " of " + std::to_string(reads) + " found)\n");
}

void Benchmark::DeleteRandom(ThreadState* t) {
  const uint64_t num = static_cast<uint64_t>(flags_.num);
  const size_t key_size = static_cast<size_t>(flags_.key_size);
  std::string key(key_size, '\0');
  WriteBatch batch;
  WriteOptions wo;
  wo.sync = flags_.sync;
  for (uint64_t i = 0; i < num; i++) {
    const uint64_t k = t->rand.Uniform(num);
    GenerateKey(k, key.data(), key_size);
    batch.Clear();
    batch.Delete(key);
    Status s = db_->Write(wo, &batch);
    if (!s.ok()) Fail("del error: key number " + std::to_string(k) + ": " + s.ToString());
    t->stats.FinishedOps(t->shared->reporter, 1, OpType::kDelete);
  }
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
