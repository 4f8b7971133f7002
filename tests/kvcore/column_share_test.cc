// Column compaction's CPU and I/O share: the mapping from the container's
// fill, and ThreadGroupShare moving threads between shares by tid.
#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "kvcore/background.h"
#include "kvcore/column_compaction.h"
#include "kvcore/include/db.h"
#include "tests/kvcore/test_util.h"

namespace mxfs {
namespace {

TEST_CASE("ColumnShareFor: idle only while most of the container is free, high when little is left") {
  CHECK(ColumnShareFor(1000, 1000, false, false) == BackgroundShare::kIdle);
  CHECK(ColumnShareFor(600, 1000, false, false) == BackgroundShare::kIdle);
  CHECK(ColumnShareFor(599, 1000, false, false) == BackgroundShare::kNormal);
  CHECK(ColumnShareFor(250, 1000, false, false) == BackgroundShare::kNormal);
  CHECK(ColumnShareFor(249, 1000, false, false) == BackgroundShare::kHigh);
  CHECK(ColumnShareFor(0, 1000, false, false) == BackgroundShare::kHigh);
  // A flush waiting for room: high whatever the page count says (the free
  // pages may be too scattered for the row).
  CHECK(ColumnShareFor(900, 1000, true, false) == BackgroundShare::kHigh);
  // Rows waiting to drain (reads pay for each): never idle.
  CHECK(ColumnShareFor(1000, 1000, false, true) == BackgroundShare::kNormal);
  CHECK(ColumnShareFor(100, 1000, false, true) == BackgroundShare::kHigh);
}

TEST_CASE("StepBackFor: readers lower the background to low, but never an urgent (high) share") {
  for (const BackgroundShare s :
       {BackgroundShare::kIdle, BackgroundShare::kLow, BackgroundShare::kNormal, BackgroundShare::kHigh}) {
    CHECK(StepBackFor(s, false) == s);  // no readers: unchanged
  }
  CHECK(StepBackFor(BackgroundShare::kNormal, true) == BackgroundShare::kLow);
  CHECK(StepBackFor(BackgroundShare::kLow, true) == BackgroundShare::kLow);
  CHECK(StepBackFor(BackgroundShare::kIdle, true) == BackgroundShare::kIdle);  // never raised by readers
  CHECK(StepBackFor(BackgroundShare::kHigh, true) == BackgroundShare::kHigh);
}

TEST_CASE("ColumnShareBehindReaders: behind readers at most low, unless a flush waits for room") {
  const auto behind = [](uint64_t free_pages, bool full, bool many_rows, bool readers) {
    return ColumnShareBehindReaders(ColumnShareFor(free_pages, 1000, full, many_rows), full, readers);
  };
  // No readers: ColumnShareFor's share.
  CHECK(behind(100, false, false, false) == BackgroundShare::kHigh);
  CHECK(behind(500, false, false, false) == BackgroundShare::kNormal);
  CHECK(behind(900, false, false, false) == BackgroundShare::kIdle);
  CHECK(behind(900, true, false, false) == BackgroundShare::kHigh);
  // Readers: a nearly full container no longer wins over them, a flush
  // waiting for room does.
  CHECK(behind(100, false, false, true) == BackgroundShare::kLow);
  CHECK(behind(0, false, true, true) == BackgroundShare::kLow);
  CHECK(behind(500, false, false, true) == BackgroundShare::kLow);
  CHECK(behind(900, false, false, true) == BackgroundShare::kIdle);  // never raised by readers
  CHECK(behind(900, true, false, true) == BackgroundShare::kHigh);
  CHECK(behind(100, true, false, true) == BackgroundShare::kHigh);
}

// The calling thread's policy and nice value.
struct Sched {
  int policy;
  int nice;
};
Sched SchedOf(pid_t tid) {
  errno = 0;
  return Sched{::sched_getscheduler(tid), ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid))};
}

TEST_CASE("ColumnOutputFileSize: a sixteenth of L1, between 1/64 of the target (64 KiB at least) and the target") {
  const uint64_t mib = 1 << 20;
  CHECK(ColumnOutputFileSize(0, 64 * mib) == mib);
  CHECK(ColumnOutputFileSize(16 * mib, 64 * mib) == mib);
  CHECK(ColumnOutputFileSize(160 * mib, 64 * mib) == 10 * mib);
  CHECK(ColumnOutputFileSize(4096 * mib, 64 * mib) == 64 * mib);
  // Small targets: never below 64 KiB, never above the target.
  CHECK(ColumnOutputFileSize(0, mib) == 64 << 10);
  CHECK(ColumnOutputFileSize(0, 16 << 10) == 16 << 10);
  CHECK(ColumnOutputFileSize(mib, 16 << 10) == 16 << 10);
}

TEST_CASE("ThreadGroupShare: Set moves a member thread while it runs, Leave stops that") {
  if (::geteuid() != 0) {
    WARN("not root: SCHED_IDLE and nice -10 are not checked");
    return;
  }
  ThreadGroupShare group;
  std::atomic<pid_t> tid{0};
  std::atomic<bool> left{false}, stop{false};
  std::thread member([&] {
    group.Join();
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    while (!left.load()) std::this_thread::yield();
    group.Leave();
    left = false;
    while (!stop.load()) std::this_thread::yield();
  });
  while (tid.load() == 0) std::this_thread::yield();
  CHECK(SchedOf(tid).policy == SCHED_BATCH);
  CHECK(SchedOf(tid).nice == 0);
  group.Set(BackgroundShare::kIdle);
  CHECK(SchedOf(tid).policy == SCHED_IDLE);
  CHECK(std::string(BackgroundShareName(group.share())) == "idle");
  group.Set(BackgroundShare::kHigh);
  CHECK(SchedOf(tid).policy == SCHED_BATCH);
  CHECK(SchedOf(tid).nice == -10);
  group.Set(BackgroundShare::kLow);
  CHECK(SchedOf(tid).policy == SCHED_BATCH);
  CHECK(SchedOf(tid).nice == 10);
  CHECK(std::string(BackgroundShareName(group.share())) == "low");
  group.Set(BackgroundShare::kNormal);
  CHECK(SchedOf(tid).nice == 0);
  CHECK(group.changes() == 4);
  group.Set(BackgroundShare::kNormal);
  CHECK(group.changes() == 4);  // unchanged: nothing applied
  left = true;
  while (left.load()) std::this_thread::yield();
  group.Set(BackgroundShare::kHigh);
  CHECK(SchedOf(tid).nice == 0);  // no longer a member
  stop = true;
  member.join();
}

TEST_CASE("ReaderPresence: on at a read of a thread that does not write, off after a quiet window") {
  ReaderPresence p;
  CHECK_FALSE(p.active());
  CHECK_FALSE(p.Expire());
  // A thread that wrote just now is no pure reader.
  std::thread([&] {
    ReaderPresence::NoteWrite();
    CHECK_FALSE(p.NoteRead());
  }).join();
  CHECK_FALSE(p.active());
  // One that never wrote turns presence on, once.
  std::thread([&] {
    CHECK(p.NoteRead());
    CHECK_FALSE(p.NoteRead());
  }).join();
  CHECK(p.active());
  // Off after kWindowMicros without a pure read; on again with the next.
  std::this_thread::sleep_for(std::chrono::microseconds(ReaderPresence::kWindowMicros + 50000));
  CHECK(p.Expire());
  CHECK_FALSE(p.active());
  CHECK_FALSE(p.Expire());
  std::thread([&] { CHECK(p.NoteRead()); }).join();
  CHECK(p.active());
}

// Whether the "readers.active 1" line shows up while a thread that never
// wrote reads: up to 100 Gets, the stats read after each (presence lasts a
// window after a read, so a loaded machine needs a few tries, no timing).
bool ReadersSeenActive(DB* db) {
  bool seen = false;
  std::thread([&] {
    std::string v, stats;
    for (int i = 0; i < 100 && !seen; i++) {
      (void)db->Get(ReadOptions(), "k", &v);
      REQUIRE(db->GetProperty("matrixkv.stats", &stats));
      seen = stats.find("\nreaders.active 1\n") != std::string::npos;
    }
  }).join();
  return seen;
}

TEST_CASE("ReaderPresence in a DB: a pure reader's Get turns it on unless background_yields_to_readers is off") {
  testing::TempDir dir;
  for (const bool yields : {true, false}) {
    Options o;
    o.write_buffer_size = 64 << 10;
    o.background_yields_to_readers = yields;
    auto db = DB::Open(o, dir.Sub(yields ? "yields" : "keeps"));
    REQUIRE(db);
    REQUIRE((*db)->Put(WriteOptions(), "k", "v").ok());
    CHECK(ReadersSeenActive(db->get()) == yields);
    REQUIRE((*db)->Close().ok());
  }
}

}  // namespace
}  // namespace mxfs
