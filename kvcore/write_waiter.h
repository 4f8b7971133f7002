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
#pragma once

#include <atomic>
#include <cstdint>

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

}  // namespace mxfs
