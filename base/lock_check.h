// Lock rules that are comments ("DB mutex held") checked at run time.
// MXFS_ASSERT_HELD(mu) aborts, naming the function, when the calling thread
// does not hold mu.
//
// How: glibc records the kernel id of the owning thread in every pthread
// mutex (std::mutex is one, and std::condition_variable waits keep the
// record true), so the check is one load of that field and a compare with
// the caller's id, which is cached per thread (and refreshed in a forked
// child). The check is therefore on in every build. With another C library
// it checks nothing.
//
// Thread-safety: thread-safe.
#pragma once

#include <mutex>

namespace mxfs {

// True when the calling thread holds mu (always true where it cannot tell).
bool LockHeldByMe(const std::mutex& mu);
// Logs "<where>: <what> is not held by this thread" and aborts.
[[noreturn]] void LockNotHeld(const char* where, const char* what);

}  // namespace mxfs

#define MXFS_ASSERT_HELD(mu)                                                    \
  do {                                                                          \
    if (!::mxfs::LockHeldByMe(mu)) ::mxfs::LockNotHeld(__func__, #mu);          \
  } while (0)
