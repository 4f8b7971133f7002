// Arena: bump allocator for the memtable. Memory is freed only when the
// arena is destroyed, so skiplist nodes never move and readers need no locks.
//
// Thread-safety: Allocate* by one thread at a time (the memtable's single
// writer); MemoryUsage may be read from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace mxfs {

class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  char* Allocate(size_t bytes);
  // Aligned to alignof(std::max_align_t) (at least pointer size).
  char* AllocateAligned(size_t bytes);
  size_t MemoryUsage() const { return memory_usage_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kBlockSize = 4096;
  char* AllocateFallback(size_t bytes);
  char* AllocateNewBlock(size_t block_bytes);

  char* alloc_ptr_ = nullptr;
  size_t alloc_bytes_remaining_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::atomic<size_t> memory_usage_{0};
};

}  // namespace mxfs
