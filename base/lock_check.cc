#include "base/lock_check.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "base/logging.h"

namespace mxfs {

#ifdef __GLIBC__

namespace {

// Bumped in the child of every fork: the child's threads have new ids.
std::atomic<uint64_t> g_fork_generation{0};

pid_t MyTid() {
  thread_local pid_t tid = 0;
  thread_local uint64_t generation = UINT64_MAX;
  const uint64_t g = g_fork_generation.load(std::memory_order_relaxed);
  if (generation != g) {
    // Registered before any id is cached, so no cached id outlives a fork.
    static const bool hooked = [] {
      ::pthread_atfork(nullptr, nullptr, [] { g_fork_generation.fetch_add(1, std::memory_order_relaxed); });
      return true;
    }();
    (void)hooked;
    tid = ::gettid();
    generation = g;
  }
  return tid;
}

}  // namespace

bool LockHeldByMe(const std::mutex& mu) {
  // Written only by the thread that holds the mutex: a relaxed load sees our
  // own id exactly when we hold it. (native_handle is not const; reading the
  // owner field changes nothing.)
  const int owner =
      __atomic_load_n(&const_cast<std::mutex&>(mu).native_handle()->__data.__owner, __ATOMIC_RELAXED);
  return owner == MyTid();
}

#else

bool LockHeldByMe(const std::mutex&) { return true; }

#endif

void LockNotHeld(const char* where, const char* what) {
  MXFS_LOG_ERROR("%s: %s is not held by this thread (a lock rule is broken)", where, what);
  std::abort();
}

}  // namespace mxfs
