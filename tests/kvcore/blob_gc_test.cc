// Blob garbage collection (kvcore/blob_store.h, VersionSet::FindGcInputs):
// a blob file whose garbage reaches Options.blob_gc_garbage_ratio leaves the
// tree even when no size compaction would ever rewrite the tables that
// point into it (a cold key range beside a rewritten hot one, or the last
// level), by a background GC compaction or by CompactRange. Each test runs
// with an SSD L0 and with an NVM pool, on a tree shaped so that the cold
// tables are never merged by size: small tables (long keys), three levels,
// and one large blob file holding hot and cold values side by side.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kvcore/filename.h"
#include "kvcore/include/db.h"
#include "kvcore/include/file_system.h"
#include "kvcore/log_reader.h"
#include "kvcore/log_writer.h"
#include "kvcore/version_edit.h"
#include "ssd/blob_file.h"
#include "tests/kvcore/db_test_util.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::TempDir;
using mxfs::testing::TempPool;
using mxfs::testing::OpenDb;
using mxfs::testing::Stat;
using mxfs::testing::WriteLine;

namespace {

using Model = std::map<std::string, std::string>;

constexpr int kCold = 20, kHot = 40;
constexpr size_t kValueSize = 3000;
constexpr double kRatio = 0.5;

Options GcOptions(const std::string& pool) {
  Options o;
  o.write_buffer_size = 256 << 10;  // the first load is one memtable
  o.target_file_size_base = 1024;  // a handful of keys per table
  o.max_bytes_for_level_base = 1 << 10;  // L1 spills into L2, the last level, at once
  o.level0_file_num_compaction_trigger = 2;
  o.num_levels = 3;
  o.block_size = 512;
  o.block_cache_size = 64 << 10;
  o.min_blob_size = 2048;
  o.blob_file_size = 1 << 20;  // the first load lands in one or two blob files
  o.blob_gc_garbage_ratio = kRatio;
  if (!pool.empty()) {
    // The container is L0 and L1's target is its size, so L1 never spills
    // here: make L1 the last level, where column compactions merge the hot
    // values. (Columns split the load by key range, so with a pool only the
    // blob file at the cold/hot boundary mixes both.)
    o.num_levels = 2;
    o.nvm_path = pool;
    o.nvm_size = 8 << 20;
    o.container_share = 0.02;  // a column compaction every generation or so
  }
  return o;
}

// Long keys: few index entries fit a 1 KiB table, so cold and hot keys sit
// in different tables. Cold keys sort before hot ones.
std::string Key(bool hot, int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%04d", hot ? "hot" : "cold", i);
  return std::string(buf) + std::string(80, '.');
}

std::string Value(const std::string& key, int gen) {
  std::string v = key.substr(0, 8) + "@" + std::to_string(gen) + ":";
  while (v.size() < kValueSize) v.push_back(static_cast<char>('a' + (v.size() * 13 + static_cast<size_t>(gen)) % 26));
  return v;
}

int NumLevels(DB* db) {
  std::string unused;
  return db->GetProperty("matrixkv.num-files-at-level2", &unused) ? 3 : 2;
}

void Put(DB* db, Model* model, const std::string& k, const std::string& v) {
  REQUIRE(db->Put(WriteOptions(), k, v).ok());
  (*model)[k] = v;
}

// The first load: cold and hot keys written together, so that their values
// share one blob file (one memtable, one compaction out of L0), and compacted into the last level (twice: with an SSD
// L0 the first CompactRange stops at L1).
void Load(DB* db, Model* model) {
  for (int i = 0; i < kHot; i++) {
    Put(db, model, Key(true, i), Value(Key(true, i), 0));
    if (i < kCold) Put(db, model, Key(false, i), Value(Key(false, i), 0));
  }
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  std::string levels;
  REQUIRE(db->GetProperty("matrixkv.levels", &levels));
  INFO(levels);
  std::string files;
  REQUIRE(db->GetProperty("matrixkv.num-files-at-level" + std::to_string(NumLevels(db) - 1), &files));
  REQUIRE(std::stoi(files) > 0);  // the last level holds the tables
}

void OverwriteHot(DB* db, Model* model, int gen) {
  for (int i = 0; i < kHot; i++) Put(db, model, Key(true, i), Value(Key(true, i), gen));
}

void CheckDb(DB* db, const Model& model) {
  for (const auto& [k, v] : model) {
    std::string got;
    Status s = db->Get(ReadOptions(), k, &got);
    INFO("Get " << k << ": " << s.ToString());
    REQUIRE(s.ok());
    REQUIRE(got == v);
  }
  auto it = db->NewIterator(ReadOptions());
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    REQUIRE(m != model.end());
    REQUIRE(it->key().ToString() == m->first);
    REQUIRE(it->value().ToString() == m->second);
  }
  REQUIRE(it->status().ok());
  REQUIRE(m == model.end());
}

struct BlobFileRow {
  uint64_t number = 0, records = 0, record_bytes = 0, garbage_records = 0, garbage_bytes = 0, file_size = 0;
  double ratio = 0;
};

// The "matrixkv.blob-files" property, parsed.
std::vector<BlobFileRow> BlobFileRows(DB* db) {
  std::string text;
  REQUIRE(db->GetProperty("matrixkv.blob-files", &text));
  std::istringstream in(text);
  std::string header;
  std::getline(in, header);
  std::vector<BlobFileRow> rows;
  BlobFileRow r;
  while (in >> r.number >> r.records >> r.record_bytes >> r.garbage_records >> r.garbage_bytes >> r.ratio >>
         r.file_size) {
    rows.push_back(r);
  }
  return rows;
}

// The .blob files in the directory: count and bytes.
std::pair<size_t, uint64_t> BlobFilesOnDisk(const std::string& path) {
  const auto files = mxfs::testing::FilesMatching(path, ".blob", false);
  uint64_t bytes = 0;
  for (const auto& f : files) bytes += std::filesystem::file_size(f);
  return {files.size(), bytes};
}

uint64_t LiveBytes(const Model& model) {
  uint64_t live = 0;
  for (const auto& [k, v] : model) live += BlobRecordSize(k.size(), v.size());
  return live;
}

// No live blob file is at or above the threshold, the directory holds
// exactly the live blob files, and their bytes stay within what the
// threshold allows: each file is more than half live, so all of them
// together hold less than twice the live bytes (plus headers and footers).
void CheckGarbageBounded(DB* db, const std::string& path, const Model& model) {
  const auto rows = BlobFileRows(db);
  uint64_t record_bytes = 0;
  for (const auto& r : rows) {
    INFO("blob file " << r.number << ": " << r.garbage_bytes << " of " << r.record_bytes << " bytes garbage");
    CHECK(static_cast<double>(r.garbage_bytes) < kRatio * static_cast<double>(r.record_bytes));
    record_bytes += r.record_bytes;
  }
  const auto [files, bytes] = BlobFilesOnDisk(path);
  CHECK(files == rows.size());
  const uint64_t live = LiveBytes(model);
  INFO(files << " blob files, " << bytes << " bytes on disk, " << live << " live bytes");
  CHECK(record_bytes < 2 * live);
  CHECK(bytes <= 2 * live + files * (kBlobHeaderSize + kBlobFooterSize));
}

}  // namespace

TEST_CASE("Blob GC: rewriting hot values leaves no blob file at the garbage threshold once background work is idle") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  const Options o = GcOptions(pool.path());
  Model model;
  auto db = OpenDb(o, path);
  Load(db.get(), &model);
  const auto first = BlobFileRows(db.get());
  REQUIRE_FALSE(first.empty());
  size_t max_files = 0;
  for (int gen = 1; gen <= 8; gen++) {
    INFO("generation " << gen);
    OverwriteHot(db.get(), &model, gen);
    REQUIRE(db->Flush().ok());
    REQUIRE(db->WaitForIdle().ok());
    CheckDb(db.get(), model);
    CheckGarbageBounded(db.get(), path, model);
    max_files = std::max(max_files, BlobFilesOnDisk(path).first);
    if (gen == 4) {  // a reopen in the middle: a MANIFEST snapshot with the tables' blob references
      REQUIRE(db->Close().ok());
      db = OpenDb(o, path);
      CheckDb(db.get(), model);
      REQUIRE(db->WaitForIdle().ok());
      CheckGarbageBounded(db.get(), path, model);
    }
  }
  if (!use_pool) {
    // The first load's file held hot and cold values: GC compactions
    // rewrote the cold tables that no size compaction reaches.
    for (const auto& r : first) {
      INFO("first-load blob file " << r.number);
      CHECK_FALSE(std::filesystem::exists(BlobFileName(path, r.number)));
    }
    CHECK(Stat(db.get(), "blob.gc.compactions") > 0);
  }
  // The file count does not grow with the number of generations: every live
  // file holds at least one live record, and the rewritten hot values of a
  // generation go to few files.
  CHECK(max_files <= static_cast<size_t>(kCold + kHot) / 4);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob GC: CompactRange over the whole key space rewrites last-level tables of blob files at the threshold") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  const Options o = GcOptions(pool.path());
  Model model;
  auto db = OpenDb(o, path);
  Load(db.get(), &model);
  const auto first = BlobFileRows(db.get());
  REQUIRE_FALSE(first.empty());
  OverwriteHot(db.get(), &model, 1);
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  // No waiting: CompactRange itself rewrote the cold last-level tables.
  CheckDb(db.get(), model);
  for (const auto& r : BlobFileRows(db.get())) {
    INFO("blob file " << r.number << ": " << r.garbage_bytes << " of " << r.record_bytes << " bytes garbage");
    CHECK(static_cast<double>(r.garbage_bytes) < kRatio * static_cast<double>(r.record_bytes));
  }
  for (const auto& r : first) {
    INFO("first-load blob file " << r.number);
    CHECK_FALSE(std::filesystem::exists(BlobFileName(path, r.number)));
  }
  REQUIRE(db->Close().ok());
  db = OpenDb(o, path);
  CheckDb(db.get(), model);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob GC: a MANIFEST without blob references (older format) opens, and its tables are collected") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Options o = GcOptions("");
  o.blob_gc_garbage_ratio = 1.0;  // no collection yet: garbage stays
  Model model;
  {
    auto db = OpenDb(o, path);
    Load(db.get(), &model);
    OverwriteHot(db.get(), &model, 1);
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    bool over = false;
    for (const auto& r : BlobFileRows(db.get())) {
      over = over || static_cast<double>(r.garbage_bytes) >= kRatio * static_cast<double>(r.record_bytes);
    }
    REQUIRE(over);
    REQUIRE(db->Close().ok());
  }
  // Rewrite the MANIFEST as an engine without tag 11 wrote it: every table
  // as a plain new-file field (tag 7).
  FileSystem* fs = DefaultFileSystem();
  const std::string current = mxfs::testing::ReadAll(path + "/CURRENT");
  REQUIRE(current.size() > 1);
  const std::string old_manifest = path + "/" + current.substr(0, current.size() - 1);
  size_t tables = 0;
  {
    auto in = fs->NewSequentialFile(old_manifest);
    REQUIRE(in.has_value());
    LogReader reader(std::move(*in));
    auto out = fs->NewWritableFile(ManifestFileName(path, 900000));
    REQUIRE(out.has_value());
    LogWriter writer(std::move(*out));
    Slice record;
    std::string scratch;
    while (reader.ReadRecord(&record, &scratch)) {
      VersionEdit e;
      REQUIRE(e.DecodeFrom(record).ok());
      VersionEdit old;
      if (e.comparator()) old.SetComparatorName(*e.comparator());
      if (e.log_number()) old.SetLogNumber(*e.log_number());
      if (e.next_file_number()) old.SetNextFile(*e.next_file_number());
      if (e.last_sequence()) old.SetLastSequence(*e.last_sequence());
      if (e.level0_state()) old.SetLevel0State(*e.level0_state());
      for (const auto& [level, key] : e.compact_pointers()) old.SetCompactPointer(level, key);
      for (const auto& [level, number] : e.deleted_files()) old.RemoveFile(level, number);
      for (const auto& [level, f] : e.new_files()) {
        CHECK(f.blob_refs_known);  // this engine wrote it
        FileMetaData g = f;
        g.blob_refs.clear();
        g.blob_refs_known = false;
        old.AddFile(level, g);
        tables++;
      }
      for (const BlobFileMeta& b : e.new_blob_files()) old.AddBlobFile(b);
      for (const auto& [number, g] : e.blob_garbage()) old.AddBlobGarbage(number, g);
      std::string enc;
      old.EncodeTo(&enc);
      VersionEdit check;
      REQUIRE(check.DecodeFrom(enc).ok());
      for (const auto& [level, f] : check.new_files()) CHECK_FALSE(f.blob_refs_known);
      REQUIRE(writer.AddRecord(enc, false).ok());
    }
    REQUIRE(reader.status().ok());
    REQUIRE(writer.Close().ok());
  }
  REQUIRE(tables > 0);
  mxfs::testing::WriteAll(path + "/CURRENT", "MANIFEST-900000\n");

  SECTION("with collection off it opens and reads as before") {
    auto db = OpenDb(o, path);
    CheckDb(db.get(), model);
    REQUIRE(db->Close().ok());
  }
  SECTION("with collection on, the tables of unknown references are rewritten until no file is at the threshold") {
    o.blob_gc_garbage_ratio = kRatio;
    auto db = OpenDb(o, path);
    CheckDb(db.get(), model);
    REQUIRE(db->WaitForIdle().ok());
    CheckDb(db.get(), model);
    CheckGarbageBounded(db.get(), path, model);
    REQUIRE(db->Close().ok());
    db = OpenDb(o, path);
    CheckDb(db.get(), model);
    REQUIRE(db->Close().ok());
  }
}

namespace {

// The child of the crash test: loads, rewrites the hot keys (each write
// acknowledged on fd as "A <key> <gen>" once it returned), then waits for
// the background GC compaction, which dies at kill_at.
[[noreturn]] void GcCrashChild(const Options& o, const std::string& path, const std::string& kill_at, int fd) {
  ::setenv("MXFS_KILL_AT", kill_at.c_str(), 1);
  auto db = DB::Open(o, path);
  if (!db) {
    WriteLine(fd, "E " + db.error().ToString() + "\n");
    _exit(2);
  }
  WriteOptions wo;
  wo.sync = true;
  auto put = [&](const std::string& k, int gen) {
    WriteLine(fd, "I " + k + " " + std::to_string(gen) + "\n");
    if (!(*db)->Put(wo, k, Value(k, gen)).ok()) _exit(2);
    WriteLine(fd, "A\n");
  };
  for (int i = 0; i < kHot; i++) {
    put(Key(true, i), 0);
    if (i < kCold) put(Key(false, i), 0);
  }
  (*db)->CompactRange(nullptr, nullptr).IgnoreError();
  (*db)->CompactRange(nullptr, nullptr).IgnoreError();
  for (int gen = 1; gen <= 4; gen++) {
    for (int i = 0; i < kHot; i++) put(Key(true, i), gen);
    (*db)->Flush().IgnoreError();
    (*db)->WaitForIdle().IgnoreError();
  }
  _exit(5);
}

}  // namespace

TEST_CASE("Blob GC: dying before or after a GC compaction's MANIFEST edit loses nothing and leaves no orphan") {
  const bool use_pool = GENERATE(false, true);
  const std::string kill_at = GENERATE(as<std::string>{}, "kvcore.blob.gc_before_manifest",
                                       "kvcore.blob.gc_after_manifest");
  INFO((use_pool ? "pool" : "SSD L0") << ", kill point " << kill_at);
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  const Options o = GcOptions(pool.path());
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    mxfs::testing::RunInFreshThread([&] { GcCrashChild(o, path, kill_at, fds[1]); });
    _exit(4);
  }
  ::close(fds[1]);
  std::string buf;
  char chunk[8192];
  ssize_t n;
  while ((n = ::read(fds[0], chunk, sizeof(chunk))) > 0) buf.append(chunk, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("child exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  REQUIRE(WIFSIGNALED(status));  // the GC compaction ran and reached the kill point
  REQUIRE(WTERMSIG(status) == SIGKILL);

  Model model;
  std::optional<std::pair<std::string, int>> in_flight;
  std::istringstream in(buf);
  std::string line;
  while (std::getline(in, line)) {
    REQUIRE(line[0] != 'E');
    if (line[0] == 'I') {
      const size_t sp = line.rfind(' ');
      in_flight = {line.substr(2, sp - 2), std::stoi(line.substr(sp + 1))};
    } else if (line == "A") {
      REQUIRE(in_flight.has_value());
      model[in_flight->first] = Value(in_flight->first, in_flight->second);
      in_flight.reset();
    }
  }
  REQUIRE(model.size() == static_cast<size_t>(kCold + kHot));
  auto db = OpenDb(o, path);
  if (in_flight) {  // the write in flight may or may not have landed
    std::string v;
    REQUIRE(db->Get(ReadOptions(), in_flight->first, &v).ok());
    if (v == Value(in_flight->first, in_flight->second)) model[in_flight->first] = v;
  }
  CheckDb(db.get(), model);
  // The collection the child did not finish happens now.
  REQUIRE(db->WaitForIdle().ok());
  CheckDb(db.get(), model);
  CheckGarbageBounded(db.get(), path, model);
  REQUIRE(db->Close().ok());
}
