// ObjectReaper: unlinks the data objects of deleted inodes from a thread of
// its own, so that removing a large file does not wait for the data
// directory's filesystem to free its blocks.
//
// Why: unlink(2) of a file with blocks on ext4 frees its extents, and on a
// filesystem mounted `discard` (common on virtual disks and SSDs) it waits
// for the device to discard them: 335 unlinks of the objects of
// /usr/include's large files took 0.17-1.2 s on the development host, more
// than the rest of an `rm -rf` of that tree (8,000 files) together, and
// the spread between runs was that wait's (BENCHMARKS.md, "Issue 16,
// session 14: rm -rf under churn").
//
// Safe to defer: the object belongs to an inode whose deletion has
// committed, inode numbers are never reused (the allocator only counts
// up), and after a crash every object no inode points to is removed at
// mount (MatrixFs::Startup). Stop (and so a clean unmount, which calls it
// before writing `S state` = clean) unlinks everything still queued.
//
// Space: the caller decides what may wait. MatrixFs unlinks at once while
// its SpaceGuard is full, and calls Drain before it refuses anything with
// ENOSPC; `on_idle` runs on the thread each time the queue empties, so the
// guard sees the freed space.
//
// Thread-safety: Add, Drain, Pending and the counters from any thread;
// Stop (or the destructor) from one thread, after the last Add.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace mxfs {

class ObjectReaper {
 public:
  explicit ObjectReaper(std::function<void()> on_idle);
  ~ObjectReaper();
  ObjectReaper(const ObjectReaper&) = delete;
  ObjectReaper& operator=(const ObjectReaper&) = delete;

  // Queues path for unlink(2); a failure is ignored (the next mount
  // collects an object no inode owns).
  void Add(std::string path);
  // Returns once everything queued before the call is unlinked and on_idle
  // has run after it; true if the thread unlinked anything since the
  // previous Drain (also when it finished before this call), so that the
  // caller knows to count the freed space again.
  bool Drain();
  // Unlinks what is queued and ends the thread; Add after it unlinks at once.
  void Stop();

  // Paths queued and not yet unlinked, and paths unlinked by the thread.
  uint64_t Pending() const;
  uint64_t Reaped() const;

 private:
  void Run();

  const std::function<void()> on_idle_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the thread waits for paths or stop_
  std::condition_variable idle_cv_;  // Drain waits for settled_ to reach its ticket
  std::deque<std::string> queue_;    // guarded by mu_
  uint64_t added_ = 0;               // guarded by mu_: paths ever queued
  uint64_t done_ = 0;                // guarded by mu_: of those, unlinked
  uint64_t settled_ = 0;             // guarded by mu_: done_ when on_idle last returned
  uint64_t drained_ = 0;             // guarded by mu_: settled_ at the last Drain
  bool stop_ = false;                // guarded by mu_
  std::thread thread_;
};

}  // namespace mxfs
