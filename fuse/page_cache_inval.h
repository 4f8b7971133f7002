// PageCacheInval: drops ranges of an inode's page cache in the kernel on
// behalf of FUSE workers (FUSE_NOTIFY_INVAL_INODE through
// fuse_lowlevel_notify_inval_inode), from one thread of its own.
//
// Why: an asynchronous O_DIRECT write (io_submit, io_uring) over a file that
// is also read through the page cache. The kernel drops the range's pages
// before it sends the WRITE, but a buffered reader can read them back in
// before the WRITE reaches the daemon, and for an asynchronous direct write
// fs/fuse invalidates nothing once it completes (fuse_direct_IO returns
// -EIOCBQUEUED; generic_file_direct_write invalidates only after a
// synchronous one). With keep_cache those stale pages then outlive the
// write. So after a direct WRITE is committed, the daemon drops the range
// itself before it replies.
//
// Why a thread: the kernel performs the invalidation inside the notifying
// write(2) and waits for every locked page in the range, and a page being
// read is locked until its READ is answered -- by a FUSE worker. A worker
// that invalidated itself could wait for a READ that no worker is free to
// serve (all busy with direct writes doing the same). Here a worker queues
// the range and waits for it at most `wait`; past that it replies anyway
// (the invalidation still happens, a moment later), so a worker is never
// held by the kernel on behalf of another request.
//
// Thread-safety: Invalidate may be called from any number of threads; Stop
// (and the destructor) from one thread once no Invalidate runs.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

namespace mxfs {

class PageCacheInval {
 public:
  explicit PageCacheInval(fuse_session* se);
  ~PageCacheInval();
  PageCacheInval(const PageCacheInval&) = delete;
  PageCacheInval& operator=(const PageCacheInval&) = delete;

  // Drops [off, off + len) of ino's cached pages; waits until the kernel has
  // done so or `wait` has passed. True when it was done in time.
  bool Invalidate(uint64_t ino, int64_t off, int64_t len, std::chrono::milliseconds wait);

  // Ends the thread after the queued ranges (the session must still exist).
  void Stop();

 private:
  struct Range {
    uint64_t ino;
    int64_t off;
    int64_t len;
  };
  void Run();

  fuse_session* const se_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Range> queue_;  // guarded by mu_
  uint64_t queued_ = 0;      // ranges ever queued; guarded by mu_
  uint64_t done_ = 0;        // ranges ever finished (in queue order); guarded by mu_
  bool stop_ = false;        // guarded by mu_
  bool warned_ = false;      // an unexpected error was logged (thread only)
  std::thread thread_;
};

}  // namespace mxfs
