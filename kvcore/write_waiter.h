// WriteWaiter: how a queued writer learns that the write-group leader has
// written its batch (kDone) or made it the next leader (kLeader).
//
// The writer spins for a few microseconds first: a group takes about as
// long to write (a 4 KiB value: one WAL record, one memtable insert), and a
// writer that sleeps costs a futex wake on the leader's path and a
// scheduling delay before it runs again (on 2 cores beside the flush and
// compaction threads, that delay was most of a 4-writer fill). Then it
// sleeps on a futex on the state word, so a waiter that waits long costs no
// CPU.
//
// Set stores the state and wakes the waiter only if it went to sleep. The
// waiter may return (and its WriteWaiter be gone) as soon as it sees the
// new state, possibly before Set's wake-up: that wake is then aimed at a
// stale address, which is harmless for a futex (it wakes nobody, or a later
// waiter at the same address, which re-checks its state and sleeps again),
// the same as glibc's own semaphores and mutexes. Set touches no other
// member after the store.
//
// Thread-safety: one thread calls Await, one other thread calls Set once;
// everything written before Set is visible after Await returns.
//
// SpinThenLock, below, is the write path's way to take the DB mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace mxfs {

class WriteWaiter {
 public:
  enum State : uint32_t { kWaiting = 0, kLeader = 1, kDone = 2 };

  // Waits until the state leaves kWaiting and returns it.
  State Await();
  void Set(State s);

 private:
  static constexpr uint32_t kSleeping = 3;  // kWaiting, and the waiter is asleep on the futex
  std::atomic<uint32_t> state_{kWaiting};
};

// Locks l's mutex (l must not own it), first spinning on try_lock for up
// to `spin`, then sleeping on it. Returns the microseconds it waited: 0 if
// the mutex was free.
//
// Why: a writer that finds the DB mutex held by a background thread (a
// flush or a compaction installing its result, column compaction choosing
// its column) slept on it, and its wake-up after the unlock (a futex wake,
// on a virtual machine often an idle vCPU to wake) came tens of
// microseconds after a hold that was mostly shorter: 160-210 writes per
// million-key fill waited 60 us or more for the mutex, 96-113 with a 50 us
// spin (BENCHMARKS.md, issue 16 session 15, helper tail). Spinning while
// the holder runs on the other CPU takes the mutex as soon as it is free;
// a longer hold still sleeps.
uint64_t SpinThenLock(std::unique_lock<std::mutex>& l, std::chrono::microseconds spin);

}  // namespace mxfs
