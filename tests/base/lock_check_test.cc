// base/lock_check.h: MXFS_ASSERT_HELD tells the thread that holds a mutex
// from every other thread, across condition-variable waits and in a forked
// child, and aborts when the rule is broken.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

#include "base/lock_check.h"

using mxfs::LockHeldByMe;

TEST_CASE("LockCheck: the holder is told from other threads and from a free mutex") {
  std::mutex mu;
  CHECK_FALSE(LockHeldByMe(mu));
  {
    std::unique_lock<std::mutex> l(mu);
    CHECK(LockHeldByMe(mu));
    bool other_sees_held = true;
    std::thread t([&] { other_sees_held = LockHeldByMe(mu); });
    t.join();
    CHECK_FALSE(other_sees_held);
  }
  CHECK_FALSE(LockHeldByMe(mu));
}

TEST_CASE("LockCheck: a condition-variable wait gives the mutex back held") {
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false, held_by_other_during_wait = false;
  std::unique_lock<std::mutex> l(mu);
  std::thread t([&] {
    std::lock_guard<std::mutex> g(mu);  // only while the main thread waits
    held_by_other_during_wait = LockHeldByMe(mu);
    ready = true;
    cv.notify_all();
  });
  cv.wait(l, [&] { return ready; });
  CHECK(held_by_other_during_wait);
  CHECK(LockHeldByMe(mu));
  l.unlock();
  t.join();
  CHECK_FALSE(LockHeldByMe(mu));
}

TEST_CASE("LockCheck: a forked child checks with its own thread id") {
  std::mutex mu;
  CHECK_FALSE(LockHeldByMe(mu));  // caches this thread's id before the fork
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::lock_guard<std::mutex> g(mu);
    ::_exit(LockHeldByMe(mu) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("LockCheck: MXFS_ASSERT_HELD aborts a thread that does not hold the mutex") {
  std::mutex mu;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(STDERR_FILENO);  // the expected error line goes nowhere
    {
      std::lock_guard<std::mutex> g(mu);
      MXFS_ASSERT_HELD(mu);  // held: passes
    }
    MXFS_ASSERT_HELD(mu);  // not held: aborts
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
}
