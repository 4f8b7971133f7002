// PageCacheInval (fuse/page_cache_inval.h): one thread sending
// FUSE_NOTIFY_INVAL_INODE for the ranges FUSE workers queue.
#include "fuse/page_cache_inval.h"

#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "base/logging.h"

namespace mxfs {

PageCacheInval::PageCacheInval(fuse_session* se) : se_(se), thread_([this] { Run(); }) {}

PageCacheInval::~PageCacheInval() { Stop(); }

bool PageCacheInval::Invalidate(uint64_t ino, int64_t off, int64_t len, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> l(mu_);
  if (stop_) return false;
  queue_.push_back({ino, off, len});
  const uint64_t mine = ++queued_;
  work_cv_.notify_one();
  return done_cv_.wait_for(l, wait, [&] { return done_ >= mine || stop_; }) && done_ >= mine;
}

void PageCacheInval::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PageCacheInval::Run() {
  SetThreadName("mxfs-inval");
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    work_cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    const Range r = queue_.front();
    queue_.pop_front();
    l.unlock();
    // ENOENT: the kernel has no such inode cached (nothing to drop);
    // ENOTCONN/ENODEV: the connection is gone (nor is its cache).
    const int rc = fuse_lowlevel_notify_inval_inode(se_, r.ino, r.off, r.len);
    if (rc != 0 && rc != -ENOENT && rc != -ENOTCONN && rc != -ENODEV && !warned_) {
      warned_ = true;
      MXFS_LOG_WARN("inode %" PRIu64 ": dropping cached pages [%" PRId64 ", +%" PRId64 ") after a direct write: %s "
                    "(logged once)", r.ino, r.off, r.len, std::strerror(-rc));
    }
    l.lock();
    ++done_;
    done_cv_.notify_all();
  }
}

}  // namespace mxfs
