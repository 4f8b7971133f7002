#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "kvcore/include/db.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::TempDir;

namespace {

Options SmallOptions() {
  Options o;
  o.write_buffer_size = 16 << 10;
  o.target_file_size_base = 8 << 10;
  o.max_bytes_for_level_base = 64 << 10;
  o.level0_file_num_compaction_trigger = 2;
  o.block_size = 1024;
  o.block_cache_size = 256 << 10;
  return o;
}

std::unique_ptr<DB> OpenOrDie(const Options& o, const std::string& path) {
  auto db = DB::Open(o, path);
  if (!db) FAIL("open " << path << ": " << db.error().ToString());
  return std::move(*db);
}

std::string Get(DB* db, const std::string& k, const Snapshot* snap = nullptr) {
  ReadOptions ro;
  ro.snapshot = snap;
  std::string v;
  Status s = db->Get(ro, k, &v);
  if (s.IsNotFound()) return "NOT_FOUND";
  if (!s.ok()) return "ERROR: " + s.ToString();
  return v;
}

std::string Contents(DB* db, const Snapshot* snap = nullptr) {
  ReadOptions ro;
  ro.snapshot = snap;
  auto it = db->NewIterator(ro);
  std::string r;
  for (it->SeekToFirst(); it->Valid(); it->Next()) r += it->key().ToString() + "=" + it->value().ToString() + " ";
  if (!it->status().ok()) r += "ERROR: " + it->status().ToString();
  return r;
}

std::string Key(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "key%06d", i);
  return buf;
}

std::string Prop(DB* db, const std::string& name) {
  std::string v;
  if (!db->GetProperty(name, &v)) return "(none)";
  return v;
}

}  // namespace

TEST_CASE("DB: put, get, delete, overwrite") {
  TempDir dir;
  auto db = OpenOrDie(SmallOptions(), dir.Sub("db"));
  WriteOptions wo;
  REQUIRE(db->Put(wo, "foo", "v1").ok());
  CHECK(Get(db.get(), "foo") == "v1");
  REQUIRE(db->Put(wo, "foo", "v2").ok());
  CHECK(Get(db.get(), "foo") == "v2");
  REQUIRE(db->Delete(wo, "foo").ok());
  CHECK(Get(db.get(), "foo") == "NOT_FOUND");
  CHECK(Get(db.get(), "missing") == "NOT_FOUND");
  REQUIRE(db->Put(wo, "", "empty key").ok());
  CHECK(Get(db.get(), "") == "empty key");
  REQUIRE(db->Close().ok());
  CHECK(db->Close().IsInvalidArgument());
  CHECK(db->Put(wo, "x", "y").IsInvalidArgument());
}

TEST_CASE("DB: data survives close and reopen, from the WAL and from tables") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  {
    auto db = OpenOrDie(SmallOptions(), path);
    for (int i = 0; i < 2000; i++) REQUIRE(db->Put(WriteOptions(), Key(i), "value" + std::to_string(i)).ok());
    for (int i = 0; i < 2000; i += 3) REQUIRE(db->Delete(WriteOptions(), Key(i)).ok());
  }  // destructor closes
  for (int round = 0; round < 2; round++) {
    auto db = OpenOrDie(SmallOptions(), path);
    for (int i = 0; i < 2000; i++) {
      INFO("key " << i << " round " << round);
      CHECK(Get(db.get(), Key(i)) == (i % 3 == 0 ? "NOT_FOUND" : "value" + std::to_string(i)));
    }
    REQUIRE(db->Close().ok());
    // Replayed logs are retired once their contents are in a table.
    CHECK(mxfs::testing::FilesMatching(path, ".log", false).size() == 1);
    CHECK(mxfs::testing::FilesMatching(path, "MANIFEST-", true).size() == 1);
  }
}

TEST_CASE("DB: with memtable blooms, every key reads back through memtables, recovery and tables") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  Options o = SmallOptions();
  o.memtable_bloom_size_ratio = 0.25;
  {
    auto db = OpenOrDie(o, path);
    for (int i = 0; i < 2000; i++) REQUIRE(db->Put(WriteOptions(), Key(i), "value" + std::to_string(i)).ok());
    for (int i = 0; i < 2000; i += 3) REQUIRE(db->Delete(WriteOptions(), Key(i)).ok());
    for (int i = 0; i < 2000; i++) {
      INFO("key " << i);
      CHECK(Get(db.get(), Key(i)) == (i % 3 == 0 ? "NOT_FOUND" : "value" + std::to_string(i)));
    }
    CHECK(Get(db.get(), Key(5000)) == "NOT_FOUND");
  }
  auto db = OpenOrDie(o, path);  // the WAL's tail replays into bloomed memtables
  for (int i = 0; i < 2000; i++) {
    INFO("key " << i << " after reopen");
    CHECK(Get(db.get(), Key(i)) == (i % 3 == 0 ? "NOT_FOUND" : "value" + std::to_string(i)));
  }
}

TEST_CASE("DB: flush and compaction move data down the tree and keep it readable") {
  TempDir dir;
  auto db = OpenOrDie(SmallOptions(), dir.Sub("db"));
  std::string big(200, 'x');
  for (int i = 0; i < 3000; i++) REQUIRE(db->Put(WriteOptions(), Key(i % 1000), big + std::to_string(i)).ok());
  REQUIRE(db->Flush().ok());
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  CHECK(Prop(db.get(), "matrixkv.num-files-at-level0") == "0");
  int deeper = 0;
  for (int l = 1; l < 7; l++) deeper += std::stoi(Prop(db.get(), "matrixkv.num-files-at-level" + std::to_string(l)));
  CHECK(deeper > 0);
  for (int i = 2000; i < 3000; i++) CHECK(Get(db.get(), Key(i % 1000)) == big + std::to_string(i));
  CHECK(std::stoull(Prop(db.get(), "matrixkv.bytes-written-ssd")) > 0);
  CHECK(std::stoull(Prop(db.get(), "matrixkv.user-bytes-written")) > 3000 * 200);
  CHECK(std::stod(Prop(db.get(), "matrixkv.write-amp")) > 0.0);
  const std::string stats = Prop(db.get(), "matrixkv.stats");
  CHECK(stats.find("background.error none") != std::string::npos);
  CHECK(stats.find("stall.micros.memtable-full") != std::string::npos);
  CHECK(Prop(db.get(), "matrixkv.compactions").find("manual L") != std::string::npos);
  CHECK(Prop(db.get(), "matrixkv.levels").find("L1") != std::string::npos);
  CHECK(Prop(db.get(), "matrixkv.no-such-thing") == "(none)");
}

TEST_CASE("DB: a thread that only reads moves the background threads behind it, a writing one does not") {
  TempDir dir;
  auto db = OpenOrDie(SmallOptions(), dir.Sub("db"));
  REQUIRE(db->Put(WriteOptions(), "k", "v").ok());
  // This thread wrote just now: its reads are no pure reads.
  CHECK(Get(db.get(), "k") == "v");
  CHECK(Prop(db.get(), "matrixkv.stats").find("readers.active 0\n") != std::string::npos);
  std::thread([&] { CHECK(Get(db.get(), "k") == "v"); }).join();
  const std::string stats = Prop(db.get(), "matrixkv.stats");
  CHECK(stats.find("readers.active 1\n") != std::string::npos);
  // nice 10 is used only where the threads may come back to 0 (root here).
  if (::geteuid() == 0) {
    CHECK(stats.find("background.share low\n") != std::string::npos);
    CHECK(stats.find("background.share.changes 1\n") != std::string::npos);
  }
  REQUIRE(db->Close().ok());
}

TEST_CASE("DB: iterator honours snapshots and hides deletions") {
  TempDir dir;
  auto db = OpenOrDie(SmallOptions(), dir.Sub("db"));
  WriteOptions wo;
  REQUIRE(db->Put(wo, "a", "1").ok());
  REQUIRE(db->Put(wo, "b", "2").ok());
  const Snapshot* snap = db->GetSnapshot();
  REQUIRE(db->Delete(wo, "a").ok());
  REQUIRE(db->Put(wo, "b", "3").ok());
  REQUIRE(db->Put(wo, "c", "4").ok());
  CHECK(Contents(db.get()) == "b=3 c=4 ");
  CHECK(Contents(db.get(), snap) == "a=1 b=2 ");
  CHECK(Get(db.get(), "a", snap) == "1");
  // Still true after the data moves into tables and is compacted.
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  CHECK(Contents(db.get()) == "b=3 c=4 ");
  CHECK(Contents(db.get(), snap) == "a=1 b=2 ");
  db->ReleaseSnapshot(snap);
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  CHECK(Contents(db.get()) == "b=3 c=4 ");
}

TEST_CASE("DB: iterator Prev and Next mix across memtable and tables") {
  TempDir dir;
  auto db = OpenOrDie(SmallOptions(), dir.Sub("db"));
  WriteOptions wo;
  for (int i = 0; i < 100; i += 2) REQUIRE(db->Put(wo, Key(i), "old").ok());
  REQUIRE(db->Flush().ok());
  for (int i = 1; i < 100; i += 2) REQUIRE(db->Put(wo, Key(i), "new").ok());
  for (int i = 0; i < 100; i += 10) REQUIRE(db->Delete(wo, Key(i)).ok());
  auto it = db->NewIterator(ReadOptions());
  it->Seek(Key(50));
  REQUIRE(it->Valid());
  CHECK(it->key().ToString() == Key(51));  // key 50 is deleted
  it->Prev();
  REQUIRE(it->Valid());
  CHECK(it->key().ToString() == Key(49));
  it->Prev();
  CHECK(it->key().ToString() == Key(48));
  CHECK(it->value().ToString() == "old");
  it->Next();
  CHECK(it->key().ToString() == Key(49));
  it->Next();
  CHECK(it->key().ToString() == Key(51));
  it->SeekToLast();
  CHECK(it->key().ToString() == Key(99));
  it->Next();
  CHECK_FALSE(it->Valid());
  it->SeekToFirst();
  CHECK(it->key().ToString() == Key(1));
  it->Prev();
  CHECK_FALSE(it->Valid());
  // Walk backwards over everything and count.
  int n = 0;
  for (it->SeekToLast(); it->Valid(); it->Prev()) n++;
  CHECK(n == 90);
}

TEST_CASE("DB: write batches apply atomically and concurrent writers all land") {
  TempDir dir;
  auto db = OpenOrDie(SmallOptions(), dir.Sub("db"));
  WriteBatch b;
  b.Put("x", "1");
  b.Put("y", "2");
  b.Delete("x");
  REQUIRE(db->Write(WriteOptions(), &b).ok());
  CHECK(Get(db.get(), "x") == "NOT_FOUND");
  CHECK(Get(db.get(), "y") == "2");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      WriteOptions wo;
      wo.sync = t % 2 == 0;
      for (int i = 0; i < 300; i++) {
        if (!db->Put(wo, "t" + std::to_string(t) + "-" + Key(i), std::string(100, 'a' + t)).ok()) FAIL_CHECK("put");
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; t++) {
    for (int i = 0; i < 300; i++) CHECK(Get(db.get(), "t" + std::to_string(t) + "-" + Key(i)) == std::string(100, 'a' + t));
  }
  CHECK(Prop(db.get(), "matrixkv.stats").find("write.groups") != std::string::npos);
}

TEST_CASE("DB: many writers beside forced memtable switches all land, in groups led by any of them") {
  TempDir dir;
  auto db = OpenOrDie(SmallOptions(), dir.Sub("db"));
  constexpr int kWriters = 8, kPuts = 400;
  std::atomic<bool> writing{true};
  // Flush queues a writer without a batch (a forced switch) among the others.
  std::thread switcher([&] {
    while (writing.load()) {
      if (!db->Flush().ok()) FAIL_CHECK("flush");
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPuts; i++) {
        WriteBatch b;
        b.Put("w" + std::to_string(t) + "-" + Key(i), std::string(64 + i % 200, 'a' + t));
        b.Put("last" + std::to_string(t), Key(i));
        if (!db->Write(WriteOptions(), &b).ok()) FAIL_CHECK("write");
      }
    });
  }
  for (auto& t : threads) t.join();
  writing.store(false);
  switcher.join();
  for (int t = 0; t < kWriters; t++) {
    for (int i = 0; i < kPuts; i++) {
      CHECK(Get(db.get(), "w" + std::to_string(t) + "-" + Key(i)) == std::string(64 + i % 200, 'a' + t));
    }
    CHECK(Get(db.get(), "last" + std::to_string(t)) == Key(kPuts - 1));
  }
  REQUIRE(db->Close().ok());
}

TEST_CASE("DB: bad options are InvalidArgument naming the option and value") {
  TempDir dir;
  Options o;
  o.write_buffer_size = 10;
  auto db = DB::Open(o, dir.Sub("db"));
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().IsInvalidArgument());
  CHECK(db.error().message().find("write_buffer_size = 10") != std::string_view::npos);

  o = Options();
  o.num_levels = 1;
  db = DB::Open(o, dir.Sub("db"));
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find("num_levels = 1") != std::string_view::npos);

  o = Options();
  o.level0_stop_writes_trigger = 3;
  db = DB::Open(o, dir.Sub("db"));
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find("level0_stop_writes_trigger = 3") != std::string_view::npos);

  o = Options();
  o.memtable_bloom_size_ratio = 0.5;
  db = DB::Open(o, dir.Sub("db"));
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find("memtable_bloom_size_ratio") != std::string_view::npos);

  o = Options();
  o.max_bytes_for_level_multiplier = 0.5;
  db = DB::Open(o, dir.Sub("db"));
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find("max_bytes_for_level_multiplier") != std::string_view::npos);

  o = Options();
  o.container_max_receiver_rows = 1;
  db = DB::Open(o, dir.Sub("db"));
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find("container_max_receiver_rows = 1") != std::string_view::npos);

  o = Options();
  o.container_tombstone_share = 1.5;
  db = DB::Open(o, dir.Sub("db"));
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find("container_tombstone_share = 1.5") != std::string_view::npos);

  o = Options();
  o.create_if_missing = false;
  db = DB::Open(o, dir.Sub("nothing-here"));
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find("does not exist") != std::string_view::npos);
}

TEST_CASE("DB: a second Open of one path fails naming the LOCK") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  // The other process is forked before the DB and its threads exist, and
  // waits for a byte on a pipe: a fork of a process with running threads can
  // copy a lock another thread holds (seen as a hang in ASan's allocator).
  int go[2];
  REQUIRE(::pipe(go) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(go[1]);
    char c = 0;
    if (::read(go[0], &c, 1) != 1) _exit(2);  // the parent gave up
    bool refused = false;
    mxfs::testing::RunInFreshThread([&] {
      auto other = DB::Open(SmallOptions(), path);
      refused = !other.has_value() && other.error().message().find("LOCK") != std::string_view::npos;
    });
    _exit(refused ? 0 : 1);
  }
  ::close(go[0]);
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() {
      if (fd >= 0) ::close(fd);
    }
  } release{go[1]};

  auto db = OpenOrDie(SmallOptions(), path);
  auto second = DB::Open(SmallOptions(), path);
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().IsBusy());
  CHECK(second.error().message().find(path + "/LOCK") != std::string_view::npos);

  // Another process is refused too.
  REQUIRE(::write(release.fd, "x", 1) == 1);
  ::close(release.fd);
  release.fd = -1;
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  REQUIRE(db->Close().ok());
  auto again = DB::Open(SmallOptions(), path);
  CHECK(again.has_value());
}

TEST_CASE("DB: opening a regular file is refused in plain words") {
  TempDir dir;
  const std::string path = dir.Sub("file");
  mxfs::testing::WriteAll(path, "not a database");
  auto db = DB::Open(SmallOptions(), path);
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find(path) != std::string_view::npos);
  CHECK(db.error().message().find("regular file") != std::string_view::npos);
}

TEST_CASE("DB: an unreadable directory is refused naming it") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  { auto db = OpenOrDie(SmallOptions(), path); }
  if (::geteuid() != 0) {
    // Not root: take our own read permission away instead of switching users.
    REQUIRE(::chmod(path.c_str(), 0) == 0);
    auto db = DB::Open(SmallOptions(), path);
    REQUIRE(::chmod(path.c_str(), 0700) == 0);
    REQUIRE_FALSE(db.has_value());
    CHECK(db.error().message().find(path) != std::string_view::npos);
    return;
  }
  REQUIRE(::chmod(path.c_str(), 0700) == 0);
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(2);
    std::string msg;
    mxfs::testing::RunInFreshThread([&] {
      auto db = DB::Open(SmallOptions(), path);
      msg = db.has_value() ? "OPENED" : db.error().ToString();
    });
    (void)!write(fds[1], msg.data(), msg.size());
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) msg.append(buf, n);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  INFO(msg);
  CHECK(msg != "OPENED");
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find("ermission denied") != std::string::npos);
}

TEST_CASE("DB: files without CURRENT are refused, not overwritten") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  {
    auto db = OpenOrDie(SmallOptions(), path);
    for (int i = 0; i < 500; i++) REQUIRE(db->Put(WriteOptions(), Key(i), std::string(100, 'v')).ok());
    REQUIRE(db->Flush().ok());
  }
  std::filesystem::remove(path + "/CURRENT");
  auto db = DB::Open(SmallOptions(), path);
  REQUIRE_FALSE(db.has_value());
  CHECK(db.error().message().find("no CURRENT") != std::string_view::npos);
  CHECK(db.error().message().find(path) != std::string_view::npos);
}

TEST_CASE("DB: compaction drops tombstones at the bottom unless a snapshot needs them") {
  TempDir dir;
  auto db = OpenOrDie(SmallOptions(), dir.Sub("db"));
  auto total_files = [&] {
    int n = 0;
    for (int l = 0; l < 7; l++) n += std::stoi(Prop(db.get(), "matrixkv.num-files-at-level" + std::to_string(l)));
    return n;
  };
  for (int i = 0; i < 500; i++) REQUIRE(db->Put(WriteOptions(), Key(i), std::string(50, 'v')).ok());
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  REQUIRE(total_files() > 0);
  const Snapshot* snap = db->GetSnapshot();
  for (int i = 0; i < 500; i++) REQUIRE(db->Delete(WriteOptions(), Key(i)).ok());
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  // The snapshot still sees every key, so values and tombstones stay.
  CHECK(total_files() > 0);
  CHECK(Get(db.get(), Key(7), snap) == std::string(50, 'v'));
  CHECK(Get(db.get(), Key(7)) == "NOT_FOUND");
  db->ReleaseSnapshot(snap);
  REQUIRE(db->CompactRange(nullptr, nullptr).ok());
  // Nothing is visible and nothing below needs hiding: the tree is empty.
  CHECK(total_files() == 0);
  CHECK(Contents(db.get()) == "");
}

TEST_CASE("DB: readers never see a value go backwards while writers, flushes and compactions run") {
  TempDir dir;
  Options o = SmallOptions();
  o.write_buffer_size = 8 << 10;
  auto db = OpenOrDie(o, dir.Sub("db"));
  constexpr int kWriters = 2, kKeys = 50, kRounds = 150;
  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::atomic<uint64_t> reads{0};
  auto value_of = [](int round) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%08d", round);
    return std::string(buf) + std::string(60, 'p');
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; w++) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < kRounds; round++) {
        WriteBatch b;
        for (int k = 0; k < kKeys; k++) b.Put("w" + std::to_string(w) + Key(k), value_of(round));
        if (!db->Write(WriteOptions(), &b).ok()) errors++;
      }
    });
  }
  for (int r = 0; r < 2; r++) {
    threads.emplace_back([&, r] {
      std::vector<int> last(kWriters * kKeys, -1);
      while (!done.load()) {
        if (r == 0) {
          for (int w = 0; w < kWriters; w++) {
            for (int k = 0; k < kKeys; k += 7) {
              std::string v;
              Status s = db->Get(ReadOptions(), "w" + std::to_string(w) + Key(k), &v);
              if (s.IsNotFound()) continue;
              if (!s.ok()) {
                errors++;
                continue;
              }
              const int round = std::stoi(v.substr(0, 8));
              if (round < last[w * kKeys + k]) errors++;
              last[w * kKeys + k] = round;
            }
          }
        } else {
          // A batch is atomic: one iterator sees all keys of a writer at one round.
          auto it = db->NewIterator(ReadOptions());
          std::map<int, std::set<std::string>> rounds_by_writer;
          for (it->SeekToFirst(); it->Valid(); it->Next()) {
            const int w = it->key()[1] - '0';
            rounds_by_writer[w].insert(it->value().ToString().substr(0, 8));
          }
          if (!it->status().ok()) errors++;
          for (const auto& [w, rounds] : rounds_by_writer) {
            if (rounds.size() != 1) errors++;
          }
        }
        reads++;
      }
    });
  }
  for (int w = 0; w < kWriters; w++) threads[w].join();
  done = true;
  for (size_t i = kWriters; i < threads.size(); i++) threads[i].join();
  CHECK(errors.load() == 0);
  CHECK(reads.load() > 0);
  for (int w = 0; w < kWriters; w++) {
    for (int k = 0; k < kKeys; k++) CHECK(Get(db.get(), "w" + std::to_string(w) + Key(k)) == value_of(kRounds - 1));
  }
}

// Get and NewIterator read without the DB mutex (a ReadView published on
// every memtable switch, flush and Version change): a value acknowledged
// before a read starts must be seen by it, however the memtables and L0
// move meanwhile.
TEST_CASE("DB: a Get sees every write acknowledged before it, while memtables switch, flush and compact") {
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool" : "SSD L0"));
  TempDir dir;
  mxfs::testing::TempPool pool(use_pool);
  Options o;
  o.write_buffer_size = 8 << 10;  // a switch every few dozen writes
  o.target_file_size_base = 8 << 10;
  o.max_bytes_for_level_base = 32 << 10;
  o.num_levels = 4;
  o.block_size = 512;
  if (use_pool) {
    o.nvm_path = pool.path();
    o.nvm_size = 8 << 20;
    o.container_share = 0.1;
  }
  auto opened = DB::Open(o, dir.Sub("db"));
  if (!opened) FAIL(opened.error().ToString());
  auto db = std::move(*opened);
  constexpr int kKeys = 8;
  std::atomic<uint64_t> acked[kKeys];
  for (auto& a : acked) a = 0;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> stale{0}, reads{0};
  auto key = [](int k) { return "key" + std::to_string(k); };
  auto value = [](uint64_t n) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%012llu", static_cast<unsigned long long>(n));
    return std::string(buf) + std::string(100, 'v');
  };
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; r++) {
    readers.emplace_back([&, r] {
      uint64_t i = static_cast<uint64_t>(r);
      while (!stop.load()) {
        const int k = static_cast<int>(i++ % kKeys);
        const uint64_t want = acked[k].load();
        std::string v;
        Status s;
        if (i % 2 == 0) {
          s = db->Get(ReadOptions(), key(k), &v);
        } else {  // an iterator reads the same view
          auto it = db->NewIterator(ReadOptions());
          it->Seek(key(k));
          if (it->Valid() && it->key() == Slice(key(k))) v = it->value().ToString();
          else s = it->status().ok() ? Status::NotFound(key(k)) : it->status();
        }
        reads++;
        if (want == 0) continue;
        if (!s.ok() || std::stoull(v.substr(0, 12)) < want) stale++;
      }
    });
  }
  for (uint64_t n = 1; n <= 6000; n++) {
    const int k = static_cast<int>(n % kKeys);
    REQUIRE(db->Put(WriteOptions(), key(k), value(n)).ok());
    acked[k] = n;
  }
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(reads.load() > 0);
  CHECK(stale.load() == 0);
  REQUIRE(db->Close().ok());
  std::string v;
  CHECK(db->Get(ReadOptions(), key(0), &v).IsInvalidArgument());  // closed: said so
}
