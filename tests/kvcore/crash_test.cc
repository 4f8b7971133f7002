// Crash tests: a forked child writes with sync on and reports every
// acknowledged write through a pipe; the parent SIGKILLs it at a random
// moment, reopens the database and checks that every acknowledged write is
// there and that nothing deleted came back.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "base/random.h"
#include "kvcore/include/db.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::TempDir;
using mxfs::testing::TempPool;
using mxfs::testing::WriteLine;

namespace {

// How a crash test's child writes and how its rounds follow each other.
// The defaults keep each round's PM WAL traffic within one segment; large
// values and memtables make the log wrap, so that flushes release whole
// segments while the child writes on.
struct Shape {
  int column_threads = 1;              // Options.column_compaction_threads
  size_t nvm_size = 8 << 20;           // the WAL gets a quarter, in segments of 1 MiB
  size_t write_buffer_size = 8 << 10;  // flushes and compactions run while we kill
  uint32_t value_filler = 200;         // each value: a tag, then [0, value_filler) bytes
  uint32_t kill_window = 400;          // random kills after 40 + [0, kill_window) acknowledged writes
  // The parent checks each round through a read-only open (as fsck -n
  // does), which changes nothing, so the next round's child opens the
  // state the kill left, not one a writable open recovered and closed; a
  // writable open checks once more at the end.
  bool chain = false;
};

Options CrashOptions(const std::string& pool, const Shape& shape = {}) {
  Options o;
  o.column_compaction_threads = shape.column_threads;
  o.nvm_path = pool;
  o.nvm_size = shape.nvm_size;
  o.container_share = 0.1;  // the receiver switches early: column compactions run while we kill
  o.write_buffer_size = shape.write_buffer_size;
  o.target_file_size_base = 4 << 10;
  o.max_bytes_for_level_base = 16 << 10;
  o.level0_file_num_compaction_trigger = 2;
  o.num_levels = 4;
  o.block_size = 512;
  return o;
}

// The child: "I <key> <value|->" before a write, "A" after it is acknowledged.
// kill_at: the kill point the child dies at (it gives up after max_writes).
[[noreturn]] void ChildMain(const std::string& path, const std::string& pool, uint64_t seed, int fd,
                            const std::string& kill_at, uint64_t max_writes, const Shape& shape) {
  if (!kill_at.empty()) ::setenv("MXFS_KILL_AT", kill_at.c_str(), 1);
  auto db = DB::Open(CrashOptions(pool, shape), path);
  if (!db) {
    WriteLine(fd, "E " + db.error().ToString() + "\n");
    _exit(2);
  }
  Random rnd(seed);
  WriteOptions wo;
  wo.sync = true;
  for (uint64_t n = 0; n < max_writes; n++) {
    const std::string key = "key" + std::to_string(rnd.Uniform(300));
    const bool del = rnd.OneIn(4);
    const std::string value =
        "v" + std::to_string(seed) + "." + std::to_string(n) + std::string(rnd.Uniform(shape.value_filler), 'x');
    WriteLine(fd, "I " + key + " " + (del ? std::string("-") : value) + "\n");
    Status s = del ? (*db)->Delete(wo, key) : (*db)->Put(wo, key, value);
    if (!s.ok()) {
      WriteLine(fd, "E " + s.ToString() + "\n");
      _exit(2);
    }
    WriteLine(fd, "A\n");
  }
  if (!kill_at.empty()) {
    // Background work did not reach the kill point in time (slow builds such
    // as SAN=1 change the timing): drive it there. A flush passes the flush
    // points and a full CompactRange drains the container through column
    // compactions into L1, so every flush and column point is on this path.
    (*db)->Flush().IgnoreError();
    (*db)->CompactRange(nullptr, nullptr).IgnoreError();
  }
  _exit(5);  // the kill point was never reached
}

using Model = std::map<std::string, std::optional<std::string>>;  // nullopt: deleted
using Write = std::pair<std::string, std::optional<std::string>>;

// Every acknowledged write of *model is in db, and nothing else: a scan
// yields each live key once, in order, with its value. in_flight, the write
// the child died in, may have landed; then *model takes it.
void CheckModel(DB* db, Model* model, const std::optional<Write>& in_flight) {
  for (const auto& [key, expect] : *model) {
    std::string v;
    Status s = db->Get(ReadOptions(), key, &v);
    std::optional<std::string> got = s.ok() ? std::optional<std::string>(v) : std::nullopt;
    REQUIRE((s.ok() || s.IsNotFound()));
    if (in_flight && in_flight->first == key && got == in_flight->second) {
      (*model)[key] = got;  // the unacknowledged write landed; that is allowed
      continue;
    }
    INFO("key " << key);
    REQUIRE(got == expect);
  }
  if (in_flight && !model->contains(in_flight->first)) {
    std::string v;
    Status s = db->Get(ReadOptions(), in_flight->first, &v);
    if (s.ok()) (*model)[in_flight->first] = v;
  }
  // Nothing duplicated, nothing resurrected.
  auto it = db->NewIterator(ReadOptions());
  auto m = model->begin();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    while (m != model->end() && !m->second) ++m;
    REQUIRE(m != model->end());
    REQUIRE(it->key().ToString() == m->first);
    REQUIRE(it->value().ToString() == *m->second);
    ++m;
  }
  REQUIRE(it->status().ok());
  while (m != model->end() && !m->second) ++m;
  REQUIRE(m == model->end());
}

// rounds: one per kill point when kill_points is given, else random kills.
void RunCrashRounds(bool use_pool, const std::vector<std::string>& kill_points, int random_rounds,
                    const Shape& shape = {}) {
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Model model;
  Random rnd(2024);
  const int rounds = kill_points.empty() ? random_rounds : static_cast<int>(kill_points.size());
  for (int round = 0; round < rounds; round++) {
    const std::string kill_at = kill_points.empty() ? "" : kill_points[static_cast<size_t>(round)];
    INFO("round " << round << " kill point " << kill_at << (use_pool ? " (pool)" : " (SSD)"));
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      mxfs::testing::RunInFreshThread(
          [&] {
            ChildMain(path, pool.path(), 1000 + round, fds[1], kill_at, kill_at.empty() ? ~uint64_t{0} : 30000,
                      shape);
          });
      _exit(4);
    }
    ::close(fds[1]);
    const uint64_t kill_after = 40 + rnd.Uniform(shape.kill_window);
    uint64_t acks = 0;
    bool killed = false;
    std::string buf;
    std::vector<std::string> lines;
    char chunk[4096];
    while (true) {
      ssize_t n = ::read(fds[0], chunk, sizeof(chunk));
      if (n <= 0) break;
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
    if (!kill_at.empty()) {
      INFO("child exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << "; last line "
                                << (lines.empty() ? std::string() : lines.back()));
      REQUIRE(WIFSIGNALED(status));  // it died at the kill point
      REQUIRE(WTERMSIG(status) == SIGKILL);
    } else {
      REQUIRE(killed);
    }
    REQUIRE(WIFSIGNALED(status));

    // Replay the child's report: acknowledged writes are certain; the one
    // in flight when it died may or may not have happened.
    std::optional<Write> in_flight;
    for (const std::string& line : lines) {
      INFO(line);
      REQUIRE(line[0] != 'E');
      if (line[0] == 'I') {
        const size_t sp = line.find(' ', 2);
        const std::string key = line.substr(2, sp - 2);
        const std::string v = line.substr(sp + 1);
        in_flight = {key, v == "-" ? std::nullopt : std::optional<std::string>(v)};
      } else if (line == "A") {
        REQUIRE(in_flight.has_value());
        model[in_flight->first] = in_flight->second;
        in_flight.reset();
      }
    }

    Options reopen = CrashOptions(pool.path(), shape);
    reopen.read_only = shape.chain;
    auto db = DB::Open(reopen, path);
    if (!db) FAIL("reopen after kill: " << db.error().ToString());
    CheckModel(db->get(), &model, in_flight);
    REQUIRE((*db)->Close().ok());
  }
  if (shape.chain) {
    INFO("writable open after the last round");
    auto db = DB::Open(CrashOptions(pool.path(), shape), path);
    if (!db) FAIL("writable open after the last kill: " << db.error().ToString());
    CheckModel(db->get(), &model, std::nullopt);
    REQUIRE((*db)->Close().ok());
  }
  CHECK(model.size() > 50);
}

}  // namespace

TEST_CASE("Crash: SIGKILL at random moments loses no acknowledged write") {
  const bool use_pool = GENERATE(false, true);
  RunCrashRounds(use_pool, {}, 10);
}

TEST_CASE("Crash: dying at each persistence point of the PM path loses nothing acknowledged", "[pm]") {
  RunCrashRounds(true,
                 {"wal.before_tail", "wal.after_tail", "rowtable.mid_copy", "rowtable.before_commit",
                  "rowtable.after_commit", "kvcore.flush.before_manifest", "kvcore.flush.after_manifest",
                  "container.after_switch", "kvcore.column.mid_merge", "kvcore.compaction.before_output_sync",
                  "kvcore.column.before_manifest",
                  "kvcore.column.after_manifest", "column.before_commit", "column.before_free",
                  "kvcore.column.after_free", "kvcore.column.pipelined", "wal.mid_append"},
                 0);
}

TEST_CASE("Crash: dying while one column commits and the next merges loses nothing acknowledged", "[pm]") {
  // Column k+1 merges while column k's outputs sync and its edit commits:
  // the child dies with both in flight (kvcore.column.pipelined: k+1's
  // outputs written, k's commit anywhere), and at each of k's commit points
  // while k+1 may be merging.
  RunCrashRounds(true,
                 {"kvcore.column.pipelined", "kvcore.compaction.before_output_sync", "kvcore.column.before_manifest",
                  "kvcore.column.after_manifest", "column.before_commit", "column.before_free",
                  "column.after_unlink", "kvcore.column.after_free", "kvcore.column.pipelined"},
                 0);
}

TEST_CASE("Crash: dying inside a column compaction split over parallel sub-ranges loses nothing acknowledged",
          "[pm]") {
  // Two column compaction threads: a column spanning several L1 tables is
  // merged as two sub-ranges; the child dies mid-merge, after both merges
  // (before the one MANIFEST edit), and around that edit.
  RunCrashRounds(true,
                 {"kvcore.column.mid_merge", "kvcore.compaction.before_output_sync", "kvcore.column.after_sub_merges",
                  "kvcore.column.before_manifest",
                  "kvcore.column.after_manifest", "column.before_free", "kvcore.column.pipelined"},
                 0, {.column_threads = 2});
}

TEST_CASE("Crash: a pool instance killed again before any clean reopen, its WAL wrapping, loses nothing acknowledged",
          "[pm]") {
  // Each child opens the state the previous kill left (the parent checks it
  // through a read-only open, as fsck -n does, which writes nothing): a
  // flush commits rows the MANIFEST never hears of, so the next open's last
  // sequence, its replay and its flushes of the replayed memtables all rest
  // on rows and a WAL left by a crash, and are themselves killed at the
  // flush and column points. Values of up to 6 KiB and 1 MiB memtables
  // make every memtable's records span PM WAL segments (8 of 1 MiB) and the
  // log wrap: flushes release segments while the active memtable's records
  // are in them, and a segment released too early loses what it held.
  const Shape shape{.nvm_size = 32 << 20, .write_buffer_size = 1 << 20, .value_filler = 6000, .kill_window = 1500,
                    .chain = true};
  const bool random_kills = GENERATE(false, true);
  if (random_kills) {
    RunCrashRounds(true, {}, 8, shape);
  } else {
    RunCrashRounds(true,
                   {"rowtable.mid_copy", "kvcore.flush.before_manifest", "kvcore.flush.after_manifest",
                    "rowtable.before_commit", "kvcore.column.after_manifest", "column.before_free",
                    "kvcore.flush.after_manifest", "kvcore.column.pipelined", "wal.mid_append", "rowtable.mid_copy",
                    "kvcore.column.after_free"},
                   0, shape);
  }
}

namespace {

std::string ManifestPath(const std::string& path) {
  std::string current = mxfs::testing::ReadAll(path + "/CURRENT");
  while (!current.empty() && current.back() == '\n') current.pop_back();
  return path + "/" + current;
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// Opens the DB with o in a forked child (on a fresh thread) and runs body
// on it; the child dies with body's exit code without closing the DB, the
// crash the caller then recovers from. Requires exit code 0.
void DieAfter(const Options& o, const std::string& path, const std::function<int(DB*)>& body) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    mxfs::testing::RunInFreshThread([&] {
      auto db = DB::Open(o, path);
      if (!db) _exit(2);
      _exit(body(db->get()));
    });
    _exit(4);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

}  // namespace

TEST_CASE("Crash: with a pool a flush commits its row without a MANIFEST edit and survives a crash", "[pm]") {
  TempDir dir;
  TempPool pool;
  const std::string path = dir.Sub("db");
  Options o = CrashOptions(pool.path());
  o.write_buffer_size = 1 << 20;  // only the explicit flushes below
  o.container_share = 0.9;        // no column compaction: the rows stay
  {
    auto db = DB::Open(o, path);
    REQUIRE(db);
    REQUIRE((*db)->Put(WriteOptions(), "open", "1").ok());
    REQUIRE((*db)->Flush().ok());
    REQUIRE((*db)->Close().ok());
  }
  // The child dies without closing: the rows and the PM WAL are all there is.
  DieAfter(o, path, [&](DB* db) {
    const uint64_t manifest_size = FileSize(ManifestPath(path));  // with the open's edit (new log)
    WriteOptions wo;
    wo.sync = true;
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < 100; i++) {
        if (!db->Put(wo, "k" + std::to_string(i), "r" + std::to_string(round)).ok()) return 3;
      }
      if (!db->Flush().ok()) return 3;
    }
    // The rows serve reads, and the MANIFEST did not grow.
    std::string v;
    if (!db->Get(ReadOptions(), "k7", &v).ok() || v != "r2") return 6;
    return FileSize(ManifestPath(path)) != manifest_size ? 7 : 0;
  });
  auto db = DB::Open(o, path);
  REQUIRE(db);
  for (int i = 0; i < 100; i++) {
    std::string v;
    REQUIRE((*db)->Get(ReadOptions(), "k" + std::to_string(i), &v).ok());
    CHECK(v == "r2");
  }
  REQUIRE((*db)->Close().ok());
}

TEST_CASE("Crash: a pool whose rows column compaction freed recovers the flushed and last sequences", "[pm]") {
  // Flushes log no MANIFEST edit: once column compaction has freed every row
  // the flushed sequence and the last sequence come from its own edits.
  TempDir dir;
  TempPool pool;
  const std::string path = dir.Sub("db");
  const Options o = CrashOptions(pool.path());
  DieAfter(o, path, [](DB* db) {
    WriteOptions wo;
    wo.sync = true;
    for (int round = 0; round < 5; round++) {
      for (int i = 0; i < 200; i++) {
        const std::string key = "k" + std::to_string(i);
        Status s = round == 3 && i % 3 == 0 ? db->Delete(wo, key)
                                            : db->Put(wo, key, "r" + std::to_string(round) + std::string(50, 'x'));
        if (!s.ok()) return 3;
      }
    }
    if (!db->Flush().ok() || !db->CompactRange(nullptr, nullptr).ok()) return 3;
    for (int i = 0; i < 20; i++) {
      if (!db->Put(wo, "k" + std::to_string(i), "after").ok()) return 3;
    }
    return 0;
  });
  const auto expect = [](int i) { return i < 20 ? std::string("after") : "r4" + std::string(50, 'x'); };
  for (int reopen = 0; reopen < 2; reopen++) {
    INFO("reopen " << reopen);
    auto db = DB::Open(o, path);
    REQUIRE(db);
    for (int i = 0; i < 200; i++) {
      std::string v;
      REQUIRE((*db)->Get(ReadOptions(), "k" + std::to_string(i), &v).ok());
      CHECK(v == expect(i));
    }
    // New writes get sequences above everything in L1: once they are
    // compacted into L1 too, they still win.
    REQUIRE((*db)->Put(WriteOptions(), "k100", "new").ok());
    REQUIRE((*db)->Flush().ok());
    REQUIRE((*db)->CompactRange(nullptr, nullptr).ok());
    std::string v;
    REQUIRE((*db)->Get(ReadOptions(), "k100", &v).ok());
    CHECK(v == "new");
    REQUIRE((*db)->Put(WriteOptions(), "k100", "r4" + std::string(50, 'x')).ok());
    REQUIRE((*db)->Close().ok());
  }
}
