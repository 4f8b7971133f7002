// The engine on a persistent-memory pool: PM WAL, matrix container as L0,
// column compaction into L1, pool/directory identity.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "base/coding.h"
#include "base/random.h"
#include "kvcore/db_context.h"
#include "kvcore/include/db.h"
#include "kvcore/nvm_backend.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::TempDir;
using mxfs::testing::TempPool;

namespace {

Options PoolOptions(const std::string& pool) {
  Options o;
  o.nvm_path = pool;
  o.nvm_size = 8 << 20;
  o.write_buffer_size = 16 << 10;
  o.target_file_size_base = 16 << 10;
  o.num_levels = 4;
  o.block_size = 512;
  return o;
}

std::string Prop(DB* db, const char* name) {
  std::string v;
  REQUIRE(db->GetProperty(name, &v));
  return v;
}

}  // namespace

TEST_CASE("NVM DB: writes survive close and reopen through the PM WAL and the container", "[pm]") {
  TempDir dir;
  TempPool pool;
  const std::string path = dir.Sub("db");
  {
    auto db = DB::Open(PoolOptions(pool.path()), path);
    if (!db) FAIL(db.error().ToString());
    for (int i = 0; i < 2000; i++) {
      REQUIRE((*db)->Put(WriteOptions(), "key" + std::to_string(i), "value" + std::to_string(i)).ok());
    }
    REQUIRE((*db)->Delete(WriteOptions(), "key7").ok());
    const std::string c = Prop(db->get(), "matrixkv.container");
    INFO(c);
    CHECK(c.find("receiver.rows") != std::string::npos);
    REQUIRE((*db)->Close().ok());
  }
  auto db = DB::Open(PoolOptions(pool.path()), path);
  if (!db) FAIL(db.error().ToString());
  for (int i = 0; i < 2000; i++) {
    std::string v;
    Status s = (*db)->Get(ReadOptions(), "key" + std::to_string(i), &v);
    if (i == 7) {
      REQUIRE(s.IsNotFound());
    } else {
      REQUIRE(s.ok());
      REQUIRE(v == "value" + std::to_string(i));
    }
  }
  // No SSD log files: the WAL is in the pool.
  CHECK(mxfs::testing::FilesMatching(path, ".log", false).empty());
}

TEST_CASE("NVM DB: a full container is compacted column by column into L1 and nothing is lost", "[pm]") {
  // With two threads, columns spanning several L1 tables are merged as
  // parallel sub-ranges.
  const int threads = GENERATE(1, 2);
  INFO("column_compaction_threads " << threads);
  TempDir dir;
  TempPool pool;
  const std::string path = dir.Sub("db");
  Options options = PoolOptions(pool.path());
  options.column_compaction_threads = threads;
  auto opened = DB::Open(options, path);
  if (!opened) FAIL(opened.error().ToString());
  auto db = std::move(*opened);
  std::map<std::string, std::string> model;
  Random rnd(7);
  for (int i = 0; i < 30000; i++) {
    const std::string k = "k" + std::to_string(rnd.Uniform(5000));
    if (rnd.OneIn(8)) {
      REQUIRE(db->Delete(WriteOptions(), k).ok());
      model.erase(k);
    } else {
      const std::string v = "v" + std::to_string(i) + std::string(rnd.Uniform(200), 'x');
      REQUIRE(db->Put(WriteOptions(), k, v).ok());
      model[k] = v;
    }
  }
  const Snapshot* snap = db->GetSnapshot();
  const auto snap_model = model;
  for (int i = 0; i < 3000; i++) {
    const std::string k = "k" + std::to_string(rnd.Uniform(5000));
    REQUIRE(db->Put(WriteOptions(), k, "after").ok());
    model[k] = "after";
  }
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  const std::string stats = Prop(db.get(), "matrixkv.stats");
  const std::string comps = Prop(db.get(), "matrixkv.compactions");
  INFO(stats << comps << Prop(db.get(), "matrixkv.container"));
  CHECK(stats.find("background.error none") != std::string::npos);
  // Counted, not looked up in matrixkv.compactions: the manual L1->L2 steps
  // of CompactRange may have pushed every column out of its recent list.
  CHECK(stats.find("column.compactions 0\n") == std::string::npos);
  CHECK(std::stoull(Prop(db.get(), "matrixkv.bytes-written-ssd")) > 0);
  if (threads > 1) CHECK(stats.find("column.parallel 0\n") == std::string::npos);
  auto check = [&](const std::map<std::string, std::string>& m, const Snapshot* s) {
    ReadOptions ro;
    ro.snapshot = s;
    for (int i = 0; i < 5000; i++) {
      const std::string k = "k" + std::to_string(i);
      std::string v;
      Status st = db->Get(ro, k, &v);
      auto it = m.find(k);
      if (it == m.end()) {
        REQUIRE(st.IsNotFound());
      } else {
        REQUIRE(st.ok());
        REQUIRE(v == it->second);
      }
    }
    auto iter = db->NewIterator(ro);
    auto it = m.begin();
    for (iter->SeekToFirst(); iter->Valid(); iter->Next(), ++it) {
      REQUIRE(it != m.end());
      REQUIRE(iter->key().ToString() == it->first);
      REQUIRE(iter->value().ToString() == it->second);
    }
    REQUIRE(iter->status().ok());
    REQUIRE(it == m.end());
  };
  check(model, nullptr);
  check(snap_model, snap);
  db->ReleaseSnapshot(snap);
  REQUIRE(db->Close().ok());
  db.reset();
  auto again = DB::Open(PoolOptions(pool.path()), path);
  if (!again) FAIL(again.error().ToString());
  db = std::move(*again);
  check(model, nullptr);
}

// With values in blob files L1 holds only keys and blob indexes: far less
// than a table of target_file_size_base. Column compaction writes it as
// smaller tables (ColumnOutputFileSize), so that later drains cut the
// compactor into several columns at their bounds and free its pages column
// by column, not all at once at the end of one column of everything.
TEST_CASE("NVM DB: with values in blob files, L1 is kept in tables that columns can be cut at", "[pm]") {
  TempDir dir;
  TempPool pool;
  Options options = PoolOptions(pool.path());
  options.write_buffer_size = 256 << 10;
  options.target_file_size_base = 512 << 10;
  options.container_max_receiver_rows = 0;  // drains of the whole receiver share
  auto opened = DB::Open(options, dir.Sub("db"));
  if (!opened) FAIL(opened.error().ToString());
  auto db = std::move(*opened);
  std::map<std::string, std::string> model;
  Random rnd(11);
  for (int i = 0; i < 12000; i++) {
    char k[16];
    std::snprintf(k, sizeof(k), "k%08u", static_cast<unsigned>(rnd.Uniform(20000)));
    const std::string v = std::to_string(i) + std::string(3000, 'b');
    REQUIRE(db->Put(WriteOptions(), k, v).ok());
    model[k] = v;
  }
  REQUIRE(db->WaitForIdle().ok());
  const std::string stats = Prop(db.get(), "matrixkv.stats");
  const std::string container = Prop(db.get(), "matrixkv.container");
  INFO(stats << Prop(db.get(), "matrixkv.levels") << container);
  auto field = [&](const std::string& text, const std::string& name) {
    const size_t at = text.find("\n" + name + " ");
    REQUIRE(at != std::string::npos);
    return std::stoull(text.substr(at + name.size() + 2));
  };
  CHECK(field(stats, "blob.files") > 0);
  CHECK(std::stoull(Prop(db.get(), "matrixkv.num-files-at-level1")) >= 4);
  // Several columns per drain once L1 has tables to cut at.
  CHECK(field(container, "columns.compacted") >= 2 * field(container, "switches"));
  for (const auto& [k, v] : model) {
    std::string got;
    REQUIRE(db->Get(ReadOptions(), k, &got).ok());
    REQUIRE(got == v);
  }
  REQUIRE(db->Close().ok());
}

// Directory scans (ReadOptions::prefix): rows and tables that cannot hold
// the prefix are left out of the merge, and the scan shows exactly the
// model's keys of the prefix, through many small rows, deletions, column
// compactions into L1 and a reopen; also without a pool (L0 tables).
TEST_CASE("NVM DB: prefix scans skip rows and tables without the prefix and miss nothing", "[pm]") {
  const bool with_pool = GENERATE(true, false);
  INFO("pool " << with_pool);
  TempDir dir;
  TempPool pool;
  const std::string path = dir.Sub("db");
  Options options = PoolOptions(pool.path());
  if (!with_pool) options.nvm_path.clear();
  options.prefix_length = 4;  // "d" and a 3-digit directory
  options.container_max_receiver_rows = 0;  // let rows pile up
  auto opened = DB::Open(options, path);
  if (!opened) FAIL(opened.error().ToString());
  auto db = std::move(*opened);
  std::map<std::string, std::string> model;
  Random rnd(11);
  auto dirname = [](uint32_t d) { return "d" + std::to_string(100 + d); };
  // Each round writes a few directories only, so most rows hold few of them.
  for (int round = 0; round < 60; round++) {
    const uint32_t base = rnd.Uniform(40);
    for (int i = 0; i < 150; i++) {
      const std::string k = dirname(base + rnd.Uniform(3)) + "/f" + std::to_string(rnd.Uniform(60));
      if (rnd.OneIn(5)) {
        REQUIRE(db->Delete(WriteOptions(), k).ok());
        model.erase(k);
      } else {
        const std::string v = "v" + std::to_string(round) + std::string(rnd.Uniform(100), 'x');
        REQUIRE(db->Put(WriteOptions(), k, v).ok());
        model[k] = v;
      }
      if (rnd.OneIn(50)) {  // other key shapes beside the dentries
        REQUIRE(db->Put(WriteOptions(), "i" + std::to_string(rnd.Uniform(1000)), "inode").ok());
      }
    }
  }
  auto check = [&](DB* d) {
    for (uint32_t dn = 0; dn < 45; dn++) {
      const std::string prefix = dirname(dn);
      ReadOptions ro;
      ro.prefix = prefix;
      std::vector<std::string> want, got, back;
      for (auto it = model.lower_bound(prefix); it != model.end() && it->first.starts_with(prefix); ++it) {
        want.push_back(it->first + "=" + it->second);
      }
      auto iter = d->NewIterator(ro);
      for (iter->SeekToFirst(); iter->Valid(); iter->Next()) got.push_back(iter->key().ToString() + "=" + iter->value().ToString());
      REQUIRE(iter->status().ok());
      for (iter->SeekToLast(); iter->Valid(); iter->Prev()) back.insert(back.begin(), iter->key().ToString() + "=" + iter->value().ToString());
      REQUIRE(iter->status().ok());
      REQUIRE(got == want);
      REQUIRE(back == want);
      // Seek inside the prefix, as a listing continued at a name does.
      iter->Seek(prefix + "/f3");
      auto m = model.lower_bound(prefix + "/f3");
      if (m != model.end() && m->first.starts_with(prefix)) {
        REQUIRE(iter->Valid());
        REQUIRE(iter->key().ToString() == m->first);
      } else {
        REQUIRE_FALSE(iter->Valid());
      }
    }
  };
  check(db.get());
  if (with_pool) {
    const std::string c = Prop(db.get(), "matrixkv.container");
    INFO(c);
    CHECK(c.find("prefix_scan.rows.skipped 0\n") == std::string::npos);
  }
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  check(db.get());
  REQUIRE(db->Close().ok());
  db.reset();
  auto again = DB::Open(options, path);
  if (!again) FAIL(again.error().ToString());
  check(again->get());
}

// Issue 20: the flush walked the rows of a container version it did not
// hold (a temporary shared_ptr), so a reader dropping the last Version that
// pinned it freed the rows under the loop. Readers here pin and drop
// Versions as fast as they can while flushes and two column compaction
// threads install container versions; under ASan a walk over a freed
// version aborts the test.
TEST_CASE("NVM DB: readers dropping versions while flushes and column compactions run touch no freed version", "[pm]") {
  TempDir dir;
  TempPool pool;
  const std::string path = dir.Sub("db");
  Options options = PoolOptions(pool.path());
  options.column_compaction_threads = 2;
  options.write_buffer_size = 8 << 10;
  auto opened = DB::Open(options, path);
  if (!opened) FAIL(opened.error().ToString());
  auto db = std::move(*opened);
  constexpr int kKeys = 2000;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> scans{0}, bad{0};
  auto reader = [&](uint64_t seed) {
    Random rnd(seed);
    while (!done.load()) {
      if (rnd.OneIn(2)) {
        std::string v;
        Status s = db->Get(ReadOptions(), "k" + std::to_string(rnd.Uniform(kKeys)), &v);
        if (!s.ok() && !s.IsNotFound()) bad++;
        continue;
      }
      auto it = db->NewIterator(ReadOptions());
      it->Seek("k" + std::to_string(rnd.Uniform(kKeys)));
      for (int n = 0; n < 3 && it->Valid(); n++) it->Next();
      if (!it->status().ok()) bad++;
      scans++;
    }
  };
  std::vector<std::thread> readers;
  for (uint64_t t = 0; t < 3; t++) readers.emplace_back(reader, 11 + t);
  Random rnd(5);
  Status ws;
  for (int i = 0; i < 60000 && ws.ok(); i++) {
    ws = db->Put(WriteOptions(), "k" + std::to_string(rnd.Uniform(kKeys)), std::string(40 + rnd.Uniform(80), 'v'));
  }
  done = true;
  for (auto& t : readers) t.join();
  INFO(ws.ToString() << Prop(db.get(), "matrixkv.stats"));
  REQUIRE(ws.ok());
  CHECK(bad.load() == 0);
  CHECK(scans.load() > 0);
  CHECK(std::stoull(Prop(db.get(), "matrixkv.bytes-written-ssd")) > 0);
  REQUIRE(db->Close().ok());
}

TEST_CASE("NVM DB: a pool and a database directory of different instances are refused") {
  TempDir dir;
  TempPool pool_a, pool_b;
  {
    auto a = DB::Open(PoolOptions(pool_a.path()), dir.Sub("a"));
    REQUIRE(a);
    auto b = DB::Open(PoolOptions(pool_b.path()), dir.Sub("b"));
    REQUIRE(b);
  }
  auto mixed = DB::Open(PoolOptions(pool_b.path()), dir.Sub("a"));
  REQUIRE(!mixed);
  CHECK(mixed.error().ToString().find("belong to different instances") != std::string::npos);
  Options ssd = PoolOptions("");
  auto without = DB::Open(ssd, dir.Sub("a"));
  REQUIRE(!without);
  CHECK(without.error().ToString().find("nvm_path") != std::string::npos);
  auto new_db_old_pool = DB::Open(PoolOptions(pool_a.path()), dir.Sub("c"));
  REQUIRE(!new_db_old_pool);
  CHECK(new_db_old_pool.error().ToString().find("belong to different instances") != std::string::npos);
}

// The PM WAL asks for an early memtable switch when the active memtable's
// own records fill its share (capacity / max_write_buffer_number), whatever
// the immutable memtables' records still take: counting those too made the
// writer wait for every flush (BENCHMARKS.md, issue 16 session 5).
TEST_CASE("NVM DB: the PM WAL switches early by the active memtable's share, not the whole log", "[pm]") {
  TempDir dir;
  TempPool pool;
  DbContext ctx(BytewiseComparator());
  ctx.dbname = dir.Sub("db");
  ctx.fs = DefaultFileSystem();
  REQUIRE(ctx.fs->CreateDir(ctx.dbname).ok());
  ctx.options = PoolOptions(pool.path());
  ctx.options.write_buffer_size = 256 << 10;
  ctx.options.max_write_buffer_number = 2;
  NvmBackend nvm(&ctx);
  REQUIRE(nvm.Open(true).ok());
  auto store = NewPmWalStore(&nvm);
  const PmWal& wal = *nvm.wal();
  const uint64_t share = wal.capacity() / 2;
  INFO("capacity " << wal.capacity() << " segment " << wal.segment_size());
  REQUIRE(share > 8 * 4096);
  std::string record(4096, 'v');
  uint64_t seq = 0;
  // Appends to log until its share is full (or max records, if not
  // negative); returns the records appended.
  auto fill_share = [&](WalWriter* log, int max) {
    int n = 0;
    while (!store->WantsEarlySwitch() && n != max) {
      EncodeFixed64(record.data(), ++seq);
      EncodeFixed32(record.data() + 8, 1);
      REQUIRE(log->AddRecord(record, false).ok());
      n++;
      REQUIRE(uint64_t(n) * record.size() <= share + record.size());
    }
    return n;
  };
  auto first = store->NewLog(1);
  REQUIRE(first);
  const int n1 = fill_share(first->get(), -1);
  CHECK(uint64_t(n1) * record.size() >= share - 2 * record.size());
  // The switch: the first memtable's records stay in the log until its
  // flush, but they are not the new memtable's.
  auto second = store->NewLog(2);
  REQUIRE(second);
  CHECK(!store->WantsEarlySwitch());
  CHECK(wal.BytesUsed() > share);
  const int half = fill_share(second->get(), n1 / 2);
  CHECK(half == n1 / 2);
  CHECK(!store->WantsEarlySwitch());
  // Its flush releases the first memtable's records; the second memtable
  // gets a whole share of its own.
  store->ReleaseFlushed(static_cast<uint64_t>(n1));
  CHECK(wal.BytesUsed() < share);
  const int n2 = half + fill_share(second->get(), -1);
  CHECK(n2 >= n1 - 2);
  CHECK(n2 <= n1 + 2);
  CHECK(store->WantsEarlySwitch());
}

// Re-runs every [pm] test of this binary with the cache-line flush path forced.
TEST_CASE("NVM DB: PM tests pass with PMEM2_FORCE_GRANULARITY=CACHE_LINE") {
  if (std::getenv("PMEM2_FORCE_GRANULARITY") != nullptr) return;  // already the re-run
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
    }
    execl("/proc/self/exe", "test_kvcore", "[pm]", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
