// MemoryTrimmer: hands the heap memory that glibc malloc keeps after a burst
// of work back to the kernel (malloc_trim), from one thread of its own.
//
// Why: the daemon's big short-lived allocations -- a 64 MiB memtable built
// from 4 KiB arena blocks and values by the FUSE worker that led the write,
// write batches, directory listings, the iterators of a tree removal -- come
// from glibc's per-thread arenas (up to 8 per CPU, one for each worker that
// ever ran), whose free memory glibc returns only from the top of a heap.
// After a memtable is flushed and dropped most of its pages are free but
// stay resident behind a few live chunks, and each unpack/remove cycle left
// some more: the daemon's private memory grew by about 2.5 MB per cycle
// (BENCHMARKS.md, "The daemon's memory under filesystem churn").
// malloc_trim(0) walks every arena and releases the free pages in the middle
// of its heaps too (madvise MADV_DONTNEED); the chunks stay where they are,
// so nothing moves and the next allocation just faults a page in again.
//
// When: every `interval`, if the activity fingerprint (a number that changes
// whenever requests arrived or the engine flushed or compacted) moved since
// the previous tick, and once more at the first still tick after a busy one
// (the background work that follows a burst frees memory too). An idle
// daemon does nothing.
//
// Thread-safety: Trims and TrimMicros from any thread; the destructor (or
// Stop) from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace mxfs {

class MemoryTrimmer {
 public:
  MemoryTrimmer(std::function<uint64_t()> fingerprint, std::chrono::milliseconds interval);
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // Ends the thread (no trim after it returns).
  void Stop();

  // Trims done and the time they took in all.
  uint64_t Trims() const { return trims_.load(std::memory_order_relaxed); }
  uint64_t TrimMicros() const { return trim_micros_.load(std::memory_order_relaxed); }

  // One malloc_trim(0) now, counted like the thread's.
  void TrimNow();

 private:
  void Run();

  const std::function<uint64_t()> fingerprint_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::atomic<uint64_t> trims_{0};
  std::atomic<uint64_t> trim_micros_{0};
  std::thread thread_;
};

}  // namespace mxfs
