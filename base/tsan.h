// ThreadSanitizer annotations for synchronisation it cannot see; no-ops in
// other builds (make TSAN=1 builds with -fsanitize=thread).
//
// io_uring rings: liburing maps and unmaps a ring's memory with raw system
// calls, which ThreadSanitizer does not intercept, so when a thread that
// used a ring has exited and a new thread's ring is mapped at the same
// address, the new thread's writes look like they race with the old
// thread's. The kernel orders the munmap before the mmap that reuses the
// address; TsanRingUnmapped() before io_uring_queue_exit and
// TsanRingMapped() after io_uring_queue_init say so, through one
// process-wide sync object.
//
// Thread-safety: thread-safe.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace mxfs {

#if defined(__SANITIZE_THREAD__)
inline char g_tsan_ring_sync;
inline void TsanRingUnmapped() { __tsan_release(&g_tsan_ring_sync); }
inline void TsanRingMapped() { __tsan_acquire(&g_tsan_ring_sync); }
#else
inline void TsanRingUnmapped() {}
inline void TsanRingMapped() {}
#endif

}  // namespace mxfs
