// What the engine's background threads share: the monotonic clock in
// microseconds that stall, pacing and compaction timings use, the I/O
// priority a background thread gives itself, and ThreadGroupShare, which
// moves a group of threads between CPU and I/O shares from any thread.
//
// Thread-safety: thread-safe; SetIoPriority affects the calling thread
// only; a ThreadGroupShare may be used from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace mxfs {

// Microseconds of the monotonic clock.
uint64_t NowMicros();

enum class IoPriority {
  kLowest,  // best-effort class, lowest level: behind foreground reads and WAL syncs
  kIdle,    // idle class: only when nobody else uses the disk
};
// ioprio_set on the calling thread; harmless if refused.
void SetIoPriority(IoPriority p);

// The share of CPU and disk a background thread gets, from least to most
// (the order is the enum's: std::min of two shares is the smaller one).
// Every share but idle is SCHED_BATCH: the thread keeps its nice level's
// CPU weight but never preempts a running thread when it wakes (a flush
// started, an io_uring completion); it waits for the next tick or a free
// CPU, so a foreground writer or reader runs on through the wakeups.
enum class BackgroundShare {
  kIdle,    // SCHED_IDLE and the idle I/O class: only what nobody else wants
  kLow,     // SCHED_BATCH at nice 10, best-effort I/O at the lowest level:
            // a tenth of a nice-0 thread's CPU weight, so foreground readers
            // of the process come first (ReaderPresence)
  kNormal,  // SCHED_BATCH at nice 0, best-effort I/O at the lowest level
  kHigh,    // SCHED_BATCH at nice -10, best-effort I/O at level 2: ahead of
            // CPU-bound processes at nice 0 (needs CAP_SYS_NICE or
            // RLIMIT_NICE >= 30; without, it stays at nice 0)
};
const char* BackgroundShareName(BackgroundShare s);

// The share a compaction thread that would run at want gets while threads
// that only read are active (readers_active; ReaderPresence below): at most
// kLow, except that kHigh stays (leveled compaction never asks for it).
// Column compaction steps back by ColumnShareBehindReaders (to kLow, also
// while a flush waits for room), the flush always to kLow, even while urgent
// (DBImpl::UpdateBackgroundShares; measured in issue 16 session 5: the
// reader beside an unlimited writer +25%).
BackgroundShare StepBackFor(BackgroundShare want, bool readers_active);

// A group of threads (by tid) whose share changes together: the threads
// join and leave themselves, any thread may Set the share. Set applies the
// policy to every member at once (sched_setscheduler, setpriority and
// ioprio_set on each tid), so a thread busy in a long merge is raised
// without waiting for it to look. kIdle is used only if the process may
// leave SCHED_IDLE again (root, or RLIMIT_NICE >= 20); otherwise it maps to
// kNormal, so that a thread can never be stuck at idle priority; the same
// for kLow (nice 10 back to 0 needs the same right). Failures
// of the system calls are ignored (the thread keeps its share). The io_uring
// workers of a member (threads named iou-wrk-<member tid>, created by the
// kernel with the member's share of that moment) are moved with it: they do
// the member's ring I/O that cannot complete inline (buffered writes and
// syncs skip the ring since cda8c7a, ssd/file_system.h). A worker the kernel creates while Set runs
// can be missed: it copies its owner's share of before Set reached the
// owner, and appears in /proc only after Set looked. The kernel creates a
// member's workers only in that member's own context (its io_uring_enter
// or task work), so once the member itself looks (SettleCallingThread, at
// the end of each background job) every worker it has is listed, and any
// later one copies the new share.
class ThreadGroupShare {
 public:
  ThreadGroupShare() = default;  // starts at kNormal
  ThreadGroupShare(const ThreadGroupShare&) = delete;
  ThreadGroupShare& operator=(const ThreadGroupShare&) = delete;
  // The calling thread joins the group and takes its current share.
  void Join();
  // The calling thread leaves (before it exits: its tid may be reused).
  void Leave();
  // Moves every member to s; cheap when s is the current share.
  void Set(BackgroundShare s);
  BackgroundShare share() const;
  // Times Set changed the share (for stats and tests).
  uint64_t changes() const;
  // If the calling thread is a member and the share changed since it joined
  // or last settled, applies the share to its io_uring workers again (the
  // ones Set may have missed, see above). Cheap otherwise (one atomic load);
  // a member calls it between jobs, never while it holds a lock a reader
  // needs (it reads /proc when it acts).
  static void SettleCallingThread();
  // True if SettleCallingThread would act (one atomic load).
  static bool CallingThreadUnsettled();

 private:
  mutable std::mutex mu_;
  std::vector<pid_t> tids_;  // mu_
  BackgroundShare share_ = BackgroundShare::kNormal;  // mu_
  // Written under mu_; read without it by CallingThreadUnsettled.
  std::atomic<uint64_t> changes_{0};
};

// ReaderPresence: whether threads that only read are active, so that the
// background threads (flush, compactions, their io_uring workers) step back
// behind them (the flush always; compactions by StepBackFor and ColumnShareBehindReaders). On two cores a reader beside an unlimited writer shares the
// CPU with the writer, the flush and the compactions that writer keeps busy:
// at equal weights it waits in the run queue for most of its time (issue 16:
// readwhilewriting 0.65x RocksDB, whose writer is stalled by its own L0
// triggers and leaves its reader the CPU). A writer that outruns the
// background is stalled by the memtable and container limits anyway; giving
// its background work less weight than the readers only moves the stall
// earlier, and the readers get the CPU instead of the writer.
//
// A "pure reader" is a thread that has not written through the DB for
// kWriterQuietMicros: a thread that reads and writes (read-modify-write,
// readrandomwriterandom, a filesystem worker serving both) waits for its own
// writes' background work, so slowing that work would slow it too. Presence
// lasts kWindowMicros after the last pure read. That holds where a thread is
// a client; a server whose worker threads serve every client alike (the
// FUSE daemon) opens its DB with Options::background_yields_to_readers off,
// and DBImpl then notes no reads at all.
//
// Thread-safety: thread-safe. NoteWrite and NoteRead are lock-free (a
// thread-local stamp, one relaxed atomic store per millisecond at most).
class ReaderPresence {
 public:
  static constexpr uint64_t kWindowMicros = 200000;
  static constexpr uint64_t kWriterQuietMicros = 1000000;

  // The calling thread writes (DB::Write).
  static void NoteWrite();
  // A read by the calling thread; true if it turned presence on (the caller
  // then lowers the background shares).
  bool NoteRead();
  // True if presence was on and no pure read came for kWindowMicros: it is
  // off now (the caller then restores the shares). Cheap; call it often.
  bool Expire();
  bool active() const { return active_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> last_read_us_{0};
  std::atomic<bool> active_{false};
};

}  // namespace mxfs
