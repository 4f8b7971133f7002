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
  // With huge_chunks, the arena's blocks (not those of large allocations)
  // are carved out of 2 MiB chunks aligned to 2 MiB and advised as
  // transparent huge pages: a memtable's skiplist (about 1 MiB of nodes and
  // keys for 64 MiB of 4 KiB values) then sits in one or two TLB entries
  // instead of hundreds of 4 KiB pages scattered between the value blocks,
  // and a search beside a writer (a miss per node visited) stops paying a
  // page walk per node too -- under a hypervisor's nested paging the larger
  // part of a miss. MemoryUsage still counts the blocks handed out, so the
  // memtable's size accounting does not change.
  explicit Arena(bool huge_chunks = false) : huge_chunks_(huge_chunks) {}
  ~Arena();
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

  static constexpr size_t kChunkSize = size_t{2} << 20;
  // The next kBlockSize block of the current chunk (a new chunk if it is
  // used up); nullptr if no chunk could be mapped.
  char* BlockFromChunk();

  const bool huge_chunks_;
  char* alloc_ptr_ = nullptr;
  size_t alloc_bytes_remaining_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<void*> chunks_;  // mmap'ed, kChunkSize each
  char* chunk_ptr_ = nullptr;  // the current chunk's next unused block
  size_t chunk_remaining_ = 0;
  std::atomic<size_t> memory_usage_{0};
};

}  // namespace mxfs
