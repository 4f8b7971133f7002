// Damaged databases: every failure is a Status naming the file (and the
// offset where there is one), never a crash.
#include <catch2/catch.hpp>

#include <filesystem>

#include "kvcore/include/db.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::TempDir;

namespace {

Options SmallOptions() {
  Options o;
  o.write_buffer_size = 16 << 10;
  o.block_size = 1024;
  o.block_cache_size = 0;  // every read goes to the file
  return o;
}

std::string Key(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "key%06d", i);
  return buf;
}

// A database with some tables and a live WAL; returns its path.
void Populate(const std::string& path, bool leave_wal) {
  auto db = DB::Open(SmallOptions(), path);
  REQUIRE(db.has_value());
  // Scattered order: every table spans the whole key range, so a compaction has to read them all.
  for (int j = 0; j < 300; j++) {
    const int i = j * 7 % 300;
    REQUIRE((*db)->Put(WriteOptions(), Key(i), std::string(100, 'a' + i % 26)).ok());
  }
  REQUIRE((*db)->Flush().ok());
  if (leave_wal) {
    for (int i = 0; i < 20; i++) REQUIRE((*db)->Put(WriteOptions(), "wal" + Key(i), "in the log").ok());
  }
  REQUIRE((*db)->Close().ok());
}

std::string CurrentManifest(const std::string& path) {
  std::string name = mxfs::testing::ReadAll(path + "/CURRENT");
  if (!name.empty() && name.back() == '\n') name.pop_back();
  return path + "/" + name;
}

}  // namespace

TEST_CASE("Corruption: a truncated MANIFEST is refused naming it") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Populate(path, false);
  const std::string manifest = CurrentManifest(path);
  std::filesystem::resize_file(manifest, 10);
  auto db = DB::Open(SmallOptions(), path);
  REQUIRE_FALSE(db.has_value());
  INFO(db.error().ToString());
  CHECK(db.error().IsCorruption());
  CHECK(db.error().message().find(manifest) != std::string_view::npos);
  CHECK(db.error().message().find("truncated") != std::string_view::npos);
}

TEST_CASE("Corruption: a damaged MANIFEST record is refused naming file and offset") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Populate(path, false);
  const std::string manifest = CurrentManifest(path);
  std::string data = mxfs::testing::ReadAll(manifest);
  REQUIRE(data.size() > 40);
  data[12] ^= 0x20;  // inside the first record, with more records after it
  mxfs::testing::WriteAll(manifest, data);
  auto db = DB::Open(SmallOptions(), path);
  REQUIRE_FALSE(db.has_value());
  INFO(db.error().ToString());
  CHECK(db.error().IsCorruption());
  CHECK(db.error().message().find(manifest) != std::string_view::npos);
  CHECK(db.error().message().find("offset 0") != std::string_view::npos);
}

TEST_CASE("Corruption: CURRENT naming garbage is refused") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Populate(path, false);
  mxfs::testing::WriteAll(path + "/CURRENT", "garbage");
  auto db = DB::Open(SmallOptions(), path);
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find(path + "/CURRENT") != std::string_view::npos);
}

TEST_CASE("Corruption: a damaged WAL record in the middle is refused naming the log and offset") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Populate(path, true);
  auto logs = mxfs::testing::FilesMatching(path, ".log", false);
  REQUIRE_FALSE(logs.empty());
  const std::string log = logs.back();
  std::string data = mxfs::testing::ReadAll(log);
  REQUIRE(data.size() > 100);
  data[20] ^= 0x01;  // first record's payload
  mxfs::testing::WriteAll(log, data);
  auto db = DB::Open(SmallOptions(), path);
  REQUIRE_FALSE(db.has_value());
  INFO(db.error().ToString());
  CHECK(db.error().IsCorruption());
  CHECK(db.error().message().find(log) != std::string_view::npos);
  CHECK(db.error().message().find("offset 0") != std::string_view::npos);
}

TEST_CASE("Corruption: a missing table is refused naming it") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Populate(path, false);
  auto tables = mxfs::testing::FilesMatching(path, ".sst", false);
  REQUIRE_FALSE(tables.empty());
  std::filesystem::remove(tables[0]);
  auto db = DB::Open(SmallOptions(), path);
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find(tables[0]) != std::string_view::npos);
}

TEST_CASE("Corruption: a damaged SSTable block is reported naming file and offset") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Populate(path, false);
  auto tables = mxfs::testing::FilesMatching(path, ".sst", false);
  REQUIRE_FALSE(tables.empty());
  std::string data = mxfs::testing::ReadAll(tables[0]);
  data[50] ^= 0x10;  // inside the first data block
  mxfs::testing::WriteAll(tables[0], data);
  auto db = DB::Open(SmallOptions(), path);
  REQUIRE(db.has_value());
  // Some key lives in the damaged block; reading it names the file.
  bool saw_error = false;
  for (int i = 0; i < 300 && !saw_error; i++) {
    std::string v;
    Status s = (*db)->Get(ReadOptions(), Key(i), &v);
    if (!s.ok() && !s.IsNotFound()) {
      saw_error = true;
      INFO(s.ToString());
      CHECK(s.IsCorruption());
      CHECK(s.message().find(tables[0]) != std::string_view::npos);
      CHECK(s.message().find("offset") != std::string_view::npos);
    }
  }
  CHECK(saw_error);
  auto it = (*db)->NewIterator(ReadOptions());
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
  }
  CHECK(it->status().IsCorruption());
  // A compaction reading it fails (an automatic one may get there first),
  // and the database turns read-only, saying why. New data over the whole
  // key range makes a compaction read the damaged table.
  bool write_failed = false;
  for (int i = 0; i < 300 && !write_failed; i += 5) write_failed = !(*db)->Put(WriteOptions(), Key(i), "new").ok();
  Status fs = (*db)->Flush();
  Status cs = (*db)->CompactRange(nullptr, nullptr);
  INFO(fs.ToString() << " / " << cs.ToString());
  CHECK_FALSE(cs.ok());
  Status ws = (*db)->Put(WriteOptions(), "after", "x");
  CHECK(ws.IsReadOnly());
  CHECK(ws.message().find(tables[0]) != std::string_view::npos);
  std::string stats;
  REQUIRE((*db)->GetProperty("matrixkv.stats", &stats));
  CHECK(stats.find("background.error compaction") != std::string::npos);
}
