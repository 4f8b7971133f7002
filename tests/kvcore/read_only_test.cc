// Options.read_only (what fsck -n opens) and Options.nvm_uuid (the pool
// UUID MatrixFS takes from its superblock).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <map>

#include "base/hash.h"
#include "kvcore/include/db.h"
#include "nvm/pool.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::ReadAll;
using mxfs::testing::TempDir;
using mxfs::testing::TempPool;

namespace {

// name -> size, mtime and a hash of the bytes, for every file under dir (and
// the pool file when given).
std::map<std::string, std::string> Fingerprint(const std::string& dir, const std::string& pool = "") {
  std::map<std::string, std::string> r;
  auto add = [&](const std::string& p) {
    struct stat st;
    REQUIRE(::stat(p.c_str(), &st) == 0);
    const std::string bytes = ReadAll(p);
    r[p] = std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(Hash64(bytes.data(), bytes.size()));
  };
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) add(e.path().string());
  }
  if (!pool.empty()) add(pool);
  return r;
}

Options Small(const std::string& pool = "") {
  Options o;
  o.write_buffer_size = 16 << 10;
  o.target_file_size_base = 16 << 10;
  o.block_size = 512;
  o.num_levels = 4;
  if (!pool.empty()) {
    o.nvm_path = pool;
    o.nvm_size = 8 << 20;
  }
  return o;
}

// Flushed data (tables or rows) and, after it, records only in the WAL.
void Fill(const Options& o, const std::string& path) {
  auto db = DB::Open(o, path);
  if (!db) FAIL(db.error().ToString());
  for (int i = 0; i < 600; i++) REQUIRE((*db)->Put(WriteOptions(), "k" + std::to_string(i), std::string(64, 'a')).ok());
  REQUIRE((*db)->Flush().ok());
  for (int i = 0; i < 50; i++) REQUIRE((*db)->Put(WriteOptions(), "w" + std::to_string(i), "in the log").ok());
  REQUIRE((*db)->Delete(WriteOptions(), "k7").ok());
  REQUIRE((*db)->Close().ok());
}

void CheckReadOnly(Options o, const std::string& path, const std::string& pool) {
  const auto before = Fingerprint(path, pool);
  o.read_only = true;
  {
    auto db = DB::Open(o, path);
    if (!db) FAIL(db.error().ToString());
    std::string v;
    REQUIRE((*db)->Get(ReadOptions(), "w49", &v).ok());  // replayed from the WAL
    CHECK(v == "in the log");
    REQUIRE((*db)->Get(ReadOptions(), "k599", &v).ok());  // flushed
    CHECK((*db)->Get(ReadOptions(), "k7", &v).IsNotFound());
    size_t n = 0;
    auto it = (*db)->NewIterator(ReadOptions());
    for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
    CHECK(it->status().ok());
    CHECK(n == 600 - 1 + 50);
    it.reset();
    Status w = (*db)->Put(WriteOptions(), "x", "y");
    CHECK(w.IsReadOnly());
    CHECK((*db)->Flush().IsReadOnly());
    // A writable open beside it is refused: the read-only open holds the LOCK.
    Options rw = o;
    rw.read_only = false;
    auto other = DB::Open(rw, path);
    CHECK(!other.has_value());
    REQUIRE((*db)->Close().ok());
  }
  CHECK(Fingerprint(path, pool) == before);
  // And a normal open afterwards still sees everything.
  o.read_only = false;
  auto db = DB::Open(o, path);
  if (!db) FAIL(db.error().ToString());
  std::string v;
  CHECK((*db)->Get(ReadOptions(), "w0", &v).ok());
  REQUIRE((*db)->Close().ok());
}

}  // namespace

TEST_CASE("DB read_only: replays the SSD WAL into memory and changes no byte, size or mtime") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Fill(Small(), path);
  CheckReadOnly(Small(), path, "");
}

TEST_CASE("DB read_only: with a pool, replays the PM WAL and leaves pool and directory untouched", "[pm]") {
  TempDir dir;
  TempPool pool;
  const std::string path = dir.Sub("db");
  Fill(Small(pool.path()), path);
  CheckReadOnly(Small(pool.path()), path, pool.path());
}

TEST_CASE("DB read_only: a missing database is an error, never created") {
  TempDir dir;
  Options o = Small();
  o.read_only = true;
  auto db = DB::Open(o, dir.Sub("none"));
  REQUIRE(!db.has_value());
  struct stat st;
  CHECK(::stat(dir.Sub("none").c_str(), &st) != 0);
}

TEST_CASE("DB nvm_uuid: the pool is created with it, and a pool with another UUID is refused naming both", "[pm]") {
  TempDir dir;
  TempPool pool;
  const std::string path = dir.Sub("db");
  const std::string mine = "0a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d";
  Options o = Small(pool.path());
  o.nvm_uuid = mine;
  {
    auto db = DB::Open(o, path);
    if (!db) FAIL(db.error().ToString());
    REQUIRE((*db)->Close().ok());
  }
  {
    auto p = Pool::Open(pool.path());
    REQUIRE(p.has_value());
    CHECK(UuidToString((*p)->header().uuid) == mine);
  }
  CHECK(ReadAll(path + "/POOL-IDENTITY") == mine + "\n");
  o.nvm_uuid = "ffffffff-0000-4000-8000-000000000001";
  auto db = DB::Open(o, path);
  REQUIRE(!db.has_value());
  const std::string msg = db.error().ToString();
  INFO(msg);
  CHECK(msg.find(pool.path()) != std::string::npos);
  CHECK(msg.find(mine) != std::string::npos);
  CHECK(msg.find("ffffffff-0000-4000-8000-000000000001") != std::string::npos);
  o.nvm_uuid = "not-a-uuid";
  CHECK(!DB::Open(o, path).has_value());
}
