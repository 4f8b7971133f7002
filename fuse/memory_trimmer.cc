#include "fuse/memory_trimmer.h"

#include <malloc.h>
#include <pthread.h>

namespace mxfs {

MemoryTrimmer::MemoryTrimmer(std::function<uint64_t()> fingerprint, std::chrono::milliseconds interval)
    : fingerprint_(std::move(fingerprint)), interval_(interval) {
  thread_ = std::thread([this] { Run(); });
  pthread_setname_np(thread_.native_handle(), "mxfs-trim");
}

MemoryTrimmer::~MemoryTrimmer() { Stop(); }

void MemoryTrimmer::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MemoryTrimmer::TrimNow() {
  const auto start = std::chrono::steady_clock::now();
  malloc_trim(0);
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  trims_.fetch_add(1, std::memory_order_relaxed);
  trim_micros_.fetch_add(static_cast<uint64_t>(us), std::memory_order_relaxed);
}

void MemoryTrimmer::Run() {
  uint64_t last = fingerprint_();
  bool was_busy = false;
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, interval_, [this] { return stop_; })) {
    l.unlock();
    const uint64_t now = fingerprint_();
    const bool busy = now != last;
    last = now;
    if (busy || was_busy) TrimNow();
    was_busy = busy;
    l.lock();
  }
}

}  // namespace mxfs
