// Key-value separation (kvcore/blob_store.h): values of min_blob_size bytes
// and more leave the SSTables for blob files at their first compaction out
// of L0. These tests check that every read path returns exactly what was
// written (against a std::map model), that snapshots, garbage counting,
// relocation and file deletion keep the space accounting exact, and that
// the MANIFEST, crashes and I/O faults leave nothing lost or orphaned. Each
// runs with an SSD L0 and with an NVM pool (matrix container as L0), with
// small buffers so that compactions happen within a few writes.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <thread>

#include "base/coding.h"
#include "base/random.h"
#include "kvcore/filename.h"
#include "kvcore/include/db.h"
#include "kvcore/include/file_system.h"
#include "kvcore/log_reader.h"
#include "kvcore/log_writer.h"
#include "kvcore/version_edit.h"
#include "ssd/blob_file.h"
#include "ssd/fault_injection_fs.h"
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

// Small everything: a 16 KiB memtable, 8 KiB tables, 32 KiB blob files.
Options BlobOptions(const std::string& pool) {
  Options o;
  o.write_buffer_size = 16 << 10;
  o.target_file_size_base = 8 << 10;
  o.max_bytes_for_level_base = 32 << 10;
  o.max_bytes_for_level_multiplier = 4;
  o.level0_file_num_compaction_trigger = 2;
  o.num_levels = 4;
  o.block_size = 512;
  o.block_cache_size = 64 << 10;
  o.min_blob_size = 2048;
  o.blob_file_size = 32 << 10;
  if (!pool.empty()) {
    o.nvm_path = pool;
    o.nvm_size = 8 << 20;
    o.container_share = 0.1;
  }
  return o;
}

std::string Key(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "key%05d", i);
  return buf;
}

// A value of exactly size bytes that names its key and generation.
std::string Value(int key, int gen, size_t size) {
  std::string v = "v" + std::to_string(key) + "." + std::to_string(gen) + ":";
  while (v.size() < size) v.push_back(static_cast<char>('a' + (v.size() * 7 + static_cast<size_t>(key + gen)) % 26));
  v.resize(size);
  return v;
}

std::vector<std::string> BlobFiles(const std::string& path) {
  return mxfs::testing::FilesMatching(path, ".blob", false);
}

// Every key by Get, a full forward and backward scan, and Seeks, against
// the model (read at snapshot snap when given).
void CheckDb(DB* db, const Model& model, const Snapshot* snap = nullptr) {
  ReadOptions ro;
  ro.snapshot = snap;
  for (const auto& [k, v] : model) {
    std::string got;
    Status s = db->Get(ro, k, &got);
    INFO("Get " << k << ": " << s.ToString());
    REQUIRE(s.ok());
    REQUIRE(got.size() == v.size());
    REQUIRE(got == v);
  }
  auto it = db->NewIterator(ro);
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    REQUIRE(m != model.end());
    REQUIRE(it->key().ToString() == m->first);
    REQUIRE(it->value().ToString() == m->second);
  }
  INFO(it->status().ToString());
  REQUIRE(it->status().ok());
  REQUIRE(m == model.end());
  auto r = model.rbegin();
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) {
    REQUIRE(r != model.rend());
    REQUIRE(it->key().ToString() == r->first);
    REQUIRE(it->value().ToString() == r->second);
  }
  REQUIRE(it->status().ok());
  REQUIRE(r == model.rend());
  // Seek to every 7th key and one past it, then step both ways.
  int n = 0;
  for (auto p = model.begin(); p != model.end(); ++p, ++n) {
    if (n % 7 != 0) continue;
    it->Seek(p->first);
    REQUIRE(it->Valid());
    REQUIRE(it->key().ToString() == p->first);
    REQUIRE(it->value().ToString() == p->second);
    it->Next();
    auto q = std::next(p);
    if (q == model.end()) {
      REQUIRE_FALSE(it->Valid());
      continue;
    }
    REQUIRE(it->Valid());
    REQUIRE(it->value().ToString() == q->second);
    it->Prev();
    REQUIRE(it->Valid());
    REQUIRE(it->key().ToString() == p->first);
    REQUIRE(it->value().ToString() == p->second);
    it->Seek(p->first + "\x01");  // between p and q
    REQUIRE(it->Valid());
    REQUIRE(it->key().ToString() == q->first);
    REQUIRE(it->value().ToString() == q->second);
  }
  REQUIRE(it->status().ok());
}

// After compactions settled: every .blob file in the directory is live.
void CheckNoOrphanBlobs(DB* db, const std::string& path) {
  const auto files = BlobFiles(path);
  INFO(files.size() << " .blob files in " << path);
  CHECK(files.size() == Stat(db, "blob.files"));
}

}  // namespace

TEST_CASE("Blob: values below, at and above min_blob_size read back exactly after flushes, compactions and reopen") {
  const bool use_pool = GENERATE(false, true);
  const uint64_t min_blob = GENERATE(uint64_t{2048}, uint64_t{0});
  INFO((use_pool ? "pool" : "SSD L0") << ", min_blob_size " << min_blob);
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  o.min_blob_size = min_blob;
  const size_t sizes[] = {0, 10, 2047, 2048, 2049, 3000, 9000};
  Model model;
  {
    auto db = OpenDb(o, path);
    for (int gen = 0; gen < 3; gen++) {
      for (int i = 0; i < 140; i++) {
        const int k = (i * 37 + gen * 11) % 200;
        const size_t size = sizes[static_cast<size_t>(k + gen) % std::size(sizes)];
        const std::string v = Value(k, gen, size);
        REQUIRE(db->Put(WriteOptions(), Key(k), v).ok());
        model[Key(k)] = v;
        if (i % 29 == 28) {
          REQUIRE(db->Delete(WriteOptions(), Key(k + 1)).ok());
          model.erase(Key(k + 1));
        }
      }
      CheckDb(db.get(), model);  // memtable, container or L0, partly compacted
      REQUIRE(db->Flush().ok());
      CheckDb(db.get(), model);
      REQUIRE(db->CompactRange(nullptr, nullptr).ok());
      CheckDb(db.get(), model);
    }
    if (min_blob == 0) {
      CHECK(Stat(db.get(), "blob.files") == 0);
      CHECK(Stat(db.get(), "blob.files.written") == 0);
      CHECK(BlobFiles(path).empty());
    } else {
      CHECK(Stat(db.get(), "blob.files") > 0);
      CHECK(Stat(db.get(), "blob.bytes") > 0);
      CheckNoOrphanBlobs(db.get(), path);
    }
    REQUIRE(db->Close().ok());
  }
  auto db = OpenDb(o, path);
  CheckDb(db.get(), model);
  if (min_blob != 0) CheckNoOrphanBlobs(db.get(), path);
  // A reopen with separation off still reads the separated values.
  REQUIRE(db->Close().ok());
  db.reset();
  o.min_blob_size = 0;
  db = OpenDb(o, path);
  CheckDb(db.get(), model);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob: tables keep their blocks of blob indexes outside the block cache, within pinned_blob_index_bytes") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  Model model;
  {
    auto db = OpenDb(o, path);
    for (int i = 0; i < 200; i++) {
      const std::string v = Value(i, 0, 3000);
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
      if (i % 17 == 16) {
        REQUIRE(db->Delete(WriteOptions(), Key(i - 3)).ok());
        model.erase(Key(i - 3));
      }
    }
    REQUIRE(db->Flush().ok());
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    CheckDb(db.get(), model);
    CheckDb(db.get(), model);  // now from the kept blocks
    const uint64_t kept = Stat(db.get(), "table.pinned.bytes");
    CHECK(kept > 0);
    CHECK(kept <= o.pinned_blob_index_bytes);
    // Overwrites and compactions replace the tables: the closed ones give
    // their bytes back.
    for (int i = 0; i < 200; i += 2) {
      if (model.count(Key(i)) == 0) continue;
      const std::string v = Value(i, 1, 2500);
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->Flush().ok());
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    CheckDb(db.get(), model);
    CheckDb(db.get(), model);
    CHECK(Stat(db.get(), "table.pinned.bytes") <= o.pinned_blob_index_bytes);
    REQUIRE(db->Close().ok());
  }
  // A budget of one block keeps at most that; 0 keeps nothing. Same answers.
  o.pinned_blob_index_bytes = 700;
  {
    auto db = OpenDb(o, path);
    CheckDb(db.get(), model);
    CheckDb(db.get(), model);
    CHECK(Stat(db.get(), "table.pinned.bytes") <= 700);
    REQUIRE(db->Close().ok());
  }
  o.pinned_blob_index_bytes = 0;
  auto db = OpenDb(o, path);
  CheckDb(db.get(), model);
  std::string stats;
  REQUIRE(db->GetProperty("matrixkv.stats", &stats));
  CHECK(stats.find("table.pinned.bytes") == std::string::npos);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob: an old snapshot keeps its overwritten big values across compactions; releasing it frees the space") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  o.blob_gc_garbage_ratio = 0.25;
  // Each full CompactRange moves the data one level down and never rewrites
  // the last level: seven levels leave room for the six below.
  o.num_levels = 7;
  auto db = OpenDb(o, path);
  Model old_model, model;
  for (int i = 0; i < 60; i++) {
    const std::string v = Value(i, 0, 3000);
    REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
    old_model[Key(i)] = v;
  }
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  const std::vector<std::string> first_files = BlobFiles(path);
  REQUIRE_FALSE(first_files.empty());
  const Snapshot* snap = db->GetSnapshot();
  model = old_model;
  for (int gen = 1; gen <= 3; gen++) {
    for (int i = 0; i < 60; i++) {
      if (i % 5 == 4) {
        REQUIRE(db->Delete(WriteOptions(), Key(i)).ok());
        model.erase(Key(i));
        continue;
      }
      const std::string v = Value(i, gen, 2500 + static_cast<size_t>(gen));
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    CheckDb(db.get(), old_model, snap);
    CheckDb(db.get(), model);
  }
  // Everything the snapshot sees is still referenced: its files are all there.
  for (const auto& f : first_files) {
    INFO(f);
    CHECK(std::filesystem::exists(f));
  }
  const uint64_t bytes_pinned = Stat(db.get(), "blob.bytes");
  db->ReleaseSnapshot(snap);
  // The old versions are dropped when a compaction next merges them with
  // newer entries (CompactRange never rewrites the last level on its own):
  // overwrite a few keys across the range, twice, so that the second round
  // also relocates what the first left behind.
  for (int gen = 4; gen <= 5; gen++) {
    for (int i = 0; i < 60; i += 10) {
      const std::string v = Value(i, gen, 2500 + static_cast<size_t>(gen));
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    CheckDb(db.get(), model);
  }
  for (const auto& f : first_files) {
    INFO(f);
    CHECK_FALSE(std::filesystem::exists(f));
  }
  uint64_t live = 0;
  for (const auto& [k, v] : model) live += BlobRecordSize(k.size(), v.size());
  INFO("pinned " << bytes_pinned << " live " << live);
  CHECK(Stat(db.get(), "blob.bytes") < bytes_pinned);
  CHECK(Stat(db.get(), "blob.bytes") - Stat(db.get(), "blob.garbage.bytes") == live);
  CheckNoOrphanBlobs(db.get(), path);
  REQUIRE(db->Close().ok());
  db = OpenDb(o, path);
  CheckDb(db.get(), model);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob: overwrites make garbage, compactions relocate live values and delete fully-garbage files") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  o.blob_gc_garbage_ratio = 1.0;  // first without relocation: garbage only grows
  Model model;
  // Overwrites a third of the keys (the same ones every time) and compacts.
  auto overwrite = [&](DB* db, int gen) {
    for (int i = 0; i < 80; i += 3) {
      const std::string v = Value(i, gen, 2100 + static_cast<size_t>(gen));
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    CheckDb(db, model);
    CheckNoOrphanBlobs(db, path);
    CHECK(Stat(db, "blob.garbage.bytes") <= Stat(db, "blob.bytes"));
  };
  auto live_bytes = [&] {
    uint64_t live = 0;
    for (const auto& [k, v] : model) live += BlobRecordSize(k.size(), v.size());
    return live;
  };
  std::vector<std::string> first_files;
  {
    auto db = OpenDb(o, path);
    for (int i = 0; i < 80; i++) {
      const std::string v = Value(i, 0, 2048 + static_cast<size_t>(i) * 13);
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    CHECK(Stat(db.get(), "blob.garbage.bytes") == 0);
    first_files = BlobFiles(path);
    // (A file whose records all became garbage leaves the count with it.)
    for (int gen = 1; gen <= 2; gen++) {
      overwrite(db.get(), gen);
      INFO("generation " << gen);
      CHECK(Stat(db.get(), "blob.garbage.bytes") > 0);
    }
    CHECK(Stat(db.get(), "blob.bytes.relocated") == 0);
    // Every separated value is either live or counted as garbage.
    CHECK(Stat(db.get(), "blob.bytes") - Stat(db.get(), "blob.garbage.bytes") == live_bytes());
    REQUIRE(db->Close().ok());
  }
  o.blob_gc_garbage_ratio = 0.2;
  {
    auto db = OpenDb(o, path);
    CheckDb(db.get(), model);
    for (int gen = 3; gen <= 4; gen++) overwrite(db.get(), gen);
    CHECK(Stat(db.get(), "blob.bytes.relocated") > 0);
    CHECK(Stat(db.get(), "blob.bytes") - Stat(db.get(), "blob.garbage.bytes") == live_bytes());
    // First-generation files that lost records to overwrites had the rest
    // relocated and are gone from disk (files holding only keys never
    // overwritten have no garbage and stay).
    int gone = 0;
    for (const auto& f : first_files) gone += std::filesystem::exists(f) ? 0 : 1;
    CHECK(gone > 0);
    REQUIRE(db->Close().ok());
  }
  {
    auto db = OpenDb(o, path);
    CheckDb(db.get(), model);
    CheckNoOrphanBlobs(db.get(), path);
    // Delete everything: a full compaction leaves no blob file behind.
    for (const auto& [k, v] : model) REQUIRE(db->Delete(WriteOptions(), k).ok());
    model.clear();
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    CheckDb(db.get(), model);
    CHECK(Stat(db.get(), "blob.files") == 0);
    CHECK(Stat(db.get(), "blob.bytes") == 0);
    CHECK(BlobFiles(path).empty());
    REQUIRE(db->Close().ok());
  }
  auto db = OpenDb(o, path);
  CHECK(BlobFiles(path).empty());
  CheckDb(db.get(), model);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob: values that left L0 by a trivial move stay inline until a compaction merges them") {
  // A trivial move rewrites nothing, so an L0 table's big values reach L1
  // and below inline; the first compaction that merges them separates them
  // (never later than that: no value is rewritten twice). Seven levels, so
  // that no table reaches the last level, which CompactRange never merges.
  // With slow MANIFEST syncs an automatic trivial move is still being
  // logged when CompactRange starts, and would be free to move tables below
  // the deepest level CompactRange reads between its steps, if
  // CompactRange let automatic compactions run meanwhile.
  const bool slow_manifest = GENERATE(false, true);
  INFO((slow_manifest ? "MANIFEST syncs 3 ms slower" : "plain disk"));
  TempDir dir;
  const std::string path = dir.Sub("db");
  FaultInjectionFileSystem fs(DefaultFileSystem(), /*track_unsynced=*/false);
  if (slow_manifest) REQUIRE(fs.ArmFromSpec("sync:delay:path=MANIFEST:ms=3").ok());
  Options o = BlobOptions("");
  o.num_levels = 7;
  o.fs = &fs;
  auto db = OpenDb(o, path);
  // Ascending keys: every flushed L0 table is disjoint from L1, the classic
  // trivial-move case.
  Model model;
  uint64_t expect = 0;
  for (int i = 0; i < 120; i++) {
    const std::string v = Value(i, 0, 2048 + static_cast<size_t>(i % 5) * 500);
    REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
    model[Key(i)] = v;
    expect += BlobRecordSize(Key(i).size(), v.size());
  }
  REQUIRE(db->Flush().ok());
  CheckDb(db.get(), model);  // inline and separated values side by side
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  CheckDb(db.get(), model);
  INFO("trivial moves " << Stat(db.get(), "trivial.moves"));
  CHECK(Stat(db.get(), "blob.bytes") == expect);
  // Each value was written into a blob file once.
  CHECK(Stat(db.get(), "blob.bytes.written") ==
        expect + (kBlobHeaderSize + kBlobFooterSize) * Stat(db.get(), "blob.files.written"));
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob: a reopen (new MANIFEST from a snapshot) keeps the blob files and their garbage counts") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  o.blob_gc_garbage_ratio = 1.0;  // no relocation: the garbage stays countable
  Model model;
  uint64_t files = 0, bytes = 0, garbage = 0;
  {
    auto db = OpenDb(o, path);
    for (int gen = 0; gen < 2; gen++) {
      for (int i = 0; i < 50; i += gen + 1) {
        const std::string v = Value(i, gen, 2500);
        REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
        model[Key(i)] = v;
      }
      REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    }
    files = Stat(db.get(), "blob.files");
    bytes = Stat(db.get(), "blob.bytes");
    garbage = Stat(db.get(), "blob.garbage.bytes");
    CHECK(files > 0);
    CHECK(garbage > 0);
    REQUIRE(db->Close().ok());
  }
  for (int round = 0; round < 2; round++) {
    auto db = OpenDb(o, path);
    CHECK(Stat(db.get(), "blob.files") == files);
    CHECK(Stat(db.get(), "blob.bytes") == bytes);
    CHECK(Stat(db.get(), "blob.garbage.bytes") == garbage);
    CheckDb(db.get(), model);
    REQUIRE(db->Close().ok());
  }
  CHECK(mxfs::testing::FilesMatching(path, "MANIFEST-", true).size() == 1);
}

TEST_CASE("Blob: a read_only open reads the separated values and removes nothing") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  Model model;
  {
    auto db = OpenDb(o, path);
    for (int i = 0; i < 60; i++) {
      const std::string v = Value(i, 0, i % 2 == 0 ? 4000 : 100);
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    for (int i = 0; i < 60; i += 4) {  // some newer values only in the WAL
      const std::string v = Value(i, 1, 3000);
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->Close().ok());
  }
  const auto before = BlobFiles(path);
  REQUIRE_FALSE(before.empty());
  Options ro = o;
  ro.read_only = true;
  auto db = OpenDb(ro, path);
  CheckDb(db.get(), model);
  CHECK(db->Put(WriteOptions(), "x", "y").IsReadOnly());
  REQUIRE(db->Close().ok());
  CHECK(BlobFiles(path) == before);
}

TEST_CASE("Blob: an unfinished .blob file left by a compaction cut short is removed at open") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  Model model;
  {
    auto db = OpenDb(o, path);
    for (int i = 0; i < 40; i++) {
      const std::string v = Value(i, 0, 3000);
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    REQUIRE(db->Close().ok());
  }
  // A crashed compaction's file: numbered after everything the MANIFEST
  // knows (its number was never recorded), a header and half a record.
  const auto live = BlobFiles(path);
  REQUIRE_FALSE(live.empty());
  const std::string whole = mxfs::testing::ReadAll(live.front());
  REQUIRE(whole.size() > 200);
  const std::string orphan = BlobFileName(path, 100000);
  const std::string empty_orphan = BlobFileName(path, 100001);
  mxfs::testing::WriteAll(orphan, whole.substr(0, 100));
  mxfs::testing::WriteAll(empty_orphan, "");
  auto db = OpenDb(o, path);
  CHECK_FALSE(std::filesystem::exists(orphan));
  CHECK_FALSE(std::filesystem::exists(empty_orphan));
  CheckDb(db.get(), model);
  for (int i = 0; i < 40; i++) {
    const std::string v = Value(i, 1, 2500);
    REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
    model[Key(i)] = v;
  }
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  CheckDb(db.get(), model);
  CheckNoOrphanBlobs(db.get(), path);
  REQUIRE(db->Close().ok());
}

namespace {

uint64_t BlobNumber(const std::string& file) {
  return std::stoull(std::filesystem::path(file).filename().string());
}

// Copies the live MANIFEST's records into MANIFEST-900000, appends the
// records extra, and points CURRENT at the copy.
void AppendManifestRecords(const std::string& path, const std::vector<std::string>& extra) {
  FileSystem* fs = DefaultFileSystem();
  std::string current = mxfs::testing::ReadAll(path + "/CURRENT");
  REQUIRE_FALSE(current.empty());
  current.pop_back();
  auto in = fs->NewSequentialFile(path + "/" + current);
  REQUIRE(in.has_value());
  LogReader reader(std::move(*in));
  auto out = fs->NewWritableFile(ManifestFileName(path, 900000));
  REQUIRE(out.has_value());
  LogWriter writer(std::move(*out));
  Slice record;
  std::string scratch;
  int records = 0;
  while (reader.ReadRecord(&record, &scratch)) {
    REQUIRE(writer.AddRecord(record, false).ok());
    records++;
  }
  REQUIRE(records > 0);
  for (const std::string& r : extra) REQUIRE(writer.AddRecord(r, true).ok());
  REQUIRE(writer.Close().ok());
  mxfs::testing::WriteAll(path + "/CURRENT", "MANIFEST-900000\n");
}

void AppendManifestEdit(const std::string& path, const VersionEdit& extra) {
  std::string enc;
  extra.EncodeTo(&enc);
  AppendManifestRecords(path, {enc});
}

// A blob-garbage field (tag 10) as VersionEdit encodes it.
void PutBlobGarbage(std::string* dst, uint64_t number, uint64_t records, uint64_t bytes) {
  PutVarint32(dst, 10);
  PutVarint64(dst, number);
  PutVarint64(dst, records);
  PutVarint64(dst, bytes);
}

// A closed database with blob files (and garbage in some).
Model MakeBlobDb(const Options& o, const std::string& path) {
  Model model;
  auto db = OpenDb(o, path);
  for (int gen = 0; gen < 2; gen++) {
    for (int i = 0; i < 40; i += gen + 1) {
      const std::string v = Value(i, gen, 2500);
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  }
  REQUIRE(Stat(db.get(), "blob.files") > 0);
  REQUIRE(db->Close().ok());
  return model;
}

}  // namespace

TEST_CASE("Blob: a MANIFEST counting garbage in an unknown blob file, or more than it holds, fails Open as Corruption") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Options o = BlobOptions("");
  o.blob_gc_garbage_ratio = 1.0;
  MakeBlobDb(o, path);
  const auto files = BlobFiles(path);
  REQUIRE_FALSE(files.empty());
  const uint64_t live = BlobNumber(files.front());
  const std::string saved_current = mxfs::testing::ReadAll(path + "/CURRENT");

  SECTION("garbage in a file that is not live") {
    VersionEdit e;
    e.AddBlobGarbage(777777, BlobGarbage{1, 100});
    AppendManifestEdit(path, e);
    auto db = DB::Open(o, path);
    REQUIRE_FALSE(db.has_value());
    const std::string msg = db.error().ToString();
    INFO(msg);
    CHECK(db.error().IsCorruption());
    CHECK(msg.find("MANIFEST-900000") != std::string::npos);
    CHECK(msg.find("blob file 777777") != std::string::npos);
  }
  SECTION("more garbage records than the file holds") {
    VersionEdit e;
    e.AddBlobGarbage(live, BlobGarbage{1000000, 1});
    AppendManifestEdit(path, e);
    auto db = DB::Open(o, path);
    REQUIRE_FALSE(db.has_value());
    const std::string msg = db.error().ToString();
    INFO(msg);
    CHECK(db.error().IsCorruption());
    CHECK(msg.find("MANIFEST-900000") != std::string::npos);
    CHECK(msg.find("more garbage in blob file " + std::to_string(live)) != std::string::npos);
  }
  SECTION("more garbage bytes than the file holds") {
    VersionEdit e;
    e.AddBlobGarbage(live, BlobGarbage{1, 1ull << 40});
    AppendManifestEdit(path, e);
    auto db = DB::Open(o, path);
    REQUIRE_FALSE(db.has_value());
    INFO(db.error().ToString());
    CHECK(db.error().IsCorruption());
    CHECK(db.error().ToString().find("blob file " + std::to_string(live)) != std::string::npos);
  }
  SECTION("garbage counts that wrap around 2^64 in a later edit") {
    // The file's records minus 1 is fine; a count that, added to it, wraps
    // to a small number is not.
    std::string first, second;
    PutBlobGarbage(&first, live, 1, 1);
    PutBlobGarbage(&second, live, ~uint64_t{0}, 1);
    AppendManifestRecords(path, {first, second});
    auto db = DB::Open(o, path);
    REQUIRE_FALSE(db.has_value());
    INFO(db.error().ToString());
    CHECK(db.error().IsCorruption());
    CHECK(db.error().ToString().find("more garbage in blob file " + std::to_string(live)) != std::string::npos);
  }
  SECTION("two garbage fields for one file in an edit that wrap around 2^64") {
    std::string rec;
    PutBlobGarbage(&rec, live, ~uint64_t{0}, 1);
    PutBlobGarbage(&rec, live, 2, 1);
    AppendManifestRecords(path, {rec});
    auto db = DB::Open(o, path);
    REQUIRE_FALSE(db.has_value());
    INFO(db.error().ToString());
    CHECK(db.error().IsCorruption());
    CHECK(db.error().ToString().find("MANIFEST-900000") != std::string::npos);
  }
  SECTION("a blob file added twice") {
    VersionEdit e;
    e.AddBlobFile(BlobFileMeta{live, 4096, 1, 4000});
    AppendManifestEdit(path, e);
    auto db = DB::Open(o, path);
    REQUIRE_FALSE(db.has_value());
    INFO(db.error().ToString());
    CHECK(db.error().IsCorruption());
    CHECK(db.error().ToString().find("blob file " + std::to_string(live)) != std::string::npos);
  }
  SECTION("the unchanged MANIFEST still opens") {
    auto db = DB::Open(o, path);
    if (!db) FAIL(db.error().ToString());
    REQUIRE((*db)->Close().ok());
  }
}

TEST_CASE("Blob: a blob file named by the MANIFEST but missing fails Open, naming it") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  const Options o = BlobOptions(pool.path());
  MakeBlobDb(o, path);
  const auto files = BlobFiles(path);
  REQUIRE_FALSE(files.empty());
  REQUIRE(std::filesystem::remove(files.back()));
  for (const bool read_only : {false, true}) {
    Options oo = o;
    oo.read_only = read_only;
    auto db = DB::Open(oo, path);
    REQUIRE_FALSE(db.has_value());
    INFO(db.error().ToString());
    CHECK(db.error().IsCorruption());
    CHECK(db.error().ToString().find(std::filesystem::path(files.back()).filename().string()) != std::string::npos);
  }
}

TEST_CASE("Blob: a flipped byte in a blob file is Corruption naming the file, never a wrong value") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  const Options o = BlobOptions(pool.path());
  const Model model = MakeBlobDb(o, path);
  const auto files = BlobFiles(path);
  REQUIRE_FALSE(files.empty());
  const std::string victim = files.front();
  const std::string name = std::filesystem::path(victim).filename().string();
  std::string bytes = mxfs::testing::ReadAll(victim);
  // A byte in the middle of every value (some records may be garbage, but a
  // live file has a live one), or one byte of the file header.
  const bool header = GENERATE(false, true);
  INFO((header ? "flipped a header byte of " : "flipped a byte of every value in ") << name);
  if (header) {
    bytes[3] ^= 0x20;
  } else {
    int flipped = 0;
    for (size_t off = kBlobHeaderSize; off + kBlobRecordHeaderSize <= bytes.size() - kBlobFooterSize; flipped++) {
      const uint32_t key_len = DecodeFixed32(bytes.data() + off + 4);
      const uint32_t value_len = DecodeFixed32(bytes.data() + off + 8);
      bytes[off + kBlobRecordHeaderSize + key_len + value_len / 2] ^= 0x20;
      off += BlobRecordSize(key_len, value_len);
    }
    REQUIRE(flipped > 0);
  }
  mxfs::testing::WriteAll(victim, bytes);

  auto db = OpenDb(o, path);
  int corrupt = 0;
  for (const auto& [k, v] : model) {
    std::string got;
    Status s = db->Get(ReadOptions(), k, &got);
    INFO(k << ": " << s.ToString());
    if (s.ok()) {
      REQUIRE(got == v);
      continue;
    }
    CHECK(s.IsCorruption());
    CHECK(s.ToString().find(name) != std::string::npos);
    corrupt++;
  }
  CHECK(corrupt >= 1);
  // A scan stops at the damaged value with the same error: value() reads
  // the blob, and a failed read ends the iteration.
  auto it = db->NewIterator(ReadOptions());
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    REQUIRE(m != model.end());
    REQUIRE(it->key().ToString() == m->first);
    const std::string value = it->value().ToString();
    if (!it->Valid()) break;
    REQUIRE(value == m->second);
  }
  INFO(it->status().ToString());
  CHECK(it->status().IsCorruption());
  CHECK(it->status().ToString().find(name) != std::string::npos);
  it.reset();
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob: ENOSPC or EIO on a .blob file or the MANIFEST fails the compaction cleanly and loses nothing") {
  const bool use_pool = GENERATE(false, true);
  // .blob write ENOSPC, .blob write EIO, .blob sync EIO, then the MANIFEST
  // edit naming the blob files: write ENOSPC, sync EIO.
  const int which = GENERATE(0, 1, 2, 3, 4);
  INFO((use_pool ? "pool" : "SSD L0") << ", fault " << which);
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  FaultInjectionFileSystem fs(DefaultFileSystem());
  Options o = BlobOptions(pool.path());
  o.fs = &fs;
  o.level0_file_num_compaction_trigger = 8;  // only our manual compaction runs
  o.level0_slowdown_writes_trigger = 8;
  o.level0_stop_writes_trigger = 12;
  o.container_share = 0.6;
  Model model;
  {
    auto db = OpenDb(o, path);
    WriteOptions synced;
    synced.sync = true;
    for (int i = 0; i < 40; i++) {
      const std::string v = Value(i, 0, i % 3 == 0 ? 200 : 3000);
      REQUIRE(db->Put(synced, Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->Flush().ok());
    switch (which) {
      case 0: fs.FailAfterMatching(FaultOp::kWrite, 0, ENOSPC, false, ".blob"); break;
      case 1: fs.FailAfterMatching(FaultOp::kWrite, 0, EIO, false, ".blob"); break;
      case 2: fs.FailAfterMatching(FaultOp::kSync, 0, EIO, false, ".blob"); break;
      case 3: fs.FailAfterMatching(FaultOp::kWrite, 0, ENOSPC, false, "MANIFEST"); break;
      default: fs.FailAfterMatching(FaultOp::kSync, 0, EIO, false, "MANIFEST"); break;
    }
    Status cs = db->CompactRange(nullptr, nullptr);
    INFO(cs.ToString());
    CHECK_FALSE(cs.ok());
    CHECK(fs.InjectedFaults() > 0);
    fs.ClearFaults();
    Status ws = db->Put(synced, "after", "x");
    INFO(ws.ToString());
    CHECK(ws.IsReadOnly());
    // The old tree still answers.
    CheckDb(db.get(), model);
    // The failed compaction's blob files are gone (after a failed MANIFEST
    // edit they stay until the next open: the edit may have reached the disk).
    if (which < 3) CHECK(BlobFiles(path).size() == Stat(db.get(), "blob.files"));
  }
  auto db = OpenDb(o, path);
  CheckDb(db.get(), model);
  REQUIRE(db->Put(WriteOptions(), "writable", "again").ok());
  model["writable"] = "again";
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  CheckDb(db.get(), model);
  CHECK(Stat(db.get(), "blob.files") > 0);
  CheckNoOrphanBlobs(db.get(), path);
  REQUIRE(db->Close().ok());
}

namespace {

// The child: "I <key> <value|->" before a write, "A" after it is
// acknowledged; dies at kill_at (SIGKILL), or exits 5 if it never got there.
[[noreturn]] void CrashChild(const Options& o, const std::string& path, const std::string& kill_at, uint64_t seed,
                             int fd) {
  ::setenv("MXFS_KILL_AT", kill_at.c_str(), 1);
  auto db = DB::Open(o, path);
  if (!db) {
    WriteLine(fd, "E " + db.error().ToString() + "\n");
    _exit(2);
  }
  Random rnd(seed);
  WriteOptions wo;
  wo.sync = true;
  const size_t sizes[] = {50, 2047, 2048, 3000, 6000};
  for (int n = 0; n < 400; n++) {
    const int k = static_cast<int>(rnd.Uniform(120));
    const bool del = rnd.OneIn(6);
    const std::string v = Value(k, static_cast<int>(seed * 1000) + n, sizes[rnd.Uniform(std::size(sizes))]);
    WriteLine(fd, "I " + Key(k) + " " + (del ? std::string("-") : v) + "\n");
    Status s = del ? (*db)->Delete(wo, Key(k)) : (*db)->Put(wo, Key(k), v);
    if (!s.ok()) {
      WriteLine(fd, "E " + s.ToString() + "\n");
      _exit(2);
    }
    WriteLine(fd, "A\n");
  }
  // Background work did not get there: a full compaction passes every point.
  (*db)->CompactRange(nullptr, nullptr).IgnoreError();
  _exit(5);
}

}  // namespace

TEST_CASE("Blob: dying at each step of a compaction that writes blob files loses nothing and leaves no orphan") {
  // 0: SSD L0; 1: pool; 2: pool with columns merged as two parallel sub-ranges.
  const int mode = GENERATE(0, 1, 2);
  const bool use_pool = mode > 0;
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  o.blob_file_size = 8 << 10;  // several blob files per compaction
  o.blob_gc_garbage_ratio = 0.3;
  // Columns of 100 entries and more (kvcore.column.mid_merge) over these
  // 120 keys need a compactor of many rows: no switch by row count.
  o.container_max_receiver_rows = 0;
  if (mode == 2) {
    o.column_compaction_threads = 2;
    o.target_file_size_base = 1024;  // many small L1 tables: columns span several of them
  }
  std::vector<std::string> points = {"kvcore.blob.mid_file", "kvcore.compaction.before_output_sync",
                                     "kvcore.blob.after_sync", "kvcore.compaction.before_manifest",
                                     "kvcore.compaction.after_manifest"};
  if (use_pool) {
    for (const char* p : {"kvcore.column.mid_merge", "kvcore.column.before_manifest", "kvcore.column.after_manifest"}) {
      points.push_back(p);
    }
  }
  if (mode == 2) points.push_back("kvcore.column.after_sub_merges");
  // Then SIGKILLs at random moments (an empty kill point: the parent kills
  // the child after a random number of acknowledged writes).
  for (int i = 0; i < 3; i++) points.push_back("");
  Random kill_rnd(17 + static_cast<uint64_t>(mode));
  std::map<std::string, std::optional<std::string>> model;  // nullopt: deleted
  for (size_t round = 0; round < points.size(); round++) {
    const std::string& kill_at = points[round];
    const uint64_t kill_after = 10 + kill_rnd.Uniform(250);
    INFO("mode " << mode << ", round " << round << ", kill point " << (kill_at.empty() ? "random" : kill_at));
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      mxfs::testing::RunInFreshThread([&] { CrashChild(o, path, kill_at, 100 + round, fds[1]); });
      _exit(4);
    }
    ::close(fds[1]);
    std::string buf;
    std::vector<std::string> lines;
    char chunk[8192];
    ssize_t n;
    uint64_t acks = 0;
    bool killed = false;
    while ((n = ::read(fds[0], chunk, sizeof(chunk))) > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        lines.push_back(buf.substr(0, nl));
        buf.erase(0, nl + 1);
        if (lines.back() == "A") acks++;
      }
      if (kill_at.empty() && !killed && acks >= kill_after) {
        ::kill(pid, SIGKILL);
        killed = true;
      }
    }
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    INFO("child exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ", last line "
                       << (lines.empty() ? std::string() : lines.back().substr(0, 80)));
    if (kill_at.empty() && WIFEXITED(status)) {
      REQUIRE(WEXITSTATUS(status) == 5);  // it finished before the kill landed: still a valid round
    } else {
      REQUIRE(WIFSIGNALED(status));
      REQUIRE(WTERMSIG(status) == SIGKILL);
    }

    std::optional<std::pair<std::string, std::optional<std::string>>> in_flight;
    for (const std::string& line : lines) {
      REQUIRE(line[0] != 'E');
      if (line[0] == 'I') {
        const size_t sp = line.find(' ', 2);
        const std::string v = line.substr(sp + 1);
        in_flight = {line.substr(2, sp - 2), v == "-" ? std::nullopt : std::optional<std::string>(v)};
      } else if (line == "A") {
        REQUIRE(in_flight.has_value());
        model[in_flight->first] = in_flight->second;
        in_flight.reset();
      }
    }
    auto db = OpenDb(o, path);
    if (in_flight) {  // the write in flight may or may not have landed
      std::string v;
      Status s = db->Get(ReadOptions(), in_flight->first, &v);
      REQUIRE((s.ok() || s.IsNotFound()));
      const std::optional<std::string> got = s.ok() ? std::optional<std::string>(v) : std::nullopt;
      if (got == in_flight->second) model[in_flight->first] = got;
    }
    Model live;
    for (const auto& [k, v] : model) {
      if (v) live[k] = *v;
    }
    CheckDb(db.get(), live);
    for (const auto& [k, v] : model) {
      if (v) continue;
      std::string got;
      INFO("deleted key " << k);
      REQUIRE(db->Get(ReadOptions(), k, &got).IsNotFound());
    }
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    CheckDb(db.get(), live);
    CheckNoOrphanBlobs(db.get(), path);
    REQUIRE(db->Close().ok());
  }
  CHECK(model.size() > 30);
}

TEST_CASE("Blob: a power loss after compactions that wrote and deleted blob files keeps every synced write") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  FaultInjectionFileSystem fs(DefaultFileSystem());
  Options o = BlobOptions(pool.path());
  o.fs = &fs;
  o.blob_file_size = 8 << 10;
  o.blob_gc_garbage_ratio = 0.3;
  Model model;
  Random rnd(31);
  WriteOptions synced;
  synced.sync = true;
  for (int round = 0; round < 4; round++) {
    INFO("round " << round);
    auto db = OpenDb(o, path);
    CheckDb(db.get(), model);
    for (int i = 0; i < 60; i++) {
      const int k = static_cast<int>(rnd.Uniform(50));
      if (rnd.OneIn(6)) {
        REQUIRE(db->Delete(synced, Key(k)).ok());
        model.erase(Key(k));
        continue;
      }
      const std::string v = Value(k, round * 100 + i, rnd.OneIn(4) ? 300 : 2048 + rnd.Uniform(3000));
      REQUIRE(db->Put(synced, Key(k), v).ok());
      model[Key(k)] = v;
    }
    if (round % 2 == 1) REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    // Power loss, possibly in the middle of background work.
    fs.SetFilesystemActive(false);
    db.reset();
    REQUIRE(fs.DropUnsyncedData().ok());
    fs.SetFilesystemActive(true);
  }
  auto db = OpenDb(o, path);
  CheckDb(db.get(), model);
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  CheckDb(db.get(), model);
  CHECK(Stat(db.get(), "blob.files") > 0);
  CheckNoOrphanBlobs(db.get(), path);
  REQUIRE(db->Close().ok());
}

namespace {

// Whether got is a value Value() made for key k (any generation).
bool IsValueOf(int k, const std::string& got) {
  const std::string prefix = "v" + std::to_string(k) + ".";
  if (got.rfind(prefix, 0) != 0) return false;
  const size_t colon = got.find(':');
  if (colon == std::string::npos) return false;
  const int gen = std::stoi(got.substr(prefix.size(), colon - prefix.size()));
  return got == Value(k, gen, got.size());
}

}  // namespace

TEST_CASE("Blob: readers racing compactions that relocate and delete blob files always get whole values") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  o.blob_file_size = 16 << 10;
  o.blob_gc_garbage_ratio = 0.2;
  o.column_compaction_threads = 2;
  auto db = OpenDb(o, path);
  constexpr int kKeys = 100;
  for (int k = 0; k < kKeys; k++) REQUIRE(db->Put(WriteOptions(), Key(k), Value(k, 0, 3000)).ok());
  std::atomic<bool> done{false};
  std::mutex mu;
  std::vector<std::string> errors;  // guarded by mu
  std::atomic<uint64_t> reads{0}, scanned{0};
  auto fail = [&](const std::string& what) {
    std::lock_guard<std::mutex> g(mu);
    if (errors.size() < 10) errors.push_back(what);
  };
  auto reader = [&](uint64_t seed) {
    Random rnd(seed);
    // A pinned value kept across the next few dozen reads (and the
    // compactions meanwhile that may delete its file), then checked again.
    PinnableSlice held;
    int held_key = -1, held_for = 0;
    while (!done.load()) {
      const int k = static_cast<int>(rnd.Uniform(kKeys));
      if (held_key >= 0 && ++held_for == 40) {
        if (!IsValueOf(held_key, held.ToString())) fail("held pinned value of " + Key(held_key) + " changed");
        held.Reset();
        held_key = -1;
      }
      if (rnd.OneIn(3)) {
        PinnableSlice p;
        Status s = db->Get(ReadOptions(), Key(k), &p);
        if (!s.ok() && !s.IsNotFound()) fail("Get pinned " + Key(k) + ": " + s.ToString());
        if (s.ok() && !IsValueOf(k, p.ToString())) fail("Get pinned " + Key(k) + ": wrong value");
        if (s.ok() && held_key < 0) {
          held = std::move(p);
          held_key = k;
          held_for = 0;
        }
        reads++;
        continue;
      }
      if (!rnd.OneIn(10)) {
        std::string v;
        Status s = db->Get(ReadOptions(), Key(k), &v);
        if (!s.ok() && !s.IsNotFound()) fail("Get " + Key(k) + ": " + s.ToString());
        if (s.ok() && !IsValueOf(k, v)) fail("Get " + Key(k) + ": wrong value of " + std::to_string(v.size()) + " bytes");
        reads++;
        continue;
      }
      auto it = db->NewIterator(ReadOptions());
      int n = 0;
      for (it->Seek(Key(k)); it->Valid() && n < 15; n++) {
        const std::string key = it->key().ToString();
        const std::string v = it->value().ToString();
        if (!it->Valid()) break;
        if (!IsValueOf(std::stoi(key.substr(3)), v)) fail("scan " + key + ": wrong value");
        if (rnd.OneIn(2)) it->Next();
        else it->Prev();
      }
      if (!it->status().ok()) fail("scan from " + Key(k) + ": " + it->status().ToString());
      scanned++;
    }
  };
  std::vector<std::thread> readers;
  for (uint64_t t = 0; t < 2; t++) readers.emplace_back(reader, 7 + t);
  Random rnd(3);
  Status ws;
  for (int n = 1; n <= 1500 && ws.ok(); n++) {
    const int k = static_cast<int>(rnd.Uniform(kKeys));
    ws = rnd.OneIn(10) ? db->Delete(WriteOptions(), Key(k))
                       : db->Put(WriteOptions(), Key(k), Value(k, n, 2048 + rnd.Uniform(4000)));
    if (ws.ok() && n % 500 == 0) ws = db->CompactRange(nullptr, nullptr);
  }
  done = true;
  for (auto& t : readers) t.join();
  INFO(ws.ToString());
  REQUIRE(ws.ok());
  for (const auto& e : errors) FAIL_CHECK(e);
  CHECK(reads.load() > 0);
  CHECK(Stat(db.get(), "blob.bytes.relocated") > 0);
  // Files the readers' iterators pinned go at the next obsolete-file sweep.
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  CheckNoOrphanBlobs(db.get(), path);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob: separated values read back with O_DIRECT and with the pread/pwrite fallback") {
  const int io = GENERATE(0, 1);  // 0: O_DIRECT, 1: no io_uring
  INFO((io == 0 ? "use_direct_io" : "use_io_uring = false"));
  TempDir dir;
  const std::string path = dir.Sub("db");
  Options o = BlobOptions("");
  if (io == 0) o.use_direct_io = true;
  else o.use_io_uring = false;
  Model model;
  {
    auto db = OpenDb(o, path);
    for (int gen = 0; gen < 2; gen++) {
      for (int i = 0; i < 60; i++) {
        const std::string v = Value(i, gen, 2048 + static_cast<size_t>(i * 97 % 5000));
        REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
        model[Key(i)] = v;
      }
      REQUIRE(db->CompactRange(nullptr, nullptr).ok());
      CheckDb(db.get(), model);
    }
    CHECK(Stat(db.get(), "blob.files") > 0);
    REQUIRE(db->Close().ok());
  }
  auto db = OpenDb(o, path);
  CheckDb(db.get(), model);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob: values of hundreds of KiB, files past the 1 MiB write buffer and values past blob_file_size") {
  const bool use_pool = GENERATE(false, true);
  const uint64_t file_size = GENERATE(uint64_t{8} << 20, uint64_t{4096});
  INFO((use_pool ? "pool" : "SSD L0") << ", blob_file_size " << file_size);
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options o = BlobOptions(pool.path());
  o.blob_file_size = file_size;
  o.num_levels = 7;  // nothing reaches the last level inline by trivial moves
  Model model;
  {
    auto db = OpenDb(o, path);
    for (int i = 0; i < 12; i++) {
      // (A PM WAL record holds less than 1 MiB.)
      const size_t big = use_pool ? 900 : 1500;
      const std::string v = Value(i, 0, (i % 3 == 0 ? big : 300) * 1024 + static_cast<size_t>(i));
      REQUIRE(db->Put(WriteOptions(), Key(i), v).ok());
      model[Key(i)] = v;
    }
    REQUIRE(db->CompactRange(nullptr, nullptr).ok());
    CheckDb(db.get(), model);
    CHECK(Stat(db.get(), "blob.files") > 0);
    REQUIRE(db->Close().ok());
  }
  auto db = OpenDb(o, path);
  CheckDb(db.get(), model);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Blob: Open refuses a blob_file_size below 4 KiB and a GC ratio outside (0, 1]") {
  TempDir dir;
  for (int which = 0; which < 4; which++) {
    Options o = BlobOptions("");
    const char* name = which == 0 ? "blob_file_size" : "blob_gc_garbage_ratio";
    if (which == 0) o.blob_file_size = 4095;
    else o.blob_gc_garbage_ratio = which == 1 ? 0.0 : which == 2 ? 1.5 : -0.1;
    auto db = DB::Open(o, dir.Sub("db"));
    REQUIRE_FALSE(db.has_value());
    INFO(db.error().ToString());
    CHECK(db.error().IsInvalidArgument());
    CHECK(db.error().ToString().find(name) != std::string::npos);
  }
}

TEST_CASE("Blob: with a PM WAL, a batch larger than one WAL record fails alone and big concurrent writes never form one") {
  TempDir dir;
  TempPool pool;
  const std::string path = dir.Sub("db");
  const Options o = BlobOptions(pool.path());
  Model model;
  {
    auto db = OpenDb(o, path);
    // 4 x 261,500-byte values: about 1,046,100 bytes, past the 1 MiB
    // segment's largest record (1,044,456 bytes) but under the 1 MiB a
    // write group may reach.
    WriteBatch big;
    for (int i = 0; i < 4; i++) big.Put(Key(1000 + i), Value(1000 + i, 0, 261500));
    Status s = db->Write(WriteOptions(), &big);
    INFO(s.ToString());
    CHECK(s.IsInvalidArgument());
    // Only that write failed: the engine stays writable.
    REQUIRE(db->Put(WriteOptions(), "after", "ok").ok());
    model["after"] = "ok";
    std::string v;
    CHECK(db->Get(ReadOptions(), Key(1000), &v).IsNotFound());

    // Writers of 261,500-byte values, each alone well inside a record: the
    // leader must not merge four of them into one group.
    constexpr int kThreads = 6, kPuts = 12;
    std::vector<Status> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        for (int n = 0; n < kPuts && results[static_cast<size_t>(t)].ok(); n++) {
          const int k = t * 100 + n;
          results[static_cast<size_t>(t)] = db->Put(WriteOptions(), Key(k), Value(k, 1, 261500));
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; t++) {
      INFO("writer " << t << ": " << results[static_cast<size_t>(t)].ToString());
      CHECK(results[static_cast<size_t>(t)].ok());
      for (int n = 0; n < kPuts; n++) model[Key(t * 100 + n)] = Value(t * 100 + n, 1, 261500);
    }
    std::string stats;
    REQUIRE(db->GetProperty("matrixkv.stats", &stats));
    INFO(stats);
    CHECK(stats.find("background.error none") != std::string::npos);
    CheckDb(db.get(), model);
    REQUIRE(db->Close().ok());
  }
  auto db = OpenDb(o, path);
  CheckDb(db.get(), model);
  REQUIRE(db->Close().ok());
}

namespace {

// Whether /proc/self/maps maps a file whose name holds name.
bool Mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(name) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("Blob: a value pinned by Get stays whole after its blob file is compacted away and closed; Reset frees it") {
  const bool mmap = GENERATE(true, false);
  INFO((mmap ? "mmap_reads" : "pread"));
  TempDir dir;
  const std::string path = dir.Sub("db");
  Options o = BlobOptions("");
  o.mmap_reads = mmap;
  auto db = OpenDb(o, path);
  constexpr int kKeys = 40;
  for (int k = 0; k < kKeys; k++) REQUIRE(db->Put(WriteOptions(), Key(k), Value(k, 0, 3000)).ok());
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  const auto old_files = BlobFiles(path);
  REQUIRE_FALSE(old_files.empty());

  // Pin one value of each old file's generation.
  std::vector<PinnableSlice> pinned(kKeys);
  for (int k = 0; k < kKeys; k++) {
    REQUIRE(db->Get(ReadOptions(), Key(k), &pinned[k]).ok());
    CHECK(pinned[k].IsPinned() == mmap);
    REQUIRE(pinned[k].ToString() == Value(k, 0, 3000));
  }
  // Overwrite every key and compact: the old blob files are all garbage,
  // leave the Version, are closed (evicted from the open files) and deleted.
  for (int k = 0; k < kKeys; k++) REQUIRE(db->Put(WriteOptions(), Key(k), Value(k, 1, 2500)).ok());
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  const auto new_files = BlobFiles(path);
  for (const auto& f : old_files) {
    INFO(f);
    CHECK(std::find(new_files.begin(), new_files.end(), f) == new_files.end());
  }
  // The pins still hold the old values, byte for byte; the deleted files
  // stay mapped only while pinned.
  const std::string old_name = std::filesystem::path(old_files.front()).filename().string();
  CHECK(Mapped(old_name) == mmap);
  for (int k = 0; k < kKeys; k++) {
    INFO(Key(k));
    REQUIRE(pinned[k].ToString() == Value(k, 0, 3000));
  }
  // New Gets into the same objects release the old pins.
  for (int k = 0; k < kKeys; k++) {
    REQUIRE(db->Get(ReadOptions(), Key(k), &pinned[k]).ok());
    REQUIRE(pinned[k].ToString() == Value(k, 1, 2500));
  }
  CHECK_FALSE(Mapped(old_name));
  for (auto& p : pinned) p.Reset();
  CHECK(pinned[0].empty());
  CheckNoOrphanBlobs(db.get(), path);

  // Values from the memtable are copied; a missing key leaves it empty.
  REQUIRE(db->Put(WriteOptions(), "fresh", Value(7, 2, 3000)).ok());
  PinnableSlice p;
  REQUIRE(db->Get(ReadOptions(), "fresh", &p).ok());
  CHECK_FALSE(p.IsPinned());
  CHECK(p.ToString() == Value(7, 2, 3000));
  CHECK(db->Get(ReadOptions(), "absent", &p).IsNotFound());
  CHECK(p.empty());
  REQUIRE(db->Delete(WriteOptions(), Key(3)).ok());
  CHECK(db->Get(ReadOptions(), Key(3), &p).IsNotFound());
  REQUIRE(db->Close().ok());
}
