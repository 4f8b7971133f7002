#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "kvcore/write_waiter.h"

using namespace mxfs;

TEST_CASE("WriteWaiter: a state set before the wait is returned at once") {
  WriteWaiter w;
  w.Set(WriteWaiter::kLeader);
  CHECK(w.Await() == WriteWaiter::kLeader);
}

TEST_CASE("WriteWaiter: a sleeping waiter is woken and sees what was written before Set") {
  WriteWaiter w;
  int payload = 0;
  std::thread setter([&] {
    // Long past the spin: the waiter is asleep on the futex by now.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    payload = 42;
    w.Set(WriteWaiter::kDone);
  });
  CHECK(w.Await() == WriteWaiter::kDone);
  CHECK(payload == 42);
  setter.join();
}

TEST_CASE("WriteWaiter: waiters on the stack that return at once survive a stale wake-up") {
  // The waiter's frame (and its WriteWaiter) is gone as soon as Await
  // returns, often before Set's futex wake; the next waiter reuses the
  // address. Every hand-off must still complete with the right state.
  std::atomic<WriteWaiter*> slot{nullptr};
  std::atomic<bool> stop{false};
  std::thread setter([&] {
    while (!stop.load()) {
      WriteWaiter* w = slot.exchange(nullptr);
      if (w != nullptr) w->Set(WriteWaiter::kDone);
    }
  });
  int done = 0;
  for (int i = 0; i < 20000; i++) {
    WriteWaiter w;
    slot.store(&w);
    if (w.Await() == WriteWaiter::kDone) done++;
  }
  stop.store(true);
  setter.join();
  CHECK(done == 20000);
}
