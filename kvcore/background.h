// What the engine's background threads share: the monotonic clock in
// microseconds that stall, pacing and compaction timings use, the I/O
// priority a background thread gives itself, and ThreadGroupShare, which
// moves a group of threads between CPU and I/O shares from any thread.
//
// Thread-safety: thread-safe; SetIoPriority affects the calling thread
// only; a ThreadGroupShare may be used from any thread.
#pragma once

#include <sys/types.h>

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

// The share of CPU and disk a background thread gets.
enum class BackgroundShare {
  kIdle,    // SCHED_IDLE and the idle I/O class: only what nobody else wants
  kNormal,  // SCHED_OTHER at nice 0, best-effort I/O at the lowest level
  kHigh,    // SCHED_OTHER at nice -10, best-effort I/O at level 2: ahead of
            // CPU-bound processes at nice 0 (needs CAP_SYS_NICE or
            // RLIMIT_NICE >= 30; without, it stays at nice 0)
};
const char* BackgroundShareName(BackgroundShare s);

// A group of threads (by tid) whose share changes together: the threads
// join and leave themselves, any thread may Set the share. Set applies the
// policy to every member at once (sched_setscheduler, setpriority and
// ioprio_set on each tid), so a thread busy in a long merge is raised
// without waiting for it to look. kIdle is used only if the process may
// leave SCHED_IDLE again (root, or RLIMIT_NICE >= 20); otherwise it maps to
// kNormal, so that a thread can never be stuck at idle priority. Failures
// of the system calls are ignored (the thread keeps its share).
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

 private:
  mutable std::mutex mu_;
  std::vector<pid_t> tids_;  // mu_
  BackgroundShare share_ = BackgroundShare::kNormal;  // mu_
  uint64_t changes_ = 0;     // mu_
};

}  // namespace mxfs
