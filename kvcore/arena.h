// Arena: bump allocator for the memtable. Memory is freed only when the
// arena is destroyed, so skiplist nodes never move and readers need no locks.
//
// Thread-safety: Allocate* by one thread at a time (the memtable's single
// writer); MemoryUsage may be read from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace mxfs {

// ChunkPool: 2 MiB chunks for arenas (a DB's memtables share one), kept
// mapped from one memtable to the next. A memtable's memory is written once
// and freed a flush later; without the pool every memtable took fresh
// memory from the kernel, and the writer paid its page faults (zeroing, the
// cgroup charge) in the middle of its puts. With it the memory of the
// memtables flushed before is reused, faulted in already and backed by huge
// pages where the kernel gave them.
//
// Bound: the chunks in use by arenas plus those kept are at most
// max_bytes (whole chunks); a chunk given back beyond that is unmapped. A
// DB's bound is its memtables' own (max_write_buffer_number memtables), so
// the pool only keeps what its memtables could hold anyway; and once its
// memtables have not switched for a while, the DB releases what is kept.
//
// Thread-safety: thread-safe (an arena dies on whichever thread dropped the
// last reference to its memtable).
class ChunkPool {
 public:
  static constexpr size_t kChunkSize = size_t{2} << 20;
  // fill_bytes: what Fill keeps ready (at most max_bytes).
  ChunkPool(size_t max_bytes, size_t fill_bytes)
      : max_chunks_(max_bytes / kChunkSize), fill_chunks_(std::min(fill_bytes, max_bytes) / kChunkSize) {}
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;
  // A chunk (kChunkSize, aligned to it): a kept one, else a new mapping;
  // nullptr if mmap failed.
  void* Get();
  // An arena is done with a chunk of Get: kept, or unmapped beyond the bound.
  void Put(void* chunk);
  // Maps new chunks and faults them in (huge pages where the kernel gives
  // them) until fill_bytes are kept or the bound is reached: a background
  // thread's work, so that the writer does not fault in a memtable's memory
  // when the last one's is not back yet. Stops early if mmap fails.
  void Fill();
  // Unmaps the chunks kept (the writes paused).
  void Release();
  // Bytes kept, and in use by arenas (for tests).
  size_t kept_bytes() const;
  size_t used_bytes() const;
  // A new kChunkSize mapping aligned to kChunkSize, advised as huge pages;
  // nullptr if mmap failed.
  static void* NewChunk();

 private:
  const size_t max_chunks_, fill_chunks_;
  mutable std::mutex mu_;
  std::vector<void*> kept_;  // mu_
  size_t used_ = 0;          // mu_: chunks handed out by Get and not Put back
};

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
  //
  // With a pool (huge_chunks only), allocations too big for a block (up to
  // kChunkSize / 8) are carved out of the chunks too, instead of each
  // getting its own heap block, the chunks come from the pool when it has
  // some, and they go back to it when the arena is destroyed (ChunkPool).
  explicit Arena(bool huge_chunks = false, std::shared_ptr<ChunkPool> pool = nullptr)
      : huge_chunks_(huge_chunks), pool_(huge_chunks ? std::move(pool) : nullptr) {}
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

  static constexpr size_t kChunkSize = ChunkPool::kChunkSize;
  // The next kBlockSize block of the current chunk (a new chunk if it is
  // used up); nullptr if no chunk could be mapped.
  char* BlockFromChunk();
  // bytes (rounded up to max_align_t) of the current chunk, or of a new one
  // if they do not fit; nullptr if no chunk could be mapped.
  char* BytesFromChunk(size_t bytes);
  // Makes a fresh chunk (the pool's, else a new mapping) the current one.
  bool NextChunk();

  const bool huge_chunks_;
  const std::shared_ptr<ChunkPool> pool_;
  char* alloc_ptr_ = nullptr;
  size_t alloc_bytes_remaining_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<void*> chunks_;  // mmap'ed, kChunkSize each
  char* chunk_ptr_ = nullptr;  // the current chunk's next unused block
  size_t chunk_remaining_ = 0;
  std::atomic<size_t> memory_usage_{0};
};

}  // namespace mxfs
