#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
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

TEST_CASE("SpinThenLock: a free mutex is taken without a wait") {
  std::mutex mu;
  std::unique_lock<std::mutex> l(mu, std::defer_lock);
  CHECK(SpinThenLock(l, std::chrono::microseconds(50)) == 0);
  CHECK(l.owns_lock());
}

TEST_CASE("SpinThenLock: a held mutex is taken once released, after the spin or during it") {
  for (const auto hold : {std::chrono::microseconds(0), std::chrono::microseconds(20000)}) {
    std::mutex mu;
    std::atomic<bool> held{false};
    int payload = 0;
    std::thread holder([&] {
      std::lock_guard<std::mutex> g(mu);
      held.store(true);
      // 0: released within the spin; 20 ms: long past it, the locker sleeps.
      std::this_thread::sleep_for(hold);
      payload = 7;
    });
    while (!held.load()) std::this_thread::yield();
    std::unique_lock<std::mutex> l(mu, std::defer_lock);
    SpinThenLock(l, std::chrono::microseconds(50));
    CHECK(l.owns_lock());
    CHECK(payload == 7);  // written by the holder under the mutex
    l.unlock();
    holder.join();
  }
}
