// blob-gc-bench: how much blob-file space a rewrite-heavy workload leaves
// behind, with and without garbage-triggered compactions
// (Options.blob_gc_compactions).
//
// The workload models a build cache on MatrixFS: --num large values (file
// data blocks) are written in random order, so that every blob file mixes
// keys from the whole key space; then the first --hot share of the key
// space (a contiguous range, like one directory tree) is rewritten --rounds
// times. The rest is never written again, so size compactions never reach
// its tables. After the fill, after the rounds and after a full
// CompactRange (each time once background work is idle) it prints one
// line: .blob files and their bytes on disk, space amplification (disk
// bytes / live value bytes), garbage bytes, live files at or above the
// garbage threshold and the largest ratio, GC compactions and the bytes
// compactions wrote; --verbose=1 adds the levels and every blob file.
// Every value is read back at the end. Results: BENCHMARKS.md.
//
// Thread-safety: a single-threaded program.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "base/cli_util.h"
#include "base/random.h"
#include "kvcore/include/db.h"

namespace {

struct Flags {
  std::string db;
  int64_t num = 20000;
  int64_t value_size = 4096;
  double hot = 0.5;
  int64_t rounds = 10;
  bool gc = true;
  double ratio = 0.5;
  int64_t write_buffer_size = 4 << 20;
  int64_t target_file_size_base = 64 << 10;
  int64_t max_bytes_for_level_base = 1 << 20;
  int64_t blob_file_size = 8 << 20;
  int64_t num_levels = 3;
  std::string nvm_path;
  int64_t nvm_size = 0;
  bool verbose = false;
};

[[noreturn]] void Fail(const std::string& msg) {
  std::fprintf(stderr, "blob-gc-bench: %s\n", msg.c_str());
  std::exit(1);
}

const mxfs::Cli kCli("blob-gc-bench",
               "usage: blob-gc-bench [--db=DIR] [--num=N] [--value_size=B] [--hot=F] [--rounds=M] [--gc=0|1]\n"
               "                     [--ratio=R] [--write_buffer_size=B] [--target_file_size_base=B]\n"
               "                     [--max_bytes_for_level_base=B] [--blob_file_size=B] [--num_levels=L]\n"
               "                     [--nvm_path=P --nvm_size=B] [--verbose=1]\n"
               "       blob-gc-bench -h|--help\n");

Flags ParseFlags(int argc, char** argv) {
  kCli.HelpIfAsked(argc, argv);
  Flags f;
  kCli.ForEachFlag(argc, argv, [&](const std::string& name, const std::string& v) {
    auto num = [&](int64_t* dst) { *dst = kCli.IntFlag(name, v, 0); };
    auto real = [&](double* dst) { *dst = kCli.RealFlag(name, v); };
    if (name == "db") f.db = v;
    else if (name == "num") num(&f.num);
    else if (name == "value_size") num(&f.value_size);
    else if (name == "hot") real(&f.hot);
    else if (name == "rounds") num(&f.rounds);
    else if (name == "gc") f.gc = v != "0";
    else if (name == "ratio") real(&f.ratio);
    else if (name == "write_buffer_size") num(&f.write_buffer_size);
    else if (name == "target_file_size_base") num(&f.target_file_size_base);
    else if (name == "max_bytes_for_level_base") num(&f.max_bytes_for_level_base);
    else if (name == "blob_file_size") num(&f.blob_file_size);
    else if (name == "num_levels") num(&f.num_levels);
    else if (name == "nvm_path") f.nvm_path = v;
    else if (name == "nvm_size") num(&f.nvm_size);
    else if (name == "verbose") f.verbose = v != "0";
    else return false;
    return true;
  });
  if (f.num < 1 || f.hot <= 0 || f.hot > 1) kCli.Fail("--num must be >= 1 and --hot in (0, 1]");
  return f;
}

std::string Key(int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "k%010lld", static_cast<long long>(i));
  return buf;
}

std::string Value(int64_t i, int64_t gen, size_t size) {
  std::string v = Key(i) + "@" + std::to_string(gen) + ":";
  while (v.size() < size) v.push_back(static_cast<char>('a' + (v.size() * 31 + static_cast<size_t>(i + gen)) % 26));
  v.resize(size);
  return v;
}

uint64_t Stat(mxfs::DB* db, const std::string& name) {
  std::string stats;
  if (!db->GetProperty("matrixkv.stats", &stats)) Fail("no matrixkv.stats");
  const std::string needle = "\n" + name + " ";
  const size_t at = ("\n" + stats).find(needle);
  if (at == std::string::npos) Fail("matrixkv.stats has no " + name);
  return std::strtoull(stats.c_str() + at + needle.size() - 1, nullptr, 10);
}

// Live blob files whose garbage reached ratio, and the largest garbage
// ratio of any (from "matrixkv.blob-files").
std::pair<uint64_t, double> OverThreshold(mxfs::DB* db, double ratio) {
  std::string text;
  if (!db->GetProperty("matrixkv.blob-files", &text)) Fail("no matrixkv.blob-files");
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  uint64_t number, records, record_bytes, garbage_records, garbage_bytes, file_size;
  double shown_ratio;
  uint64_t over = 0;
  double max_ratio = 0;
  while (in >> number >> records >> record_bytes >> garbage_records >> garbage_bytes >> shown_ratio >> file_size) {
    const double r = record_bytes == 0 ? 1.0 : static_cast<double>(garbage_bytes) / static_cast<double>(record_bytes);
    if (r >= ratio) over++;
    max_ratio = std::max(max_ratio, r);
  }
  return {over, max_ratio};
}

void Report(mxfs::DB* db, const std::string& dir, const char* when, uint64_t live, double ratio, double secs) {
  const auto [over, max_ratio] = OverThreshold(db, ratio);
  uint64_t files = 0, bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".blob") {
      files++;
      bytes += e.file_size();
    }
  }
  std::printf("%-13s blob_files %3llu  blob_bytes %10llu  space_amp %.2f  garbage_bytes %10llu  "
              "files_at_threshold %2llu  max_garbage_ratio %.2f  gc_compactions %3llu  compaction_bytes_written %10llu  "
              "secs %.1f\n",
              when, static_cast<unsigned long long>(files), static_cast<unsigned long long>(bytes),
              static_cast<double>(bytes) / static_cast<double>(live),
              static_cast<unsigned long long>(Stat(db, "blob.garbage.bytes")), static_cast<unsigned long long>(over),
              max_ratio,
              static_cast<unsigned long long>(Stat(db, "blob.gc.compactions")),
              static_cast<unsigned long long>(Stat(db, "compaction.bytes.written")), secs);
  std::fflush(stdout);
}

void Dump(mxfs::DB* db) {
  for (const char* p : {"matrixkv.levels", "matrixkv.blob-files"}) {
    std::string text;
    if (db->GetProperty(p, &text)) std::printf("%s", text.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  std::string dir = f.db;
  bool remove_dir = false;
  if (dir.empty()) {
    char tmpl[] = "/tmp/blob-gc-bench-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) Fail(std::string("mkdtemp: ") + std::strerror(errno));
    dir = tmpl;
    remove_dir = true;
  }
  const std::string path = dir + "/db";
  mxfs::Options o;
  o.write_buffer_size = static_cast<size_t>(f.write_buffer_size);
  o.target_file_size_base = static_cast<uint64_t>(f.target_file_size_base);
  o.max_bytes_for_level_base = static_cast<uint64_t>(f.max_bytes_for_level_base);
  o.blob_file_size = static_cast<uint64_t>(f.blob_file_size);
  o.num_levels = static_cast<int>(f.num_levels);
  o.blob_gc_garbage_ratio = f.ratio;
  o.blob_gc_compactions = f.gc;
  o.error_if_exists = true;
  if (!f.nvm_path.empty()) {
    o.nvm_path = f.nvm_path;
    o.nvm_size = static_cast<uint64_t>(f.nvm_size);
  }
  auto opened = mxfs::DB::Open(o, path);
  if (!opened) Fail("open " + path + ": " + opened.error().ToString());
  std::unique_ptr<mxfs::DB> db = std::move(*opened);
  const size_t vsize = static_cast<size_t>(f.value_size);
  const int64_t hot = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(f.num) * f.hot));
  const uint64_t live = static_cast<uint64_t>(f.num) * vsize;
  std::printf("blob-gc-bench: num %lld, value_size %zu (live bytes %llu), hot keys %lld, rounds %lld, gc %s, "
              "ratio %.2f, db %s\n",
              static_cast<long long>(f.num), vsize, static_cast<unsigned long long>(live), static_cast<long long>(hot), static_cast<long long>(f.rounds),
              f.gc ? "on" : "off", f.ratio, path.c_str());
  auto check = [](const mxfs::Status& s, const char* what) {
    if (!s.ok()) Fail(std::string(what) + ": " + s.ToString());
  };
  const auto start = std::chrono::steady_clock::now();
  auto secs = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Fill in random order (a shuffled permutation), so every blob file mixes
  // hot and cold keys.
  std::vector<int64_t> order(static_cast<size_t>(f.num));
  for (int64_t i = 0; i < f.num; i++) order[static_cast<size_t>(i)] = i;
  mxfs::Random rnd(301);
  for (size_t i = order.size(); i > 1; i--) std::swap(order[i - 1], order[rnd.Uniform(static_cast<uint32_t>(i))]);
  std::vector<int64_t> gen(static_cast<size_t>(f.num), 0);
  for (int64_t i : order) check(db->Put(mxfs::WriteOptions(), Key(i), Value(i, 0, vsize)), "fill");
  // Background compactions separate the values, each its own inputs' in key
  // order (a CompactRange here would separate them all at once, in key
  // order, and so not mix hot and cold).
  check(db->Flush(), "flush");
  check(db->WaitForIdle(), "wait");
  Report(db.get(), path, "after-fill", live, f.ratio, secs());
  if (f.verbose) Dump(db.get());
  std::vector<int64_t> hot_order(static_cast<size_t>(hot));
  for (int64_t i = 0; i < hot; i++) hot_order[static_cast<size_t>(i)] = i;
  for (int64_t r = 1; r <= f.rounds; r++) {
    for (size_t i = hot_order.size(); i > 1; i--) {
      std::swap(hot_order[i - 1], hot_order[rnd.Uniform(static_cast<uint32_t>(i))]);
    }
    for (int64_t i : hot_order) {
      gen[static_cast<size_t>(i)] = r;
      check(db->Put(mxfs::WriteOptions(), Key(i), Value(i, r, vsize)), "overwrite");
    }
  }
  check(db->Flush(), "flush");
  check(db->WaitForIdle(), "wait");
  Report(db.get(), path, "after-rounds", live, f.ratio, secs());
  if (f.verbose) Dump(db.get());
  check(db->CompactRange(nullptr, nullptr), "compact");
  check(db->WaitForIdle(), "wait");
  Report(db.get(), path, "after-compact", live, f.ratio, secs());
  if (f.verbose) Dump(db.get());
  std::string v;
  for (int64_t i = 0; i < f.num; i++) {
    check(db->Get(mxfs::ReadOptions(), Key(i), &v), "read back");
    if (v != Value(i, gen[static_cast<size_t>(i)], vsize)) Fail("wrong value for " + Key(i));
  }
  std::printf("read back %lld values: all correct\n", static_cast<long long>(f.num));
  check(db->Close(), "close");
  db.reset();
  if (remove_dir) std::filesystem::remove_all(dir);
  return 0;
}
