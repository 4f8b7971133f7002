// Fault injection through FaultInjectionFileSystem (Options.fs): power-loss
// simulation that drops unsynced data, and I/O errors in background work.
#include <catch2/catch.hpp>

#include <cerrno>
#include <map>
#include <set>

#include "base/random.h"
#include "kvcore/include/db.h"
#include "kvcore/include/file_system.h"
#include "ssd/fault_injection_fs.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::TempDir;

namespace {

Options FaultOptions(FileSystem* fs) {
  Options o;
  o.fs = fs;
  o.write_buffer_size = 8 << 10;
  o.target_file_size_base = 4 << 10;
  o.max_bytes_for_level_base = 16 << 10;
  o.level0_file_num_compaction_trigger = 2;
  o.num_levels = 4;
  o.block_size = 512;
  return o;
}

std::string Key(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "key%05d", i);
  return buf;
}

void CheckModel(DB* db, const std::map<std::string, std::string>& model, const std::set<std::string>& deleted) {
  for (const auto& [k, v] : model) {
    std::string got;
    Status s = db->Get(ReadOptions(), k, &got);
    INFO("key " << k << ": " << s.ToString());
    REQUIRE(s.ok());
    REQUIRE(got == v);
  }
  for (const auto& k : deleted) {
    std::string got;
    INFO("deleted key " << k);
    REQUIRE(db->Get(ReadOptions(), k, &got).IsNotFound());
  }
}

}  // namespace

TEST_CASE("FaultInjection: dropping unsynced data after flushes and compactions keeps every synced write") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  FaultInjectionFileSystem fs(DefaultFileSystem());
  std::map<std::string, std::string> model;
  std::set<std::string> deleted;
  Random rnd(77);
  for (int round = 0; round < 4; round++) {
    INFO("round " << round);
    auto db = DB::Open(FaultOptions(&fs), path);
    if (!db) FAIL(db.error().ToString());
    CheckModel(db->get(), model, deleted);
    WriteOptions synced;
    synced.sync = true;
    const int n = 300 + static_cast<int>(rnd.Uniform(300));
    for (int i = 0; i < n; i++) {
      const std::string k = Key(static_cast<int>(rnd.Uniform(1000)));
      if (rnd.OneIn(5)) {
        REQUIRE((*db)->Delete(synced, k).ok());
        model.erase(k);
        deleted.insert(k);
      } else {
        const std::string v = "r" + std::to_string(round) + "." + std::to_string(i) + std::string(rnd.Uniform(100), 'z');
        REQUIRE((*db)->Put(synced, k, v).ok());
        model[k] = v;
        deleted.erase(k);
      }
      if (i == n / 2) REQUIRE((*db)->Flush().ok());
    }
    if (round % 2 == 1) REQUIRE((*db)->CompactRange(nullptr, nullptr).ok());
    // Unsynced writes after the last synced one may vanish; they are not in the model.
    for (int i = 0; i < 20; i++) REQUIRE((*db)->Put(WriteOptions(), "unsynced" + std::to_string(i), "maybe").ok());
    // Power loss, possibly in the middle of background work.
    fs.SetFilesystemActive(false);
    db->reset();
    REQUIRE(fs.DropUnsyncedData().ok());
    fs.SetFilesystemActive(true);
  }
  auto db = DB::Open(FaultOptions(&fs), path);
  if (!db) FAIL(db.error().ToString());
  CheckModel(db->get(), model, deleted);
  REQUIRE((*db)->Close().ok());
}

TEST_CASE("FaultInjection: EIO in a background compaction turns the DB read-only and loses nothing") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  FaultInjectionFileSystem fs(DefaultFileSystem());
  std::map<std::string, std::string> model;
  Options options = FaultOptions(&fs);
  options.level0_file_num_compaction_trigger = 8;  // only our manual compaction runs
  options.level0_slowdown_writes_trigger = 8;
  options.level0_stop_writes_trigger = 12;
  {
    auto db = DB::Open(options, path);
    REQUIRE(db.has_value());
    WriteOptions synced;
    synced.sync = true;
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < 200; i++) {
        const std::string k = Key((i * 13 + round) % 500), v = "v" + std::to_string(round) + std::string(50, 'q');
        REQUIRE((*db)->Put(synced, k, v).ok());
        model[k] = v;
      }
      REQUIRE((*db)->Flush().ok());
    }
    fs.FailAfter(FaultOp::kWrite, 2, EIO);
    Status cs = (*db)->CompactRange(nullptr, nullptr);
    INFO(cs.ToString());
    CHECK_FALSE(cs.ok());
    fs.ClearFaults();
    Status ws = (*db)->Put(synced, "after", "x");
    INFO(ws.ToString());
    CHECK(ws.IsReadOnly());
    CHECK(ws.message().find("compaction") != std::string_view::npos);
    std::string stats;
    REQUIRE((*db)->GetProperty("matrixkv.stats", &stats));
    CHECK(stats.find("background.error compaction") != std::string::npos);
    CHECK(fs.InjectedFaults() > 0);
    // Reads still work from the old tree.
    CheckModel(db->get(), model, {});
  }
  auto db = DB::Open(options, path);
  if (!db) FAIL(db.error().ToString());
  CheckModel(db->get(), model, {});
  REQUIRE((*db)->Put(WriteOptions(), "writable", "again").ok());
  REQUIRE((*db)->CompactRange(nullptr, nullptr).ok());
  CheckModel(db->get(), model, {});
}

TEST_CASE("FaultInjection: a failed WAL sync fails the write and makes the DB read-only") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  FaultInjectionFileSystem fs(DefaultFileSystem());
  auto db = DB::Open(FaultOptions(&fs), path);
  REQUIRE(db.has_value());
  WriteOptions synced;
  synced.sync = true;
  REQUIRE((*db)->Put(synced, "before", "1").ok());
  fs.FailAfter(FaultOp::kSync, 0, EIO);
  Status s = (*db)->Put(synced, "failing", "2");
  CHECK(s.IsIOError());
  fs.ClearFaults();
  Status s2 = (*db)->Put(synced, "later", "3");
  CHECK(s2.IsReadOnly());
  CHECK(s2.message().find("WAL") != std::string_view::npos);
  std::string v;
  REQUIRE((*db)->Get(ReadOptions(), "before", &v).ok());
  CHECK(v == "1");
}
