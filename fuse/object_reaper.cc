#include "fuse/object_reaper.h"

#include <pthread.h>
#include <unistd.h>

namespace mxfs {

ObjectReaper::ObjectReaper(std::function<void()> on_idle) : on_idle_(std::move(on_idle)) {
  thread_ = std::thread([this] { Run(); });
  pthread_setname_np(thread_.native_handle(), "mxfs-reap");
}

ObjectReaper::~ObjectReaper() { Stop(); }

void ObjectReaper::Add(std::string path) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!stop_) {
      queue_.push_back(std::move(path));
      ++added_;
      work_cv_.notify_one();
      return;
    }
  }
  ::unlink(path.c_str());
}

bool ObjectReaper::Drain() {
  std::unique_lock<std::mutex> l(mu_);
  const uint64_t ticket = added_;
  idle_cv_.wait(l, [&] { return settled_ >= ticket; });
  const bool unlinked = settled_ > drained_;
  drained_ = settled_;
  return unlinked;
}

uint64_t ObjectReaper::Pending() const {
  std::lock_guard<std::mutex> l(mu_);
  return added_ - done_;
}

uint64_t ObjectReaper::Reaped() const {
  std::lock_guard<std::mutex> l(mu_);
  return done_;
}

void ObjectReaper::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ObjectReaper::Run() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    work_cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and everything unlinked
    while (!queue_.empty()) {
      std::string path = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      ::unlink(path.c_str());
      l.lock();
      ++done_;
    }
    l.unlock();
    if (on_idle_) on_idle_();
    l.lock();
    settled_ = done_;
    idle_cv_.notify_all();
  }
}

}  // namespace mxfs
