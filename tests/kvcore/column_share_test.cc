// Column compaction's CPU and I/O share: the mapping from the container's
// fill, and ThreadGroupShare moving threads between shares by tid.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <liburing.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

TEST_CASE("ColumnShareBehindReaders: behind readers at most low, also while a flush waits for room") {
  const auto behind = [](uint64_t free_pages, bool full, bool many_rows, bool readers) {
    return ColumnShareBehindReaders(ColumnShareFor(free_pages, 1000, full, many_rows), readers);
  };
  // No readers: ColumnShareFor's share.
  CHECK(behind(100, false, false, false) == BackgroundShare::kHigh);
  CHECK(behind(500, false, false, false) == BackgroundShare::kNormal);
  CHECK(behind(900, false, false, false) == BackgroundShare::kIdle);
  CHECK(behind(900, true, false, false) == BackgroundShare::kHigh);
  // Readers: neither a nearly full container nor a flush waiting for room
  // wins over them.
  CHECK(behind(100, false, false, true) == BackgroundShare::kLow);
  CHECK(behind(0, false, true, true) == BackgroundShare::kLow);
  CHECK(behind(500, false, false, true) == BackgroundShare::kLow);
  CHECK(behind(900, false, false, true) == BackgroundShare::kIdle);  // never raised by readers
  CHECK(behind(900, true, false, true) == BackgroundShare::kLow);
  CHECK(behind(100, true, false, true) == BackgroundShare::kLow);
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

// The tid of an io_uring worker of owner (comm "iou-wrk-<owner>"), 0 if none.
pid_t IoWorkerOf(pid_t owner) {
  const std::string want = "iou-wrk-" + std::to_string(owner);
  pid_t found = 0;
  DIR* d = ::opendir("/proc/self/task");
  REQUIRE(d != nullptr);
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char comm[32] = {};
    FILE* f = std::fopen(("/proc/self/task/" + std::string(e->d_name) + "/comm").c_str(), "r");
    if (f == nullptr) continue;
    const bool ok = std::fgets(comm, sizeof(comm), f) != nullptr;
    std::fclose(f);
    if (ok && std::string(comm).rfind(want, 0) == 0 && (comm[want.size()] == '\n' || comm[want.size()] == 0)) {
      found = std::atoi(e->d_name);
    }
  }
  ::closedir(d);
  return found;
}

TEST_CASE("ThreadGroupShare: a member settles an io_uring worker that Set missed") {
  if (::geteuid() != 0) {
    WARN("not root: nice 10 back to 0 is not checked");
    return;
  }
  testing::TempDir dir;
  ThreadGroupShare group;
  std::atomic<pid_t> tid{0}, worker{0};
  std::atomic<int> step{0};
  std::thread member([&] {
    group.Join();
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    // A write forced to an io_uring worker: the kernel creates iou-wrk-<tid>.
    io_uring ring;
    REQUIRE(io_uring_queue_init(4, &ring, 0) == 0);
    const int fd = ::open(dir.Sub("f").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    char buf[4096] = {};
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_write(sqe, fd, buf, sizeof(buf), 0);
    sqe->flags |= IOSQE_ASYNC;
    REQUIRE(io_uring_submit(&ring) == 1);
    io_uring_cqe* cqe = nullptr;
    REQUIRE(io_uring_wait_cqe(&ring, &cqe) == 0);
    CHECK(cqe->res == static_cast<int>(sizeof(buf)));
    io_uring_cqe_seen(&ring, cqe);
    worker = IoWorkerOf(tid);
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    ThreadGroupShare::SettleCallingThread();  // between jobs
    step = 3;
    while (step.load() != 4) std::this_thread::yield();
    group.Leave();
    io_uring_queue_exit(&ring);
    ::close(fd);
  });
  while (step.load() != 1) std::this_thread::yield();
  REQUIRE(worker.load() != 0);
  group.Set(BackgroundShare::kLow);
  CHECK(SchedOf(tid).nice == 10);
  CHECK(SchedOf(worker).nice == 10);  // found by Set's own look
  // As if the worker had been created while Set ran: the owner's old share,
  // and not in /proc when Set looked.
  REQUIRE(::setpriority(PRIO_PROCESS, static_cast<id_t>(worker.load()), 0) == 0);
  step = 2;
  while (step.load() != 3) std::this_thread::yield();
  CHECK(SchedOf(worker).nice == 10);
  CHECK(SchedOf(tid).nice == 10);
  step = 4;
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
