#include "fuse/space_guard.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>

namespace mxfs {

void SpaceGuard::SetReserve(uint64_t engine, uint64_t kernel) {
  engine_.store(engine, std::memory_order_relaxed);
  kernel_.store(kernel, std::memory_order_relaxed);
  reserve_.store(engine + kernel, std::memory_order_relaxed);
  Refresh();
}

void SpaceGuard::Set(uint64_t avail, uint64_t total) {
  free_.store(avail, std::memory_order_relaxed);
  total_.store(total, std::memory_order_relaxed);
  const int64_t budget = static_cast<int64_t>(avail) - static_cast<int64_t>(reserve());
  budget_.store(budget, std::memory_order_relaxed);
  since_.store(0, std::memory_order_relaxed);
  const bool full = budget <= 0;
  if (full_.exchange(full, std::memory_order_relaxed) != full && full) {
    became_full_.store(true, std::memory_order_relaxed);
  }
}

void SpaceGuard::Refresh() {
  struct statvfs st;
  if (::statvfs(dir_.c_str(), &st) != 0) return;  // keep the last reading
  Set(static_cast<uint64_t>(st.f_bavail) * st.f_frsize, static_cast<uint64_t>(st.f_blocks) * st.f_frsize);
}

Status SpaceGuard::Admit(uint64_t bytes) {
  const int64_t n = static_cast<int64_t>(std::min<uint64_t>(bytes, INT64_MAX / 2));
  const int64_t left = budget_.fetch_sub(n, std::memory_order_relaxed) - n;
  if (!NeedsReading(left, n)) return Status::OK();
  Refresh();
  if (budget_.fetch_sub(n, std::memory_order_relaxed) - n >= 0) return Status::OK();
  budget_.fetch_add(n, std::memory_order_relaxed);
  if (!full_.exchange(true, std::memory_order_relaxed)) became_full_.store(true, std::memory_order_relaxed);
  refused_.fetch_add(1, std::memory_order_relaxed);
  return Status::FromErrno("the filesystem of " + dir_ + " has " + std::to_string(free_.load()) +
                               " bytes free, and " + std::to_string(reserve()) +
                               " are kept for what was already acknowledged (" + std::to_string(bytes) +
                               " more asked)",
                           ENOSPC);
}

void SpaceGuard::Consume(uint64_t bytes) {
  const int64_t n = static_cast<int64_t>(std::min<uint64_t>(bytes, INT64_MAX / 2));
  const int64_t left = budget_.fetch_sub(n, std::memory_order_relaxed) - n;
  if (NeedsReading(left, n)) Refresh();
}

bool SpaceGuard::NeedsReading(int64_t left, int64_t n) {
  // Far from full, the reading is renewed every kRefreshBytes (other
  // writers share the filesystem); close to it, or full, every time.
  return Full() || left <= std::min<int64_t>(static_cast<int64_t>(reserve()), kRefreshBytes) ||
         since_.fetch_add(n, std::memory_order_relaxed) + n >= kRefreshBytes;
}

uint64_t SpaceGuard::available() const {
  const uint64_t f = free_.load(std::memory_order_relaxed), r = reserve();
  return f > r ? f - r : 0;
}

std::string SpaceGuard::Describe() const {
  return "space free=" + std::to_string(free_.load(std::memory_order_relaxed)) + " reserve=" +
         std::to_string(reserve()) + " (engine=" + std::to_string(engine_.load(std::memory_order_relaxed)) +
         " kernel=" + std::to_string(kernel_.load(std::memory_order_relaxed)) + ") full=" +
         (Full() ? "yes" : "no") + " refused=" + std::to_string(refused_.load(std::memory_order_relaxed));
}

}  // namespace mxfs
